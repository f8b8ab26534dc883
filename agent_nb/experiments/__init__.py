"""Experiments: a workflow, an agent or a harness run over inputs × configurations × repeats, scored.

```python
from agent_nb.experiments import Experiment, scorers

exp = Experiment(build, inputs=questions, grid={"writer.context_mode": ["full", "last_agent"]},
                 scorers=[scorers.contains(), scorers.had_in_context("writer", "budget")])
result = await exp.run(store="runs.sqlite")      # engine="dask" for a cluster
result.table(); result.compare({"writer.context_mode": "full"}, {"writer.context_mode": "last_agent"})
```
"""

from . import scorers, views
from .cells import STATUSES, Cell
from .experiment import Experiment, UnreadKeyWarning
from .inputs import Case
from .recording import cassette_for
from .result import Difference, ExperimentResult, ExperimentTable, PairedComparison, Row
from .runner import ExperimentError
from .scorers import ModelJudge
from .stats import Estimate
from .store import ExperimentStore, StoreError

del views  # imported for its renderers

__all__ = [
    "STATUSES",
    "Case",
    "Cell",
    "Difference",
    "Estimate",
    "Experiment",
    "ExperimentError",
    "ExperimentResult",
    "ExperimentStore",
    "ExperimentTable",
    "ModelJudge",
    "PairedComparison",
    "Row",
    "StoreError",
    "UnreadKeyWarning",
    "cassette_for",
    "scorers",
]
