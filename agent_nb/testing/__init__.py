"""Testing helpers for your own suite: what an executor had in its context, trace snapshots, nbval settings.

```python
from agent_nb.testing import assert_context

result = await workflow.run("Plan a weekend in Porto")
assert_context(result, "writer", contains="Porto", excludes="budget", count=2)
```

Installing agent_nb also registers a pytest plugin (``agent_nb.testing.plugin``): every test
runs with real model calls refused (``@pytest.mark.allow_model_calls`` lets one through), and
so do the notebook kernels that nbval starts. ``agent-nb nbval-config`` prints the path of the
nbval sanitize file agent_nb's outputs need.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..trace import ContextSnapshot, Trace

__all__ = ["assert_context", "assert_snapshot", "nbval_config_path", "snapshot_text"]

_HEX_ID = re.compile(r"\b[0-9a-f]{16,}(-[0-9a-f]{4,})*\b")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_DURATION = re.compile(r"\b\d+(\.\d+)?\s?(ms|µs|us|s)\b")


def _trace(source: Any) -> Trace:
    trace = getattr(source, "trace", source)
    if not isinstance(trace, Trace):
        raise TypeError(f"expected a RunResult or a Trace, got {type(source).__name__}")
    return trace


def _texts(snapshot: ContextSnapshot, scope: str) -> list[str]:
    from ..messages import tool_work_as_text

    messages = snapshot.context(scope)
    out = []
    for m in messages:
        parts = [c.text if c.type == "text" else str(tool_work_as_text(c).text) for c in m.contents]
        out.append(" ".join(p for p in parts if p))
    return out


def assert_context(
    source: Any,
    executor_id: str,
    *,
    contains: str | Iterable[str] = (),
    excludes: str | Iterable[str] = (),
    count: int | None = None,
    invocation: int = -1,
    scope: str = "model",
) -> ContextSnapshot:
    """Check what ``executor_id`` had in its active context: what its model received, by default.

    ``contains``: texts each found in some message; ``excludes``: texts found in none; ``count``:
    how many messages. ``scope="model"`` reads what the model received (the agent's instructions
    and history too); ``scope="executor"`` what the executor handed its agent. ``invocation``
    picks one of the executor's invocations (the last by default). A failure shows the
    executor's context as the trace reports it. Returns the snapshot.
    """
    trace = _trace(source)
    snaps = list(trace.for_executor(executor_id))
    if not snaps:
        raise AssertionError(f"executor {executor_id!r} did not run in this trace")
    snapshot = snaps[invocation]
    texts = _texts(snapshot, scope)
    problems = []
    for text in [contains] if isinstance(contains, str) else list(contains):
        if not any(text in t for t in texts):
            problems.append(f"no message contains {text!r}")
    for text in [excludes] if isinstance(excludes, str) else list(excludes):
        found = [i + 1 for i, t in enumerate(texts) if text in t]
        if found:
            problems.append(f"message {', '.join(map(str, found))} contains {text!r}")
    if count is not None and len(texts) != count:
        problems.append(f"it holds {len(texts)} message{'' if len(texts) == 1 else 's'}, not {count}")
    if problems:
        report = Trace([snapshot], (executor_id,)).to_text()
        raise AssertionError(f"the context of {executor_id!r}: {'; '.join(problems)}. It was:\n{report}")
    return snapshot


def snapshot_text(source: Any, *, width: int = 100) -> str:
    """The trace as text, without what changes from run to run (ids, addresses, durations)."""
    text = _trace(source).to_text(width=width)
    text = _HEX_ID.sub("<id>", text)
    text = _ADDRESS.sub("0xADDR", text)
    return _DURATION.sub("<duration>", text)


def assert_snapshot(source: Any, path: str | os.PathLike[str], *, width: int = 100) -> None:
    """Compare the trace with the snapshot stored at ``path``.

    The snapshot is written when it is missing, or when ``AGENT_NB_UPDATE_SNAPSHOTS=1``.
    """
    target = Path(path)
    now = snapshot_text(source, width=width)
    if not target.exists() or os.environ.get("AGENT_NB_UPDATE_SNAPSHOTS", "") in ("1", "true", "yes"):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(now, encoding="utf-8")
        return
    before = target.read_text(encoding="utf-8")
    if before != now:
        diff = "\n".join(
            difflib.unified_diff(before.splitlines(), now.splitlines(), "snapshot", "now", lineterm="", n=2)
        )
        raise AssertionError(
            f"the trace differs from the snapshot {target}:\n{diff}\n"
            "If the change is intended, run again with AGENT_NB_UPDATE_SNAPSHOTS=1"
        )


def nbval_config_path() -> Path:
    """The nbval sanitize file for agent_nb's outputs: ``pytest --nbval --nbval-sanitize-with <path>``."""
    return Path(__file__).with_name("nbval_sanitize.cfg")
