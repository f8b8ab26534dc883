import gc
import tracemalloc

import pytest

from agent_nb import Conversation, Message


def msgs(*specs):
    return [Message(role, text, author_name=author) for role, text, author in specs]


def test_extend_leaves_the_original_unchanged():
    a = Conversation(msgs(("user", "q", None)))
    b = a + msgs(("assistant", "r", "x"))
    assert len(a) == 1 and len(b) == 2
    assert list(a) == a.to_list() == [Message("user", "q")]
    assert b[-1].text == "r" and b[0:1] == a.to_list()


def bytes_kept_per_view(n: int) -> float:
    """What each of ``n`` conversations, each one message longer than the last, keeps alive (bytes).

    The messages exist beforehand, so only what the conversations themselves hold is counted.
    """
    replies = [Message("assistant", str(i), author_name=f"a{i}") for i in range(n)]
    first = Message("user", "q")
    gc.collect()
    tracemalloc.start()
    try:
        views = [Conversation([first])]
        for reply in replies:
            views.append(views[-1].extend([reply]))
        kept = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert [len(v) for v in views] == list(range(1, n + 2))
    return kept / n


def test_a_chain_of_extensions_shares_one_log():
    c = Conversation(msgs(("user", "q", None)))
    views = [c]
    for i in range(50):
        views.append(views[-1].extend([Message("assistant", str(i), author_name=f"a{i}")]))
    assert [len(v) for v in views] == list(range(1, 52))
    assert views[10][-1].text == "9" and views[50][10] is views[11][10]
    # shared, not copied: a conversation costs the same however long the chain is (a copy per extension
    # would add 8 bytes for every message it holds: some 400 bytes a view at 100, 3,200 at 800)
    assert bytes_kept_per_view(800) <= 1.1 * bytes_kept_per_view(100)


def test_extending_an_older_view_forks_without_touching_the_newer():
    base = Conversation(msgs(("user", "q", None)))
    left = base.extend(msgs(("assistant", "L", "left")))
    right = base.extend(msgs(("assistant", "R", "right")))
    assert [m.text for m in left] == ["q", "L"]
    assert [m.text for m in right] == ["q", "R"]
    # the two branches grow on their own: neither ever shows what was added to the other
    left2, right2 = left.extend(msgs(("assistant", "L2", "left"))), right.extend(msgs(("assistant", "R2", "right")))
    left3 = left2.extend(msgs(("assistant", "L3", "left")))
    assert [m.text for m in left3] == ["q", "L", "L2", "L3"]
    assert [m.text for m in right2] == ["q", "R", "R2"]
    assert [m.text for m in left] == ["q", "L"] and [m.text for m in right] == ["q", "R"] and len(base) == 1
    assert [m.role for m in right2.as_input_for({"right"})] == ["user", "assistant", "assistant"]


def test_as_input_for_reassigns_other_agents_and_keeps_own():
    c = Conversation(
        msgs(
            ("user", "q", None),
            ("assistant", "mine", "me"),
            ("assistant", "theirs", "other"),
            ("assistant", "anon", None),
        )
    )
    given = c.as_input_for({"me"})
    assert [(m.role, m.author_name, m.text) for m in given] == [
        ("user", None, "q"),
        ("assistant", "me", "mine"),
        ("user", "other", "theirs"),
        ("assistant", None, "anon"),
    ]
    assert given[1] is c[1] and given[3] is c[3]


def test_reassigned_twins_are_made_once_per_message():
    c = Conversation(msgs(("user", "q", None), ("assistant", "r", "a")))
    first = c.as_input_for({"b"})
    again = c.extend(msgs(("assistant", "s", "b"))).as_input_for({"c"})
    assert first[1] is again[1]


def test_as_input_for_a_fork_ignores_positions_beyond_it():
    base = Conversation(msgs(("user", "q", None), ("assistant", "1", "me")))
    base.extend(msgs(("assistant", "2", "me")))  # grows the shared log
    base.as_input_for({"x"})  # indexes all three
    fork = base.extend(msgs(("assistant", "3", "other")))
    assert [(m.role, m.text) for m in fork.as_input_for({"me"})] == [
        ("user", "q"),
        ("assistant", "1"),
        ("user", "3"),
    ]


def test_head_equality_and_type_checks():
    c = Conversation(msgs(("user", "a", None), ("user", "b", None)))
    assert c.head(1) == [Message("user", "a")]
    assert c.head(5) == c and c.head(-1) == []
    assert c == Conversation(c.to_list())
    with pytest.raises(TypeError, match="holds Message objects, not str"):
        Conversation(["a"])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        c.extend(["x"])  # type: ignore[list-item]
    with pytest.raises(IndexError):
        c[2]
