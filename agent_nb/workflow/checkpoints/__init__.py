"""Checkpoints: a workflow's state between supersteps, stored so a run can stop and resume elsewhere.

``format`` is the stored form (each message once, conversations as hash chains),
``encoder`` and ``decoder`` turn a workflow's values into it and back, ``storage`` holds
the protocol and the in-memory storage, ``sqlite`` and ``files`` the durable ones (``files``
writes its log of JSON lines, ``log`` reads it and says what is damaged in it), and
``checkpointer`` takes the checkpoints of a run and puts one back into a workflow.
"""

from .files import FileCheckpointStorage
from .format import Checkpoint
from .sqlite import SQLiteCheckpointStorage
from .storage import CheckpointInfo, CheckpointStorage, InMemoryCheckpointStorage

__all__ = [
    "Checkpoint",
    "CheckpointInfo",
    "CheckpointStorage",
    "FileCheckpointStorage",
    "InMemoryCheckpointStorage",
    "SQLiteCheckpointStorage",
]
