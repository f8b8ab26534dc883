"""Widgets (ipywidgets 8): switch routes and context modes mid-conversation and watch the contexts change.

```python
from agent_nb.widgets import Playground

Playground(workflow)   # a message box, the route, a mode per agent, the transcript, the live run view
```

``RouteSwitcher``, ``ContextModeSwitcher`` and ``ContextView`` work alone too;
``RequestsForm(workflow)`` answers a waiting run's requests (Approve / Reject a tool call). The logic
lives in ``agent_nb.dialogue.Dialogue``; the widgets only map controls onto it.
"""

from .playground import Playground
from .requests import RequestsForm
from .switchers import ContextModeSwitcher, ContextView, RouteSwitcher

__all__ = ["ContextModeSwitcher", "ContextView", "Playground", "RequestsForm", "RouteSwitcher"]
