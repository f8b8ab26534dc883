"""An experiment's identity follows everything its code reads, and stays put while its runs go.

A change the hash does not see would let the store mix old cells with new ones; a hash that moves
with a cache the build fills would refuse the same experiment on its next run.
"""

from __future__ import annotations

import importlib.util
import itertools
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from builds import questions
from doubles import subprocess_env

from agent_nb import AgentExecutor, ChatAgent, MirrorChatClient, WorkflowBuilder
from agent_nb.experiments import Experiment, ExperimentError

NUMBER = itertools.count()


def module(tmp_path: Path, source: str, name: str = "user_code") -> Any:
    """``source`` as the user's module ``name``, in a file of its own under ``tmp_path`` (a new one each time)."""
    folder = tmp_path / f"v{next(NUMBER)}"
    folder.mkdir()
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    made = importlib.util.module_from_spec(spec)
    sys.modules[name] = made
    spec.loader.exec_module(made)
    return made


def identity(build: Any, **kwargs: Any) -> str:
    return Experiment(build, inputs=questions(1), name="same", **kwargs).id


BUILD = """
    from agent_nb import ChatAgent, ScriptedChatClient

    REPLY = {reply!r}

    def build(config):
        return ChatAgent(ScriptedChatClient([REPLY]), name="solo")

    def with_default(config, reply={reply!r}):
        return ChatAgent(ScriptedChatClient([reply]), name="solo")

    def closing_over(reply):
        def build(config):
            return ChatAgent(ScriptedChatClient([reply]), name="solo")
        return build
"""


@pytest.mark.parametrize("function", ["build", "with_default", "closure"])
def test_a_constant_a_default_or_a_closure_the_build_reads_is_part_of_its_identity(
    tmp_path: Path, function: str
) -> None:
    def made(reply: str) -> Any:
        code = module(tmp_path, BUILD.format(reply=reply))
        return code.closing_over(reply) if function == "closure" else getattr(code, function)

    assert identity(made("v1")) == identity(made("v1"))
    assert identity(made("v1")) != identity(made("v2"))


def test_a_helper_in_another_module_of_the_users_is_followed(tmp_path: Path) -> None:
    def made(words: int) -> Any:
        module(
            tmp_path,
            f"""
            from agent_nb import ChatAgent, MirrorChatClient

            def agent(name):
                return ChatAgent(MirrorChatClient(words={words}), name=name)
            """,
            name="helpers",
        )
        by_name = module(tmp_path, "from helpers import agent\n\ndef build(config):\n    return agent('solo')\n")
        by_module = module(tmp_path, "import helpers\n\ndef build(config):\n    return helpers.agent('solo')\n")
        return {"by_name": by_name, "by_module": by_module}

    for way in ("by_name", "by_module"):
        assert identity(made(3)[way].build) == identity(made(3)[way].build) != identity(made(4)[way].build)


def test_an_object_the_build_uses_counts_by_its_settings(tmp_path: Path) -> None:
    def made(words: int) -> Any:
        return module(
            tmp_path,
            f"""
            from agent_nb import ChatAgent, MirrorChatClient

            CLIENT = MirrorChatClient(words={words})

            def build(config):
                return ChatAgent(CLIENT, name="solo")
            """,
        ).build

    assert identity(made(3)) == identity(made(3)) != identity(made(4))


def test_a_filter_in_the_grid_counts_by_its_code(tmp_path: Path) -> None:
    def keep(n: int) -> Any:
        return module(tmp_path, f"def keep(messages):\n    return list(messages)[-{n}:]\n", name="filters").keep

    planner = AgentExecutor(ChatAgent(MirrorChatClient(), name="planner"))
    writer = AgentExecutor(ChatAgent(MirrorChatClient(), name="writer"))
    workflow = WorkflowBuilder(start_executor=planner).add_edge(planner, writer).build()
    ids = [identity(workflow, grid={"writer.context_filter": [keep(n)]}) for n in (1, 1, 2)]
    assert ids[0] == ids[1] != ids[2]


def test_a_ready_workflow_counts_by_its_clients_settings() -> None:
    def workflow(words: int) -> Any:
        return WorkflowBuilder(
            start_executor=AgentExecutor(ChatAgent(MirrorChatClient(words=words), name="solo"))
        ).build()

    assert identity(workflow(3)) == identity(workflow(3)) != identity(workflow(8))


async def test_what_a_run_fills_in_keeps_the_identity(tmp_path: Path) -> None:
    """A cache of clients and a log the build fills as cells run: the same experiment on the next run."""
    code = module(
        tmp_path,
        """
        from agent_nb import ChatAgent, MirrorChatClient

        CLIENTS = {}
        LOG = []

        def build(config):
            LOG.append(config)
            client = CLIENTS.setdefault("mirror", MirrorChatClient())
            return ChatAgent(client, name="solo")
        """,
    )
    exp = Experiment(code.build, inputs=questions(2), name="cached")
    before = exp.id
    path = tmp_path / "runs.sqlite"
    await exp.run(store=path, progress=False)
    again = Experiment(code.build, inputs=questions(2), name="cached")  # a notebook cell run again
    assert code.CLIENTS and code.LOG and again.id == before
    assert len(await again.run(store=path, progress=False)) == 2


def test_the_identity_is_the_same_in_every_process(tmp_path: Path) -> None:
    """A set in the code (``x in {...}``) is hashed in one order, whatever the process's string hashing."""
    folder = module(
        tmp_path,
        """
        from agent_nb import ChatAgent, MirrorChatClient

        def build(config):
            words = 3 if config.get("size") in {"small", "tiny", "little", "short"} else 8
            return ChatAgent(MirrorChatClient(words=words), name="solo")
        """,
        name="stable_build",
    ).__file__
    script = (
        "import sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]\n"
        "from builds import questions\n"
        "from stable_build import build\n"
        "from agent_nb.experiments import Experiment\n"
        "print(Experiment(build, inputs=questions(1), grid={'size': ['small']}, name='same').id)\n"
    )
    tests = str(Path(__file__).parent)
    ids = {
        subprocess.run(
            [sys.executable, "-c", script, str(Path(folder).parent), tests],
            env={**subprocess_env(__file__), "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout.strip()
        for seed in ("1", "2", "3")
    }
    assert len(ids) == 1 and len(ids.pop()) == 16


async def test_an_experiment_stored_by_an_older_agent_nb_is_not_mixed(tmp_path: Path) -> None:
    code = module(tmp_path, BUILD.format(reply="v1"))
    exp = Experiment(code.build, inputs=questions(1), name="older")
    path = tmp_path / "runs.sqlite"
    await exp.run(store=path, progress=False)
    with sqlite3.connect(path) as db:  # as an agent_nb that hashed definitions another way left it
        db.execute("UPDATE experiments SET id = 'f00d', definition = json_remove(definition, '$.identity')")
    with pytest.raises(ExperimentError, match=r"stored by an older agent_nb.*not mixed.*replace=True"):
        await exp.run(store=path, progress=False)
    assert len(await exp.run(store=path, progress=False, replace=True)) == 1


def test_the_hash_never_holds_a_secret_in_clear(tmp_path: Path) -> None:
    """A client's key is left out of its settings (the hash of a short key could be searched)."""
    from agent_nb.experiments.identity import object_settings

    class Keyed:
        def __init__(self) -> None:
            self.model, self.api_key, self.token = "m", "sk-secret", "t"

    assert object_settings(Keyed()) == {"model": "m"}
