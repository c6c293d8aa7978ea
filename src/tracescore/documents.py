"""Which of tracescore's input documents a JSON file is, to say so when it is misplaced.

Users hand a replay three kinds of JSON: trace files (the PATHs), evalsets (``--goldens``)
and eval configs (``--config``). Given in the wrong place, each used to fail on its first
missing key (``missing required key eval_set_id``); the loaders now name what the file
is and where it goes instead. tracescore's own JSON Lines outputs (replay results,
imported invocations) are recognised too: left in a traces directory, they used to be
read as "an ADK eval config" (a result line has ``criteria``).
"""

from __future__ import annotations

from typing import Final, Literal

import orjson

from tracescore import json_text

__all__ = ["Kind", "identify", "identify_lines", "not_utf8", "where_it_goes"]

Kind = Literal["evalset", "eval_config", "traces", "results", "invocations", "eval_result"]

_EVAL_RESULT: Final = frozenset(
    {"eval_set_result_id", "evalSetResultId", "eval_case_results", "evalCaseResults"}
)
_EVALSET: Final = frozenset({"eval_set_id", "evalSetId", "eval_cases", "evalCases"})
_TRACES: Final = frozenset({"resourceSpans", "resource_spans", "resourceLogs", "resource_logs"})

_WHERE: Final[dict[Kind, str]] = {
    "evalset": "an ADK evalset: it goes to --goldens (or is a PATH of recorded runs)",
    "eval_config": "an ADK eval config (criteria): it goes to --config",
    "traces": "an OTLP trace file: it is a PATH to score",
    "eval_result": "an ADK eval result (adk eval history): its recorded runs are a PATH "
    "to score, with the evalset it ran as --goldens",
    "results": "tracescore replay results (--output): they are not read back",
    "invocations": "invocations written by `tracescore import --format jsonl`, not traces",
}
#: Every line tracescore writes as JSON Lines starts with this key (replay results and
#: ``import --format jsonl`` alike); the next keys tell which.
_OWN: Final = "trace_id"


def identify(data: object) -> Kind | None:
    """The kind of a parsed JSON document, from its top-level keys; None if unsure."""
    if not isinstance(data, dict):
        return None
    keys = data.keys()
    if not _EVAL_RESULT.isdisjoint(keys):  # before evalset: a result has eval_set_id too
        return "eval_result"
    if not _EVALSET.isdisjoint(keys):
        return "evalset"
    if not _TRACES.isdisjoint(keys) or "batches" in keys:
        return "traces"
    if _OWN in keys and "outcome" in keys and "criteria" in keys:
        return "results"  # before eval_config: a result line has "criteria" too
    if _OWN in keys and "tool_calls" in keys and "final_response" in keys:
        return "invocations"
    if "criteria" in keys:
        return "eval_config"
    return None


def identify_lines(raw: bytes | str) -> Kind | None:
    """The kind of JSON Lines content (its first line), e.g. a Collector trace file."""
    data = raw.encode() if isinstance(raw, str) else raw
    first = data.lstrip().split(b"\n", 1)[0]
    try:
        return identify(json_text.loads(first))
    except orjson.JSONDecodeError:
        return None


def where_it_goes(kind: Kind | None, expected: Kind) -> str | None:
    """``"not <expected> but <kind>: it goes to ..."``; None when it is that, or unknown."""
    if kind is None or kind == expected:
        return None
    names: dict[Kind, str] = {
        "evalset": "an evalset",
        "eval_config": "an eval config",
        "traces": "a trace file",
    }
    return f"not {names[expected]} but {_WHERE[kind]}"


def not_utf8(data: bytes) -> str | None:
    """What is wrong when ``data`` is not UTF-8 text (None when it is), for a message.

    orjson says ``str is not valid UTF-8: surrogates not allowed`` of any such file,
    which misleads; a UTF-16 file (as some Windows editors save JSON) is named as one.
    """
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            return "not UTF-8 text but UTF-16: save it as UTF-8"
        return f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    return None
