"""The playground and its parts, driven from Python the way a browser would drive them."""

import asyncio
import html
import json

from doubles import GatedClient

from agent_nb import (
    AgentExecutor,
    AgentSession,
    ChatAgent,
    FunctionChatClient,
    InMemoryHistoryProvider,
    MirrorChatClient,
    RoutingChatClient,
    WorkflowBuilder,
)
from agent_nb.widgets import ContextModeSwitcher, ContextView, Playground, RouteSwitcher


def trip(router):
    agents = [
        AgentExecutor(ChatAgent(router, name=name, history=InMemoryHistoryProvider()))
        for name in ("planner", "researcher", "writer")
    ]
    return WorkflowBuilder(start_executor=agents[0], name="trip").add_chain(agents).build()


async def settle(pg):
    await pg.wait()


def shown(pg):
    """What the transcript shows: its turns' widgets, then the turn under way."""
    return "".join(child.value for child in pg.transcript.children)


async def test_send_switch_route_and_mode_and_send_again():
    pg = Playground(trip(RoutingChatClient({"fast": MirrorChatClient(), "smart": MirrorChatClient()})))
    assert pg.route.dropdown.options == ("fast", "smart")
    assert list(pg.modes) == ["planner", "researcher", "writer"]
    assert pg.modes["writer"].dropdown.options[:2] == ("full", "last_agent")
    pg.text.value = "Plan a rainy Sunday"
    pg.send_button.click()
    await settle(pg)
    pg.route.value = "smart"
    pg.modes["writer"].value = "last_agent"
    await pg.send("Indoors only")
    first, second = pg.dialogue.exchanges
    assert set(first.routes.values()) == {"fast"} and set(second.routes.values()) == {"smart"}
    assert second.modes["writer"] == "last_agent"
    assert shown(pg).count('data-route="smart"') == 3
    assert "turn 2 · route smart" in shown(pg) and "writer: last_agent" in shown(pg)
    assert "turn 2 of 2" in pg.view.value and "dropped by last_agent" in pg.view.value
    assert pg.text.value == "" and not pg.send_button.disabled


async def test_send_is_disabled_while_a_turn_runs_and_tokens_show_as_they_arrive():
    gated = GatedClient(MirrorChatClient())
    pg = Playground(ChatAgent(RoutingChatClient({"only": gated}), name="assistant"))
    task = pg.send("hello there")
    assert pg.send_button.disabled
    assert pg.send("again") is None  # a second send while the first is on its way is ignored
    await gated.started.wait()
    for _ in range(50):  # a reply streaming in is drawn at most every LIVE_EVERY seconds
        if "I</div>" in shown(pg):
            break
        await asyncio.sleep(0.02)
    assert 'class="msg assistant live"' in shown(pg) and "I</div>" in shown(pg)
    assert "running" in pg.view.value
    gated.gate.set()
    await task
    assert not pg.send_button.disabled and len(pg.dialogue.exchanges) == 1


async def test_an_error_is_shown_in_the_widget_and_changes_nothing():
    def broken(messages, options):
        raise RuntimeError("quota exhausted")

    router = RoutingChatClient({"good": MirrorChatClient(), "bad": FunctionChatClient(broken)})
    pg = Playground(ChatAgent(router, name="assistant", history=InMemoryHistoryProvider()))
    await pg.send("one")
    pg.route.value = "bad"
    assert await pg.send("two") is None
    assert "quota exhausted" in pg.status.value and "quota exhausted" in str(pg.last_error)
    assert "this turn failed and changed nothing" in shown(pg)
    assert not pg.send_button.disabled
    pg.route.value = "good"
    third = await pg.send("three")
    assert third.answer.startswith("I see 3 messages")  # the failed turn left no trace in the history


async def test_a_refused_choice_is_explained_and_the_control_goes_back():
    router = RoutingChatClient({"fast": MirrorChatClient(), "smart": MirrorChatClient()})
    pg = Playground(ChatAgent(router, name="assistant"))
    router.remove_route("smart")  # gone since the playground was built
    pg.route.value = "smart"
    assert pg.route.value == "fast"
    assert "RouteNotFoundError" in pg.route.message.value and "no route &#x27;smart&#x27;" in pg.route.message.value
    router.add_route("smart", MirrorChatClient())
    pg.route.value = "smart"
    assert pg.route.message.value == "" and pg.dialogue.route == "smart"


async def test_reset_and_export(tmp_path):
    pg = Playground(trip(RoutingChatClient({"fast": MirrorChatClient()})), export_dir=tmp_path)
    await pg.send("Plan a trip")
    pg.export_html_button.click()
    pg.export_json_button.click()
    assert "wrote" in pg.status.value
    assert json.loads((tmp_path / "trip.json").read_text())["turns"][0]["text"] == "Plan a trip"
    assert "I see 1 message" in (tmp_path / "trip.html").read_text()
    pg.reset_button.click()
    assert pg.dialogue.exchanges == [] and "no turns yet" in shown(pg)
    again = await pg.send("Plan again")
    assert again.answers[0][1] == 'I see 1 message: user "Plan again"'


def test_the_parts_work_alone():
    router = RoutingChatClient({"fast": MirrorChatClient(), "smart": MirrorChatClient()})
    session = AgentSession()
    switcher = RouteSwitcher(router, session)
    switcher.value = "smart"
    assert router.get_active_route(session) == "smart"
    writer = AgentExecutor(ChatAgent(router, name="writer"))
    modes = ContextModeSwitcher(writer, filters={"last one": lambda ms: ms[-1:]})
    modes.value = "custom: last one"
    assert writer.context_mode == "custom" and writer.context_filter.__name__ == "<lambda>"
    modes.value = "last_agent"
    assert writer.context_mode == "last_agent"
    result = WorkflowBuilder(start_executor=writer).build().run_sync("hello")
    view = ContextView(result.trace)
    assert 'data-executor="writer"' in view.value
    view.update(result)
    assert "turn 1 of 1" in view.value


def test_in_a_script_send_runs_the_turn_to_the_end():
    pg = Playground(ChatAgent(MirrorChatClient(), name="assistant"))
    exchange = pg.send("hello")
    assert exchange.answer == 'I see 1 message: user "hello"' and pg.route is None


async def test_a_turn_sends_what_is_new_not_the_whole_transcript_again(monkeypatch):
    import ipywidgets

    from agent_nb.widgets import playground

    sent = {"transcript": 0}
    pg = Playground(trip(RoutingChatClient({"smart": MirrorChatClient()})))

    def counting(widget, key=None):  # what the kernel would send the page: the widget's changed state
        if widget is pg.transcript or widget is pg.live or widget in pg.transcript.children:
            sent["transcript"] += len(json.dumps(widget.get_state(key), default=str))

    opened = ipywidgets.Widget.open

    def opening(widget):  # a new widget is sent whole when it is made
        opened(widget)
        if isinstance(widget, ipywidgets.HTML):
            sent["transcript"] += len(json.dumps(widget.get_state(), default=str))

    monkeypatch.setattr(ipywidgets.Widget, "send_state", counting)
    monkeypatch.setattr(ipywidgets.Widget, "open", opening)
    monkeypatch.setattr(playground, "LIVE_EVERY", 3600.0)  # the count must not depend on this machine's speed
    per_turn = []
    for i in range(1, 16):
        sent["transcript"] = 0
        await pg.send(f"turn {i}: a rainy Sunday in Lisbon, a museum, then lunch")
        per_turn.append((sent["transcript"], len(pg.transcript.children[-1].value)))  # the turn, as drawn once
    assert len(pg.transcript.children) == 1 + 15  # the stylesheet, then one widget per turn
    for transcript_bytes, turn in per_turn:
        assert transcript_bytes <= 4 * turn + 2_000, per_turn  # its own words, a few times: not the turns before
    assert pg.transcript.layout.max_height and pg.transcript.layout.overflow == "auto"  # it scrolls


async def test_a_reset_closes_the_old_turns_widgets_and_the_status_and_view_carry_no_stylesheet_again():
    import ipywidgets

    from agent_nb.display.html import CSS

    pg = Playground(trip(RoutingChatClient({"smart": MirrorChatClient()})))
    await pg.send("one")
    await pg.send("two")
    open_before = len(ipywidgets.widgets.widget._instances)
    old = list(pg.transcript.children[1:])
    pg.reset()
    assert all(t.comm is None for t in old)  # closed: the kernel does not keep them, nor the page
    await pg.send("one again")
    await pg.send("two again")
    assert (
        len(ipywidgets.widgets.widget._instances) == open_before
    )  # a conversation as long leaves as many widgets open
    assert CSS not in pg.view.value and pg.transcript.children[0].value.count(CSS) == 1  # one stylesheet


async def test_enter_in_the_message_box_sends():
    pg = Playground(ChatAgent(MirrorChatClient(), name="assistant"))
    pg.text.value = "hello there"
    pg.text._handle_custom_msg({"event": "submit"}, [])  # what the page sends on Enter
    await settle(pg)
    assert [e.text for e in pg.dialogue.exchanges] == ["hello there"] and pg.text.value == ""


async def test_outside_a_kernel_the_bundle_shows_the_transcript_and_the_run_view_not_the_widget_tree():
    pg = Playground(trip(RoutingChatClient({"smart": MirrorChatClient()})))
    await pg.send("Plan a <b>rainy</b> Sunday")
    bundle = pg._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle  # live, the widget itself
    assert bundle["text/plain"].startswith("Playground('trip'): 1 turn\n  turn 1 · you: Plan a <b>rainy</b> Sunday")
    assert "children=" not in bundle["text/plain"]
    html = bundle["text/html"]
    assert "Plan a &lt;b&gt;rainy&lt;/b&gt; Sunday" in html and "<b>rainy" not in html
    assert 'data-route="smart"' in html and '<section class="col"' in html  # the transcript, then the columns
    assert "run the notebook to talk to it" in html


async def test_a_filter_that_drops_everything_says_so_and_the_view_shows_that_turn():
    def nothing(messages):
        return []

    pg = Playground(trip(RoutingChatClient({"smart": MirrorChatClient()})), filters={"nothing": nothing})
    await pg.send("Plan a rainy Sunday")
    pg.modes["writer"].value = "custom: nothing"
    await pg.send("Indoors only")
    status = html.unescape(pg.status.value)
    assert "its context_filter 'nothing' dropped all" in status  # what happened, and what to do
    assert "make it keep at least one, or change the mode" in status
    assert "turn 2 of 2" in pg.view.value and "failed" in pg.view.value  # that turn, not the one before
    writer = pg.view.value[pg.view.value.index('data-executor="writer"') :]
    assert "dropped by nothing" in writer and "Indoors only</del>" in writer
    assert len(pg.dialogue.results) == 1  # it changed nothing


async def test_export_offers_a_download_and_still_does_when_the_server_directory_cannot_be_written(tmp_path):
    import base64
    import re

    pg = Playground(trip(RoutingChatClient({"fast": MirrorChatClient()})), export_dir=tmp_path / "missing" / "dir")
    await pg.send("Plan a trip")
    pg.export_json_button.click()
    assert "not written on the server" in pg.status.value and "missing" in pg.status.value
    href = re.search(r'download="trip.json" href="data:application/json;charset=utf-8;base64,([^"]+)"', pg.status.value)
    assert href and json.loads(base64.b64decode(href.group(1)))["turns"][0]["text"] == "Plan a trip"
    pg.export_dir = tmp_path
    pg.export_html_button.click()
    assert (
        f"wrote {tmp_path / 'trip.html'}" in html.unescape(pg.status.value)
        and 'download="trip.html"' in pg.status.value
    )


async def test_in_a_sequential_chain_every_participants_words_stream_live_not_only_the_outputs():
    from agent_nb import SequentialBuilder
    from agent_nb.widgets import playground

    gated = GatedClient(MirrorChatClient())
    first = ChatAgent(MirrorChatClient(), name="first")
    second = ChatAgent(gated, name="second")
    pg = Playground(SequentialBuilder(participants=[first, second]).build())
    old, playground.LIVE_EVERY = playground.LIVE_EVERY, 0.0
    try:
        task = pg.send("hello there")
        await gated.started.wait()  # the first participant has answered; its answer is not a run output
        assert 'data-executor="first"' in pg.live.value and "I see 1 message" in pg.live.value
        gated.gate.set()
        await task
    finally:
        playground.LIVE_EVERY = old
    assert [executor for executor, _ in pg.dialogue.exchanges[0].answers] == ["first", "second"]


async def test_a_workflow_used_as_an_agent_talks_in_the_playground_with_its_own_agents():
    from agent_nb import SequentialBuilder

    research = SequentialBuilder(
        [ChatAgent(MirrorChatClient(), name="searcher"), ChatAgent(MirrorChatClient(), name="summarizer")],
        name="research",
    ).build()
    pg = Playground(research.as_agent())
    await pg.send("Plan a rainy Sunday")
    (exchange,) = pg.dialogue.exchanges
    assert exchange.answer.startswith("I see 2 messages") and [a for a, _ in exchange.answers] == [
        "searcher",
        "summarizer",
    ]
    assert list(pg.modes) == ["searcher", "summarizer"]  # its own agents, each with its mode switcher
