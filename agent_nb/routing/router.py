"""``RoutingChatClient``: one chat client, many routes, a route per session.

``RoutingChatClient`` sends each request to its session's active route, so a conversation
can move between models and providers mid-way and keep its history (the history provider
replays it to whichever route is active). Each session's route lives in the session's own
state: it persists with the session, and sessions never share a route by accident.

Every route must keep its history with the caller: a client whose conversation lives on
the service is refused when registered. Before sending, the router checks that the route
accepts the conversation (see ``agent_nb.routing.history_check``) and either refuses with the
offending messages named (``history_policy="strict"``) or repairs it (``"repair"``).

```python
router = RoutingChatClient({"fast": small_model, "smart": big_model}, default_route="fast")
agent = ChatAgent(router, name="assistant", history=InMemoryHistoryProvider())
session = agent.create_session()
await agent.run("hello", session=session)         # answered by "fast"
router.set_active_route(session, "smart")
await agent.run("and now?", session=session)      # "smart" gets the whole conversation
```
"""

from __future__ import annotations

import functools
import itertools
import types
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Literal

from ..clients.base import Capabilities, ChatClient, capabilities_of, closing_stream, refuse_service_managed
from ..errors import (
    AgentNbError,
    AllAttemptsFailed,
    ArgumentError,
    RouteIncompatibleError,
    RouteNotFoundError,
    UsageError,
    bad_argument,
    did_you_mean,
)
from ..messages import ChatResponse, ChatResponseUpdate, Message
from ..rendering import Displayable
from ..sessions import AgentSession
from .history_check import HistoryScan, check_history, repair_history

__all__ = ["HistoryPolicy", "RoutingChatClient"]

HistoryPolicy = Literal["strict", "repair"]
Select = Callable[[Sequence[Message], Mapping[str, Any], AgentSession | None], str | None]
_STATE_KEY = "routes"  # session.state["routes"][router name] = active route
_ROUTERS: dict[int, tuple[weakref.ref[AgentSession], dict[str, weakref.ref[RoutingChatClient]]]] = {}
"""Per live session (by identity), the live router of each name that set its route; nothing is kept alive."""
_KEPT_SCANS = 64
_TOOL_OPTIONS = ("tools", "tool_choice", "parallel_tool_calls")


_BORN = itertools.count()
"""The order routers were made in: of two alike routers of one name, the newer takes a session over."""


def _forget_session(key: int, _: object) -> None:
    _ROUTERS.pop(key, None)


def _alike(a: RoutingChatClient, b: RoutingChatClient) -> bool:
    """Made the same way: the same routes (names, kinds of client, models), default and policy."""

    def shape(r: RoutingChatClient) -> tuple[Any, ...]:
        routes = tuple((n, type(c).__qualname__, getattr(c, "model", None)) for n, c in r._routes.items())
        return routes, r.default_route, r.history_policy, r.select is None

    return shape(a) == shape(b)


class _Checked:
    """A conversation a route's check already went through, kept so the next turn checks only what is new."""

    __slots__ = ("caps", "messages", "route", "scan")

    def __init__(self, route: str, caps: Capabilities, messages: list[Message], scan: HistoryScan) -> None:
        self.route, self.caps, self.messages, self.scan = route, caps, messages, scan


class RoutingChatClient(Displayable):
    """A chat client that sends each request to the active route of the request's session.

    Args:
        routes: name -> chat client; every one caller-managed.
        default_route: the route of a session that has none set; by default the first route.
        select: ``select(messages, options, session) -> name | None`` picks a route per
            request (cost, capability, content); ``None`` falls back to the active route.
        history_policy: ``"strict"`` refuses a history the route would reject;
            ``"repair"`` changes it so the route accepts it, and records what changed.
        name: where routes are kept in ``session.state["routes"]``; routers sharing sessions
            need different names.
    """

    history_mode = "caller"

    def __init__(
        self,
        routes: Mapping[str, ChatClient],
        *,
        default_route: str | None = None,
        select: Select | None = None,
        history_policy: HistoryPolicy = "strict",
        name: str = "router",
    ) -> None:
        if not routes:
            raise ArgumentError(
                "RoutingChatClient needs at least one route: RoutingChatClient({'name': client})", argument="routes"
            )
        if history_policy not in ("strict", "repair"):
            raise ArgumentError(
                f"history_policy must be 'strict' or 'repair', not {history_policy!r}", argument="history_policy"
            )
        self.name = name
        self._born = next(_BORN)
        self.select = select
        self.history_policy: HistoryPolicy = history_policy
        self._routes: dict[str, ChatClient] = {}
        self._checked: dict[str, _Checked] = {}  # session id -> its last checked request
        for route, client in routes.items():
            self.add_route(route, client)
        self.default_route = None if default_route is None else self._known(default_route)

    # -- routes ---------------------------------------------------------------------

    @property
    def routes(self) -> Mapping[str, ChatClient]:
        """The routes, read-only; change them with ``add_route`` and ``remove_route``."""
        return types.MappingProxyType(self._routes)

    @property
    def capabilities(self) -> Capabilities:
        """Routes are checked one by one, so the router itself claims everything."""
        return Capabilities(trailing_tool_call=True)

    def add_route(self, name: str, client: ChatClient) -> None:
        if not isinstance(name, str) or not name:
            raise ArgumentError(f"a route name must be a non-empty string, got {name!r}", argument="name")
        if name in self._routes:
            raise ArgumentError(
                f"router {self.name!r} already has a route {name!r}; remove it first to replace it", argument="name"
            )
        if not hasattr(client, "get_response"):
            raise ArgumentError(f"route {name!r}: {type(client).__name__} is not a chat client", argument="client")
        refuse_service_managed(f"route {name!r}", client)
        self._routes[name] = client

    def remove_route(self, name: str) -> ChatClient:
        """Remove a route; sessions that were on it get a clear error on their next turn."""
        client = self._routes.pop(self._known(name))
        if self.default_route == name:
            self.default_route = None
        return client

    def _known(self, name: str, session: AgentSession | None = None) -> str:
        if name in self._routes:
            return name
        where = f"session {session.session_id!r}: " if session is not None else ""
        raise RouteNotFoundError(
            f"{where}router {self.name!r} has no route {name!r} (routes: {', '.join(self._routes) or 'none'})"
            + did_you_mean(name, self._routes),
            route=name,
            routes=tuple(self._routes),
        )

    # -- the session's route --------------------------------------------------------

    def _own(self, session: AgentSession, *, setting: bool) -> None:
        """Refuse a session whose route another live router of the same name set: each would move the other's.

        The router that sets a session's route is remembered (weakly, in this process); reading
        a route another one set, or setting it, is refused while that one lives. A router made
        later the same way (a notebook cell run again, while the old agents are still shown)
        takes the session over instead, and the older one is then refused.
        """
        key = id(session)
        entry = _ROUTERS.get(key)
        if entry is None or entry[0]() is not session:
            if not setting:
                return
            entry = _ROUTERS[key] = (weakref.ref(session, functools.partial(_forget_session, key)), {})
        ref = entry[1].get(self.name)
        other = ref() if ref is not None else None
        if other is not None and other is not self and other._born < self._born and _alike(other, self):
            entry[1][self.name] = weakref.ref(self)  # the same router made again (a cell run again): it takes over
            return
        if other is not None and other is not self and other._born > self._born and _alike(other, self):
            raise UsageError(
                f"session {session.session_id!r} is now routed by a newer RoutingChatClient named {self.name!r} "
                f"with the same routes ({other!r}), made after this one ({self!r}); it took the session over. If "
                "you ran a cell again, use the agents it made; if two agents need routes of their own, give each "
                "router its own name (RoutingChatClient(..., name='...'))"
            )
        if other is not None and other is not self:
            raise UsageError(
                f"session {session.session_id!r} is routed by two RoutingChatClients named {self.name!r} "
                f"({other!r} set its route, {self!r} uses it too); both keep the route in "
                f"session.state['routes'][{self.name!r}], so each would move the other's route. Give each router "
                "its own name (RoutingChatClient(..., name='...')), or let the agents share one router"
            )
        if setting:
            entry[1][self.name] = weakref.ref(self)

    def get_active_route(self, session: AgentSession | None = None) -> str:
        """The session's route, else the default route, else the first route."""
        if session is not None:
            self._own(session, setting=False)
        stored = session.state.get(_STATE_KEY, {}).get(self.name) if session is not None else None
        if session is not None and stored is not None:
            if stored not in self._routes:
                raise RouteNotFoundError(
                    f"session {session.session_id!r} is on route {stored!r}, which router {self.name!r} no longer "
                    f"has (routes: {', '.join(self._routes)}); choose one with set_active_route(session, name)",
                    route=stored,
                    routes=tuple(self._routes),
                )
            return str(stored)
        if not self._routes:
            raise RouteNotFoundError(f"router {self.name!r} has no routes left", route="", routes=())
        return self.default_route or next(iter(self._routes))

    def set_active_route(self, session: AgentSession, name: str) -> None:
        """Send the session's next requests to ``name``; an unknown name leaves the session as it was."""
        if not isinstance(session, AgentSession):
            raise bad_argument(f"router {self.name!r}", "session", session, "give the AgentSession whose route moves")
        if not isinstance(name, str):
            raise bad_argument(f"router {self.name!r}", "name", name, f"give a route name: {', '.join(self._routes)}")
        self._known(name, session)
        self._own(session, setting=True)
        routes = dict(session.state.get(_STATE_KEY, {}))  # a new dict: a state snapshot stays valid
        routes[self.name] = name
        session.state[_STATE_KEY] = routes

    # -- requests -------------------------------------------------------------------

    def _choose(
        self, messages: Sequence[Message], options: Mapping[str, Any], session: AgentSession | None
    ) -> tuple[str, ChatClient]:
        route = self.select(messages, options, session) if self.select is not None else None
        if route is not None and not isinstance(route, str):
            name = getattr(self.select, "__name__", "select")
            raise bad_argument(
                f"router {self.name!r}",
                f"the route {name}() chose",
                route,
                f"select must return a route name ({', '.join(self._routes)}) or None for the session's route",
            )
        route = self._known(route, session) if route is not None else self.get_active_route(session)
        return route, self._routes[route]

    def _check(
        self, route: str, caps: Capabilities, messages: Sequence[Message], session: AgentSession | None
    ) -> HistoryScan:
        """The scan of ``messages``; for a session's next turn only the new messages are scanned.

        A conversation only grows, so the last request is usually a prefix of this one. Its
        first and last messages must be the very same objects (a reloaded history is not, and
        is scanned afresh rather than compared field by field); then one C-level pass confirms
        the rest (identical objects compare at once).
        """
        sid = session.session_id if session is not None else None
        kept = self._checked.pop(sid, None) if sid is not None else None
        n = len(kept.messages) if kept is not None else 0
        if (
            kept is not None
            and kept.route == route
            and kept.caps == caps
            and 0 < n <= len(messages)
            and kept.messages[0] is messages[0]
            and kept.messages[-1] is messages[n - 1]
            and messages[:n] == kept.messages  # identical objects compare in C; equal ones are as good
        ):
            scan = kept.scan.feed(messages[n:])  # the kept scan moves on; it is kept again below
        else:
            scan = HistoryScan(caps).feed(messages)
        if sid is not None:
            self._checked[sid] = _Checked(route, caps, list(messages), scan)  # most recently used last
            if len(self._checked) > _KEPT_SCANS:
                del self._checked[next(iter(self._checked))]
        return scan

    def _prepare(
        self, route: str, client: ChatClient, messages: Sequence[Message], session: AgentSession | None
    ) -> tuple[Sequence[Message], list[str]]:
        # changed since it was registered (store=True set later): refused now too, before anything is sent
        refuse_service_managed(f"route {route!r} of router {self.name!r}, now", client)
        caps = capabilities_of(client)
        problems = self._check(route, caps, messages, session).finish()
        if not problems:
            return messages, []
        notes: list[str] = []
        if self.history_policy == "repair":
            messages, notes = repair_history(messages, caps)
            problems = check_history(messages, caps)
            if not problems:
                return messages, notes
        listed = "\n".join(f"  - {p}" for p in problems[:10])
        more = f"\n  - and {len(problems) - 10} more" if len(problems) > 10 else ""
        fix = (
            "shorten the conversation or choose a route with a larger context"
            if all(p.kind == "context" for p in problems)
            else "choose another route, fix the history, or use RoutingChatClient(..., history_policy='repair')"
        )
        of = f" of session {session.session_id!r}" if session is not None else ""
        raise RouteIncompatibleError(
            f"route {route!r} would reject this conversation{of} ({len(problems)} problem"
            f"{'s' if len(problems) != 1 else ''}):\n{listed}{more}\nNothing was sent; {fix}.",
            route=route,
            problems=tuple(problems),
        )

    @staticmethod
    def _offered(route: str, client: ChatClient, options: Mapping[str, Any], repairs: list[str]) -> Mapping[str, Any]:
        """A route without tool calling is not offered the agent's tools; ``repairs`` says so."""
        if capabilities_of(client).tool_calls or not any(k in options for k in _TOOL_OPTIONS):
            return options
        repairs.append(f"the agent's tools were not offered: route {route!r} does not call tools")
        return {k: v for k, v in options.items() if k not in _TOOL_OPTIONS}

    async def get_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> ChatResponse:
        options = options or {}
        route, client = self._choose(messages, options, session)
        request, repairs = self._prepare(route, client, messages, session)
        options = self._offered(route, client, options, repairs)
        try:
            response = await client.get_response(request, options, session=session)
        except Exception as exc:
            self._name_route(exc, route)
            raise
        return response.model_copy(update={"route": route, "repairs": tuple(repairs)} if repairs else {"route": route})

    def _name_route(self, exc: BaseException, route: str) -> None:
        """Say which route failed: the note travels with the error, and an agent_nb error's text says it too."""
        where = f"route {route!r} of router {self.name!r}"
        if hasattr(exc, "add_note") and where not in getattr(exc, "__notes__", ()):
            exc.add_note(where)
        plain = isinstance(exc, AgentNbError) and not isinstance(exc, AllAttemptsFailed)  # a group keeps its words
        if plain and exc.args and isinstance(exc.args[0], str) and where not in exc.args[0]:
            exc.args = (f"{where}: {exc.args[0]}", *exc.args[1:])

    async def get_streaming_response(
        self,
        messages: Sequence[Message],
        options: Mapping[str, Any] | None = None,
        *,
        session: AgentSession | None = None,
    ) -> AsyncIterator[ChatResponseUpdate]:
        options = options or {}
        route, client = self._choose(messages, options, session)
        request, repairs = self._prepare(route, client, messages, session)
        options = self._offered(route, client, options, repairs)
        first = {"route": route, "repairs": tuple(repairs)}
        try:
            async with closing_stream(client.get_streaming_response(request, options, session=session)) as updates:
                async for update in updates:
                    yield update.model_copy(update=first if first else {"route": route})
                    first = {}
        except Exception as exc:
            self._name_route(exc, route)
            raise

    def __repr__(self) -> str:
        return f"RoutingChatClient({list(self._routes)}, default_route={self.default_route!r})"
