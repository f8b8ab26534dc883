"""Small widgets usable alone: switch a route, switch an executor's context mode, see a trace.

Each keeps its logic in the core (``RoutingChatClient``, ``AgentExecutor``, ``Dialogue``)
and only maps a control onto it; a refused change is shown beside the control, which goes
back to the value really in force.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from ..display.html import container, escape
from ..errors import bad_argument, did_you_mean

if TYPE_CHECKING:
    from ..dialogue import Dialogue, Filter
    from ..routing import RoutingChatClient
    from ..sessions import AgentSession
    from ..trace import Trace
    from ..workflow import AgentExecutor, RunResult

__all__ = ["ContextModeSwitcher", "ContextView", "RouteSwitcher"]


def problem_html(error: BaseException) -> str:
    return container(f'<div class="error">{escape(type(error).__name__)}: {escape(error)}</div>')


class _Switcher(w.HBox):  # type: ignore[misc]
    """A labelled dropdown with a place for the message of a refused change."""

    def __init__(self, label: str, options: Sequence[str], value: str | None) -> None:
        self._reverting = False
        self.dropdown = w.Dropdown(options=list(options), value=value, description=label)
        self.dropdown.layout.width = "max-content"
        self.message = w.HTML()
        super().__init__([self.dropdown, self.message])
        self.dropdown.observe(self._changed, names="value")

    @property
    def value(self) -> Any:
        return self.dropdown.value

    @value.setter
    def value(self, value: Any) -> None:
        options = list(self.dropdown.options)
        if value not in options:
            raise bad_argument(
                type(self).__name__,
                "value",
                value,
                f"choose one of: {', '.join(map(str, options))}" + did_you_mean(str(value), map(str, options)),
            )
        self.dropdown.value = value

    def _changed(self, change: Mapping[str, Any]) -> None:
        if self._reverting:
            return
        try:
            self.apply(change["new"])
        except Exception as exc:
            self._reverting = True
            try:
                self.dropdown.value = self.current()  # back to what is really in force
            finally:
                self._reverting = False
            self.message.value = problem_html(exc)
            return
        self.message.value = ""

    def apply(self, value: Any) -> None:
        raise NotImplementedError

    def current(self) -> Any:
        raise NotImplementedError


class RouteSwitcher(_Switcher):
    """Choose the route of ``session`` (or of every session given) on ``router``.

    With a ``dialogue``, the change applies from its next turn.
    """

    def __init__(
        self,
        router: RoutingChatClient,
        session: AgentSession | Sequence[AgentSession] | None = None,
        *,
        dialogue: Dialogue | None = None,
    ) -> None:
        from ..sessions import AgentSession

        self.router = router
        self.dialogue = dialogue
        self.sessions: list[AgentSession] = [session] if isinstance(session, AgentSession) else list(session or ())
        if dialogue is None and not self.sessions:
            raise ValueError("RouteSwitcher needs the session whose route it switches (or a dialogue)")
        super().__init__("route", list(router.routes), self.current())

    def current(self) -> str:
        if self.dialogue is not None:
            return self.dialogue.route or self.router.get_active_route(None)
        return self.router.get_active_route(self.sessions[0])

    def apply(self, value: str) -> None:
        if self.dialogue is not None:
            self.dialogue.set_route(value)
            return
        for session in self.sessions:
            self.router.set_active_route(session, value)


class ContextModeSwitcher(_Switcher):
    """Choose an agent executor's context mode: ``full``, ``last_agent`` or ``custom: <filter>``.

    With a ``dialogue``, the change applies from its next turn.
    """

    def __init__(
        self,
        executor: AgentExecutor,
        *,
        filters: Mapping[str, Filter] | None = None,
        dialogue: Dialogue | None = None,
    ) -> None:
        from ..workflow.filters import user_messages, users_and_last_reply

        self.executor = executor
        self.dialogue = dialogue
        self.filters: dict[str, Filter] = (
            dialogue.filters
            if dialogue is not None
            else {"user_messages": user_messages, "users_and_last_reply": users_and_last_reply, **(filters or {})}
        )
        options = ["full", "last_agent", *(f"custom: {name}" for name in self.filters)]
        now = self.current()
        super().__init__(executor.id, options if now in options else [*options, now], now)

    def current(self) -> str:
        if self.dialogue is not None:
            return self.dialogue.mode_of(self.executor.id)
        if self.executor.context_mode == "custom":
            return "custom: " + getattr(self.executor.context_filter, "__name__", "filter")
        return self.executor.context_mode

    def apply(self, value: str) -> None:
        if self.dialogue is not None:
            self.dialogue.set_mode(self.executor.id, value)
        elif value.startswith("custom: "):
            self.executor.set_context_mode("custom", self.filters[value.removeprefix("custom: ")])
        else:
            self.executor.set_context_mode(value)  # type: ignore[arg-type]


class ContextView(w.HTML):  # type: ignore[misc]
    """Every executor's context side by side (the run view), as a widget that ``update`` redraws."""

    def __init__(self, source: Trace | RunResult | Sequence[RunResult] | None = None, **options: Any) -> None:
        super().__init__()
        self.options = options
        if source is not None:
            self.update(source)

    def update(self, source: Trace | RunResult | Sequence[RunResult], *, turn: int | None = None) -> None:
        from ..display.context import trace_html
        from ..display.run import run_view
        from ..trace import Trace

        if isinstance(source, Trace):
            self.value = trace_html(source, **self.options)
        else:
            self.value = run_view(source, turn=turn, **self.options)
