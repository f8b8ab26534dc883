"""Cassettes are safe to record and to trust.

Recording never loses a good cassette: making a recorder writes nothing, every write goes through a
temporary file beside the cassette, and a failed call puts the cassette back as it was. A replay
trusts nothing it cannot check: an edited answer (each interaction is sealed with a hash) or a
damaged file is refused, naming the file and the interaction and saying what to do; re-sealing
on purpose is one function (or one command) away. No known secret is written, answers included.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_nb import (
    AgentNbError,
    CassetteError,
    ChatAgent,
    FunctionChatClient,
    Message,
    ModelUnavailable,
    ScriptedChatClient,
)
from agent_nb.clients import replay
from agent_nb.clients.replay import RecordingChatClient, ReplayChatClient, cassette_client

ROOT = Path(__file__).resolve().parents[2]


async def record(path: Path, *answers: str, question: str = "Weather in Porto?") -> None:
    await ChatAgent(RecordingChatClient(ScriptedChatClient(list(answers)), path), name="a").run(question)


def interactions(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))["interactions"]


def rewrite(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")


# -- recording ---------------------------------------------------------------------------


async def test_making_a_recorder_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "good.json"
    await record(path, "It is sunny.")
    good = path.read_bytes()
    cassette_client(path, lambda: ScriptedChatClient([]), record=True)  # before: the cassette was emptied here
    monkeypatch.setenv("AGENT_NB_RECORD", "1")  # a forgotten switch: the same
    assert isinstance(cassette_client(path, lambda: ScriptedChatClient([])), RecordingChatClient)
    assert path.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.json"]  # no temporary file left either


class Failing(ScriptedChatClient):
    """Answers its script, then the server goes away."""

    async def reply(self, messages: list[Message], options: Any) -> Any:
        if self.used >= len(self.replies):
            raise ModelUnavailable("the server went away")
        return await super().reply(messages, options)


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_a_failed_call_keeps_the_good_recording(tmp_path: Path, stream: bool) -> None:
    path = tmp_path / "good.json"
    await record(path, "It is sunny.")
    good = path.read_bytes()
    recorder = RecordingChatClient(Failing(["first new answer"]), path)
    agent = ChatAgent(recorder, name="a")
    await agent.run("Weather in Porto?")  # one new answer: the cassette holds it now
    assert interactions(path)[0]["response"]["messages"][0]["contents"][0]["text"] == "first new answer"
    with pytest.raises(ModelUnavailable) as failed:
        if stream:
            async for _ in agent.run("And tomorrow?", stream=True):
                pass
        else:
            await agent.run("And tomorrow?")
    assert path.read_bytes() == good  # put back as it was before the recording
    note = "\n".join(failed.value.__notes__)
    assert "request 2 failed, so the recording stopped" in note and f"{path} is as it was before recording" in note
    with pytest.raises(CassetteError, match=r"the recording stopped at request 2, which failed \(ModelUnavailable\)"):
        await agent.run("Once more?")  # refused: the real model is not called again
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.json"]


async def test_a_failed_first_recording_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "new.json"
    with pytest.raises(ModelUnavailable):
        await ChatAgent(RecordingChatClient(Failing([]), path), name="a").run("hi")
    assert not path.exists() and list(tmp_path.iterdir()) == []


async def test_every_write_goes_through_a_file_beside_the_cassette(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "c.json"
    moves: list[tuple[Path, Path]] = []
    real = os.replace

    def replace(source: Any, target: Any) -> None:
        moves.append((Path(source), Path(target)))
        real(source, target)

    monkeypatch.setattr(replay.os, "replace", replace)
    await record(path, "ok")
    assert moves and all(s.parent == path.parent and t == path and s != path for s, t in moves)
    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]


async def test_a_write_that_fails_is_an_agent_nb_error_and_keeps_the_cassette(tmp_path, monkeypatch) -> None:
    path = tmp_path / "c.json"
    await record(path, "ok")
    good = path.read_bytes()
    recorder = RecordingChatClient(ScriptedChatClient(["new"]), path)

    def full(source: Any, target: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(replay.os, "replace", full)
    with pytest.raises(
        CassetteError, match=r"cannot write the cassette .*c\.json \(OSError: No space left on device\)"
    ):
        await ChatAgent(recorder, name="a").run("Weather in Porto?")
    assert path.read_bytes() == good and [p.name for p in tmp_path.iterdir()] == ["c.json"]


def test_a_destination_that_cannot_be_written_is_refused_before_any_call(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(
        CassetteError,
        match=r"cannot record the cassette .*a-file/c\.json: .*a-file is not a directory: record to a path",
    ):
        RecordingChatClient(ScriptedChatClient([]), tmp_path / "a-file" / "c.json")
    (tmp_path / "folder.json").mkdir()
    with pytest.raises(CassetteError, match=r"folder\.json is a folder, not a file"):
        cassette_client(tmp_path / "folder.json", lambda: ScriptedChatClient([]), record=True)
    with pytest.raises(CassetteError, match=r"folder\.json is a folder, not a file"):
        ReplayChatClient(tmp_path / "folder.json")


def test_a_read_only_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        try:
            (folder / "probe").write_text("")
        except OSError:
            pass
        else:
            pytest.skip("this user writes into read-only folders (root)")
        with pytest.raises(CassetteError, match=r"its folder cannot be written \(PermissionError"):
            RecordingChatClient(ScriptedChatClient([]), folder / "c.json")
    finally:
        folder.chmod(0o700)


# -- trusting what is replayed ---------------------------------------------------------------


async def test_an_edited_answer_is_refused_until_it_is_sealed_again(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    await record(path, "It is sunny.")

    def edit(data: dict[str, Any]) -> None:
        data["interactions"][0]["response"]["messages"][0]["contents"][0]["text"] = "It is snowing."

    rewrite(path, edit)
    with pytest.raises(CassetteError) as refused:
        ReplayChatClient(path)
    text = str(refused.value)
    assert f"{path}, interaction 1 of 1: it was changed after it was recorded" in text
    assert "python -m agent_nb.clients.replay seal" in text and "replay.seal(path)" in text
    assert replay.seal(path) == 1  # on purpose: sealed again
    assert (await ChatAgent(ReplayChatClient(path), name="a").run("Weather in Porto?")).text == "It is snowing."


def test_the_command_line_seals_and_checks(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"format": 1, "interactions": [good_interaction()]}), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def command(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agent_nb.clients.replay", *args],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip

    before = command("check", str(path))
    assert before.returncode == 1 and "format 1, which has no seals" in before.stderr
    sealed = command("seal", str(path))
    assert sealed.returncode == 0 and sealed.stdout.strip() == f"{path}: sealed, 1 interaction"
    assert command("check", str(path)).returncode == 0
    assert interactions(path)[0]["sha256"] == replay.seal_of(interactions(path)[0])


def good_interaction() -> dict[str, Any]:
    return {
        "request": {
            "model": "scripted", "stream": False, "options": {},
            "messages": [{"role": "user", "contents": [{"type": "text", "text": "hi"}]}],
        },
        "response": {"messages": [{"role": "assistant", "contents": [{"type": "text", "text": "hello"}]}]},
    }  # fmt: skip


def sealed(*items: dict[str, Any]) -> str:
    return json.dumps({"format": 2, "interactions": [{**i, "sha256": replay.seal_of(i)} for i in items]})


def without(key: str, where: str = "") -> dict[str, Any]:
    item = good_interaction()
    (item[where] if where else item).pop(key)
    return item


def changed(value: Any, *path: Any) -> dict[str, Any]:
    item = good_interaction()
    target: Any = item
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return item


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"format": 2, "interactions": [', r"is not valid JSON \(line 1, column 32: Expecting value\)"),
        (
            sealed(good_interaction(), without("response")),
            r"interaction 2 of 2: a whole request is answered by \"response\"; it has no answer",
        ),
        (sealed(changed("yes", "request", "stream")), r"interaction 1 of 1: request\.stream should be true or false"),
        (
            sealed(changed({"text": "x"}, "response", "messages")),
            r"interaction 1 of 1: response: messages: Input should be a valid",
        ),
        (
            sealed(changed("robot", "response", "messages", 0, "role")),
            r"interaction 1 of 1: response: messages\.0\.role: Input should be 'system', 'user', 'assistant' or 'tool' \(given 'robot'\)",
        ),
        (
            sealed(changed("robot", "request", "messages", 0, "role")),
            r"interaction 1 of 1: request\.messages\[0\]: role: Input should be",
        ),
        (sealed(changed(True, "request", "stream")), r'a streamed request is answered by "chunks"; it has "response"'),
        (json.dumps({"format": 2, "interactions": [good_interaction()]}), r"interaction 1 of 1: it has no seal"),
        (json.dumps({"format": 2, "interactions": ["nope"]}), r"interaction 1 of 1: it should be an object"),
        (json.dumps({"interactions": []}), r"is not one this agent_nb reads"),
    ],
    ids=[
        "invalid json",
        "missing response",
        "wrong type",
        "messages not a list",
        "unknown role in the answer",
        "unknown role in the request",
        "answer of the other kind",
        "no seal",
        "not an object",
        "no format",
    ],
)
def test_a_damaged_cassette_names_the_file_and_the_interaction(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "damaged.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CassetteError, match=expected) as refused:
        cassette_client(path, lambda: ScriptedChatClient([]))  # refused when made, not at the first call
    message = str(refused.value)
    assert str(path) in message
    if "interaction" in expected:
        assert "record it again (AGENT_NB_RECORD=1), or, if you changed it on purpose, fix it and re-seal it" in message
    assert isinstance(refused.value, AgentNbError) and refused.value.__cause__ is None


def test_the_committed_cassettes_are_sealed() -> None:
    for path in sorted((ROOT / "notebooks" / "cassettes").glob("*.json")):
        assert replay.check(path) > 0, path


# -- no secret written, no secret shown ----------------------------------------------------------


async def test_secrets_in_recorded_answers_are_redacted_even_across_chunks(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key-in-the-answer-0042")
    given = "given-secret-to-hide-0099"

    def echoing(messages: list[Message], options: Any) -> str:
        return f"You sent {given} and the key is sk-env-key-in-the-answer-0042 (Bearer tok3n-abcdefgh-77)."

    path = tmp_path / "echo.json"
    recorder = cassette_client(path, lambda: FunctionChatClient(echoing, stream_delay=0), record=True, secrets=[given])
    agent = ChatAgent(recorder, name="a")
    whole = (await agent.run("first")).text
    streamed = "".join([u.text async for u in agent.run("second", stream=True)])  # a word per chunk
    text = path.read_text(encoding="utf-8")
    for secret in (given, "sk-env-key-in-the-answer-0042", "tok3n-abcdefgh-77"):
        assert secret not in text and secret not in whole and secret not in streamed, secret
    assert whole == "You sent <redacted> and the key is <redacted> (Bearer <redacted>)."
    assert streamed == whole  # what the caller got is what was written, so a replay answers the same
    again = ChatAgent(cassette_client(path, lambda: FunctionChatClient(echoing), secrets=[given]), name="a")
    assert (await again.run("first")).text == whole
    assert "".join([u.text async for u in again.run("second", stream=True)]) == streamed


async def test_a_diff_never_shows_a_known_secret(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key-for-the-diff-0007")
    given = "my-password-is-hunter22"
    path = tmp_path / "c.json"
    recorder = cassette_client(path, lambda: ScriptedChatClient(["ok"]), record=True, secrets=[given])
    await ChatAgent(recorder, name="a").run(f"log in with {given}")
    replayed = ChatAgent(cassette_client(path, lambda: ScriptedChatClient([]), secrets=[given]), name="a")
    options = {"extra_headers": {"Authorization": "Bearer header-token-abc123"}}
    with pytest.raises(CassetteError, match="request 1 differs") as differs:
        await replayed.run(f"now {given} and sk-env-key-for-the-diff-0007 and header-token-abc123")
    text = str(differs.value)
    assert given not in text and "sk-env-key-for-the-diff-0007" not in text
    assert '"text": "now <redacted> and <redacted> and header-token-abc123"' in text  # that one is not known
    replayed = ChatAgent(cassette_client(path, lambda: ScriptedChatClient([])), name="a", options=options)
    with pytest.raises(CassetteError) as differs:
        await replayed.run("header-token-abc123 typed in")
    assert "header-token-abc123" not in str(differs.value)  # the request's own header: known, never shown


async def test_a_requests_own_secret_stays_out_of_every_later_write(tmp_path: Path) -> None:
    """Each request's header secrets are known while it is recorded; later rewrites of the file keep them out."""
    path = tmp_path / "c.json"
    recorder = RecordingChatClient(ScriptedChatClient(["one", "two"]), path)
    first = ChatAgent(recorder, name="a", options={"extra_headers": {"X-Token": "first-token-1234"}})
    second = ChatAgent(recorder, name="b", options={"extra_headers": {"X-Token": "second-token-5678"}})
    await first.run("typed by mistake: first-token-1234")
    await second.run("and again: second-token-5678")  # the file is written again, whole
    text = path.read_text(encoding="utf-8")
    assert "first-token-1234" not in text and "second-token-5678" not in text
    assert text.count("<redacted>") == 4  # each header, and each token typed in a message
