"""Experiments on the local engine: cells, statuses, ready workflows, scorers, tables and comparisons."""

from __future__ import annotations

import asyncio
import gc
import json
import math
import sqlite3
import warnings
from pathlib import Path
from typing import Any

import pytest
from builds import Flaky, Slow, boom_chain, chain, only_user, questions, routed_chain, stable

from agent_nb import AgentExecutor, ChatAgent, MirrorChatClient, ScriptedChatClient, WorkflowBuilder
from agent_nb.errors import ArgumentError, ModelBadRequest
from agent_nb.experiments import Experiment, ExperimentError, ModelJudge, UnreadKeyWarning, scorers
from agent_nb.harness import CentralizedHarness, StandardHarness, scenarios
from agent_nb.messages import estimate_tokens
from agent_nb.trace import ContextSnapshot

MODES = {"writer.context_mode": ["full", "last_agent"]}


async def test_cells_are_configuration_by_input_by_repeat_in_order_whatever_finishes_first() -> None:
    # later inputs answer sooner: completion order is the reverse of the cells' order
    def build(config: dict[str, Any]) -> Any:
        return chain(config, Slow(MirrorChatClient(words=8), lambda text: 0.05 if "budget is 0 " in text else 0.001))

    exp = Experiment(build, inputs=questions(3), grid=MODES, repeats=2)
    result = await exp.run(max_concurrency=12)
    records = result.to_records()
    assert [(r["writer.context_mode"], r["input_id"], r["repeat"]) for r in records] == [
        (m, f"q{i:02d}", rep) for m in ("full", "last_agent") for i in range(3) for rep in range(2)
    ]
    assert [r["k"] for r in records] == list(range(12)) and result.complete
    for r in records:
        assert r["status"] == "ok" and r["planner.messages"] == 1
        assert r["writer.messages"] == (3 if r["writer.context_mode"] == "full" else 1)
        assert r["writer.dropped"] == (0 if r["writer.context_mode"] == "full" else 2)


def instructed(config: dict[str, Any]) -> Any:
    """One agent with long instructions: its model gets them before the question."""
    agent = AgentExecutor(ChatAgent(MirrorChatClient(words=8), name="guide", instructions="Be brief. " * 40))
    return WorkflowBuilder(start_executor=agent).build()


async def test_a_cell_counts_what_the_model_received_its_instructions_included() -> None:
    result = await Experiment(instructed, inputs=["Plan a picnic"]).run()
    record = result.to_records()[0]
    model_got = result.cell(0).trace.last("guide").model_input
    assert record["guide.messages"] == len(model_got.messages) == 2  # the instructions, then the question
    assert record["guide.tokens"] == estimate_tokens(model_got.messages) > 80  # not the question's 3 tokens


async def test_a_failing_cell_is_recorded_and_the_others_go_on() -> None:
    inputs = ["plan a picnic", "boom goes the plan", "plan a walk"]
    result = await Experiment(boom_chain, inputs=inputs, grid=MODES).run()
    statuses = {(r["writer.context_mode"], r["input_id"]): r["status"] for r in result.to_records()}
    assert statuses == {(m, i): ("failed" if i == "1" else "ok") for m in ("full", "last_agent") for i in "012"}
    failures = result.failures()
    assert [f.input_id for f in failures] == ["1", "1"]
    assert failures[0].error_type == "ModelBadRequest"  # what failed, not the step that carried it
    assert "'writer'" in (failures[0].error or "") or "'planner'" in (failures[0].error or "")  # the step, named
    assert "boom" in (failures[0].error or "")
    assert result.table()[0].failures == 1 and result.table()[0].cells == 3


async def test_fail_fast_stops_at_the_first_failure() -> None:
    inputs = ["boom first", *(f"plan {i}" for i in range(20))]
    result = await Experiment(boom_chain, inputs=inputs).run(fail_fast=True, max_concurrency=1)
    assert len(result) == 1 and not result.complete
    assert "run again with the same store" in str(result)


async def test_a_cell_over_its_timeout_is_stopped_and_marked() -> None:
    def build(config: dict[str, Any]) -> Any:
        return chain(config, Slow(MirrorChatClient(), lambda text: 5.0 if "slow" in text else 0.0))

    result = await Experiment(build, inputs=["slow one", "quick one"], timeout=0.2).run()
    by_input = {c.input_id: c for c in result.cells()}
    assert by_input["0"].status == "timeout" and "timeout=0.2" in (by_input["0"].error or "")
    assert by_input["1"].status == "ok"
    assert by_input["0"].latency_s < 2.0


@pytest.mark.parametrize(
    ("times", "retries", "status", "attempts"), [(2, 2, "ok", 3), (3, 2, "failed", 3), (1, 0, "failed", 1)]
)
async def test_a_rate_limited_model_is_tried_again_with_backoff(
    times: int, retries: int, status: str, attempts: int
) -> None:
    flaky = Flaky(MirrorChatClient(), "Plan", times)

    def build(config: dict[str, Any]) -> Any:
        return ChatAgent(flaky, name="solo")

    result = await Experiment(build, inputs=["Plan a day"]).run(retries=retries, retry_wait=0.01)
    (cell,) = result.cells()
    assert (cell.status, cell.attempts) == (status, attempts)
    if status == "failed":
        assert cell.error_type == "ModelRateLimited" and "refused" in (cell.error or "")


async def test_an_error_that_cannot_pass_is_not_tried_again() -> None:
    flaky = Flaky(MirrorChatClient(), "Plan", 1, ModelBadRequest)
    result = await Experiment(lambda_free_build(flaky), inputs=["Plan a day"]).run(retries=5, retry_wait=0.01)
    (cell,) = result.cells()
    assert (cell.status, cell.attempts, flaky.failed) == ("failed", 1, 1)


def lambda_free_build(client: Any) -> Any:
    def build(config: dict[str, Any]) -> Any:
        return ChatAgent(client, name="solo")

    return build


async def test_a_ready_workflow_takes_routes_and_modes_cell_by_cell_and_is_put_back() -> None:
    workflow = routed_chain()
    writer = workflow.get_executor("writer")
    grid_list = [
        {
            "route": route,
            "writer.context_mode": mode,
            **({"writer.context_filter": only_user} if mode == "custom" else {}),
        }
        for route in ("fast", "smart")
        for mode in ("full", "last_agent", "custom")
    ]
    exp = Experiment(
        workflow, inputs=questions(3), grid=grid_list, scorers=[scorers.had_in_context("writer", "budget")]
    )
    result = await exp.run(max_concurrency=4)
    for r in result.to_records():
        assert r["routes"] == r["route"]
        mode = r["writer.context_mode"]
        assert r["writer.messages"] == {"full": 3, "last_agent": 1, "custom": 1}[mode]  # every cell starts afresh
        # the echo route passes the user's words on; the smart one describes them, and last_agent loses them
        assert r["score.had_in_context('writer', 'budget')"] is (mode != "last_agent" or r["route"] == "fast")
    assert writer.context_mode == "full" and writer.session is None and workflow.pending_requests == ()


async def test_each_cell_of_a_ready_workflow_starts_from_a_clean_history_and_the_sessions_are_kept() -> None:
    from agent_nb import AgentExecutor, InMemoryHistoryProvider, WorkflowBuilder

    agent = ChatAgent(MirrorChatClient(words=8), name="solo", history=InMemoryHistoryProvider())
    session = agent.create_session()
    workflow = WorkflowBuilder(start_executor=AgentExecutor(agent, session=session)).build()
    await workflow.run("what the user said before the experiment")
    before = dict(session.state)
    result = await Experiment(workflow, inputs=questions(4)).run(max_concurrency=4)
    assert [r["solo.messages"] for r in result.to_records()] == [1, 1, 1, 1]  # no cell sees another's history
    assert workflow.get_executor("solo").session is session and session.state == before


async def test_a_ready_workflow_sends_executor_options_with_the_request() -> None:
    seen: list[Any] = []

    async def reply(messages: list[Any], options: dict[str, Any]) -> str:
        seen.append(dict(options))
        return "ok"

    from agent_nb import AgentExecutor, FunctionChatClient, WorkflowBuilder

    agent = AgentExecutor(ChatAgent(FunctionChatClient(reply), name="solo"))
    workflow = WorkflowBuilder(start_executor=agent).build()
    await Experiment(workflow, inputs=["hi"], grid={"solo.options.temperature": [0.0, 0.7]}).run()
    assert [o.get("temperature") for o in seen] == [0.0, 0.7]


@pytest.mark.parametrize(
    ("grid", "words"),
    [
        ({"rout": ["fast"]}, "did you mean 'route'"),
        ({"writr.context_mode": ["full"]}, "did you mean 'writer.context_mode'"),
        ({"writer.context_mod": ["full"]}, "did you mean 'writer.context_mode'"),
        ({"route": ["fats"]}, "did you mean 'fast'"),
        ({"writer.context_mode": ["ful"]}, "did you mean 'full'"),
        ({"writer.context_mode": ["custom"]}, "needs a 'writer.context_filter'"),
        ({"writer.options.max tokens": [1]}, "unknown key"),
    ],
)
async def test_a_key_a_ready_workflow_cannot_take_is_refused_before_anything_runs(
    grid: dict[str, Any], words: str
) -> None:
    workflow = routed_chain()
    with pytest.raises(ExperimentError, match=words) as caught:
        Experiment(workflow, inputs=["x"], grid=grid)
    assert "workflow" in str(caught.value)


async def test_a_build_that_fails_for_one_configuration_is_refused_before_any_cell_runs() -> None:
    calls: list[Any] = []

    def build(config: dict[str, Any]) -> Any:
        if config["size"] == 3:
            raise KeyError("size 3 is not built")
        calls.append(config)
        return chain({})

    with pytest.raises(ExperimentError, match=r"build\(size=3\) raised KeyError.*nothing ran"):
        Experiment(build, inputs=["x"], grid={"size": [1, 2, 3]})


async def test_build_may_take_the_case_and_return_a_harness() -> None:
    def build(config: dict[str, Any], case: Any) -> Any:
        scenario = getattr(scenarios, case.get("scenario"))(fixed=config["fixed"])
        kind = StandardHarness if config["harness"] == "standard" else CentralizedHarness
        return kind(scenario.build(), name=scenario.name)

    script = [text for _, text in scenarios.opening_hours().script]
    inputs = [{"id": "hours", "scenario": "opening_hours", "turns": script}]
    grid = {"harness": ["standard", "centralized"], "fixed": [False, True]}
    result = await Experiment(
        build,
        inputs=inputs,
        grid=grid,
        scorers=[scorers.no_gaps(), scorers.has_gap("duplicate answer"), scorers.gap_count("duplicate answer")],
    ).run()
    cells = {(c.config["harness"], c.config["fixed"]): c for c in result.cells()}
    assert cells["standard", False].findings["duplicate answer"] == 1
    assert cells["standard", False].scores == {
        "no_gaps": False,
        "has_gap('duplicate answer')": True,
        "gap_count('duplicate answer')": 1.0,
    }
    assert cells["centralized", False].findings == {} and cells["centralized", False].scores["no_gaps"] is True
    assert "9:00-17:00" in cells["standard", False].output


async def test_a_multi_turn_script_runs_one_run_per_turn_in_one_conversation() -> None:
    def build(config: dict[str, Any]) -> Any:
        return ChatAgent(MirrorChatClient(words=8), name="solo")

    result = await Experiment(build, inputs=[["first turn", "second turn about the budget"]]).run()
    cell = result.cell(0)
    assert [s.turn for s in cell.trace] == [1, 2]
    assert len(cell.trace[1].given or ()) == 1  # an agent without history: each turn is a new request
    assert "second turn" in cell.output


def test_inputs_take_every_shape_and_refuse_duplicates(tmp_path: Any) -> None:
    path = tmp_path / "qs.jsonl"
    path.write_text(
        '{"id": "a", "input": "one", "expected": "x"}\n\n"two"\n["t1", "t2"]\n{"turns": ["s1", ["click", "ok"]]}\n'
    )
    exp = Experiment(lambda_free_build(MirrorChatClient()), inputs=path)
    assert [(c.id, c.turns) for c in exp.cases] == [
        ("a", ("one",)),
        ("1", ("two",)),
        ("2", ("t1", "t2")),
        ("3", ("s1", ("click", "ok"))),
    ]
    assert exp.cases[0].get("expected") == "x"
    with pytest.raises(ArgumentError, match="two inputs have the id 'a'"):
        Experiment(lambda_free_build(MirrorChatClient()), inputs=[{"id": "a", "input": "1"}, {"id": "a", "input": "2"}])
    with pytest.raises(ArgumentError, match=r"inputs\[0\] has neither 'input' nor 'turns'"):
        Experiment(lambda_free_build(MirrorChatClient()), inputs=[{"question": "1"}])
    with pytest.raises(ArgumentError, match=r"line 1 of .* is not JSON"):
        (tmp_path / "bad.jsonl").write_text("{nope\n")
        Experiment(lambda_free_build(MirrorChatClient()), inputs=tmp_path / "bad.jsonl")
    with pytest.raises(ArgumentError, match="inputs is empty"):
        Experiment(lambda_free_build(MirrorChatClient()), inputs=[])


async def test_a_click_is_refused_for_a_workflow_with_the_input_named() -> None:
    result = await Experiment(lambda_free_build(MirrorChatClient()), inputs=[["hi", ("click", "ok")]]).run()
    (cell,) = result.cells()
    assert cell.status == "failed" and "input '0'" in (cell.error or "") and "harness turn" in (cell.error or "")


async def test_the_shipped_scorers_score_what_they_say() -> None:
    def build(config: dict[str, Any]) -> Any:
        return ChatAgent(ScriptedChatClient([config["reply"]]), name="solo")

    inputs = [{"id": "q", "input": "Answer in JSON", "expected": "Paris"}]
    grid = {"reply": ['{"city": "Paris"}', "paris, I think", "Lyon"]}
    chosen = [
        scorers.contains(),
        scorers.equals("lyon"),
        scorers.regex(r"\bparis\b"),
        scorers.json_valid(),
        scorers.tokens_under(8),
        scorers.had_in_context("solo", "JSON"),
        scorers.not_in_context("solo", "Paris"),
    ]
    result = await Experiment(build, inputs=inputs, grid=grid, scorers=chosen).run()
    got = [c.scores for c in result.cells()]
    names = [s.name for s in chosen]
    assert [[g[n] for n in names] for g in got] == [
        [True, False, False, True, True, True, True],
        [True, False, True, False, True, True, True],
        [False, True, False, False, True, True, True],
    ]


async def test_a_scorer_may_be_async_return_a_dict_or_raise() -> None:
    async def length(cell: Any) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"chars": len(cell.output), "long": len(cell.output) > 5}

    def broken(cell: Any) -> bool:
        raise ValueError("no idea")

    result = await Experiment(
        lambda_free_build(MirrorChatClient(words=3)), inputs=["a b c d e"], scorers=[length, broken]
    ).run()
    (cell,) = result.cells()
    assert (
        cell.status == "ok"
        and cell.scores["length.chars"] == float(len(cell.output))
        and cell.scores["length.long"] is True
    )
    assert cell.scores["broken"] is None and cell.score_errors == {"broken": "ValueError: no idea"}
    assert result.failures() == [cell]
    with pytest.raises(ArgumentError, match="named function"):
        Experiment(lambda_free_build(MirrorChatClient()), inputs=["x"], scorers=[lambda cell: True])
    with pytest.raises(ArgumentError, match="two scorers are named"):
        Experiment(
            lambda_free_build(MirrorChatClient()), inputs=["x"], scorers=[scorers.json_valid(), scorers.json_valid()]
        )


async def test_a_model_judge_scores_through_any_chat_client() -> None:
    judge_client = ScriptedChatClient(["SCORE: 0.75", "The answer is FAIL", "no verdict here"])
    judge = ModelJudge(judge_client, "Is the output helpful?")
    result = await Experiment(lambda_free_build(MirrorChatClient()), inputs=["a", "b", "c"], scorers=[judge]).run(
        max_concurrency=1
    )
    assert [c.scores["judge"] for c in result.cells()] == [0.75, 0.0, None]
    assert "no 'SCORE: x'" in result.cell(2).score_errors["judge"]
    (system, user), _ = judge_client.requests[0]
    assert "Is the output helpful?" in system.text and "Input:\na" in user.text
    assert f"Output:\n{result.cell(0).output}" in user.text


async def test_the_table_gives_wilson_intervals_for_rates_and_bootstrap_for_means() -> None:
    exp = Experiment(
        chain,
        inputs=questions(10),
        grid=MODES,
        scorers=[scorers.contains("budget"), scorers.had_in_context("writer", "budget")],
    )
    table = (await exp.run()).table()
    full, last = table.rows
    rate = full.scores["had_in_context('writer', 'budget')"]
    assert (rate.passed, rate.n, rate.rate) == (10, 10, True)
    assert math.isclose(rate.low, 0.7224672, rel_tol=1e-5) and rate.high == 1.0  # Wilson, 10/10
    assert last.scores["had_in_context('writer', 'budget')"].passed == 0
    assert last.tokens.mean < full.tokens.mean and full.tokens.low <= full.tokens.mean <= full.tokens.high
    text = str(table)
    assert "writer.context_mode" in text and "100% [72%, 100%] (10/10)" in text and "0% [0%, 28%] (0/10)" in text


async def test_compare_pairs_the_same_inputs_and_counts_what_was_lost() -> None:
    exp = Experiment(chain, inputs=questions(12), grid=MODES, scorers=[scorers.had_in_context("writer", "budget")])
    result = await exp.run()
    comparison = result.compare({"writer.context_mode": "full"}, {"writer.context_mode": "last_agent"})
    assert comparison.pairs == 12
    ratio, low, high = comparison.tokens
    assert -1 < low <= ratio <= high < 0
    had = comparison.scores["had_in_context('writer', 'budget')"]
    assert (had.mean, had.passed_a, had.passed_b, had.lost, had.gained, had.rate) == (-1.0, 12, 0, 12, 0, True)
    assert "had_in_context('writer', 'budget') 12/12 → 0/12 (loses 12, gains 0; -100% [-100%, -100%])" in str(
        comparison
    )
    assert str(comparison).startswith(
        "writer.context_mode=last_agent vs writer.context_mode=full on 12 inputs: tokens -"
    )
    with pytest.raises(ArgumentError, match="selects 2 configurations"):
        result.compare({}, {"writer.context_mode": "full"})


def test_a_key_no_build_reads_is_said_with_a_did_you_mean() -> None:
    with pytest.warns(UnreadKeyWarning, match=r"key 'writer\.context_mod'.*did you mean 'writer\.context_mode'\?"):
        Experiment(chain, inputs=questions(1), grid={"writer.context_mod": ["full"]})
    read_by_a_scorer = {"writer.context_mode": ["full"], "threshold": [0.5]}
    with pytest.warns(UnreadKeyWarning, match="a key only a scorer reads"):
        Experiment(chain, inputs=questions(1), grid=read_by_a_scorer)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Experiment(chain, inputs=questions(1), grid={"writer.context_mode": ["full"]})  # read: nothing said
        Experiment(lambda_free_all_keys, inputs=questions(1), grid={"anything": [1, 2]})  # ``**config`` reads all


async def test_by_pools_the_other_keys() -> None:
    grid = {"writer.context_mode": ["full", "last_agent"], "size": [1, 2]}

    def build(config: dict[str, Any]) -> Any:
        return chain(config)

    with pytest.warns(UnreadKeyWarning, match="no configuration's build read the key 'size'"):
        exp = Experiment(build, inputs=questions(2), grid=grid)  # "size" only groups cells here
    result = await exp.run()
    pooled = result.by("writer.context_mode")
    assert [(r.config, r.cells) for r in pooled.rows] == [
        ({"writer.context_mode": "full"}, 4),
        ({"writer.context_mode": "last_agent"}, 4),
    ]
    with pytest.raises(ArgumentError, match="did you mean 'size'"):
        result.by("sise")


async def test_a_cell_shows_its_run_again_from_the_store(tmp_path: Any) -> None:
    result = await Experiment(chain, inputs=questions(2), grid=MODES).run(store=tmp_path / "runs.sqlite")
    cell = result.cell(2)
    assert (cell.config, cell.input_id) == ({"writer.context_mode": "last_agent"}, "q00")
    view = cell.view()
    html = view._repr_html_()
    assert all(name in html for name in ("planner", "researcher", "writer")) and "<svg" in html
    assert [s.executor_id for s in cell.trace] == ["planner", "researcher", "writer"]
    assert len(cell.trace[2].dropped) == 2
    with pytest.raises(ArgumentError, match="no cell 9 stored"):
        result.cell(9)


async def test_cells_hold_no_trace_once_stored() -> None:
    gc.collect()
    before = {id(o) for o in gc.get_objects() if isinstance(o, ContextSnapshot)}  # other tests' (a widget's, say)
    exp = Experiment(chain, inputs=questions(40), grid=MODES)
    result = await exp.run(max_concurrency=4)
    gc.collect()
    alive = sum(1 for o in gc.get_objects() if isinstance(o, ContextSnapshot) and id(o) not in before)
    assert alive == 0 and len(result) == 80


async def test_records_jsonl_html_and_plot(tmp_path: Any) -> None:
    def build(config: dict[str, Any]) -> Any:
        workflow = chain(config)
        workflow.name = config["label"]  # a name that must be escaped wherever it is shown
        return workflow

    exp = Experiment(
        build,
        inputs=questions(3),
        grid={"label": ["<b>bold</b>"], "writer.context_mode": ["full"]},
        scorers=[scorers.contains()],
    )
    result = await exp.run()
    path = result.to_jsonl(tmp_path / "cells.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines == json.loads(json.dumps(result.to_records())) and len(lines) == 3
    html = result._repr_html_()
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    assert str(result).startswith("experiment 'build': 3 cells")
    figure = result.plot()
    assert len(figure.axes) == 2 and figure.axes[0].get_title() == "contains(expected)"
    with pytest.raises(ArgumentError, match="no such score"):
        result.plot("contain")


async def test_to_pandas_says_how_to_get_pandas() -> None:
    result = await Experiment(chain, inputs=questions(1)).run()
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install pandas"):
            result.to_pandas()
    else:
        assert list(result.to_pandas()["input_id"]) == ["q00"]


async def test_progress_bar_when_asked_and_none_under_test(capsys: Any, tmp_path: Path) -> None:
    await Experiment(chain, inputs=questions(3), name="barred").run(progress=True)
    err = capsys.readouterr().err
    assert "barred" in err and "3/3" in err
    await Experiment(chain, inputs=questions(3), name="quiet").run()
    assert capsys.readouterr().err == ""
    inputs = ["plan a picnic", "boom goes the plan", "boom again", "plan a walk"]
    exp = Experiment(boom_chain, inputs=inputs, name="failing")
    path = tmp_path / "runs.sqlite"
    await exp.run(progress=True, store=path, max_concurrency=1)
    assert "4/4" in (err := capsys.readouterr().err) and "failures=2" in err
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM cells WHERE k = 3")  # one cell left to run on the next run
    await exp.run(progress=True, store=path)  # resumed: the two failures stored before still count
    assert "4/4" in (err := capsys.readouterr().err) and "failures=2" in err


async def test_same_cells_same_records_on_every_run() -> None:
    exp = Experiment(chain, inputs=questions(5), grid=MODES, scorers=[scorers.had_in_context("writer", "budget")])
    first = stable((await exp.run(max_concurrency=1)).to_records())
    second = stable((await exp.run(max_concurrency=8)).to_records())
    assert first == second


def test_run_sync_works_in_a_script() -> None:
    result = Experiment(chain, inputs=questions(2)).run_sync()
    assert len(result) == 2


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"repeats": 0}, "repeats=0"),
        ({"timeout": -1}, "timeout=-1"),
        ({"grid": {"a": []}}, "non-empty list"),
        ({"grid": {"a": "xy"}}, "non-empty list"),
        ({"grid": [{"a": 1}, {"a": 1}]}, "are the same"),
        ({"inputs": "what is this"}, "give a list of inputs"),
    ],
)
def test_bad_definitions_are_refused_naming_the_argument(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(ArgumentError, match=words):
        Experiment(chain, **{"inputs": ["x"], **kwargs})


async def test_bad_run_arguments_are_refused() -> None:
    exp = Experiment(chain, inputs=["x"])
    for kwargs, words in (
        ({"engine": "spark"}, "engine='spark'"),
        ({"max_concurrency": 0}, "max_concurrency=0"),
        ({"retries": -1}, "retries=-1"),
    ):
        with pytest.raises(ArgumentError, match=words):
            await exp.run(**kwargs)


async def test_compare_calls_a_gap_that_goes_away_a_fix_and_the_table_counts_scorer_errors() -> None:
    def build(config: dict[str, Any], case: Any) -> Any:
        kind = StandardHarness if config["harness"] == "standard" else CentralizedHarness
        return kind(scenarios.opening_hours().build())

    def broken(cell: Any) -> Any:
        return ("not", "a score")

    script = [text for _, text in scenarios.opening_hours().script]
    exp = Experiment(
        build,
        inputs=[{"id": "h", "turns": script}],
        grid={"harness": ["standard", "centralized"]},
        scorers=[scorers.has_gap("duplicate answer"), broken],
    )
    result = await exp.run()
    comparison = str(result.compare({"harness": "standard"}, {"harness": "centralized"}))
    assert "has_gap('duplicate answer') 1/1 → 0/1 (fixes 1, breaks 0;" in comparison
    table = result.table(timings=False)
    assert table.columns()[-1] == "scorer errors" and [r.score_errors for r in table.rows] == [1, 1]


def lambda_free_all_keys(config: dict[str, Any]) -> Any:
    """A build that hands its whole configuration on."""
    return chain({"writer.context_mode": "full", **config})


class InFlight:
    """A model that waits a little and notes how many requests it is answering at once."""

    def __init__(self) -> None:
        self.inner, self.now, self.most = MirrorChatClient(), 0, 0
        self.capabilities, self.history_mode = self.inner.capabilities, self.inner.history_mode

    async def get_response(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            await asyncio.sleep(0.02)
            return await self.inner.get_response(messages, *args, **kwargs)
        finally:
            self.now -= 1

    def get_streaming_response(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        return self.inner.get_streaming_response(messages, *args, **kwargs)


@pytest.mark.parametrize("limit", [1, 3, 8])
async def test_max_concurrency_bounds_the_cells_at_once(limit: int) -> None:
    model = InFlight()

    def build(config: dict[str, Any]) -> Any:
        return ChatAgent(model, name="solo")

    assert len(await Experiment(build, inputs=questions(12)).run(max_concurrency=limit)) == 12
    assert model.most == limit  # as many as allowed, never more
