"""A form per pending request: approve or reject a tool call, or type an answer, and the run goes on.

```python
result = await workflow.run("refund order A7")      # status "waiting"
RequestsForm(workflow)                               # Approve / Reject beside each request
```

Every control has a Python way to drive it: ``form.answer(request_id, True)``. The
continuation runs on the kernel's event loop; a refused answer is shown and changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from ..contents import shorten
from ..display.html import container, escape
from .background import Background
from .switchers import problem_html

if TYPE_CHECKING:
    import asyncio

    from ..workflow import PendingRequest, RunResult, Workflow

__all__ = ["RequestsForm"]


class RequestsForm(w.VBox):  # type: ignore[misc]
    """The pending requests of ``workflow``, each with the controls its answer needs.

    A request that expects a ``bool`` (a tool approval) gets Approve and Reject buttons;
    any other gets a text box and Send (numbers and JSON are parsed for the types that need them).
    """

    def __init__(self, workflow: Workflow) -> None:
        self.workflow = workflow
        self.last_result: RunResult | None = None
        self.last_error: BaseException | None = None
        self.rows: dict[str, _Row] = {}
        self.status = w.HTML()
        self.status.add_class("anb-status")
        self._box = w.VBox()
        self._work = Background()
        super().__init__([self._box, self.status])
        self.add_class("anb-requests")
        self.refresh()

    @property
    def requests(self) -> tuple[PendingRequest, ...]:
        return self.workflow.pending_requests

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The live form, and beside it the requests as text and static HTML, for where no kernel runs it."""
        data: dict[str, Any] = super()._repr_mimebundle_(**kwargs)
        data["text/plain"] = self.to_text()
        items = "".join(
            f"<li><b>{escape(r.executor_id)}</b> asks <code>{escape(r.request_id)}</code>: {escape(r.prompt)}</li>"
            for r in self.requests
        )
        body = f"<ul>{items}</ul>" if items else '<div class="meta">no pending requests</div>'
        data["text/html"] = container(f'<div class="meta">requests of {escape(self.workflow.name)}</div>{body}')
        return data

    def to_text(self) -> str:
        lines = [f"RequestsForm({self.workflow.name!r}): {len(self.requests)} pending"]
        lines += [f"  {r.executor_id} asks {r.request_id}: {shorten(r.prompt, 90)}" for r in self.requests]
        return "\n".join(lines)

    def refresh(self) -> None:
        """Show the workflow's pending requests as they are now; one answered elsewhere is shown as answered."""
        self.rows = {r.request_id: _Row(r, self) for r in self.requests}
        for rid, row in self.rows.items():
            earlier = self.workflow.answered(rid)
            if earlier is not None:
                row.mark_answered(earlier)
        if self.rows:
            self._box.children = [row.widget for row in self.rows.values()]
        else:
            self._box.children = [w.HTML(container('<div class="meta">no pending requests</div>'))]

    def answer(self, request_id: str, value: Any) -> asyncio.Task[RunResult | None] | RunResult | None:
        """Answer one request and let the run go on (a task in a notebook; the result in a script)."""
        for row in self.rows.values():
            row.disable(True)
        return self._work.start(self._answer(request_id, value))

    async def wait(self) -> None:
        """Wait until everything started from the controls (a click, a typed answer) has finished."""
        await self._work.wait()

    async def _answer(self, request_id: str, value: Any) -> RunResult | None:
        self.status.value = container(f'<div class="meta">answering {escape(request_id)}…</div>')
        try:
            result = await self.workflow.run(responses={request_id: value})
        except Exception as exc:
            self.last_error = exc
            self.status.value = problem_html(exc)
            for rid, row in self.rows.items():
                row.disable(False)
                earlier = getattr(exc, "answered", None) if rid == request_id else None
                if earlier is not None:
                    row.mark_answered(earlier)  # answered elsewhere (another process, a resumed checkpoint)
            return None
        self.last_error, self.last_result = None, result
        said = "approved" if value is True else "rejected" if value is False else repr(value)
        lines = [f'<div class="meta">{escape(f"{request_id}: {said} · the run is {result.status}")}</div>']
        for event in result.events:
            text = getattr(getattr(event, "data", None), "text", None) if event.type == "output" else None
            if isinstance(text, str) and text:
                lines.append(f"<div><b>{escape(event.executor_id)}</b>: {escape(shorten(text, 160))}</div>")  # type: ignore[attr-defined]
        self.status.value = container("".join(lines))
        self.refresh()
        return result


class _Row:
    """The controls of one request."""

    def __init__(self, request: PendingRequest, form: RequestsForm) -> None:
        self.request = request
        prompt = w.HTML(
            container(
                f'<div class="meta"><b>{escape(request.executor_id)}</b> asks '
                f"<code>{escape(request.request_id)}</code></div><div>{escape(request.prompt)}</div>"
            )
        )
        rid = request.request_id
        self.buttons: list[w.Button] = []
        self.text: w.Text | None = None
        if request.response_type is bool:
            self.approve = w.Button(description="Approve", button_style="success")
            self.reject = w.Button(description="Reject", button_style="danger")
            self.approve.on_click(lambda _: form.answer(rid, True))
            self.reject.on_click(lambda _: form.answer(rid, False))
            self.buttons = [self.approve, self.reject]
            controls: list[Any] = self.buttons
        else:
            self.text = w.Text(placeholder=f"answer ({getattr(request.response_type, '__name__', 'value')})")
            self.submit = w.Button(description="Send")
            self.submit.on_click(lambda _: self._send(form))
            self.buttons = [self.submit]
            controls = [self.text, self.submit]
        self.answered: Mapping[str, str] | None = None
        self.note = w.HTML()
        self.widget = w.VBox([prompt, w.HBox(controls), self.note])
        self.widget.add_class("anb-request")

    def mark_answered(self, earlier: Mapping[str, str]) -> None:
        """Show the request as answered (when, by whom); its controls stay disabled."""
        self.answered = earlier
        self.note.value = container(
            f'<div class="meta">answered at {escape(earlier.get("at", "?"))} by {escape(earlier.get("by", "?"))}</div>'
        )
        self.disable(True)

    def _send(self, form: RequestsForm) -> None:
        assert self.text is not None
        try:
            value = _parse(self.text.value, self.request.response_type)
        except ValueError as exc:
            form.last_error = exc
            form.status.value = problem_html(exc)
            return
        form.answer(self.request.request_id, value)

    def disable(self, disabled: bool) -> None:
        for b in self.buttons:
            b.disabled = disabled or self.answered is not None


def _parse(text: str, kind: Any) -> Any:
    """What was typed, as the type the request expects."""
    if kind is str:
        return text
    if kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            raise ValueError(f"the answer must be a {kind.__name__}, got {text!r}") from None
    try:
        return json.loads(text)
    except ValueError:
        return text  # let the request's own type check say what it expects
