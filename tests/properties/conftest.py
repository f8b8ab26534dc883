"""Property-based tests with Hypothesis: one reproducible profile for the whole folder.

``derandomize=True`` makes every run (and CI) try the same examples; ``database=None`` keeps
Hypothesis from saving failing examples and replaying ones found on another machine (it still
keeps small caches in ``.hypothesis/``, a directory that git-ignores itself).
Each test bounds its own ``max_examples`` (``strategies.examples``) so the folder stays fast. To
search further by hand: ``HYPOTHESIS_PROFILE=agent_nb-explore AGENT_NB_PROPERTY_SCALE=20`` (random
examples, twenty times as many).

The helpers of this folder are imported as ``from strategies import ...`` and ``from graphs
import ...``: pytest's default import mode puts this folder on ``sys.path`` (it has no
``__init__.py``, like the rest of ``tests/``).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "agent_nb-properties",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "agent_nb-explore",
    parent=settings.get_profile("agent_nb-properties"),
    derandomize=False,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "agent_nb-properties"))
