"""The import contracts of pyproject.toml hold, and each one fails when its rule is broken.

Each breaking test copies the package to a temporary directory, adds one import that breaks
a rule, and runs ``lint-imports`` there with the repository's own contracts.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def lint(where: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(LINT), "--no-logo", "--no-cache"], cwd=where, capture_output=True, text=True, timeout=120
    )
    done.stdout = " ".join(done.stdout.split())  # the report wraps lines at the terminal's width
    return done


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "agent_nb", tmp_path / "agent_nb", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests", tmp_path / "tests", ignore=shutil.ignore_patterns("__pycache__", "golden"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def add(copy: Path, module: str, code: str) -> None:
    path = copy / "agent_nb" / module
    path.write_text(path.read_text() + "\n\n" + code + "\n")


def test_the_package_keeps_every_contract() -> None:
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 3 kept, 0 broken." in done.stdout


def test_an_upward_import_inside_a_function_breaks_the_layers(copy: Path) -> None:
    add(copy, "trace/snapshots.py", "def _draw():\n    from ..display.html import escape\n\n    return escape")
    done = lint(copy)
    assert done.returncode == 1
    assert "agent_nb's layers import downwards only BROKEN" in done.stdout
    assert "agent_nb.trace is not allowed to import agent_nb.display" in done.stdout
    assert "agent_nb.trace.snapshots -> agent_nb.display.html" in done.stdout


def test_an_upward_annotation_breaks_the_layers_too(copy: Path) -> None:
    add(
        copy, "messages.py", "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .workflow import Workflow"
    )
    done = lint(copy)
    assert "agent_nb.messages is not allowed to import agent_nb.workflow" in done.stdout
    assert "no import cycles in agent_nb KEPT" in done.stdout  # annotations are not cycles


def test_a_cycle_inside_a_layer_is_named(copy: Path) -> None:
    add(copy, "display/html.py", "def _later():\n    from . import run\n\n    return run")
    done = lint(copy)
    assert "no import cycles in agent_nb BROKEN" in done.stdout
    assert "agent_nb.display.html -> agent_nb.display.run" in done.stdout
    assert "agent_nb's layers import downwards only KEPT" in done.stdout


def test_a_heavy_package_at_module_level_is_refused_and_inside_a_function_is_not(copy: Path) -> None:
    add(copy, "display/timeline.py", "def _plot():\n    import matplotlib\n\n    return matplotlib")
    assert lint(copy).returncode == 0
    add(copy, "display/context.py", "from .plots import context_sizes  # noqa: E402")
    done = lint(copy)
    assert "loaded only when used BROKEN" in done.stdout
    assert re.search(
        r"agent_nb.display.context imports agent_nb.display.plots at module level "
        r"\(l.\d+: from .plots import context_sizes # noqa: E402\), so importing it loads matplotlib",
        done.stdout,
    )
    assert done.stdout.count("at module level") == 1  # the modules that import display.context are not listed


def test_a_package_no_module_owns_is_refused_everywhere(copy: Path) -> None:
    add(copy, "workflow/result.py", "import IPython  # noqa: E402, F401")
    done = lint(copy)
    assert "agent_nb.workflow.result imports IPython at module level (l." in done.stdout
    assert "so importing it loads IPython (as it does for" in done.stdout  # the front door, among others
