"""ADK eval results (``adk eval`` history) read as recorded runs to score again.

``adk eval`` keeps each run's results in ``.adk/eval_history/*.evalset_result.json``: an
``EvalSetResult`` whose case results hold, per invocation, the ``actual_invocation`` the
agent produced (and the ``expected_invocation`` it was scored against). Those actual
invocations are recorded runs, exactly like the turns of an evalset of recorded runs: a
replay can score them again with other criteria or thresholds, against the goldens, with
no agent and no model call.

The document is turned into an evalset-shaped one (one case per case result, its
actual invocations as the conversation) and parsed by the evalset loader, so the
invocations are read by the same code, with the same errors, as any evalset.
"""

from __future__ import annotations

from typing import Any, Final

from tracescore.exceptions import ConfigError

__all__ = ["is_eval_result", "recorded_runs_evalset"]

# ADK writes snake_case (model_dump_json); its web API answers in camelCase.
_RESULTS: Final = ("eval_case_results", "evalCaseResults")
_RESULT_ID: Final = ("eval_set_result_id", "evalSetResultId")
_PER_INVOCATION: Final = ("eval_metric_result_per_invocation", "evalMetricResultPerInvocation")
_ACTUAL: Final = ("actual_invocation", "actualInvocation")


def _get(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in obj:
            return obj[key]
    return None


def is_eval_result(data: object) -> bool:
    """Whether a parsed JSON document is an ADK ``EvalSetResult``."""
    return isinstance(data, dict) and any(k in data for k in (*_RESULTS, *_RESULT_ID))


def recorded_runs_evalset(data: dict[str, Any], source: str) -> dict[str, Any]:
    """The evalset whose conversations are the actual invocations of an ``EvalSetResult``.

    Each case result becomes one case, a conversation of its own: its ``eval_id`` is
    ``<eval_id>/<session_id>`` (each run of a case has its own session, and ``adk eval
    --num_runs`` repeats cases), else ``<eval_id>#<n>``. The replay then matches each run
    to its golden case by the user's text, and pools the runs of one case, as ADK does.

    Args:
        data: The parsed document (:func:`is_eval_result`).
        source: The file, for errors.

    Raises:
        ConfigError: the case results are not a list of objects, or none holds an
            actual invocation.

    """
    results = _get(data, _RESULTS)
    if not isinstance(results, list):
        raise ConfigError(f"{source}: eval_case_results must be a list of case results")
    cases: list[dict[str, Any]] = []
    for k, result in enumerate(results):
        where = f"{source}: eval_case_results[{k}]"
        if not isinstance(result, dict):
            raise ConfigError(f"{where}: expected an object")
        per_invocation = _get(result, _PER_INVOCATION) or []
        if not isinstance(per_invocation, list):
            raise ConfigError(f"{where}: eval_metric_result_per_invocation must be a list")
        turns = []
        for i, entry in enumerate(per_invocation):
            actual = _get(entry, _ACTUAL) if isinstance(entry, dict) else None
            if not isinstance(actual, dict):
                raise ConfigError(
                    f"{where}.eval_metric_result_per_invocation[{i}]: no actual_invocation"
                )
            turns.append(actual)
        if not turns:
            continue  # a case that failed before any turn: nothing was recorded
        eval_id = result.get("eval_id", result.get("evalId")) or f"case{k}"
        session = result.get("session_id", result.get("sessionId"))
        run = f"{eval_id}/{session}" if session else f"{eval_id}#{k}"
        cases.append({"eval_id": run, "conversation": turns})
    if not cases:
        raise ConfigError(
            f"{source}: an ADK eval result without any recorded invocation "
            "(eval_metric_result_per_invocation is empty in every case result)"
        )
    set_id = data.get("eval_set_id", data.get("evalSetId")) or _get(data, _RESULT_ID)
    return {"eval_set_id": str(set_id or source), "eval_cases": cases}
