"""One turn of a ``ChatAgent``: load the history, ask the model, run its tool calls, save.

The steps are those of ``agent_nb.agents`` (1 to 5); a turn is made by ``ChatAgent.run`` and
answers whole (``respond``) or streamed (``stream``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..clients.base import closing_stream, provider_of
from ..conversation import handed_over
from ..errors import AgentNbError, EmptyAnswer, ModelError, ToolRoundsExceeded, ToolTimeout, UsageError
from ..messages import (
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    Usage,
    UserInputRequestContent,
    UserInputResponseContent,
)
from ..sessions import AgentSession
from ..sync import gather_or_cancel
from .requests import ModelRequest, recorder, safe_options

if TYPE_CHECKING:
    from ..tools import FunctionTool
    from .agent import ChatAgent

__all__ = ["Turn", "stray_note", "unanswered_calls"]


class Turn:
    """One run of a ChatAgent: load, ask (and run tools), save.

    The history is used only with a session: a run without one is stateless.
    """

    def __init__(
        self,
        agent: ChatAgent,
        new: list[Message],
        session: AgentSession | None,
        client_kwargs: Mapping[str, Any] | None,
        function_invocation_kwargs: Mapping[str, Any] | None,
    ) -> None:
        self.agent = agent
        self.new = new
        self.session = session
        self.history = agent.history if session is not None else None
        options = {**agent.options, **client_kwargs} if client_kwargs else dict(agent.options)
        if agent.tools:
            options["tools"] = agent.tools
        self.options = options
        self.run_kwargs = dict(function_invocation_kwargs or {})
        self.produced: list[Message] = []
        self.resumed: list[Message] = []
        """The answer to calls a previous turn left waiting for approval (it comes first)."""
        self.asking: list[Message] = []
        """Approval requests this turn ends with (returned, never stored)."""
        self.usage: Usage | None = None
        self.last: ChatResponse | None = None
        self.notes: list[str] = []
        """What this turn changed of the model's answer, or noticed in it (shown with the response)."""
        self.requests = recorder()
        """Where the requests this turn sends are kept (``agent_nb.agents.requests``), or ``None``."""
        self._spans = (0, 0, 0)
        self._at = 0.0  # when the request in flight was sent
        self._shown: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None  # options as sent, as shown

    # -- the steps ------------------------------------------------------------------

    async def _request(self) -> list[Message]:
        """Steps 1 and 2: the stored conversation, then this turn's input, after the instructions."""
        prior = await self._load()
        self.new = _without_contents(self.new, "user_input_request")  # a paused turn handed back whole
        approvals = {c.request_id: c for m in self.new for c in m.contents if c.type == "user_input_response"}
        if approvals:
            self.new = _without_contents(self.new, "user_input_response")
            await self._resume(prior, approvals)
        self._check_pending(prior)
        system = self.agent._system_message()
        self._spans = (len(system), len(prior), len(self.new))
        return [*system, *self._as_input(prior), *self.new]

    def _as_input(self, prior: list[Message]) -> list[Message]:
        """The stored conversation as this agent's model receives it.

        What *other* agents wrote there (two agents sharing a session) is handed over as ``user``, by
        the rule an executor hands replies over; its own replies keep their role.
        """
        me = self.agent.name
        return [
            handed_over(m) if m.role in ("assistant", "tool") and m.author_name not in (None, me) else m for m in prior
        ]

    def _sent(
        self, messages: list[Message], round_: int, answer: ChatResponse | None, error: BaseException | None
    ) -> None:
        """Keep one request as it was sent, with who answered it (or how it failed), when recording."""
        if self.requests is None:
            return
        now = time.time()
        usage = answer.usage if answer is not None else None
        if self._shown is None or self._shown[0] is not self.options:  # the options change only for tool_choice
            self._shown = (self.options, safe_options(self.options))
        self.requests.append(
            ModelRequest(
                self.agent.name,
                tuple(messages),
                self._spans,
                tuple(self.agent._tools_by_name),
                self._shown[1],
                round_,
                answer.route if answer is not None else None,
                answer.model if answer is not None else None,
                None if error is None else f"{type(error).__name__}: {error}",
                answer.repairs if answer is not None else (),
                self._at,
                now - self._at,
                usage.input_tokens if usage is not None else None,
                usage.output_tokens if usage is not None else None,
                answer.finish_reason if answer is not None else None,
                provider_of(self.agent.client, answer.route if answer is not None else None),
            )
        )

    async def _resume(self, prior: list[Message], approvals: dict[str, UserInputResponseContent]) -> None:
        """Run (or reject) the calls that waited for approval; their answer goes right after the calls.

        Approvals of calls this agent does not wait on (another agent's, handed on in a conversation) are ignored.
        """
        seq = [*prior, *self.new]
        answered = {c.call_id for m in seq for c in m.contents if c.type == "function_result"}
        waiting = [c for c in unanswered_calls(seq) if c.call_id not in answered]  # approvals of others: ignored
        tools = self.agent._tools_by_name
        runnable = [c for c in waiting if c.name in tools and (c.call_id in approvals or not _needs(tools, c))]
        if not runnable:
            return
        answer = await self._run_calls(runnable, approvals)
        where = max(i for i, m in enumerate(seq) if m.role == "assistant" and _calls(m))
        at = max(0, where + 1 - len(prior))
        self.new = [*self.new[:at], answer, *self.new[at:]]
        self.resumed = [answer]

    def _ask(self, calls: list[FunctionCallContent]) -> bool:
        """End the turn with approval requests if any call needs one (no call of the round runs yet)."""
        tools = self.agent._tools_by_name
        needing = [c for c in calls if c.name in tools and _needs(tools, c)]
        if not needing:
            return False
        requests = [
            UserInputRequestContent(
                request_id=c.call_id,
                prompt=f"{self.agent.name} wants to call {c.name}({_arguments(c)}). Allow it?",
                options=("approve", "reject"),
                function_call=c,
            )
            for c in needing
        ]
        self.asking = [Message("assistant", requests, author_name=self.agent.name)]
        return True

    def _check_pending(self, prior: list[Message]) -> None:
        """Tool calls the last turn left for the caller must be answered before the conversation goes on."""
        pending = unanswered_calls(prior)
        if not pending:
            return
        answered = {c.call_id for m in self.new for c in m.contents if c.type == "function_result"}
        missing = [c for c in pending if c.call_id not in answered]
        tools = self.agent._tools_by_name
        approval = [c for c in missing if c.name in tools and _needs(tools, c)]
        if approval:
            calls = ", ".join(f"{c.name} ({c.call_id})" for c in approval)
            raise UsageError(
                f"agent {self.agent.name!r}: its tool calls {calls} wait for approval. Answer them first: "
                "Message('user', [UserInputResponseContent(request_id=<call id>, approved=True or False)])"
            )
        if missing and not tools:
            # the model called tools this agent does not have, and the caller gave no results: say
            # so to the model instead of leaving the session stuck on calls nobody will answer
            results = [
                FunctionResultContent(
                    call_id=c.call_id, exception=f"not run: agent {self.agent.name!r} has no tool {c.name!r}"
                )
                for c in missing
            ]
            self.new = [Message("tool", results, author_name=self.agent.name), *self.new]
            return
        if missing:
            assert self.session is not None
            calls = ", ".join(f"{c.name} ({c.call_id})" for c in missing)
            raise UsageError(
                f"agent {self.agent.name!r}: session {self.session.session_id!r} ends with tool calls nobody "
                f"answered: {calls}. Send their results first: "
                "Message('tool', [FunctionResultContent(call_id=..., result=...)]), or give the agent the tools"
            )

    def _record(self, response: ChatResponse) -> list[FunctionCallContent]:
        """Keep a round's answer; the calls still to run (none when the agent has no tools)."""
        self.last = response
        if response.usage is not None:
            self.usage = response.usage if self.usage is None else self.usage + response.usage
        messages = self._checked(response)
        self.produced.extend(messages)
        if not self.agent.tools:
            stray = [c.name for m in messages for c in _calls(m)]
            if stray:
                self.notes.append(stray_note(stray, self.agent.name))
            return []  # no tools of its own: calls go back to the caller as the answer
        return unanswered_calls(self.produced, everywhere=True)

    def _checked(self, response: ChatResponse) -> list[Message]:
        """The model's messages as the agent keeps them: its own, never a user's or the system's.

        A reply in the ``user`` or ``system`` role would become, once stored, words the user
        never said or an instruction nobody gave: it is kept as an assistant message. An
        answer with nothing in it, or two tool calls under one id, is refused.
        """
        name = self.agent.name
        out = []
        for m in response.messages:
            if m.role in ("user", "system"):
                self.notes.append(f"the model answered with a {m.role} message; it was kept as an assistant message")
                m = m.with_role("assistant")
            if m.author_name is None:
                m = m.model_copy(update={"author_name": name})  # all else kept as it came
            out.append(m)
        if not any(c.type != "text" or c.text.strip() for m in out for c in m.contents):
            finish = f", finish reason {response.finish_reason!r}" if response.finish_reason else ""
            raise EmptyAnswer(
                f"agent {name!r}: the model answered nothing (no text, no tool call{finish}); nothing of this turn "
                "was stored. Try again, or check the model's limits (max_tokens, stop) and its route"
            )
        ids = [c.call_id for m in out for c in _calls(m)]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ModelError(
                f"agent {name!r}: the model made several tool calls under one call id ({', '.join(twice)}); their "
                "results could not be told apart, so none was run and nothing of this turn was stored"
            )
        return out

    async def _answer(self, calls: list[FunctionCallContent], round_: int) -> Message:
        """Step 4: run the calls (concurrently) and answer them in one tool message."""
        if round_ == self.agent.max_tool_rounds:
            n = self.agent.max_tool_rounds
            raise ToolRoundsExceeded(
                f"agent {self.agent.name!r}: the model still called tools after {n} rounds (max_tool_rounds={n}); "
                "raise max_tool_rounds if the task needs more, or check what the tools return"
            )
        answer = await self._run_calls(calls, {})
        if self.options.get("tool_choice") not in (None, "auto", "none"):
            self.options = {**self.options, "tool_choice": "auto"}  # forced for the first round only
        self.produced.append(answer)
        return answer

    def _ends(self, calls: list[FunctionCallContent]) -> bool:
        """Whether a call ran a tool that ends the turn (``ends_turn=True``: a hand-off)."""
        tools = self.agent._tools_by_name
        return any(getattr(tools.get(c.name), "ends_turn", False) for c in calls)

    async def _run_calls(
        self, calls: list[FunctionCallContent], approvals: Mapping[str, UserInputResponseContent]
    ) -> Message:
        """Run the calls concurrently and answer them in one tool message; rejected ones are not run."""
        tools = self.agent._tools_by_name

        async def one(call: FunctionCallContent) -> FunctionResultContent:
            tool = tools.get(call.name)
            verdict = approvals.get(call.call_id)
            if verdict is not None and not verdict.approved:
                why = f": {verdict.text}" if verdict.text else ""
                return FunctionResultContent(call_id=call.call_id, exception=f"the user rejected this call{why}")
            if tool is None:
                problem = f"there is no tool {call.name!r}; tools: {', '.join(tools)}"
                return FunctionResultContent(call_id=call.call_id, exception=problem)
            timeout = tool.timeout if tool.timeout is not None else self.agent.tool_timeout
            try:
                result = await _within(tool.invoke(call.arguments, **self.run_kwargs), timeout)
            except Exception as exc:  # the model sees what went wrong and may try again
                return FunctionResultContent(call_id=call.call_id, exception=f"{type(exc).__name__}: {exc}")
            if result is _TIMED_OUT:
                raise ToolTimeout(
                    f"agent {self.agent.name!r}: tool {tool.name!r} (call {call.call_id}) did not finish within "
                    f"{timeout:g} s, so the turn ends here. Give the tool more time (timeout= on the tool, or "
                    "tool_timeout= on the agent) or make it faster; a plain def tool runs on in its thread until "
                    "it returns, and what it returns then is dropped",
                    tool=tool.name,
                    timeout=float(timeout or 0),
                )
            return FunctionResultContent(call_id=call.call_id, result=result)

        results = await gather_or_cancel(one(c) for c in calls)  # a timeout stops the round's other calls too
        return Message("tool", list(results), author_name=self.agent.name)

    async def _load(self) -> list[Message]:
        """Step 1: the stored conversation, and what this run saved of it already (not yet written)."""
        if self.history is None or self.session is None:
            return []
        from ..history_writes import current

        prior = await self.history.load(self.session)
        writes = current()
        return [*prior, *writes.held(self.history, self.session)] if writes is not None else prior

    async def _save(self) -> None:
        """Step 5, only once everything succeeded; in a workflow run, only once the whole run has."""
        if self.history is not None and self.session is not None:
            from ..history_writes import current

            messages = [*self.new, *self.produced]
            writes = current()
            if writes is not None:
                writes.hold(self.history, self.session, messages)
            else:
                await self.history.save(self.session, messages)

    def _model_error(self, exc: Exception) -> ModelError:
        """A chat client's own exception, named as what it is: the model call failed."""
        stored = ""
        if self.history is not None and self.session is not None:
            stored = (
                f"; nothing of this turn was stored: the history of session {self.session.session_id!r} is as it was"
            )
        return ModelError(f"agent {self.agent.name!r}: the chat client failed ({type(exc).__name__}: {exc}){stored}")

    def _note(self, exc: BaseException) -> None:
        """Say on any failure (cancellation included) that the stored history is untouched."""
        if self.history is not None and self.session is not None and hasattr(exc, "add_note"):
            note = f"the history of session {self.session.session_id!r} is as it was"
            if not any(note in n for n in getattr(exc, "__notes__", ())) and note not in str(exc):
                exc.add_note(f"agent {self.agent.name!r}: nothing of this turn was stored: {note}")

    def _response(self) -> AgentResponse:
        last = self.last
        return AgentResponse(
            [*self.resumed, *self.produced, *self.asking],
            response_id=last.response_id if last else None,
            model=last.model if last else None,
            route=last.route if last else None,
            repairs=(*(last.repairs if last else ()), *self.notes),
            usage=self.usage,
        )

    # -- the two ways to run it -----------------------------------------------------

    async def respond(self) -> AgentResponse:
        try:
            request = await self._request()
            for round_ in range(self.agent.max_tool_rounds + 1):
                sent = [*request, *self.produced]
                self._at = time.time()
                try:
                    response = await self.agent.client.get_response(sent, self.options, session=self.session)
                except AgentNbError as exc:
                    self._sent(sent, round_, None, exc)
                    raise
                except Exception as exc:
                    self._sent(sent, round_, None, exc)
                    raise self._model_error(exc) from exc
                self._sent(sent, round_, response, None)
                calls = self._record(response)
                if not calls or self._ask(calls):
                    break
                await self._answer(calls, round_)
                if self._ends(calls):
                    break
            await self._save()
        except BaseException as exc:
            self._note(exc)
            raise
        return self._response()

    async def stream(self) -> AsyncIterator[AgentResponseUpdate]:
        name = self.agent.name
        try:
            request = await self._request()
            for m in self.resumed:
                yield AgentResponseUpdate(m.contents, role="tool", author_name=name)
            for round_ in range(self.agent.max_tool_rounds + 1):
                updates = []
                sent = [*request, *self.produced]
                self._at = time.time()
                stream = self.agent.client.get_streaming_response(sent, self.options, session=self.session)
                try:
                    async with closing_stream(stream) as chunks:
                        async for update in chunks:
                            updates.append(update)
                            yield AgentResponseUpdate(
                                update.contents,
                                role=update.role,
                                author_name=update.author_name or name,
                                message_id=update.message_id,
                                response_id=update.response_id,
                                model=update.model,
                                route=update.route,
                                repairs=update.repairs,
                                usage=update.usage,
                            )
                except AgentNbError as exc:
                    self._sent(sent, round_, None, exc)
                    raise
                except Exception as exc:
                    self._sent(sent, round_, None, exc)
                    raise self._model_error(exc) from exc
                reply = ChatResponse.from_updates(updates)
                self._sent(sent, round_, reply, None)
                calls = self._record(reply)
                if not calls or self._ask(calls):
                    break
                answer = await self._answer(calls, round_)
                yield AgentResponseUpdate(answer.contents, role="tool", author_name=name)
                if self._ends(calls):
                    break
            await self._save()
            for m in self.asking:
                yield AgentResponseUpdate(m.contents, role="assistant", author_name=name, message_id="approval")
        except BaseException as exc:
            self._note(exc)
            raise


_TIMED_OUT = object()


async def _within(call: Awaitable[Any], seconds: float | None) -> Any:
    """``await call``, or ``_TIMED_OUT`` after ``seconds`` (the call is then cancelled).

    A ``TimeoutError`` the tool raises itself is its own failure, not a timeout of ours.
    """
    if seconds is None:
        return await call
    import asyncio

    task = asyncio.ensure_future(call)
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    except BaseException:
        task.cancel()  # the turn itself was cancelled
        raise
    if not done:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)  # its cancellation runs to the end first
        return _TIMED_OUT
    return task.result()


def stray_note(names: Sequence[str], agent: str) -> str:
    """What an agent without tools notes when its model calls some anyway."""
    return (
        f"the model called {', '.join(map(repr, names))}, but agent {agent!r} has no tools: "
        "the calls were not run and come back as the answer (the next turn tells the model so)"
    )


def unanswered_calls(messages: Sequence[Message], *, everywhere: bool = False) -> list[FunctionCallContent]:
    """The tool calls without a result: after the last assistant message with calls (or anywhere)."""
    answered = {c.call_id for m in messages for c in m.contents if c.type == "function_result"}
    if everywhere:
        scope: Sequence[Message] = messages
    else:
        last = max((i for i, m in enumerate(messages) if m.role == "assistant" and _calls(m)), default=-1)
        scope = messages[last:] if last >= 0 else ()
    return [c for m in scope for c in _calls(m) if c.call_id not in answered]


def _calls(message: Message) -> list[FunctionCallContent]:
    return [c for c in message.contents if isinstance(c, FunctionCallContent)]


def _needs(tools: Mapping[str, FunctionTool], call: FunctionCallContent) -> bool:
    return tools[call.name].requires_approval


def _arguments(call: FunctionCallContent) -> str:
    args = call.arguments
    if isinstance(args, str):
        return args
    return ", ".join(f"{k}={v!r}" for k, v in args.items())


def _without_contents(messages: list[Message], kind: str) -> list[Message]:
    """The messages minus contents of one ``type``; a message left empty is dropped."""
    if not any(c.type == kind for m in messages for c in m.contents):
        return messages
    out = []
    for m in messages:
        kept = [c for c in m.contents if c.type != kind]
        if len(kept) == len(m.contents):
            out.append(m)
        elif kept:
            out.append(m.model_copy(update={"contents": tuple(kept)}))
    return out
