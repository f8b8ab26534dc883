"""A conversation with an agent or a workflow, turn by turn, whose route and context modes can change.

This is what the playground widgets drive; everything here works without them (and is
tested without a browser). A change of route or of an executor's context mode made while a
turn runs waits for the next turn; each finished turn records the route that answered and
the mode every agent executor used.

```python
dialogue = Dialogue(workflow)           # or Dialogue(agent)
await dialogue.send("Plan a weekend in Porto")
dialogue.set_route("smart")             # the router's routes
dialogue.set_mode("writer", "last_agent")
await dialogue.send("Make it cheaper")
dialogue.exchanges[-1].routes           # {'planner': 'smart', ...}
```
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import ArgumentError, RouteNotFoundError, UsageError, WorkflowBusyError, did_you_mean
from .messages import Message
from .rendering import render

if TYPE_CHECKING:
    from .routing import RoutingChatClient
    from .sessions import AgentSession
    from .workflow import AgentExecutor, RunResult, WorkflowEvent

__all__ = ["Dialogue", "Exchange"]

Filter = Callable[[list[Message]], list[Message]]
CUSTOM = "custom: "


@dataclass(frozen=True, slots=True)
class Exchange:
    """One turn: what the user sent, what came back, and with which route and modes."""

    number: int
    text: str
    answer: str
    routes: Mapping[str, str | None]
    """Per agent executor that answered: the route that answered it (``None`` without a router)."""
    modes: Mapping[str, str]
    """Per agent executor: its context mode this turn (``custom: <filter>`` for a custom one)."""
    result: RunResult | None = None
    error: str | None = None
    answers: tuple[tuple[str, str], ...] = field(default=())
    """Every agent's reply this turn, in order: ``(executor id, text)``."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn": self.number,
            "text": self.text,
            "answer": self.answer,
            "answers": [list(a) for a in self.answers],
            "routes": dict(self.routes),
            "modes": dict(self.modes),
            "error": self.error,
        }


def _router_of(agents: list[AgentExecutor]) -> RoutingChatClient | None:
    from .routing import RoutingChatClient

    found = [getattr(ex.agent, "client", None) for ex in agents]
    routers = list({id(r): r for r in found if isinstance(r, RoutingChatClient)}.values())
    if len(routers) > 1:
        raise UsageError(
            "the agents use more than one RoutingChatClient; pass router=... to say which one the route applies to"
        )
    return routers[0] if routers else None


class Dialogue:
    """A conversation with ``target`` (an agent or a workflow); see the module's docs.

    Args:
        target: an agent (it becomes a one-executor workflow) or a ``Workflow``.
        router: the ``RoutingChatClient`` whose route ``set_route`` changes; found among the
            agents' clients when not given.
        session: the session of an agent target (a new one by default). For a workflow, each
            agent executor keeps its own session.
        filters: named context filters offered as ``custom: <name>`` modes, besides the shipped ones.
    """

    def __init__(
        self,
        target: Any,
        *,
        router: RoutingChatClient | None = None,
        session: AgentSession | None = None,
        filters: Mapping[str, Filter] | None = None,
    ) -> None:
        from .workflow import AgentExecutor, Workflow, WorkflowAgent, WorkflowBuilder
        from .workflow.filters import user_messages, users_and_last_reply

        if isinstance(target, WorkflowAgent):  # a workflow used as an agent: its own agents, modes and routes
            target = target.workflow
        if isinstance(target, Workflow):
            self.workflow = target
        else:
            start = AgentExecutor(target, session=session) if not isinstance(target, AgentExecutor) else target
            self.workflow = WorkflowBuilder(start_executor=start, name=start.id).build()
        self.agents: dict[str, AgentExecutor] = {
            eid: ex for eid, ex in self.workflow.executors.items() if isinstance(ex, AgentExecutor)
        }
        for ex in self.agents.values():
            if ex.session is None:
                ex.session = ex.agent.create_session()  # now, so a route can be chosen before the first turn
        self.router = router if router is not None else _router_of(list(self.agents.values()))
        self.filters: dict[str, Filter] = {
            "user_messages": user_messages,
            "users_and_last_reply": users_and_last_reply,
            **(filters or {}),
        }
        self.exchanges: list[Exchange] = []
        self.busy = False
        self._pending: dict[str, Callable[[], None]] = {}
        """Changes made during a turn, applied when it ends (by key: ``route``, ``mode:<executor>``)."""
        self._pending_route: str | None = None
        self._pending_modes: dict[str, str] = {}

    # -- routes ---------------------------------------------------------------------

    @property
    def routes(self) -> list[str]:
        return list(self.router.routes) if self.router is not None else []

    def _routed_sessions(self) -> list[AgentSession]:
        routed = [ex for ex in self.agents.values() if getattr(ex.agent, "client", None) is self.router]
        return list({id(ex.session): ex.session for ex in routed if ex.session is not None}.values())

    @property
    def route(self) -> str | None:
        """The route the next turn will use."""
        if self.router is None:
            return None
        if "route" in self._pending:
            return self._pending_route
        sessions = self._routed_sessions()
        return self.router.get_active_route(sessions[0] if sessions else None)

    def set_route(self, name: str) -> None:
        """Answer from route ``name`` from the next turn on (every routed agent moves)."""
        if self.router is None:
            raise UsageError("this conversation has no RoutingChatClient: there is no route to choose")
        router = self.router
        if name not in router.routes:
            routes = tuple(router.routes)
            raise RouteNotFoundError(
                f"{self.workflow.name!r}: there is no route {name!r} (routes: {', '.join(routes)})"
                + did_you_mean(name, routes),
                route=name,
                routes=routes,
            )

        def apply() -> None:
            for session in self._routed_sessions():
                router.set_active_route(session, name)

        self._pending_route = name
        self._later("route", apply)

    # -- context modes ----------------------------------------------------------------

    def mode_options(self) -> list[str]:
        return ["full", "last_agent", *(CUSTOM + name for name in self.filters)]

    def mode_of(self, executor_id: str) -> str:
        """The mode the next turn will use, as ``full``, ``last_agent`` or ``custom: <filter>``."""
        pending = self._pending_modes.get(executor_id)
        if pending is not None:
            return pending
        ex = self._agent(executor_id)
        if ex.context_mode == "custom":  # by the name it is offered under, as chosen; else the function's own
            offered = next((name for name, f in self.filters.items() if f is ex.context_filter), None)
            return CUSTOM + str(offered or getattr(ex.context_filter, "__name__", "filter"))
        return ex.context_mode

    def set_mode(self, executor_id: str, mode: str) -> None:
        """Give ``executor_id`` the context mode ``mode`` (one of ``mode_options()``) from the next turn on."""
        ex = self._agent(executor_id)
        if mode not in self.mode_options():
            raise ArgumentError(
                f"executor {executor_id!r}: no mode {mode!r}; choose one of: {', '.join(self.mode_options())}"
                + did_you_mean(mode, self.mode_options()),
                argument="mode",
            )
        if mode.startswith(CUSTOM):
            chosen = self.filters[mode.removeprefix(CUSTOM)]

            def apply() -> None:
                ex.set_context_mode("custom", chosen)
        else:

            def apply() -> None:
                ex.set_context_mode(mode)  # type: ignore[arg-type]

        self._pending_modes[executor_id] = mode
        self._later(f"mode:{executor_id}", apply)

    def _agent(self, executor_id: str) -> AgentExecutor:
        try:
            return self.agents[executor_id]
        except KeyError:
            raise KeyError(
                f"no agent executor {executor_id!r} (agent executors: {', '.join(self.agents)})"
                + did_you_mean(executor_id, self.agents)
            ) from None

    def _later(self, key: str, apply: Callable[[], None]) -> None:
        """Apply now between turns; during a turn, once it ends."""
        if self.busy:
            self._pending[key] = apply
            return
        apply()
        self._settled(key)

    def _settled(self, key: str) -> None:
        if key.startswith("mode:"):
            self._pending_modes.pop(key.removeprefix("mode:"), None)

    def _apply_pending(self) -> None:
        pending, self._pending = self._pending, {}
        for key, apply in pending.items():
            apply()
            self._settled(key)

    # -- turns ----------------------------------------------------------------------

    async def send(self, text: str, *, on_event: Callable[[WorkflowEvent], None] | None = None) -> Exchange:
        """Run one turn; ``on_event`` sees every event as it happens (streamed tokens included).

        A failed turn raises, after recording it with its error; the conversation is as before it.
        """
        if not isinstance(text, str) or not text.strip():
            raise ArgumentError(f"send() needs the text of the message, got {text!r}", argument="text")
        if self.busy:
            raise WorkflowBusyError(f"a turn of {self.workflow.name!r} is still running; wait for it before sending")
        self.busy = True
        modes = {eid: self.mode_of(eid) for eid in self.agents}
        number = len(self.exchanges) + 1
        try:
            stream = self.workflow.run(text, stream=True)
            try:
                async for event in stream:
                    if on_event is not None:
                        on_event(event)
            except Exception as exc:
                result = getattr(exc, "result", None)
                self.exchanges.append(Exchange(number, text, "", {}, modes, result, f"{type(exc).__name__}: {exc}"))
                raise
            assert stream.result is not None
            exchange = self._exchange(number, text, modes, stream.result)
            self.exchanges.append(exchange)
            return exchange
        finally:
            self.busy = False
            self._apply_pending()

    @staticmethod
    def _exchange(number: int, text: str, modes: dict[str, str], result: RunResult) -> Exchange:
        routes: dict[str, str | None] = {}
        answers: list[tuple[str, str]] = []
        for s in result.trace:
            if s.response is not None:
                routes[s.executor_id] = s.response.route
                answers.append((s.executor_id, s.response.text))
        answer = answers[-1][1] if answers else result.text  # a streamed run's outputs are fragments
        return Exchange(number, text, answer, routes, modes, result, None, tuple(answers))

    @property
    def results(self) -> list[RunResult]:
        """The runs of the turns that succeeded, in order."""
        return [e.result for e in self.exchanges if e.result is not None and e.error is None]

    def reset(self) -> None:
        """Start a new conversation: every agent executor forgets; sessions are new; routes and modes stay."""
        if self.busy:
            raise WorkflowBusyError("a turn is still running; reset once it has finished")
        route = self.route
        for ex in self.agents.values():
            ex.reset()
            ex.session = ex.agent.create_session()
        if route is not None and self.router is not None:
            for session in self._routed_sessions():
                self.router.set_active_route(session, route)
        self.exchanges = []

    # -- export -----------------------------------------------------------------------

    def transcript(self) -> list[Message]:
        """The conversation as the user had it: each message sent and every agent's reply."""
        out: list[Message] = []
        for e in self.exchanges:
            out.append(Message("user", [e.text], author_name="user", message_id=f"t{e.number}.u"))
            for i, (executor, reply) in enumerate(e.answers):
                out.append(Message("assistant", [reply], author_name=executor, message_id=f"t{e.number}.a{i + 1}"))
        return out

    def to_json(self) -> str:
        """Every turn (route, modes, answers, error) and its trace, as JSON."""
        turns = []
        for e in self.exchanges:
            record = e.to_dict()
            record["trace"] = e.result.trace.to_dict() if e.result is not None else None
            turns.append(record)
        return json.dumps({"workflow": self.workflow.name, "turns": turns}, indent=2, ensure_ascii=False)

    def to_html(self) -> str:
        """A standalone page: the transcript with the route and modes of each turn, and each turn's run view."""
        return str(render(self, "page"))
