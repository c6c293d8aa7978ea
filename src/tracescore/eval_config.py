"""ADK ``eval_config.json`` / ``test_config.json``, read unchanged, into criteria.

Accepted (REFERENCE §2): ``{"criteria": {name: threshold | object}, ...}`` where an
object carries ``threshold`` and criterion options in snake or camel case
(``match_type``/``matchType`` as a name or ADK's 0/1/2, ``ignore_args``, ...). AgentFlow's
spellings are accepted where they are unambiguous: ``check_args`` (the inverse of
``ignore_args``), ``enabled: false`` (criterion skipped), ``keywords``. No config means
ADK's defaults: ``tool_trajectory_avg_score`` at 1.0 and ``response_match_score`` at 0.8.
ADK's informational efficiency metrics do not belong in ``criteria`` (ADK refuses them
there): they are reported on every replay.

Every mistake is a :class:`~tracescore.exceptions.ConfigError` naming the file, the key
and what is allowed; an unknown criterion lists the known ones and the closest match.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import orjson
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from tracescore.criteria import Criterion, criterion_class
from tracescore.criteria.judged import JudgeModelOptions
from tracescore.criteria.registry import NAME_CLASHES
from tracescore.criteria.trajectory_match import parse_match_type
from tracescore.documents import identify, identify_lines, not_utf8, where_it_goes
from tracescore.exceptions import ConfigError

__all__ = ["DEFAULT_CRITERIA", "criteria_from_config", "load_eval_config"]

#: ADK's criteria when no config is given.
DEFAULT_CRITERIA: Final[Mapping[str, float]] = {
    "tool_trajectory_avg_score": 1.0,
    "response_match_score": 0.8,
}


def _alias(snake: str) -> Any:
    head, *rest = snake.split("_")
    camel = head + "".join(w.title() for w in rest)
    return Field(default=None, validation_alias=AliasChoices(snake, camel))


class _CriterionOptions(BaseModel):
    """One criterion object of an eval config (snake or camel keys)."""

    model_config = ConfigDict(extra="forbid")

    threshold: float | None = None
    match_type: str | int | None = _alias("match_type")
    ignore_args: bool | None = _alias("ignore_args")
    check_args: bool | None = _alias("check_args")
    enabled: bool | None = None
    keywords: list[str] | None = None
    judge_model_options: dict[str, Any] | None = _alias("judge_model_options")
    rubrics: list[Any] | None = None
    evaluate_intermediate_nl_responses: bool | None = _alias("evaluate_intermediate_nl_responses")
    stop_signal: str | None = _alias("stop_signal")
    include_intermediate_responses_in_final: bool | None = _alias(
        "include_intermediate_responses_in_final"
    )


class _EvalConfig(BaseModel):
    """The whole file; ADK's other sections are accepted and kept for later stages."""

    model_config = ConfigDict(extra="forbid")

    criteria: dict[str, Any] = Field(default_factory=dict)
    user_simulator_config: dict[str, Any] | None = _alias("user_simulator_config")
    custom_metrics: dict[str, Any] | None = _alias("custom_metrics")
    # AgentFlow's EvalConfig options (run-time knobs; accepted so its configs load).
    parallel: bool | None = None
    max_concurrency: int | None = _alias("max_concurrency")
    timeout: float | None = None


def load_eval_config(path: str | os.PathLike[str] | None) -> list[Criterion]:
    """The criteria of an ADK eval config file (ADK's defaults when ``path`` is None).

    Raises:
        ConfigError: unreadable file, invalid JSON, or an invalid entry (named).

    """
    if path is None:
        return criteria_from_config({"criteria": dict(DEFAULT_CRITERIA)}, source="defaults")
    where = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read: {exc.strerror or exc}") from exc
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        problem = not_utf8(raw)
        if problem is not None:
            raise ConfigError(f"{where}: {problem}") from None
        hint = where_it_goes(identify_lines(raw), "eval_config")
        raise ConfigError(f"{where}: {hint or f'invalid JSON: {exc}'}") from None
    hint = where_it_goes(identify(data), "eval_config")
    if hint:
        raise ConfigError(f"{where}: {hint}")
    return criteria_from_config(data, source=where)


def criteria_from_config(data: object, *, source: str) -> list[Criterion]:
    """Build criteria from a parsed eval config; ``source`` names it in errors.

    Raises:
        ConfigError: the config is not valid; the message names ``source`` and the key.

    """
    try:
        config = _EvalConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_first_error(exc)}") from None
    agentflow = _looks_like_agentflow(config)
    out: list[Criterion] = []
    # Results, outputs and metrics are keyed by criterion name: an alias and its name
    # (rouge_match, response_match_score) in one config would overwrite each other.
    keys_of: dict[str, str] = {}
    for name, entry in config.criteria.items():
        key = f"criteria.{name}"
        if agentflow and name in NAME_CLASHES:
            raise ConfigError(
                f"{source}: {key}: ambiguous in an AgentFlow-style config: "
                f"{NAME_CLASHES[name]}; write final_response_match_v2 for the LLM match "
                "or rouge_match for ROUGE-1"
            )
        try:
            cls = criterion_class(name)
        except ConfigError as exc:
            raise ConfigError(f"{source}: {key}: {exc}") from None
        options = _options(entry, source=source, key=key)
        if options.enabled is False:
            continue
        if cls.name in keys_of:
            raise ConfigError(
                f"{source}: {key}: the same criterion as {keys_of[cls.name]} ({cls.name});"
                " give it once"
            )
        keys_of[cls.name] = key
        out.append(_build(cls, options, source=source, key=key))
    return out


_AGENTFLOW_KEYS: Final = frozenset({"check_args", "checkArgs", "enabled", "keywords"})


def _looks_like_agentflow(config: _EvalConfig) -> bool:
    """AgentFlow's spellings (``check_args``, ``enabled``, run options) mark its configs."""
    if config.parallel is not None or config.max_concurrency is not None:
        return True
    if config.timeout is not None:
        return True
    return any(
        isinstance(entry, dict) and not _AGENTFLOW_KEYS.isdisjoint(entry)
        for entry in config.criteria.values()
    )


def _options(entry: object, *, source: str, key: str) -> _CriterionOptions:
    """A bare value is the threshold (ADK's short form); an object carries options.

    Both are read as ADK's pydantic model reads them, so a file ADK takes loads here:
    a number, a numeric string (``"0.8"``, ``" 1e-1 "``, ``"nan"``) or a boolean (1 or 0).
    """
    if isinstance(entry, dict):
        try:
            return _CriterionOptions.model_validate(entry)
        except ValidationError as exc:
            raise ConfigError(f"{source}: {key}.{_first_error(exc)}") from None
    try:
        options = _CriterionOptions.model_validate({"threshold": entry})
    except ValidationError:
        options = None
    if options is None or options.threshold is None:
        raise ConfigError(f"{source}: {key}: expected a threshold number or an object")
    return options


def _build(cls: type[Criterion], options: _CriterionOptions, *, source: str, key: str) -> Criterion:
    fields = {f.name for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    if cls.informational:
        # ADK refuses these in ``criteria``: they never pass or fail and are reported
        # on every eval anyway (as every replay reports them here).
        raise ConfigError(
            f"{source}: {key}: {cls.name} is informational: it is reported on every replay;"
            " remove it from criteria (ADK refuses it there too)"
        )
    if options.threshold is None:
        raise ConfigError(f"{source}: {key}: a threshold is required")
    if options.threshold is not None:
        kwargs["threshold"] = options.threshold
    if options.ignore_args is not None and options.check_args is not None:
        raise ConfigError(f"{source}: {key}: give ignore_args or check_args, not both")
    given = options.model_dump(exclude_none=True, exclude={"threshold", "enabled"})
    if "check_args" in given:
        given["ignore_args"] = not given.pop("check_args")
    for option, raw in given.items():
        if option not in fields:
            allowed = sorted(fields - {"threshold"}) or ["threshold only"]
            raise ConfigError(
                f"{source}: {key}.{option}: not an option of {cls.name}"
                f" (it takes: {', '.join(allowed)})"
            )
        value = raw
        if option == "match_type":
            try:
                value = parse_match_type(raw)
            except ValueError as exc:
                raise ConfigError(f"{source}: {key}.match_type: {exc}") from None
        elif option in {"keywords", "rubrics"}:
            value = tuple(raw)
        elif option == "judge_model_options":
            try:
                value = JudgeModelOptions.parse(raw)
            except ValueError as exc:
                raise ConfigError(f"{source}: {key}.judge_model_options.{exc}") from None
        kwargs[option] = value
    try:
        return cls(**kwargs)
    except ValueError as exc:  # a criterion's own validation (rubrics, ...)
        raise ConfigError(f"{source}: {key}: {exc}") from None


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        return f"{loc}: unknown key"
    return f"{loc}: {err['msg']}"
