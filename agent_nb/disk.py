"""Why a file could not be written (or read), in the system's words and ours, and what to do.

Every store agent_nb writes — histories, checkpoints, cassettes, exports — says it the same
way: the system's own words with the error's code, then the likely cause (a full disk, a
read-only file system, a directory this process may not write) and the fix. ``instead``
names the way out that fits the caller ("give the storage a directory you can write to").
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

__all__ = ["os_fix", "os_problem", "os_reason", "place_problem"]

_INSTEAD = "give the storage a directory you can write to"


def os_problem(exc: OSError, directory: Path, instead: str = _INSTEAD) -> str:
    """``No space left on device (ENOSPC). Free some space on that disk, then run again``."""
    fix = os_fix(exc, directory, instead)
    return f"{os_reason(exc)}. {fix[:1].upper()}{fix[1:]}"


def os_reason(exc: OSError) -> str:
    """The system's words for an ``OSError``, with its code: ``Read-only file system (EROFS)``."""
    name = errno.errorcode.get(exc.errno or 0)
    said = exc.strerror or str(exc)
    return f"{said} ({name})" if name else said


def os_fix(exc: OSError, directory: Path, instead: str = _INSTEAD) -> str:
    """What to do about an ``OSError`` met writing in ``directory``."""
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return "free some space on that disk, then run again"
    if exc.errno == errno.EFBIG:
        return "the file reached the size limit of this process or file system: free some space or raise the limit"
    if exc.errno == errno.ENAMETOOLONG:
        return "give a shorter file name"
    if exc.errno == errno.EISDIR:
        return "that is a directory: give a file name"
    return place_problem(directory, instead) or f"check that the directory exists and can be written to, or {instead}"


def place_problem(directory: Path, instead: str = _INSTEAD) -> str | None:
    """Why nothing can be written in ``directory`` (read-only, not allowed, missing), with the fix; or ``None``."""
    existing = next((p for p in (directory, *directory.parents) if p.exists()), None)
    if existing is None or not existing.is_dir():
        return f"{existing or directory} is not a directory: {instead}"
    try:
        if os.statvfs(existing).f_flag & os.ST_RDONLY:
            return f"the file system of {existing} is mounted read-only: {instead}"
    except (AttributeError, OSError):  # pragma: no cover - no statvfs (Windows)
        pass
    if not os.access(existing, os.W_OK):
        return f"this process may not write in {existing}: {instead}"
    if existing != directory:
        return f"{directory} does not exist: create it, or {instead}"
    return None
