"""One cassette per configuration and input: how an experiment is recorded once and replayed on any engine.

A cassette replays its requests in the order they were recorded, and an experiment's cells run
concurrently (and on other machines), so each cell gets its own file, named by its configuration and
input: ``build(config, case)`` makes its client with ``cassette_client(cassette_for(directory, config,
case), real)``. Repeats of a cell replay the same recording.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .configs import config_key, config_label
from .inputs import Case

__all__ = ["cassette_for"]


def cassette_for(directory: str | Path, config: Mapping[str, Any], case: Case) -> Path:
    """``directory/<readable configuration>-<input id>-<hash>.json``: stable in every process."""
    key = f"{config_key(config)}\n{case.id}"
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{config_label(config)}-{case.id}").strip("-")[:80]
    return Path(directory) / f"{readable}-{hashlib.sha256(key.encode()).hexdigest()[:10]}.json"
