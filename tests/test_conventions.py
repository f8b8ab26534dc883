"""Conventions of the test suite itself.

The shared test helpers (``tests/doubles.py``) are imported one way only, ``from doubles import ...``.
Importing them through a ``tests`` package as well would load the file twice, as two module objects
with their own classes (an ``isinstance`` across the two fails) and their own module-level state; and
that other form only works when the repository's root happens to be on ``sys.path``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import doubles

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

# Written so that this file does not match itself: "tests", a dot and "doubles" as a dotted name,
# or "doubles" imported from a package called "tests".
OTHER_FORM = re.compile(r"\btests\s*\.\s*doubles\b|\bfrom\s+tests\s+import\b[^\n]*\bdoubles\b")


def _text_files(folder: Path) -> list[Path]:
    files = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            try:
                path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue  # not text (a screenshot, a compiled file)
            files.append(path)
    return files


def test_the_helpers_are_imported_in_one_form_only():
    found = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}: {match.group(0)}"
        for path in _text_files(TESTS)
        for text in [path.read_text(encoding="utf-8")]
        for match in OTHER_FORM.finditer(text)
    ]
    assert found == [], "import the test helpers as `from doubles import ...`, not:\n" + "\n".join(found)


def test_the_check_recognises_the_other_form():
    package = "tests"
    for line in (
        f"from {package}.doubles import RecordingAgent",
        f"import {package}.doubles",
        f"from {package} import doubles",
        f"from {package} import conftest, doubles",
        f"importlib.import_module('{package}.doubles')",
    ):
        assert OTHER_FORM.search(line), line
    for line in ("from doubles import RecordingAgent", "import doubles", "from tests.import_contracts import X"):
        assert not OTHER_FORM.search(line), line


def test_one_module_object_for_the_helpers():
    assert Path(doubles.__file__).resolve() == TESTS / "doubles.py"
    assert ".".join(["tests", "doubles"]) not in sys.modules


def test_a_single_test_file_runs_alone_from_another_folder(tmp_path: Path) -> None:
    """Neither the working directory nor PYTHONPATH has to point at the repository."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    target = TESTS / "workflow" / "test_builder.py"  # a module in a subfolder that imports the helpers
    out = subprocess.run(
        [sys.executable, "-m", "pytest", str(target), "-q", "-p", "no:randomly"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert " passed" in out.stdout
