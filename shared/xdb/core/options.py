"""Turn iWF wire state options into resolved domain :class:`StateOptions`.

The iWF IDL carries two generations of names (``start``/``decide`` and
``waitUntil``/``execute``); the newer name wins when both are set.
"""

from __future__ import annotations

from collections.abc import Mapping

from xdb.model.execution import Execution, Loading, Retry, StateOptions
from xdb.model.wire import (
    ExecuteApiFailurePolicy,
    KeyValue,
    PersistenceLoadingPolicy,
    PersistenceLoadingType,
    RetryPolicy,
    SearchAttribute,
    WaitUntilApiFailurePolicy,
    WorkflowStateOptions,
)

DEFAULT_API_TIMEOUT = 30.0


def resolve(wire: WorkflowStateOptions | None, *, max_api_timeout: float) -> StateOptions:
    """Resolve wire options; API timeouts are capped at ``max_api_timeout``."""
    if wire is None:
        return StateOptions(
            wait_until_timeout=min(DEFAULT_API_TIMEOUT, max_api_timeout),
            execute_timeout=min(DEFAULT_API_TIMEOUT, max_api_timeout),
        )
    general = wire.data_attributes_loading_policy or wire.data_objects_loading_policy
    recovery = None
    if wire.execute_api_failure_policy is ExecuteApiFailurePolicy.PROCEED_TO_CONFIGURED_STATE:
        recovery = wire.execute_api_failure_proceed_state_id
    return StateOptions(
        skip_wait_until=bool(wire.skip_wait_until or wire.skip_start_api),
        wait_until_timeout=_timeout(
            wire.wait_until_api_timeout_seconds or wire.start_api_timeout_seconds, max_api_timeout
        ),
        execute_timeout=_timeout(
            wire.execute_api_timeout_seconds or wire.decide_api_timeout_seconds, max_api_timeout
        ),
        wait_until_retry=_retry(wire.wait_until_api_retry_policy or wire.start_api_retry_policy),
        execute_retry=_retry(wire.execute_api_retry_policy or wire.decide_api_retry_policy),
        wait_until_loading=loading(wire.wait_until_api_data_attributes_loading_policy or general),
        execute_loading=loading(wire.execute_api_data_attributes_loading_policy or general),
        wait_until_search_loading=loading(
            wire.wait_until_api_search_attributes_loading_policy
            or wire.search_attributes_loading_policy
        ),
        execute_search_loading=loading(
            wire.execute_api_search_attributes_loading_policy
            or wire.search_attributes_loading_policy
        ),
        proceed_on_wait_until_failure=(
            wire.wait_until_api_failure_policy is WaitUntilApiFailurePolicy.PROCEED_ON_FAILURE
            or wire.start_api_failure_policy == "PROCEED_TO_DECIDE_ON_START_API_FAILURE"
        ),
        recovery_state_id=recovery,
        recovery_options=(
            resolve(wire.execute_api_failure_proceed_state_options, max_api_timeout=max_api_timeout)
            if recovery
            else None
        ),
    )


def _timeout(seconds: int | None, cap: float) -> float:
    return min(float(seconds) if seconds else DEFAULT_API_TIMEOUT, cap)


def _retry(policy: RetryPolicy | None) -> Retry:
    if policy is None:
        return Retry()
    initial = float(policy.initial_interval_seconds or 1)
    return Retry(
        initial_interval=initial,
        backoff_coefficient=policy.backoff_coefficient or 2.0,
        # The iWF server fills in 100 s (service/common/retry/policy.go), whatever the
        # initial interval; its IDL comment says "100x of initial interval".
        maximum_interval=float(policy.maximum_interval_seconds or 100),
        maximum_attempts=policy.maximum_attempts or 0,
        maximum_duration=float(policy.maximum_attempts_duration_seconds or 0),
    )


def loading(policy: PersistenceLoadingPolicy | None) -> Loading:
    """A loading policy with defaults filled in (load all, no locking)."""
    if policy is None or policy.persistence_loading_type is None:
        return Loading()
    locking = policy.persistence_loading_type in (
        PersistenceLoadingType.LOAD_PARTIAL_WITH_EXCLUSIVE_LOCK,
        PersistenceLoadingType.LOAD_ALL_WITH_PARTIAL_LOCK,
    )
    return Loading(
        type=policy.persistence_loading_type,
        keys=policy.partial_loading_keys or [],
        keys_are_prefixes=bool(policy.use_key_as_prefix),
        locking_keys=(policy.locking_keys or []) if locking else [],
    )


def loaded_attributes(execution: Execution, policy: Loading) -> list[KeyValue]:
    """The data attributes a worker call sees, per its loading policy."""
    attributes = execution.data_attributes
    return [KeyValue(key=k, value=attributes[k]) for k in _keys(attributes, policy)]


def loaded_search_attributes(execution: Execution, policy: Loading) -> list[SearchAttribute]:
    """The search attributes a worker call sees, per its loading policy."""
    attributes = execution.search_attributes
    return [attributes[k] for k in _keys(attributes, policy)]


def _keys(attributes: Mapping[str, object], policy: Loading) -> list[str]:
    if policy.type is PersistenceLoadingType.LOAD_NONE:
        return []
    if policy.type in (
        PersistenceLoadingType.LOAD_PARTIAL_WITHOUT_LOCKING,
        PersistenceLoadingType.LOAD_PARTIAL_WITH_EXCLUSIVE_LOCK,
    ):
        if policy.keys_are_prefixes:
            return [k for k in attributes if any(k.startswith(p) for p in policy.keys)]
        return [k for k in policy.keys if k in attributes]
    return list(attributes)
