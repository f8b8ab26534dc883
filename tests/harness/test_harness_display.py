"""Harness displays: the chat as its own column, what the orchestrator never saw, tables — all escaped."""

import re

from agent_nb.harness import MessageNode, Orchestrator, StandardHarness, Topic
from agent_nb.harness.scenarios import opening_hours, returns

EVIL = '<script>alert(1)</script><img src=x onerror=alert(2)> "quoted" & ünïcode'


def test_the_view_puts_the_users_chat_first_and_marks_what_never_reached_the_orchestrator():
    h = returns().play(StandardHarness)
    html = h.view().html()
    columns = re.findall(r'<section class="col( chat)?" data-executor="([^"]+)"', html)
    assert [name for _, name in columns] == ["user's chat", "orchestrator", "return_item", "shipping_label"]
    chat = html.split('data-executor="user\'s chat"')[1].split("</section>")[0]
    assert chat.count("never reached the orchestrator") == 1  # the click, and only it
    assert "▸ Phone" in chat.split("never reached the orchestrator")[1][:200]
    assert chat.count('<span class="button">Phone</span>') == 2  # the card, and the question asked again


def test_the_view_of_an_earlier_turn_shows_the_chat_up_to_that_turn():
    h = returns().play(StandardHarness)
    first = h.view(turn=0).html()
    assert "Which item would you like to return?" in first and "shipping label." not in first
    assert "turn 1 of 3" in first
    assert "turn 1 of 3" in h.view(turn=0)._repr_mimebundle_()["text/html"]
    assert h.view(turn=-1).index == 2


def test_everything_a_part_says_is_escaped_in_every_harness_display():
    topic = Topic("evil", [MessageNode(EVIL)], description="anything evil")
    h = StandardHarness(Orchestrator("orchestrator", [topic]))
    h.send_sync(f"something evil {EVIL}")
    pages = [
        h.view().html(),
        h.gaps()._repr_mimebundle_()["text/html"],
        h.who_has("alert")._repr_mimebundle_()["text/html"],
        h.turns[-1]._repr_mimebundle_()["text/html"],
    ]
    for page in pages:  # the only image is a graph's own picture: the part's <img> is text
        assert "<script" not in page and not re.search(r'<img(?! class="graph-still" alt=")', page)
    for page in (pages[0], pages[3]):
        assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt; &quot;quoted&quot;" in page
    assert "&lt;script&gt;" in pages[1]  # the finding quotes the duplicate


def test_text_reports_for_the_terminal():
    h = opening_hours().play(StandardHarness)
    assert str(h.turns[0]).splitlines() == [
        "turn 1",
        "  user, from user: What are your opening hours?",
        "  assistant, from opening_hours: We are open 9:00-17:00, Monday to Friday.",
        "  assistant, from orchestrator: We are open 9:00-17:00, Monday to Friday.",
    ]
    text = str(h.gaps())
    assert text.startswith("turn 1 · duplicate answer · orchestrator")
    assert "remedy: Return the answer as an output of opening_hours" in text
    assert (
        str(opening_hours(fixed=True).play(StandardHarness).gaps()) == "no gaps found: no duplicate or missed answers"
    )
    bundle = h._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"} and "user's chat" in bundle["text/html"]
    assert set(h.view()._repr_mimebundle_(include=["text/plain"])) == {"text/plain"}
