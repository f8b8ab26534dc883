import subprocess
import sys

from agent_nb.cli import main


def test_demo_prints_each_executor_and_writes_html(tmp_path, capsys):
    out = tmp_path / "demo.html"
    assert main(["demo", "--html", str(out)]) == 0
    text = capsys.readouterr().out
    for part in (
        "[1] planner",
        "context_mode=custom (user_messages)",
        "context_mode=last_agent",
        "received",
        "given",
        "dropped",
        "answered",
    ):
        assert part in text
    assert "writer      last_agent              -" in text  # the writer never saw the question
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html
    assert html.count('<section class="col"') == 3 and '<svg class="anb-graph"' in html  # run view: graph + columns
    assert "Timeline" in html and "Who was given what" in html


def test_demo_without_html(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--html", ""]) == 0
    assert not (tmp_path / "demo.html").exists()


def test_console_script_entry_point():
    out = subprocess.run([sys.executable, "-m", "agent_nb.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("agent_nb ")
