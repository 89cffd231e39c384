"""Where a state goes after ``execute``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xdb.sdk.state import AsyncState

# The engine's reserved state ids (iWF's): moving to one of them closes the process or
# ends the thread.
GRACEFUL_COMPLETE = "_SYS_GRACEFUL_COMPLETING_WORKFLOW"
FORCE_COMPLETE = "_SYS_FORCE_COMPLETING_WORKFLOW"
FORCE_FAIL = "_SYS_FORCE_FAILING_WORKFLOW"
DEAD_END = "_SYS_DEAD_END"
RESERVED = frozenset({GRACEFUL_COMPLETE, FORCE_COMPLETE, FORCE_FAIL, DEAD_END})


@dataclass(frozen=True)
class StateMovement:
    """Go to ``state`` (a state class, or its id) with ``input``."""

    state: type[AsyncState[Any]] | str
    input: Any = None

    @property
    def state_id(self) -> str:
        return self.state if isinstance(self.state, str) else self.state.state_id()


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
