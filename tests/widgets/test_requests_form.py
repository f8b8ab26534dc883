"""The requests form, driven from Python the way a browser would drive it."""

from agent_nb import Executor, RequestResponse, WorkflowBuilder, WorkflowContext, handler
from agent_nb.widgets import RequestsForm


class Desk(Executor):
    """Asks for approval of a refund, then for a reason, then finishes."""

    @handler
    async def start(self, order: str, ctx: WorkflowContext[str, str]) -> None:
        ctx.request_info(f"Refund <b>{order}</b>?", bool)

    @handler
    async def answered(self, answer: RequestResponse, ctx: WorkflowContext[str, str]) -> None:
        if answer.value is True:
            ctx.request_info("Why?", str)
        elif answer.value is False:
            await ctx.yield_output("refused")
        else:
            await ctx.yield_output(f"refunded because {answer.value}")


def desk():
    return WorkflowBuilder(start_executor=Desk("desk")).build()


async def test_approve_then_type_an_answer_and_the_run_finishes():
    workflow = desk()
    await workflow.run("A7 <script>")
    form = RequestsForm(workflow)
    (row,) = form.rows.values()
    html = row.widget.children[0].value
    assert "Refund &lt;b&gt;A7 &lt;script&gt;&lt;/b&gt;?" in html and "<script>" not in html
    row.approve.click()
    assert row.approve.disabled  # no second answer while the run goes on
    await form.wait()
    (row,) = form.rows.values()
    assert row.request.prompt == "Why?" and row.text is not None
    row.text.value = "it arrived broken"
    row.submit.click()
    await form.wait()
    assert form.last_result.get_outputs() == ["refunded because it arrived broken"]
    assert form.rows == {} and "no pending requests" in form.children[0].children[0].value
    assert "the run is completed" in form.status.value


async def test_reject_button_and_a_refused_answer_changes_nothing():
    workflow = desk()
    await workflow.run("B2")
    form = RequestsForm(workflow)
    rid = next(iter(form.rows))
    await form.answer(rid, "not a bool")
    assert "RequestError" in form.status.value and "must be bool" in form.status.value
    assert workflow.pending_requests[0].request_id == rid and not form.rows[rid].approve.disabled
    form.rows[rid].reject.click()
    await form.wait()
    assert form.last_result.get_outputs() == ["refused"]


async def test_outside_a_kernel_the_bundle_lists_the_requests():
    workflow = desk()
    await workflow.run("A7 <script>")
    bundle = RequestsForm(workflow)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    [request] = workflow.pending_requests
    assert bundle["text/plain"] == f"RequestsForm('workflow'): 1 pending\n  desk asks {request.request_id}: " + (
        "Refund <b>A7 <script></b>?"
    )
    assert (
        "Refund &lt;b&gt;A7 &lt;script&gt;&lt;/b&gt;?" in bundle["text/html"] and "<script>" not in bundle["text/html"]
    )
