"""``ScriptedChatClient`` refuses, when it is made, replies it could never give."""

from __future__ import annotations

import pytest

from agent_nb import ArgumentError, ChatResponse, Message, ScriptedChatClient


@pytest.mark.parametrize(
    ("replies", "shown"),
    [
        (
            None,
            "replies=None (NoneType) is not accepted; give a list of replies, each a str, a Message or a ChatResponse",
        ),
        ([None], "replies[0]=None (NoneType) is not accepted; each reply is a str, a Message or a ChatResponse"),
        (["fine", 3], "replies[1]=3 (int) is not accepted; each reply is a str, a Message or a ChatResponse"),
        (
            "hello",
            "replies='hello' (str) is not accepted; give a list of replies, each a str, a Message or a "
            "ChatResponse; for one reply: ['hello']",
        ),
    ],
    ids=["None", "a reply that is None", "a number", "a bare string"],
)
def test_replies_it_could_not_give_are_refused_at_once(replies, shown):
    with pytest.raises(ArgumentError) as refused:
        ScriptedChatClient(replies)
    assert str(refused.value) == f"ScriptedChatClient: {shown}"
    assert refused.value.argument == "replies"
    assert isinstance(refused.value, TypeError) and isinstance(refused.value, ValueError)


def test_what_it_accepts_still_works():
    replies = ["one", Message("assistant", "two"), ChatResponse([Message("assistant", "three")])]
    assert len(ScriptedChatClient(iter(replies)).replies) == 3
    assert ScriptedChatClient([]).replies == []
