"""When to try a failed worker call again."""

from __future__ import annotations

from xdb.model.execution import Retry


def next_attempt_at(
    policy: Retry, *, attempt: int, first_attempt_at: float, now: float
) -> float | None:
    """The time of attempt ``attempt + 1``, or None when the policy is exhausted.

    ``attempt`` counts from 1 (the attempt that just failed).
    """
    if policy.maximum_attempts and attempt >= policy.maximum_attempts:
        return None
    backoff = policy.initial_interval * policy.backoff_coefficient ** (attempt - 1)
    at = now + min(backoff, policy.maximum_interval)
    if policy.maximum_duration and at - first_attempt_at > policy.maximum_duration:
        return None
    return at
