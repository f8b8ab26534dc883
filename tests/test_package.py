"""The front door: a sorted __all__ that matches the namespace, and an import that stays light."""

import json
import subprocess
import sys
from pathlib import Path

import agent_nb


def test_all_is_sorted_and_matches_the_public_namespace():
    public = {n for n in dir(agent_nb) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(agent_nb, n)).__name__ == "module"}
    assert agent_nb.__all__ == sorted(set(agent_nb.__all__))
    assert set(agent_nb.__all__) - {"__version__"} == public - modules
    for name in agent_nb.__all__:  # the names loaded on first use resolve too
        assert getattr(agent_nb, name) is not None


def test_import_does_not_pull_heavy_or_optional_packages():
    code = (
        "import sys, json; import agent_nb; from agent_nb import WorkflowBuilder, AgentExecutor; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'openai', 'matplotlib', 'ipywidgets', 'IPython', 'numpy', 'nest_asyncio', 'httpx', 'httpx2', 'sqlite3', 'asyncio', "
        "'opentelemetry', 'agent_framework'})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_import_leaves_the_modules_loaded_on_first_use_unloaded():
    later = [
        "agent_nb.tools",
        "agent_nb.routing",
        "agent_nb.workflow.checkpoints",
        "agent_nb.display",
        "agent_nb.harness",
        "agent_nb.telemetry",
        "agent_nb.interop",
    ]
    code = f"import sys, json; import agent_nb; print(json.dumps([m for m in {later!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_py_typed_is_shipped():
    assert (Path(agent_nb.__file__).parent / "py.typed").exists()


def test_a_run_without_telemetry_loads_none_of_it():
    code = (
        "import sys, json; from agent_nb import ChatAgent, MirrorChatClient, SequentialBuilder; "
        "r = SequentialBuilder([ChatAgent(MirrorChatClient(), name='a')]).build().run_sync('hi'); "
        "print(json.dumps([m for m in sys.modules if m.split('.')[0] == 'opentelemetry' or m == 'agent_nb.telemetry']))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
