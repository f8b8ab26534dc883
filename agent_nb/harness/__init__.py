"""The context-distribution harness: an orchestrator, its components, and who has which fact.

Build an orchestrator from components, run a conversation through a ``StandardHarness``
(distributed context) or a ``CentralizedHarness`` (the orchestrator is the only one that
talks to the user), then ask the trace who had a fact and where the duplicate and
missed answers are.

```python
from agent_nb.harness import MessageNode, Orchestrator, StandardHarness, Topic

hours = Topic("opening_hours", [MessageNode("We are open 9:00-17:00.")], description="Opening hours")
harness = StandardHarness(Orchestrator("orchestrator", [hours]))
await harness.send("When are you open?")
harness.gaps()   # the topic answered, the orchestrator did not know, and answered again
```
"""

from .agent_component import AgentComponent
from .calls import ComponentCall, ComponentResult, UserInput
from .components import Component, Input, Knowledge, Tool
from .gaps import KINDS, Finding, Findings, find_gaps
from .harness import CentralizedHarness, Harness, StandardHarness, Turn, compare
from .orchestrator import Orchestrator, conversation_of
from .planners import Answer, Ask, Call, DeterministicPlanner, Finish, ModelPlanner, Planner, PlannerView
from .subagents import ChildAgent, ConnectedAgent
from .topics import CardNode, GenerativeAnswers, MessageNode, QuestionNode, SetVariable, Topic
from .views import Comparison, HarnessView

__all__ = [
    "KINDS",
    "AgentComponent",
    "Answer",
    "Ask",
    "Call",
    "CardNode",
    "CentralizedHarness",
    "ChildAgent",
    "Comparison",
    "Component",
    "ComponentCall",
    "ComponentResult",
    "ConnectedAgent",
    "DeterministicPlanner",
    "Finding",
    "Findings",
    "Finish",
    "GenerativeAnswers",
    "Harness",
    "HarnessView",
    "Input",
    "Knowledge",
    "MessageNode",
    "ModelPlanner",
    "Orchestrator",
    "Planner",
    "PlannerView",
    "QuestionNode",
    "SetVariable",
    "StandardHarness",
    "Tool",
    "Topic",
    "Turn",
    "UserInput",
    "compare",
    "conversation_of",
    "find_gaps",
]
