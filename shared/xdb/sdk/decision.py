"""Where a state goes after ``execute``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from xdb.model.wire import DEAD_END, FORCE_COMPLETE, FORCE_FAIL, GRACEFUL_COMPLETE

if TYPE_CHECKING:
    from xdb.sdk.state import AsyncState

RESERVED = frozenset({GRACEFUL_COMPLETE, FORCE_COMPLETE, FORCE_FAIL, DEAD_END})


def state_id_of(state: type[AsyncState[Any]] | str) -> str:
    """A state's id, from its class or as given."""
    return state if isinstance(state, str) else state.state_id()


@dataclass(frozen=True)
class StateMovement:
    """Go to ``state`` (a state class, or its id) with ``input``."""

    state: type[AsyncState[Any]] | str
    input: Any = None

    @property
    def state_id(self) -> str:
        return state_id_of(self.state)


@dataclass(frozen=True)
class StateDecision:
    """One or more next states (parallel threads), or the end of the thread or process."""

    movements: tuple[StateMovement, ...]

    @classmethod
    def single_next_state(
        cls, state: type[AsyncState[Any]] | str, input: Any = None
    ) -> StateDecision:
        return cls((StateMovement(state, input),))

    @classmethod
    def multi_next_states(
        cls, *states: type[AsyncState[Any]] | str | StateMovement
    ) -> StateDecision:
        """Start a thread for each state (a ``StateMovement`` to give one an input)."""
        if not states:
            raise ValueError("multi_next_states needs at least one state")
        return cls(tuple(s if isinstance(s, StateMovement) else StateMovement(s) for s in states))

    @classmethod
    def graceful_complete_process(cls, output: Any = None) -> StateDecision:
        """Complete the process once every other thread has ended too."""
        return cls((StateMovement(GRACEFUL_COMPLETE, output),))

    @classmethod
    def force_complete_process(cls, output: Any = None) -> StateDecision:
        """Complete the process now, ending every other thread."""
        return cls((StateMovement(FORCE_COMPLETE, output),))

    @classmethod
    def force_fail_process(cls, output: Any = None) -> StateDecision:
        """Fail the process now, ending every other thread."""
        return cls((StateMovement(FORCE_FAIL, output),))

    @classmethod
    def dead_end(cls) -> StateDecision:
        """End this thread only; the process goes on while others run."""
        return cls((StateMovement(DEAD_END),))
