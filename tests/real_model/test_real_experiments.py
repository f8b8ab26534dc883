"""A 40-cell experiment against the real local model (Gemma 3 270M) through the OpenAI client."""

from __future__ import annotations

from typing import Any

from agent_nb import AgentExecutor, ChatAgent, RoutingChatClient, WorkflowBuilder
from agent_nb.clients.openai import OpenAIChatClient
from agent_nb.experiments import Experiment, scorers

QUESTIONS = [f"Name a fruit that starts with the letter {letter}." for letter in "ABCDEFGHIJKLMNOPRSTW"]


def replied(cell: Any) -> bool:
    """The model said something."""
    return bool(cell.output.strip())


async def test_forty_cells_on_the_real_model_are_scored_stored_and_resumed(model_server: str, tmp_path: Any) -> None:
    short = OpenAIChatClient("gemma", base_url=model_server, max_tokens=3, temperature=0, seed=1)
    longer = OpenAIChatClient("gemma", base_url=model_server, max_tokens=6, temperature=0, seed=1)
    router = RoutingChatClient({"short": short, "longer": longer})
    asker = AgentExecutor(ChatAgent(router, name="asker", instructions="Answer in a few words."))
    workflow = WorkflowBuilder(start_executor=asker).build()
    exp = Experiment(
        workflow,
        inputs=QUESTIONS,
        grid={"route": ["short", "longer"]},
        scorers=[replied, scorers.tokens_under(400), scorers.had_in_context("asker", "fruit")],
        name="gemma",
    )
    store = tmp_path / "runs.sqlite"
    try:
        result = await exp.run(store=store, max_concurrency=4)
        records = result.to_records()
        assert len(records) == 40 and [r["status"] for r in records] == ["ok"] * 40, result.failures()
        assert {r["routes"] for r in records} == {"short", "longer"}
        assert all(r["route"] == r["routes"] for r in records)
        assert all(r["input_tokens"] > 0 and r["output_tokens"] > 0 for r in records)  # the server's own usage
        assert all(
            r["asker.messages"] == 2 and r["score.had_in_context('asker', 'fruit')"] for r in records
        )  # instructions, question
        assert all(
            r["output_tokens"] <= {"short": 3, "longer": 6}[r["route"]] for r in records
        )  # each route's own limit
        table = result.table()
        assert [row.cells for row in table.rows] == [20, 20] and "short" in str(table)
        comparison = result.compare({"route": "short"}, {"route": "longer"})
        assert comparison.pairs == 20
        again = await exp.run(store=store)  # everything is stored: nothing runs again
        assert again.to_records() == records
    finally:
        await short.aclose()
        await longer.aclose()
