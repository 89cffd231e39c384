"""Process definitions are checked when registered: every problem at start-up, none at run time."""

from __future__ import annotations

from typing import Any

import pytest

from xdb.sdk import (
    AsyncState,
    CommandResults,
    Communication,
    CommunicationSchema,
    Context,
    DefinitionError,
    GlobalAttributes,
    LocalAttribute,
    LocalQueue,
    Persistence,
    PersistenceSchema,
    Process,
    Registry,
    RetryPolicy,
    StateDecision,
    StateOptions,
    StateSchema,
    rpc,
)


class Start(AsyncState[int]):
    next_states = ("Finish",)

    def execute(
        self,
        ctx: Context,
        input: int,
        results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        return StateDecision.single_next_state(Finish, input + 1)


class Finish(AsyncState[int]):
    def execute(
        self,
        ctx: Context,
        input: int,
        results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        return StateDecision.graceful_complete_process(input)


class Good(Process):
    states = StateSchema(Start(), Finish())
    persistence = PersistenceSchema(LocalAttribute("count", int))
    communication = CommunicationSchema(LocalQueue("q", str))

    @rpc
    def ping(
        self, ctx: Context, input: str, persistence: Persistence, communication: Communication
    ) -> str:
        return input


def problems_of(process: Any) -> list[str]:
    with pytest.raises(DefinitionError) as raised:
        Registry(process)
    return raised.value.problems


def test_a_good_process_registers_with_its_graph_and_rpcs() -> None:
    definition = Registry(Good).add(type("Good2", (Good,), {}))  # a subclass is its own type
    assert definition.process_type == "Good2"
    assert definition.next_states == {"Start": frozenset({"Finish"}), "Finish": frozenset()}
    assert set(definition.rpcs) == {"ping"}
    assert definition.rpcs["ping"].input_type is str
    assert definition.state_options("Start").skip_wait_until is True


def test_a_next_state_outside_the_process_is_an_error() -> None:
    class Lost(Process):
        states = StateSchema(Start())  # Start may go to Finish, which is not here

    assert problems_of(Lost) == [
        "Lost: state Start may go to 'Finish', which is not one of its states (Start)"
    ]


def test_a_proceed_state_outside_the_process_is_an_error() -> None:
    class Risky(Finish):
        options = StateOptions(execute_failure_proceeds_to="Rescue")

    class P(Process):
        states = StateSchema(Risky())

    assert "may go to 'Rescue'" in problems_of(P)[0]


def test_duplicate_ids_are_errors() -> None:
    class Twice(Process):
        states = StateSchema(Start(), Finish(), Finish())
        persistence = PersistenceSchema(LocalAttribute("a", int), LocalAttribute("a", str))
        communication = CommunicationSchema(LocalQueue("q"), LocalQueue("q"))

    assert problems_of(Twice) == [
        "Twice: two states have the id 'Finish'",
        "Twice local attribute 'a' is declared twice",
        "Twice local queue 'q' is declared twice",
    ]
    with pytest.raises(DefinitionError, match="registered twice"):
        Registry(Good, Good)


def test_states_must_be_instances_with_execute_and_a_declared_input_type() -> None:
    class NoExecute(AsyncState[None]):
        pass

    class NoInputType(AsyncState):  # type: ignore[type-arg]
        def execute(self, *_: Any) -> StateDecision:
            return StateDecision.dead_end()

    class _SYS_DEAD_END(Finish):
        pass

    class Bad(Process):
        states = StateSchema(Finish, NoExecute(), NoInputType(), _SYS_DEAD_END())  # type: ignore[arg-type]

    assert problems_of(Bad) == [
        "Bad: list an instance of state Finish, i.e. Finish()",
        "Bad: state NoExecute does not define execute()",
        "Bad: state NoInputType must declare its input type, e.g. class NoInputType(AsyncState[None]) or AsyncState[MyInput]",
        "Bad: state id '_SYS_DEAD_END' is reserved",
    ]


def test_state_options_are_checked_at_registration() -> None:
    class Odd(Finish):
        options = StateOptions(execute_retry=RetryPolicy(backoff_coefficient=0.5))

    class P(Process):
        states = StateSchema(Odd())

    [problem] = problems_of(P)
    assert problem.startswith("P: options of state Odd: Input should be greater than or equal to 1")


def test_types_that_cannot_be_checked_are_errors() -> None:
    class Opaque:  # pydantic cannot validate or encode an arbitrary class
        pass

    class Bad(Process):
        states = StateSchema(Finish())
        persistence = PersistenceSchema(LocalAttribute("x", Opaque))

    [problem] = problems_of(Bad)
    assert problem.startswith("Bad local attribute 'x': type <class")


def test_rpc_signatures_are_checked() -> None:
    class Bad(Process):
        states = StateSchema(Finish())

        @rpc
        def short(self, ctx: Context, input: str) -> str:
            return input

    assert problems_of(Bad) == [
        "Bad.short: an RPC takes (self, ctx, input, persistence, communication), not (self, ctx, input)"
    ]


def test_global_attributes_need_a_table_key_and_columns_other_than_the_key() -> None:
    class Bad(Process):
        states = StateSchema(Finish())
        persistence = PersistenceSchema(
            global_attributes=GlobalAttributes("user", "user_id", {"user_id": str})
        )

    class Empty(Process):
        states = StateSchema(Finish())
        persistence = PersistenceSchema(global_attributes=GlobalAttributes("user", "id", {}))

    assert "the primary key 'user_id' cannot be a global attribute column" in problems_of(Bad)[0]
    assert problems_of(Empty) == ["Empty: global attributes of table 'user' list no columns"]


def test_a_process_needs_a_state_schema_and_must_be_a_process() -> None:
    class NoStates(Process):
        pass

    assert problems_of(NoStates) == ["NoStates.states must be a StateSchema(...) of its states"]
    with pytest.raises(DefinitionError, match=r"not a subclass of xdb\.sdk\.Process"):
        Registry(int)  # type: ignore[arg-type]
