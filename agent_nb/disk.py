"""Why a file could not be written (or read), in the system's words and ours, and what to do.

Every store agent_nb writes — histories, checkpoints, cassettes, exports — says it the same
way: the system's own words with the error's code, then the likely cause (a full disk, a
read-only file system, a directory this process may not write) and the fix. ``instead``
names the way out that fits the caller ("give the storage a directory you can write to").

``write_whole`` is how each of them replaces a whole file (a cassette, an export, a compacted
checkpoint log): a reader sees the old file or the new one, never half of either.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

__all__ = ["os_fix", "os_problem", "os_reason", "place_problem", "sqlite_problem", "write_whole"]

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


def sqlite_problem(exc: Exception, path: Path, who: str, otherwise: str) -> str:
    """SQLite's own words, then what to do: ``database or disk is full. Free some space on that disk, …``.

    ``who`` names what was given the file (``the provider``); ``otherwise`` is the fix when neither
    the disk nor the place explains the error (the file itself, then).
    """
    fix: str | None
    if "full" in str(exc):
        fix = "free some space on that disk, then run again"
    else:
        fix = place_problem(path.parent, f"give {who} a file in a directory you can write to")
        if fix is None and path.exists() and not os.access(path, os.W_OK):
            fix = f"this process may not write {path}: give {who} a file you can write to"
    fix = fix or otherwise
    return f"{exc}. {fix[:1].upper()}{fix[1:]}"


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


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` at ``fd``: after a short write (a disk filling up), the rest, or the error."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_whole(path: Path, data: bytes, *, fsync: bool = False) -> None:
    """Put ``data`` in place of the file ``path``, whole or not at all; an ``OSError`` is the caller's to word.

    The bytes go to a new temporary file beside ``path`` (hidden, named uniquely, so two writers never
    share one), which is then renamed over it: a reader sees the old file or the new one. The file
    keeps the permissions of the one it replaces (a new one gets those ``open()`` gives). Whatever
    fails, the temporary file is removed and ``path`` is left as it was. ``fsync=True`` flushes the
    file and the rename to the disk as well (survives a power cut).
    """
    stem = path.name.encode()[:64].decode("utf-8", "ignore")  # a short name, however long the target's
    temporary = path.with_name(f".{stem}.{secrets.token_hex(8)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        try:
            with contextlib.suppress(FileNotFoundError):
                mode = os.stat(path).st_mode
                if not stat.S_ISDIR(mode):  # a directory: os.replace refuses it below, with its own error
                    os.chmod(temporary, stat.S_IMODE(mode))
            write_all(fd, data)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    if fsync and os.name == "posix":  # the rename itself: the directory's entry
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
