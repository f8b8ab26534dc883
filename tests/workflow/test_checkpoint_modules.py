"""The checkpoint package stays in modules of a readable size, and every public name still imports."""

from __future__ import annotations

from pathlib import Path

import agent_nb.workflow.checkpoints as checkpoints

LIMIT = 500


def test_every_checkpoint_module_is_at_most_500_lines() -> None:
    sizes = {
        p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in Path(checkpoints.__file__).parent.glob("*.py")
    }
    assert {name: n for name, n in sizes.items() if n > LIMIT} == {}


def test_the_file_storage_is_the_same_class_under_every_public_name() -> None:
    from agent_nb import FileCheckpointStorage as top
    from agent_nb.workflow import FileCheckpointStorage as workflow
    from agent_nb.workflow.checkpoints import FileCheckpointStorage as package
    from agent_nb.workflow.checkpoints.files import FileCheckpointStorage as module

    assert top is workflow is package is module
    assert module.__module__ == "agent_nb.workflow.checkpoints.files"
    assert checkpoints.files.__all__ == ["FileCheckpointStorage"]
    for name in checkpoints.__all__:
        assert getattr(checkpoints, name) is not None
