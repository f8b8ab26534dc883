"""Requests answered once: the claim a run makes on each request it answers, kept where every process sees it.

A run given ``responses`` claims each request before anything runs: in the checkpoint
storage (``AnswerLedger``: a file under a lock, SQLite in one transaction), keyed by the
checkpoint the request waits in, so a form still on screen, a second resume or another
process sharing the storage is refused. A request counts as answered once its answer was
delivered to its executor: a run that fails before delivering gives its claims back; one
that fails after keeps them (what the answer allowed may have been done) and says how to
give them back on purpose (``Workflow.release_answer``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from ..errors import AgentNbError, RequestError

__all__ = ["AnswerClaims", "answered_again"]


class AnswerClaims:
    """The answers one run gives: claimed before it starts, given back if it fails before delivering them."""

    def __init__(self, workflow_name: str, storage: Any, waiting: str | None, request_ids: Iterable[str]) -> None:
        self.workflow_name = workflow_name
        self.storage = storage if storage is not None and hasattr(storage, "claim_answer") else None
        self.waiting = waiting or ""
        self.request_ids = tuple(request_ids)
        self.record: dict[str, str] = (
            {
                "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "by": f"a run of workflow {workflow_name!r} (process {os.getpid()} on {socket.gethostname()})",
                "waiting": self.waiting,
                "run": secrets.token_hex(6),  # tells two claims of one second and one process apart
            }
            if self.request_ids  # a run that answers nothing (most runs) asks the system for nothing
            else {}
        )
        self.delivered = False
        """Set once the answers reached their executors: from then on they stay answered."""
        self._claimed: list[str] = []

    def claim(self) -> None:
        """Claim every request, or none: one answered before is refused, saying when and by whom."""
        if self.storage is None or not self.waiting:
            return
        for request_id in self.request_ids:
            earlier = self.storage.claim_answer(self.waiting, request_id, self.record)
            if earlier is not None:
                self.give_back()
                raise RequestError(answered_again(self.workflow_name, request_id, earlier), answered=earlier)
            self._claimed.append(request_id)

    def give_back(self) -> None:
        """Forget the claims (the run failed before delivering the answers)."""
        claimed, self._claimed = self._claimed, []
        if self.storage is None:
            return
        for request_id in claimed:
            with contextlib.suppress(AgentNbError, OSError):  # the run's own error is the one to see
                self.storage.release_answer(self.waiting, request_id)

    def failed(self, error: BaseException) -> None:
        """The run failed: before delivery, give the claims back; after, keep them and say so on ``error``."""
        if not self.delivered:
            self.give_back()
        elif self.request_ids and hasattr(error, "add_note"):
            ids = ", ".join(map(repr, self.request_ids))
            error.add_note(
                f"the answers to {ids} were delivered before the run failed, so they stay answered (what they "
                "allowed may have been done); if it was not, workflow.release_answer(request_id) lets one be "
                "answered again"
            )


def answered_again(workflow: str, request_id: str, earlier: Mapping[str, str]) -> str:
    """The refusal of a second answer: when and where the first was given, and what to do instead."""
    said = (
        f"workflow {workflow!r}: request {request_id!r} was answered already, at {earlier.get('at', '?')} by "
        f"{earlier.get('by', '?')}; it is not pending any more, and what it asked for is not done twice"
    )
    if earlier.get("waiting"):
        said += ". To go on from there, resume the newest checkpoint of the run that answered it (storage.latest())"
    return said
