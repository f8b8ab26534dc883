"""A cell: one configuration × one input × one repeat, and what its run gave.

While it is scored, a cell holds its live trace (``cell.trace``); once stored it keeps the
trace's compact JSON and reads it back on demand, so a result of 10,000 cells holds numbers
and texts, never 10,000 traces.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..contents import shorten
from ..messages import estimate_tokens
from ..rendering import Displayable
from .configs import config_label, plain_value

if TYPE_CHECKING:
    from ..messages import Message
    from ..trace import Trace
    from .inputs import Case

__all__ = ["STATUSES", "Cell", "measure"]

STATUSES = ("ok", "failed", "timeout", "cancelled")


@dataclass
class Cell(Displayable):
    """What one run of the experiment recorded; ``scores`` maps each scorer's name to its value."""

    k: int
    """The cell's place in the experiment: ordered by configuration, then input, then repeat."""
    config: Mapping[str, Any]
    input_id: str
    repeat: int
    status: str = "ok"
    """``ok``, ``failed``, ``timeout`` or ``cancelled``."""
    error_type: str | None = None
    error: str | None = None
    output: str = ""
    executors: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per executor: ``calls``, ``messages`` and ``tokens`` its model received, ``dropped`` by its mode."""
    routes: list[str] = field(default_factory=list)
    """The routes that answered, in the order they first did."""
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    findings: dict[str, int] = field(default_factory=dict)
    """A harness's gaps by kind (``{"duplicate answer": 1}``); empty for a workflow."""
    scores: dict[str, Any] = field(default_factory=dict)
    score_errors: dict[str, str] = field(default_factory=dict)
    """A scorer that raised: its name -> ``Type: message`` (its score is ``None``)."""
    attempts: int = 1
    detail: str | None = field(default=None, repr=False)
    """The trace as compact JSON (``agent_nb.trace.codec``)."""
    case: Case | None = field(default=None, repr=False, compare=False)
    """The input (while the cell runs and is scored, and when read back with its experiment)."""
    _trace: Trace | None = field(default=None, repr=False, compare=False)
    _view: Any = field(default=None, repr=False, compare=False)
    """Rebuilds the cell's workflow for its view (set by the result that holds the cell)."""

    @property
    def label(self) -> str:
        return config_label(self.config)

    @property
    def expected(self) -> Any:
        """The input's ``expected`` field, if it has one."""
        return None if self.case is None else self.case.get("expected")

    @property
    def trace(self) -> Trace:
        """The run's trace: the live one while scoring, else read back from ``detail``."""
        if self._trace is None:
            from ..trace import Trace
            from ..trace.codec import load_trace

            self._trace = load_trace(self.detail) if self.detail else Trace(())
        return self._trace

    @property
    def tokens(self) -> int:
        """Tokens given to every model of the run (estimated from what they were given)."""
        return sum(e["tokens"] for e in self.executors.values())

    def view(self) -> Any:
        """The cell's run view: the graph and every executor's context, as the run left them."""
        if self._view is None:
            from ..workflow import RunResult

            return RunResult((), self.trace, "completed" if self.status == "ok" else "failed")
        return self._view(self)

    def summary(self) -> dict[str, Any]:
        """The cell as JSON-ready data, without its trace (what ``to_records`` and the store keep)."""
        return {
            "k": self.k,
            "config": {k: plain_value(v) for k, v in self.config.items()},
            "input_id": self.input_id,
            "repeat": self.repeat,
            "status": self.status,
            "error_type": self.error_type,
            "error": self.error,
            "output": self.output,
            "executors": self.executors,
            "routes": self.routes,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "latency_s": self.latency_s,
            "findings": self.findings,
            "scores": self.scores,
            "score_errors": self.score_errors,
            "attempts": self.attempts,
        }

    def to_text(self) -> str:
        head = f"cell {self.k} · {self.label} · input {self.input_id}"
        head += f" · repeat {self.repeat}" if self.repeat else ""
        lines = [f"{head} · {self.status}"]
        if self.error:
            lines.append(f"  error: {self.error_type}: {self.error}")
        if self.output:
            lines.append(f"  output: {shorten(self.output, 200)}")
        for eid, e in self.executors.items():
            lines.append(
                f"  {eid}: {e['messages']} messages, {e['tokens']} tokens to its model, {e['dropped']} dropped"
            )
        if self.findings:
            lines.append("  findings: " + ", ".join(f"{k} ×{n}" for k, n in self.findings.items()))
        for name, value in self.scores.items():
            lines.append(
                f"  {name} = {value!r}" + (f"  ({self.score_errors[name]})" if name in self.score_errors else "")
            )
        return "\n".join(lines)


def measure(cell: Cell, trace: Trace) -> None:
    """Fill ``cell`` with what ``trace`` says each executor's model received, dropped and answered.

    The model's input is read as the views and ``who_has`` read it: instructions and history too.
    """
    executors: dict[str, dict[str, int]] = {}
    routes: dict[str, None] = {}
    tokens: dict[int, int] = {}  # a message given to several agents is estimated once
    usage_in = usage_out = 0
    for s in trace:
        e = executors.get(s.executor_id)
        if e is None:
            e = executors[s.executor_id] = {"calls": 0, "messages": 0, "tokens": 0, "dropped": 0}
        e["dropped"] += len(s.dropped)
        requests = s.model_requests
        given: Sequence[Message] | None = s.given
        if requests:  # what its model received: the last request of its own agent (most turns send one)
            last = requests[-1]
            if last.agent != requests[0].agent:  # a nested agent's requests came after its own
                last = s.model_input or last
            given = last.messages
        if given is not None:
            e["calls"] += 1
            e["messages"] += len(given)
            n = 0
            for m in given:
                k = tokens.get(id(m))
                if k is None:
                    k = tokens[id(m)] = estimate_tokens((m,))
                n += k
            e["tokens"] += n
        response = s.response
        if response is not None:
            if response.route:
                routes[response.route] = None
            if response.usage is not None:
                usage_in += response.usage.input_tokens
                usage_out += response.usage.output_tokens
    cell.executors, cell.routes = executors, list(routes)
    cell.input_tokens, cell.output_tokens = usage_in, usage_out
