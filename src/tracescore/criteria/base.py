"""The criterion contract: settings as fields, one ``score``, failures as data.

A criterion is a small object whose dataclass fields are its settings (threshold, match
type, keywords, ...). :meth:`Criterion.score` rates one invocation; :meth:`evaluate`
wraps it with ADK's rules (REFERENCE §3):

* ``score >= threshold`` passes, below fails; a ``None`` score is NOT_EVALUATED with a
  reason; informational criteria never pass or fail;
* a reference criterion without a matched golden is NOT_EVALUATED, reason ``no golden``;
* an exception inside a criterion becomes NOT_EVALUATED with the error as reason: one
  broken criterion never costs the others or the run.

Per-case aggregation is the mean of the per-invocation scores that are not ``None``
(:meth:`Criterion.aggregate`; criteria that pool differently, like rubrics, override it),
and the criterion's case status compares that mean with the threshold, as ADK's
evaluators do. A case's overall status then combines its criteria
(:func:`combine_statuses`).
Built-ins register exactly like a user's own criterion (:mod:`.registry`).
"""

from __future__ import annotations

import decimal
import logging
import math
import numbers
import reprlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, get_args

from tracescore.criteria.aggregation import combine_statuses, mean_score, status_for
from tracescore.criteria.evaluators import Compiled, Delegating, Evaluator
from tracescore.criteria.results import NO_GOLDEN, CriterionResult, EvalContext, EvalStatus, Score
from tracescore.exceptions import ConfigError

__all__ = [
    "NO_GOLDEN",
    "Criterion",
    "CriterionResult",
    "EvalContext",
    "EvalStatus",
    "Score",
    "checked_case_result",
    "combine_statuses",
    "criterion_error",
    "golden_tool_results_needed",
    "status_for",
]

logger = logging.getLogger(__name__)
_new: Final = object.__new__


@dataclass(frozen=True, kw_only=True)
class Criterion(ABC):
    """Base class of every criterion, built-in or user-defined.

    Subclasses are frozen dataclasses that set :attr:`name` and implement :meth:`score`.

    Attributes:
        threshold: Pass mark (``score >= threshold``); None for informational ones.

    """

    #: The name used in configs and metrics, e.g. ``tool_trajectory_avg_score``.
    name: ClassVar[str]
    #: Travels with every score, so a changed definition never mixes with old scores.
    version: ClassVar[str] = "1"
    #: Needs a golden turn; NOT_EVALUATED ``no golden`` without one.
    requires_reference: ClassVar[bool] = False
    #: Reports a value but never passes or fails (ADK's efficiency metrics).
    informational: ClassVar[bool] = False
    #: Asks an LLM judge (async; see :class:`tracescore.criteria.judged.JudgedCriterion`).
    judged: ClassVar[bool] = False
    #: Reads the invocation's model context (``system_instructions``, ``tool_definitions``,
    #: ``retrieved``, ``grounding``). A replay or live scorer whose criteria all say False
    #: does not extract it (decoding every
    #: run's instructions and tool declarations is ~6% of rebuilding it). True unless a
    #: criterion says otherwise, so that a user's own criterion always sees them.
    needs_model_context: ClassVar[bool] = True
    #: Reads the golden turn's tool results (``ctx.expected.tool_calls[i].result``). A
    #: replay or live scorer whose criteria all say False loads its goldens without them
    #: (``load_goldens(..., tool_results=False)``: in the benchmark's evalset they are 39%
    #: of the file and 40 MB of objects). True unless a criterion says otherwise.
    reads_golden_tool_results: ClassVar[bool] = True
    #: A built-in's compiled rating (:mod:`.evaluators`), which :meth:`evaluator` hands
    #: the scoring loop instead of :meth:`evaluate`. None for a user's criterion, and
    #: for a subclass of a built-in that rates on its own (:meth:`__init_subclass__`).
    evaluator_class: ClassVar[type[Compiled] | None] = None

    threshold: float | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Drop the inherited compiled rating of a subclass that overrides the rating."""
        super().__init_subclass__(**kwargs)
        if "evaluator_class" not in cls.__dict__ and not _RATING.isdisjoint(cls.__dict__):
            cls.evaluator_class = None

    def __post_init__(self) -> None:
        """Make the threshold a float (compiled code reads it as one) or refuse it.

        Infinities and NaN stay, as ADK's config reads them (``"inf"``, ``"nan"``).
        A subclass with its own ``__post_init__`` calls this one.

        Raises:
            ConfigError: The threshold is not a real number a float can hold (a user's
                mistake in Python; a config file's thresholds are checked before).

        """
        threshold: object = self.threshold
        if threshold is None or type(threshold) is float:
            return
        if isinstance(threshold, float):  # a subclass (numpy.float64): its NaN kept too
            number = float(threshold)
        else:
            number = _as_float(threshold) if isinstance(threshold, _NUMBERS) else math.nan
            if math.isnan(number):  # not a number, or one no float holds (a signalling NaN)
                raise ConfigError(
                    f"criterion {getattr(self, 'name', type(self).__name__)}: threshold "
                    f"{reprlib.repr(threshold)} is not a number (a float, or None)"
                )
        object.__setattr__(self, "threshold", number)  # frozen: as dataclass itself sets it

    @abstractmethod
    def score(self, ctx: EvalContext) -> Score:
        """Rate one invocation. May raise: :meth:`evaluate` turns errors into data."""

    def evaluate(self, ctx: EvalContext) -> CriterionResult:
        """Score one invocation with ADK's status rules; never raises."""
        if self.requires_reference and ctx.expected is None:
            return self._result(Score(value=None, reason=NO_GOLDEN))
        try:
            score = self.score(ctx)
        except Exception as exc:  # a broken criterion must not cost the others
            score = criterion_error(self.name, exc)
        return self._result(score)

    def evaluate_not_evaluable(self, reason: str) -> CriterionResult:
        """The result for an invocation that cannot be scored at all (``reason`` says why)."""
        return self._result(Score(value=None, reason=reason))

    def evaluator(self) -> Evaluator:
        """What the scoring loop calls for each invocation, made once per run.

        A built-in's compiled rating (:attr:`evaluator_class`), which gives what
        :meth:`evaluate` gives; otherwise one that calls :meth:`evaluate` and
        :meth:`evaluate_not_evaluable`. Never raises.
        """
        kind = type(self).evaluator_class
        threshold = self.threshold
        # A threshold left unconverted (a subclass's __post_init__ that skipped this
        # class's) stays with the interpreted rules, which compare any number.
        if kind is not None and (threshold is None or type(threshold) is float):
            try:
                return kind(self)
            except Exception:  # settings of a wrong type, given in Python (keywords=[1])
                # Their evaluate turns the same error into a result per invocation.
                logger.debug("criterion %s: no compiled evaluator", self.name, exc_info=True)
        return Delegating(self)

    def aggregate(self, results: Sequence[CriterionResult]) -> float | None:
        """Case score from per-invocation results: their mean, ``None`` scores skipped."""
        return mean_score(results)

    def case_result(self, results: Sequence[CriterionResult]) -> tuple[float | None, EvalStatus]:
        """The case score (:meth:`aggregate`) and its status against the threshold."""
        score = self.aggregate(results)
        return score, status_for(score, self.threshold, informational=self.informational)

    def _result(self, score: Score) -> CriterionResult:
        # One subtraction tells a finite float (x - x == 0.0) from NaN and infinities; the
        # rest (another type, or not a Score at all) is a criterion's bug, made data here,
        # as are a reason that is no str and details that are no dict: compiled code
        # downstream reads them as such.
        if (
            not isinstance(score, Score)
            or ((value := score.value) is not None and (type(value) is not float or value - value))
            or ((reason := score.reason) is not None and type(reason) is not str)
            or type(score.details) is not dict
        ):
            score = _checked(self.name, score)
        # CriterionResult(criterion=..., ...) with its fields stored one by one: the
        # generated __init__ (seven keywords, a default factory) takes ~1.1 µs, this
        # ~0.3 µs, once per criterion and invocation. Every field is set here (a test
        # holds it to the keyword-built record).
        result = _new(CriterionResult)
        result.criterion = self.name
        result.version = self.version
        result.score = score.value
        result.status = status_for(score.value, self.threshold, informational=self.informational)
        result.threshold = self.threshold
        result.reason = score.reason
        result.details = score.details
        return result


def golden_tool_results_needed(criteria: Iterable[Criterion]) -> bool:
    """Whether any of ``criteria`` reads golden tool results (the goldens' load option)."""
    return any(c.reads_golden_tool_results for c in criteria)


#: (criterion, kind of error) already logged with details: a criterion broken for every
#: invocation logs once at WARNING, then at DEBUG; each result still carries its reason.
_LOGGED: set[tuple[str, str]] = set()


def _log_once(name: str, kind: str, message: str, *, exc_info: bool = False) -> None:
    key = (name, kind)
    level = logging.DEBUG if key in _LOGGED else logging.WARNING
    _LOGGED.add(key)
    logger.log(level, "criterion %s: %s", name, message, exc_info=exc_info)


def criterion_error(name: str, exc: Exception) -> Score:
    """NOT_EVALUATED for an exception raised by criterion ``name`` (logged once per type)."""
    kind = type(exc).__name__
    _log_once(name, kind, f"raised {kind}: {exc}", exc_info=True)
    return Score(value=None, reason=f"criterion error: {kind}: {exc}")


def checked_case_result(
    criterion: Criterion, results: Sequence[CriterionResult]
) -> tuple[float | None, EvalStatus]:
    """``criterion.case_result(results)``, its score made a float as ``_checked`` does.

    A user's own ``aggregate`` may pool in Decimal, numpy or fractions: any finite real
    number becomes a float (compiled code downstream accepts only floats). Anything else,
    NaN, infinities, or an exception, is NOT_EVALUATED for the case, logged once.
    """
    name = criterion.name
    try:
        outcome: object = criterion.case_result(results)
    except Exception as exc:  # a user's aggregation must not cost the other criteria
        criterion_error(name, exc)
        return None, "not_evaluated"
    if not (
        isinstance(outcome, tuple)
        and len(outcome) == 2
        and isinstance(outcome[1], str)
        and outcome[1] in _STATUSES
    ):
        _log_once(name, "bad case result", f"case_result() returned {outcome!r}")
        return None, "not_evaluated"
    value, status = outcome
    if value is None:
        return None, status
    number = _finite_float(value)
    if number is not None:
        return number, status
    _log_once(name, "bad case score", f"case score {reprlib.repr(value)} is not a finite number")
    return None, "not_evaluated"


#: The methods whose override makes a subclass rate differently from its base.
_RATING: Final = frozenset(["score", "evaluate", "evaluate_not_evaluable", "_result"])
# Decimal is no numbers.Real (it refuses to mix with floats), but it is a number a user's
# criterion may well compute in.
_NUMBERS: Final = (numbers.Real, decimal.Decimal)
_STATUSES: Final = frozenset(get_args(EvalStatus))


def _finite_float(value: object) -> float | None:
    """``value`` as a float when it is a finite real number of any type, else None."""
    if type(value) is float:
        return value if math.isfinite(value) else None
    if isinstance(value, _NUMBERS):
        number = _as_float(value)
        return number if math.isfinite(number) else None
    return None


def _as_float(value: numbers.Real | decimal.Decimal) -> float:
    """``float(value)``, or NaN where Python refuses it.

    A signalling Decimal NaN raises ValueError, a Fraction or int beyond the float range
    OverflowError: both are a criterion's bad number, not an error of tracescore.
    """
    try:
        return float(value)
    except (ValueError, OverflowError):
        return math.nan


def _checked(name: str, score: object) -> Score:
    """``score`` with a float value, or NOT_EVALUATED saying what the criterion got wrong.

    Built-ins always return finite floats; a user's criterion may return a bare number,
    an int, a numpy scalar, NaN, or a Score whose value is a string. Numbers become
    floats. NaN, infinities and anything else are a criterion error, as an exception in
    ``score`` is: a NaN would fail every threshold silently and poison the means. So are
    a reason that is not a str and details that are not a mapping (other mappings
    become dicts).
    """
    if not isinstance(score, Score):
        problem = f"score() returned {type(score).__name__}, not a Score"
        _log_once(name, "not a Score", problem)
        return Score(value=None, reason=f"criterion error: {problem}")
    reason: object = score.reason  # annotated too, and as loosely kept
    if reason is not None and not isinstance(reason, str):
        problem = f"reason {reprlib.repr(reason)} is {type(reason).__name__}, not a str"
        _log_once(name, "bad reason", problem)
        return Score(value=None, reason=f"criterion error: {problem}")
    details: object = score.details
    if not isinstance(details, Mapping):
        problem = f"details {reprlib.repr(details)} is {type(details).__name__}, not a mapping"
        _log_once(name, "bad details", problem)
        return Score(value=None, reason=f"criterion error: {problem}")
    details = dict(details)  # a read-only or custom mapping, as the sinks write dicts
    value: object = score.value  # annotated float | None; a user's code may put anything
    if value is None:
        return Score(value=None, reason=score.reason, details=details)
    number = _finite_float(value)  # bool, int, fractions, numpy scalars, Decimal
    if number is not None:
        return Score(value=number, reason=score.reason, details=details)
    if isinstance(value, _NUMBERS):
        problem = f"score {reprlib.repr(value)} is not a finite number"
    else:
        problem = f"score {value!r} is {type(value).__name__}, not a number"
    _log_once(name, "bad value", problem)
    return Score(value=None, reason=f"criterion error: {problem}", details=details)
