"""An experiment's spans: the experiment, a span per cell, each cell's runs inside it; live as after the fact."""

from __future__ import annotations

import json
from typing import Any

from conftest import Spans

from agent_nb import AgentExecutor, ChatAgent, MirrorChatClient, SequentialBuilder, telemetry
from agent_nb.experiments import Experiment, scorers
from agent_nb.watchers import WATCHERS


def three() -> Any:
    agents = [ChatAgent(MirrorChatClient(), name=n) for n in ("planner", "researcher")]
    writer = AgentExecutor(ChatAgent(MirrorChatClient(), name="writer"), context_mode="last_agent")
    return SequentialBuilder([*agents, writer], name="trip").build()


def experiment() -> Experiment:
    return Experiment(
        three(),
        inputs=["a", "b"],
        grid={"writer.context_mode": ["full", "last_agent"]},
        scorers=[scorers.contains("I see")],
        name="modes",
    )


def cells_and_runs(spans: Spans) -> list[tuple[dict[str, Any], list[str]]]:
    """Each cell's attributes (the times left out) and the tree of what it holds."""
    (root,) = [s for s in spans.all if spans.parent(s) is None]
    assert root.name == "experiment modes" and root.attributes["agent_nb.experiment.cells"] == 4
    cells = sorted(spans.children(root), key=lambda c: c.name)
    return [(dict(c.attributes), [line for run in spans.children(c) for line in spans.tree(run)]) for c in cells]


async def test_an_experiment_run_live_nests_its_cells_and_their_runs_as_its_export_does(spans: Spans) -> None:
    with telemetry.instrument(spans.provider):
        result = await experiment().run(progress=False)
    assert WATCHERS == []
    live = cells_and_runs(spans)
    assert len(live) == 4
    for attributes, runs in live:
        assert attributes["agent_nb.cell.status"] == "ok" and attributes["agent_nb.score.contains('I see')"] is True
        assert attributes["agent_nb.cell.input_id"] in {"0", "1"} and attributes["agent_nb.cell.repeat"] == 0
        assert attributes["agent_nb.config.writer.context_mode"] in {"full", "last_agent"}
        assert attributes["gen_ai.usage.input_tokens"] > 0
        assert runs[:2] == ["workflow trip", "  invoke_agent planner"] and len(runs) == 7
    spans.clear()
    result.to_otel(spans.provider)
    assert cells_and_runs(spans) == live  # each cell's run named after its workflow, as it ran


async def test_a_secret_in_a_configuration_is_masked_in_the_cells_span(spans: Spans) -> None:
    key = "sk-grid-0123456789abcdef0123"
    exp = Experiment(three(), inputs=[f"my key is {key}"], grid={"writer.options.api_key": [key]}, name="modes")
    with telemetry.instrument(spans.provider, capture_content=True):
        result = await exp.run(progress=False)
    (cell,) = [s for s in spans.all if s.name.startswith("experiment cell")]
    assert cell.attributes["agent_nb.config.writer.options.api_key"] == "***"
    assert "my key is ***" in spans.named("chat mirror")[0].attributes["gen_ai.input.messages"]
    spans.clear()
    result.to_otel(spans.provider, capture_content=True)
    assert spans.one("experiment cell 0").attributes["agent_nb.config.writer.options.api_key"] == "***"
    exported = json.dumps(spans.attributes(), default=str) + "".join(s.to_json() for s in spans.all)
    assert key not in exported and "my key is ***" in exported
