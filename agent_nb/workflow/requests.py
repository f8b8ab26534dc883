"""Requests for input: an executor asks, the run waits, a later run answers.

```python
class Reviewer(Executor):
    @handler
    async def review(self, draft: str, ctx: WorkflowContext) -> None:
        ctx.request_info(draft, bool)          # the run ends waiting for an answer

    @handler
    async def on_answer(self, answer: RequestResponse, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(answer.data if answer.value else "rewrite")

result = await workflow.run("draft")            # result.status == "waiting"
await workflow.run(responses={result.pending_requests[0].request_id: True})
```
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import RequestError
from ._types import accepts, type_name

__all__ = ["PendingRequest", "RequestResponse"]


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """A request an executor made and nobody has answered yet."""

    request_id: str
    executor_id: str
    data: Any
    """What the executor asks about (a question, a draft, a ``UserInputRequestContent``)."""
    response_type: Any
    """What an answer must be: ``run(responses={request_id: value})`` checks the value against it."""

    @property
    def prompt(self) -> str:
        """The question in words, for a form: the data's ``prompt`` or its text."""
        prompt = getattr(self.data, "prompt", None)
        return prompt if isinstance(prompt, str) and prompt else str(self.data)

    def check(self, value: Any) -> None:
        """Raise ``RequestError`` unless ``value`` is an answer of the right type."""
        if not accepts(self.response_type, value):
            raise RequestError(
                f"the answer to request {self.request_id!r} of executor {self.executor_id!r} must be "
                f"{type_name(self.response_type)}, got {type(value).__name__} ({value!r:.60}); nothing was run"
            )

    def describe(self) -> str:
        return f"request {self.request_id} of {self.executor_id}: {self.prompt[:60]}"


@dataclass(frozen=True, slots=True)
class RequestResponse:
    """An answer, delivered to the executor that asked: the request's ``data`` and the answer's ``value``."""

    request_id: str
    data: Any
    value: Any

    def describe(self) -> str:
        return f"answer to {self.request_id}: {self.value!r:.40}"
