"""Replay: score exported traces against goldens and a config, as ``adk eval`` would.

Inputs are anything ``import`` reads (trace files), or ADK evalsets of recorded actual
runs (their turns are taken as the actual invocations). Invocations are grouped into
conversations, matched to golden turns (:class:`~tracescore.goldens.GoldenIndex`), scored
by the configured criteria and aggregated per case (:mod:`tracescore.scoring`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from tracescore.arguments import (
    CriteriaArg,
    GoldensArg,
    criteria_argument,
    expect_type,
    goldens_argument,
)
from tracescore.assembly import DEFAULT_IDLE_RECORDS, TraceAssembler
from tracescore.criteria import Criterion
from tracescore.criteria.base import golden_tool_results_needed
from tracescore.exceptions import ConfigError, TraceFormatError
from tracescore.export import json_bytes
from tracescore.formats.files import read_file
from tracescore.goldens import GoldenIndex, GoldenSet, load_golden_file
from tracescore.goldens.eval_results import is_eval_result, recorded_runs_evalset
from tracescore.goldens.evalset import parse_golden_data
from tracescore.importer import ImportStats, invocations_from_batches
from tracescore.judge.client import JudgeClient
from tracescore.model import Invocation, group_conversations
from tracescore.parallel import import_parallel, parallel_parts, resolve_jobs
from tracescore.path_args import Paths, expand_paths
from tracescore.prescore import Prescored, Prescoring, score_prescored
from tracescore.scoring import (
    CaseResult,
    InvocationResult,
    golden_matcher,
    score_conversations,
    summarize_cases,
)

__all__ = ["ActualRuns", "ReplayResult", "read_runs", "replay", "results_jsonl", "score_runs"]


@dataclass(slots=True, kw_only=True)
class ReplayResult:
    """Everything a replay produced."""

    invocations: list[InvocationResult]
    cases: list[CaseResult]
    criteria: Sequence[Criterion]
    stats: ImportStats = field(default_factory=ImportStats)

    @property
    def failed(self) -> bool:
        """True when any evaluated criterion failed in any case (the CI gate)."""
        return any(c.status == "failed" for c in self.cases)


def _is_evalset(path: str) -> bool:
    if path == "-" or not path.endswith(".json"):
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return any(key in head for key in _EVALSET_KEYS)


# What an evalset (or an ADK eval result) holds near its start, snake or camel case.
_EVALSET_KEYS = (b'"eval_set_id"', b'"eval_cases"', b'"evalSetId"', b'"evalCases"')
_EVAL_RESULT_KEYS = (
    b'"eval_set_result_id"',
    b'"eval_case_results"',
    b'"evalSetResultId"',
    b'"evalCaseResults"',
)


def replay(
    paths: Paths,
    criteria: CriteriaArg | None,
    *,
    goldens: GoldensArg = (),
    strict: bool = False,
    idle_records: int | None = None,
    on_error: Callable[[TraceFormatError], None] | None = None,
    judge: JudgeClient | None = None,
    jobs: int = 1,
) -> ReplayResult:
    """Score the invocations in ``paths`` with ``criteria`` against ``goldens``.

    :func:`read_runs` then :func:`score_runs`; the arguments are theirs. With ``jobs``
    above 1 and a large evalset, call those two yourself and load the goldens in between
    (see :func:`read_runs`), as ``tracescore replay`` does.

    ``paths`` is one path or several. ``criteria`` are scored as given: Criterion
    objects, a ``{name: threshold}`` mapping, an eval config path, or None for ADK's
    defaults; unlike ``tracescore replay``, the informational criteria are not added
    (:func:`tracescore.arguments.with_informational` adds them). ``goldens`` are golden
    sets or goldens paths.

    Raises:
        InputError: a path cannot be read.
        ConfigError: an evalset among the inputs, the eval config or the goldens are
            invalid.
        TraceFormatError: the first bad record, with ``strict``.
        TypeError: an argument is of none of the types it takes (the message names it).
        ValueError: two criteria have the same name.

    """
    chosen = criteria_argument(criteria)
    golden_sets = goldens_argument(goldens, tool_results=golden_tool_results_needed(chosen))
    runs = read_runs(
        paths,
        chosen,
        strict=strict,
        idle_records=idle_records,
        on_error=on_error,
        jobs=jobs,
        goldens=golden_sets,
    )
    return score_runs(runs, chosen, goldens=golden_sets, judge=judge)


@dataclass(slots=True)
class ActualRuns:
    """The invocations a replay scores, and what reading them found.

    ``prescored`` holds what import workers scored already (:mod:`tracescore.prescore`),
    which :func:`score_runs` takes when given the same criteria and goldens.
    """

    invocations: list[Invocation]
    stats: ImportStats
    prescored: Prescored | None = None


def read_runs(
    paths: Paths,
    criteria: Sequence[Criterion],
    *,
    strict: bool = False,
    idle_records: int | None = None,
    on_error: Callable[[TraceFormatError], None] | None = None,
    jobs: int = 1,
    goldens: Sequence[GoldenSet] | None = None,
) -> ActualRuns:
    """The actual invocations of a replay: trace files imported, evalsets' recorded runs.

    With ``jobs`` above 1 (0: one per CPU), large plain JSON Lines inputs are imported on
    that many processes (:func:`tracescore.parallel.import_parallel`), as ``tracescore
    import`` does; the invocations are the same.

    Given ``goldens`` as well, and no judged criterion, those workers also match and
    score the turns of their part (:mod:`tracescore.prescore`): :func:`score_runs` with
    the same criteria and goldens then scores after the import only the conversations a
    worker could not see whole. Without ``goldens``, a process that forks import workers
    should load its goldens after this call rather than before: workers forked from a
    process holding a large evalset run ~8% slower (they write into memory pages the
    parent's load left free but shared), which scoring in them more than makes up for.

    Trace files are rebuilt with only what ``criteria`` read: unless one of them
    :attr:`~tracescore.criteria.Criterion.needs_model_context`, the invocations (in the
    result too) carry no ``system_instructions`` or ``tool_definitions``.

    Raises:
        InputError: a path cannot be read.
        ConfigError: an evalset among the inputs is invalid.
        TraceFormatError: the first bad record, with ``strict``.
        TypeError: ``paths`` are not paths, or ``criteria`` not Criterion objects.
        ValueError: two criteria have the same name.

    """
    criteria = criteria_argument(criteria)
    files = expand_paths(paths)
    trace_files = [f for f in files if not _is_evalset(f)]
    actual: list[Invocation] = []
    for path in files:
        if path not in trace_files:
            actual.extend(_recorded_runs(path))
    stats = ImportStats(files=len(files))
    idle = DEFAULT_IDLE_RECORDS if idle_records is None else idle_records
    model_context = any(c.needs_model_context for c in criteria)
    parts = parallel_parts(trace_files, jobs=jobs, idle_records=idle, strict=strict)
    prescored = None
    if parts:
        scoring = None if goldens is None else Prescoring.build(criteria, goldens)
        prescored = None if scoring is None else Prescored(scoring)
        actual.extend(
            import_parallel(
                parts,
                stats,
                jobs=resolve_jobs(jobs),
                idle_records=idle,
                on_error=on_error,
                model_context=model_context,
                prescored=prescored,
            )
        )
    elif trace_files:
        batches = (b for f in trace_files for b in read_file(f))
        asm = TraceAssembler(idle_records=idle)
        actual.extend(
            invocations_from_batches(
                batches,
                stats,
                strict=strict,
                assembler=asm,
                on_error=on_error,
                model_context=model_context,
            )
        )
    return ActualRuns(actual, stats, prescored if prescored and prescored.verdicts else None)


def score_runs(
    runs: ActualRuns,
    criteria: Sequence[Criterion],
    *,
    goldens: Sequence[GoldenSet] = (),
    judge: JudgeClient | None = None,
) -> ReplayResult:
    """Group ``runs`` into conversations, match them to ``goldens``, score, summarise.

    Raises:
        TypeError: ``criteria`` are not Criterion objects, or ``goldens`` not golden sets.
        ValueError: two criteria have the same name.

    """
    criteria = criteria_argument(criteria)
    goldens = [expect_type(g, GoldenSet, f"goldens[{i}]") for i, g in enumerate(goldens)]
    turns = [i for i in runs.invocations if i.parent_tool_span_id is None]
    conversations = group_conversations(turns)
    prescored = runs.prescored
    if prescored is not None and prescored.scoring.serves(criteria, goldens):
        results = score_prescored(conversations, criteria, prescored)
    else:
        match = golden_matcher(GoldenIndex(goldens))
        results = score_conversations(conversations, criteria, match=match, judge=judge)
    return ReplayResult(
        invocations=results,
        cases=summarize_cases(results, criteria),
        criteria=criteria,
        stats=runs.stats,
    )


def _recorded_runs(path: str) -> list[Invocation]:
    """The turns of an evalset of recorded actual runs, as invocations to score.

    An ADK eval result (``adk eval`` history) is read the same way: its actual
    invocations are the recorded runs (:mod:`tracescore.goldens.eval_results`).
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        head = b""  # load_golden_file says why
    if any(key in head for key in _EVAL_RESULT_KEYS):
        golden_set = _eval_result_runs(path)
    else:
        golden_set = load_golden_file(path)
    runs: list[Invocation] = []
    for case in golden_set.cases:
        runs.extend(case.turns)
    return runs


def _eval_result_runs(path: str) -> GoldenSet:
    try:
        data = orjson.loads(Path(path).read_bytes())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    if not is_eval_result(data):  # the keys were only mentioned in an evalset's text
        return load_golden_file(path)
    return parse_golden_data(recorded_runs_evalset(data, path), source=path)


_STATUS = {
    "passed": "PASSED",
    "failed": "FAILED",
    "not_evaluated": "NOT_EVALUATED",
    "informational": "INFORMATIONAL",
}


def results_jsonl(result: ReplayResult) -> bytes:
    """One JSON line per invocation: ids, golden, outcome, and every criterion's result."""
    lines = []
    for res in result.invocations:
        inv = res.invocation
        golden = (
            {
                "eval_set_id": res.golden.eval_set_id,
                "eval_id": res.golden.eval_id,
                "turn": res.golden.turn,
            }
            if res.golden
            else None
        )
        record = {
            "trace_id": inv.trace_id,
            "conversation_id": inv.conversation_id,
            "invocation_id": inv.invocation_id,
            "agent": inv.agent,
            "golden": golden,
            "outcome": res.outcome,
            "reason": res.reason,
            "error": inv.error,
            "criteria": {
                r.criterion: {
                    "score": r.score,
                    "status": _STATUS[r.status],
                    "threshold": r.threshold,
                    "reason": r.reason,
                    "version": r.version,
                    **({"details": r.details} if r.details else {}),
                }
                for r in res.results
            },
        }
        lines.append(json_bytes(record))  # details may quote tool arguments of any depth
    return b"".join(line + b"\n" for line in lines)
