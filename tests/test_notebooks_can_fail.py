"""nbval must catch a notebook whose outputs no longer match what the code produces."""

import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SANITIZE = ROOT / "agent_nb" / "testing" / "nbval_sanitize.cfg"


def nbval(path: Path) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        "--nbval",
        "--nbval-current-env",
        "--nbval-sanitize-with",
        str(SANITIZE),
        str(path),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=path.parent, timeout=300)


def test_a_tampered_output_fails_nbval(tmp_path):
    nb = nbformat.read(ROOT / "notebooks" / "01_quickstart.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "get_outputs" in c.source)
    cell.outputs[0]["text"] = cell.outputs[0]["text"].replace("I see 3 messages", "I see 2 messages", 1)
    bad = tmp_path / "tampered.ipynb"
    nbformat.write(nb, bad)
    result = nbval(bad)
    assert result.returncode == 1, result.stdout[-2000:]
    assert "Cell outputs differ" in result.stdout
