"""Harnesses: the runtime between the user and the orchestrator, in two designs.

- ``StandardHarness`` distributes the context: components write to the chat directly,
  the orchestrator cannot see those writes, and nothing reconciles them at the top.
- ``CentralizedHarness``: the orchestrator is the only one that talks to the user; every
  message a component or connected agent would show passes through it, it writes each
  thing once, compacts its context when over a budget, and keeps a sandbox of files.

One harness is one conversation. Each user turn is one run of the harness's workflow;
its state goes in and comes back only when the turn succeeds, so a failed turn leaves
the transcript, every context and every topic exactly as they were.

```python
harness = StandardHarness(orchestrator)
await harness.send("What are your opening hours?")
harness.transcript        # what the user saw
harness.gaps()            # duplicate and missed answers, with remedies
```
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

from ..contents import UserInputResponseContent
from ..errors import ArgumentError, UsageError, bad_argument, did_you_mean
from ..messages import Message
from ..rendering import Displayable
from ..trace import Trace
from ..trace.text import message_line
from ..workflow import Executor, RunResult, Workflow, WorkflowBuilder
from .calls import UserInput
from .orchestrator import Orchestrator, OrchestratorState
from .state import CHAT, IDS, MODE, SANDBOX, SETTINGS, TURN, WAITING
from .views import Comparison, HarnessView

__all__ = ["CentralizedHarness", "Harness", "StandardHarness", "Turn", "compare"]


def _parts(root: Executor) -> Iterator[tuple[Executor, Executor]]:
    """Every (caller, part) pair below ``root``, once each."""
    seen: set[tuple[str, str]] = set()
    stack = [root]
    while stack:
        parent = stack.pop()
        for part in getattr(parent, "parts", lambda: ())():
            if (parent.id, part.id) not in seen:
                seen.add((parent.id, part.id))
                yield parent, part
                stack.append(part)


def _build(root: Orchestrator, name: str) -> Workflow:
    builder = WorkflowBuilder(start_executor=root, name=name)
    for parent, part in _parts(root):
        builder.add_edge(parent, part).add_edge(part, parent)
    return builder.build()


@dataclass(frozen=True, slots=True)
class Turn(Displayable):
    """One user turn: what the user did, what the chat showed in reply, and the run behind it."""

    number: int
    user: Message
    shown: tuple[Message, ...]
    result: RunResult

    def to_text(self) -> str:
        lines = [f"turn {self.number}", "  " + message_line(self.user, 96)]
        lines += ["  " + message_line(m, 96) for m in self.shown]
        return "\n".join(lines)


class Harness(Displayable):
    """One conversation through an orchestrator and its components (use a subclass)."""

    mode: ClassVar[str] = "standard"

    def __init__(self, orchestrator: Orchestrator, *, name: str | None = None, **settings: Any) -> None:
        if not isinstance(orchestrator, Orchestrator):
            raise ArgumentError(
                f"a harness runs an Orchestrator, got {type(orchestrator).__name__}", argument="orchestrator"
            )
        self.orchestrator = orchestrator
        self.workflow = _build(orchestrator, name or f"{self.mode} harness")
        speakers = tuple(eid for eid, ex in self.workflow.executors.items() if isinstance(ex, Orchestrator))
        self.settings: Mapping[str, Any] = MappingProxyType({"speakers": speakers, **settings})
        self._state: Mapping[str, Any] = MappingProxyType({CHAT: ()})
        self._turns: list[Turn] = []

    # -- the conversation -------------------------------------------------------------

    async def send(self, text: str) -> Turn:
        """The user types ``text`` (a request, or the reply to a question or card)."""
        if not isinstance(text, str) or not text.strip():
            raise ArgumentError(f"send() needs the text the user types, got {text!r}", argument="text")
        return await self._turn(Message("user", [text], author_name="user", message_id=self._user_id()))

    async def click(self, action: str) -> Turn:
        """The user clicks the action button ``action`` of the card the conversation waits on."""
        waiting = self.waiting
        where = f"{type(self).__name__} at turn {len(self._turns) + 1}"
        if waiting is None:
            raise UsageError(f"{where}: there is no card to click; the conversation is not waiting on one. Use send().")
        request = next(c for c in waiting.contents if c.type == "user_input_request")
        if not request.options:
            raise UsageError(f"{where}: {request.prompt!r} is a question without buttons; answer it with send(text)")
        if action not in request.options:
            raise UsageError(
                f"{where}: the card {request.prompt!r} has no button {action!r}; its buttons are "
                f"{', '.join(map(repr, request.options))}{did_you_mean(action, request.options)}"
            )
        click = UserInputResponseContent(request_id=request.request_id, text=action)
        return await self._turn(Message("user", [click], author_name="user", message_id=self._user_id()))

    def send_sync(self, text: str) -> Turn:
        """``send`` for code that cannot ``await``."""
        from ..sync import run_sync

        return run_sync(self.send(text))

    def click_sync(self, action: str) -> Turn:
        from ..sync import run_sync

        return run_sync(self.click(action))

    def _user_id(self) -> str:
        return f"t{len(self._turns) + 1}.u"

    async def _turn(self, message: Message) -> Turn:
        number = len(self._turns) + 1
        before = len(self.transcript)
        state = {
            **self._state,
            CHAT: (*self.transcript, message),
            TURN: number,
            IDS: 0,
            MODE: self.mode,
            SETTINGS: self.settings,
        }
        try:
            result = await self.workflow.run(UserInput(number, message), state=state)
        except Exception as exc:
            if hasattr(exc, "add_note"):
                exc.add_note(
                    f"{type(self).__name__}: turn {number} failed; the conversation is as it was after turn "
                    f"{number - 1} (transcript, contexts and topics unchanged)."
                )
            raise
        self._state = result.state
        turn = Turn(number, message, self.transcript[before + 1 :], result)
        self._turns.append(turn)
        return turn

    # -- what there is to see ---------------------------------------------------------

    @property
    def state(self) -> Mapping[str, Any]:
        """What the harness keeps between turns (read-only): the chat, each part's state, what it waits on."""
        return self._state

    @property
    def transcript(self) -> tuple[Message, ...]:
        """The user's chat: everything the user wrote and was shown, in order."""
        return tuple(self._state.get(CHAT, ()))

    @property
    def waiting(self) -> Message | None:
        """The question or card the conversation waits on, or ``None``."""
        return self._state.get(WAITING)

    @property
    def turns(self) -> tuple[Turn, ...]:
        return tuple(self._turns)

    @property
    def sandbox(self) -> Mapping[str, str]:
        """Files the orchestrator wrote (a centralised harness): path → text."""
        return MappingProxyType(dict(self._state.get(SANDBOX, {})))

    def context_of(self, executor_id: str) -> tuple[Message, ...]:
        """An orchestrator's active context now."""
        executor = self.workflow.get_executor(executor_id)
        if not isinstance(executor, Orchestrator):
            raise ArgumentError(
                f"{executor_id!r} is a {executor.kind}; only orchestrators keep a context between turns",
                argument="executor_id",
            )
        st: OrchestratorState | None = self._state.get(executor_id)
        return st.context if st is not None else ()

    @property
    def trace(self) -> Trace:
        """Every turn's snapshots, in order, with the user's chat."""
        snapshots = [s for t in self._turns for s in t.result.trace]
        return Trace(snapshots, tuple(self.workflow.executors), chat=self.transcript, name=self.workflow.name)

    def who_has(self, fact: Any) -> Any:
        """``trace.who_has(fact)`` over the whole conversation."""
        return self.trace.who_has(fact)

    def gaps(self) -> Any:
        """The duplicate and missed answers of the conversation so far (``find_gaps``)."""
        from .gaps import find_gaps

        return find_gaps(self.trace)

    def view(self, turn: int | None = None, **options: Any) -> HarnessView:
        """The run view of one turn (the last by default) with the user's chat as its own column."""
        return HarnessView(self, turn=turn, **options)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.orchestrator.id!r}, turns={len(self._turns)})"

    def to_text(self) -> str:
        """The last turn's view as text, or that there is none yet."""
        return self.view().to_text() if self._turns else f"{self!r}: no turns yet"


class StandardHarness(Harness):
    """The distributed harness: components talk to the user directly; nothing reconciles at the top."""

    mode = "standard"

    def __init__(self, orchestrator: Orchestrator, *, name: str | None = None, **settings: Any) -> None:
        for setting, value in settings.items():
            raise bad_argument(
                "StandardHarness",
                setting,
                value,
                "a standard harness takes only name=; context_budget, keep_recent and sandbox belong to "
                "CentralizedHarness (the orchestrator alone talks to the user there)"
                if setting in ("context_budget", "keep_recent", "sandbox")
                else "a standard harness takes only name=",
            )
        super().__init__(orchestrator, name=name)


class CentralizedHarness(Harness):
    """The centralised harness: only the orchestrator talks to the user.

    Args:
        context_budget: estimated tokens above which the orchestrator compacts its context
            (older messages become one summary; the full text goes to the sandbox); ``None``
            never compacts.
        keep_recent: messages kept as they are when compacting.
        sandbox: whether the orchestrator writes every component's outputs to the sandbox,
            where it can read them back after compaction.
    """

    mode = "centralized"

    def __init__(
        self,
        orchestrator: Orchestrator,
        *,
        name: str | None = None,
        context_budget: int | None = None,
        keep_recent: int = 6,
        sandbox: bool = True,
    ) -> None:
        if context_budget is not None and (
            isinstance(context_budget, bool) or not isinstance(context_budget, int) or context_budget < 1
        ):
            raise bad_argument(
                "CentralizedHarness", "context_budget", context_budget, "give tokens as an int >= 1, or None"
            )
        super().__init__(
            orchestrator, name=name, context_budget=context_budget, keep_recent=keep_recent, sandbox=sandbox
        )


def compare(*harnesses: Harness) -> Comparison:
    """Harnesses side by side (a display): each one's chat and the gaps found in it."""
    return Comparison(*harnesses)
