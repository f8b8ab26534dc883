from typing import Union

import pytest

from agent_nb import (
    Executor,
    FunctionExecutor,
    InputTypeError,
    Message,
    WorkflowBuilder,
    WorkflowContext,
    executor,
    handler,
)


class Router(Executor):
    @handler
    async def on_text(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.yield_output(f"text:{text}")

    @handler
    async def on_numbers(self, numbers: list[int], ctx: WorkflowContext[str]) -> None:
        await ctx.yield_output(f"sum:{sum(numbers)}")

    @handler
    async def on_either(self, value: Union[int, Message], ctx: WorkflowContext[str]) -> None:  # noqa: UP007
        await ctx.yield_output(f"either:{type(value).__name__}")


async def test_handlers_are_picked_by_type_hint():
    wf = WorkflowBuilder(start_executor=Router("r")).build()
    result = await wf.run("a", [1, 2], 3, Message("user", "m"))
    assert result.get_outputs() == ["text:a", "sum:3", "either:int", "either:Message"]


async def test_a_message_no_handler_takes_names_the_executor_and_types():
    wf = WorkflowBuilder(start_executor=Router("router")).build()
    with pytest.raises(TypeError) as info:
        await wf.run(2.5)
    assert isinstance(info.value, InputTypeError)
    text = str(info.value)
    assert "'router'" in text and "float" in text
    assert "str, list[int], int | Message" in text


def test_handler_must_be_async_and_typed():
    with pytest.raises(TypeError, match="must be an 'async def'"):

        class Bad(Executor):
            @handler
            def sync(self, x: str, ctx: WorkflowContext) -> None: ...

    class Untyped(Executor):
        @handler
        async def on(self, x, ctx) -> None: ...

    with pytest.raises(TypeError, match="annotate the type of 'x'"):
        _ = Untyped("u").handler_specs


def test_sent_types_come_from_the_context_hint():
    assert Router("r").sent_types() == (str,)

    class Undeclared(Executor):
        @handler
        async def on(self, x: str, ctx: WorkflowContext) -> None: ...

    assert Undeclared("u").sent_types() is None


async def test_function_executors():
    @executor(id="upper")
    async def upper(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text.upper())

    @executor
    async def done(text: str, ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output(text + "!")

    assert isinstance(upper, FunctionExecutor) and upper.id == "upper" and done.id == "done"
    result = await WorkflowBuilder(start_executor=upper).add_edge(upper, done).build().run("hi")
    assert result.get_outputs() == ["HI!"]
    assert [s.kind for s in result.trace] == ["function", "function"]


def test_executor_ids_must_be_strings():
    with pytest.raises(ValueError, match=r"Router: id='' \(str\) is not accepted; give a non-empty str"):
        Router("")
    with pytest.raises(TypeError, match=r"id=7 \(int\) is not accepted"):
        Router(7)  # type: ignore[arg-type]


async def test_a_subclass_override_replaces_the_handler():
    class Base(Executor):
        @handler
        async def on(self, text: str, ctx: WorkflowContext[None, str]) -> None:
            await ctx.yield_output("base")

    class Child(Base):
        @handler
        async def on(self, number: int, ctx: WorkflowContext[None, str]) -> None:
            await ctx.yield_output("child")

        @handler
        async def more(self, text: str, ctx: WorkflowContext[None, str]) -> None:
            await ctx.yield_output("more")

    assert [s.name for s in Child("c").handler_specs] == ["on", "more"]
    assert (await WorkflowBuilder(start_executor=Child("c")).build().run(1, "x")).get_outputs() == ["child", "more"]
