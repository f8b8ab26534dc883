"""The README's experiment runs as written, and prints what its comment says."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

README = Path(__file__).parents[2] / "README.md"


def example() -> str:
    text = README.read_text()
    section = text[text.index("## Experiments") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


async def test_the_readme_experiment_runs_and_compares_as_its_comment_says(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    source = example()
    namespace: dict[str, Any] = {}
    code = compile(source, "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    await eval(code, namespace)
    result = namespace["result"]
    said = " ".join(line.lstrip("# ").strip() for line in source.splitlines() if line.startswith("# "))
    shown = str(result.compare({"writer.context_mode": "full"}, {"writer.context_mode": "last_agent"}))
    assert shown.startswith(said.removesuffix("...").strip().rstrip(";").strip()), (shown, said)
    assert (tmp_path / "runs.sqlite").exists() and len(result) == 100
