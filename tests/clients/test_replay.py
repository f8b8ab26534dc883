"""Record and replay: cassettes answer exactly as recorded, say how they differ, and hold no secret."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_nb import (
    CassetteError,
    ChatAgent,
    FunctionCallContent,
    InMemoryHistoryProvider,
    Message,
    ScriptedChatClient,
)
from agent_nb.clients.replay import RecordingChatClient, ReplayChatClient, cassette_client


def weather(city: str) -> str:
    """The weather in a city."""
    return f"18 C in {city}"


def script() -> ScriptedChatClient:
    call = FunctionCallContent(call_id="c1", name="weather", arguments={"city": "Porto"})
    return ScriptedChatClient([Message("assistant", [call]), "It is 18 C in Porto.", "Take a light jacket."])


async def conversation(client: Any, *, stream: bool) -> list[str]:
    agent = ChatAgent(client, name="guide", tools=[weather], history=InMemoryHistoryProvider(), options={"seed": 1})
    session = agent.create_session()
    out = []
    for question in ("Weather in Porto?", "What should I wear?"):
        if stream:
            pieces = [u.text async for u in agent.run(question, session=session, stream=True)]
            out.append("".join(pieces))
        else:
            out.append((await agent.run(question, session=session)).text)
    return out


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_a_replay_answers_exactly_as_recorded(tmp_path: Path, stream: bool) -> None:
    path = tmp_path / "guide.json"
    recorder = RecordingChatClient(script(), path)
    recorded = await conversation(recorder, stream=stream)
    interactions = json.loads(path.read_text())["interactions"]
    assert len(interactions) == 3  # the tool call, the answer after the tool, the second turn
    assert interactions[1]["request"]["options"]["tools"][0]["name"] == "weather"
    assert ("chunks" in interactions[0]) is stream

    replay = ReplayChatClient(path)
    assert await conversation(replay, stream=stream) == recorded
    assert replay.remaining == 0


async def test_a_different_request_fails_with_a_diff_and_how_to_record_again(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    await ChatAgent(RecordingChatClient(script(), path), name="a").run("Weather in Porto?")
    with pytest.raises(CassetteError, match="request 1 differs") as caught:
        await ChatAgent(ReplayChatClient(path), name="a").run("Weather in Lisbon?")
    text = str(caught.value)
    assert '-     "text": "Weather in Porto?"' in text and '+     "text": "Weather in Lisbon?"' in text
    assert "AGENT_NB_RECORD=1" in text


async def test_a_used_up_or_missing_cassette_says_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    await ChatAgent(RecordingChatClient(script(), path), name="a").run("hi")
    agent = ChatAgent(ReplayChatClient(path), name="a")
    with pytest.raises(CassetteError, match="holds 1 answers and all were replayed"):
        await agent.run("hi")
        await agent.run("hi")
    with pytest.raises(CassetteError, match=r"there is no cassette at .* record it first"):
        ReplayChatClient(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text('{"format": 9, "interactions": []}')
    with pytest.raises(CassetteError, match="not one this agent_nb reads"):
        ReplayChatClient(tmp_path / "bad.json")


class KeyedClient(ScriptedChatClient):
    """Stands in for a provider client that holds an API key."""

    def _secrets(self) -> list[str]:
        return ["sk-fake-client-key-0001"]


async def test_no_secret_is_ever_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-env-key-0002")
    path = tmp_path / "s.json"
    options = {
        "api_key": "sk-fake-option-key-0003",
        "extra_headers": {"Authorization": "Bearer sk-fake-header-0004", "X-Trace": "ok"},
        "note": "the key is sk-fake-client-key-0001 and the env one sk-fake-env-key-0002",
    }
    recorder = RecordingChatClient(KeyedClient(["fine", "also fine"]), path, secrets=["sk-fake-given-0005"])
    agent = ChatAgent(recorder, name="a", options=options)
    await agent.run("my key is sk-fake-given-0005, and Bearer sk-fake-typed-0006")
    await agent.run("again")
    data = path.read_bytes()
    for secret in (b"sk-fake-client-key-0001", b"sk-fake-env-key-0002", b"sk-fake-option-key-0003",
                   b"sk-fake-header-0004", b"sk-fake-given-0005", b"sk-fake-typed-0006"):  # fmt: skip
        assert secret not in data, secret
    assert b'"X-Trace": "ok"' in data  # what is not secret is kept
    replay = ChatAgent(ReplayChatClient(path), name="a", options=options)
    assert (await replay.run("my key is sk-fake-given-0005, and Bearer sk-fake-typed-0006")).text == "fine"


async def test_one_switch_moves_from_replay_to_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "switch.json"
    made: list[str] = []

    def real() -> ScriptedChatClient:
        made.append("real")
        return script()

    recorder = cassette_client(path, real, record=True)
    assert isinstance(recorder, RecordingChatClient)
    await ChatAgent(recorder, name="a").run("Weather in Porto?")  # a recorder writes with its first answer
    assert isinstance(cassette_client(path, real), ReplayChatClient)  # made too: it sends nothing
    monkeypatch.setenv("AGENT_NB_RECORD", "1")
    assert isinstance(cassette_client(path, real), RecordingChatClient) and made == ["real"] * 3


async def test_a_replay_checks_the_model_and_speaks_for_the_real_client(tmp_path: Path) -> None:
    from agent_nb import Capabilities

    path = tmp_path / "m.json"
    recorder = cassette_client(path, lambda: ScriptedChatClient(["ok"]), record=True)
    await ChatAgent(recorder, name="a").run("hi")

    def other() -> ScriptedChatClient:
        client = ScriptedChatClient([], capabilities=Capabilities(images=False), history_mode="caller")
        client.model = "another-model"
        return client

    replay = cassette_client(path, other)
    assert replay.capabilities.images is False  # routing checks a replayed route as it would the real one
    with pytest.raises(CassetteError, match='- "model": "scripted",\n\\+ "model": "another-model"'):
        await ChatAgent(replay, name="a").run("hi")
    assert (await ChatAgent(cassette_client(path, lambda: ScriptedChatClient([])), name="a").run("hi")).text == "ok"
