"""Arguments of the public Python API, checked and normalised where they enter.

A Python caller is not a config file, but a wrong argument still deserves a message that
names it. Before these checks, ``ScoringSpanProcessor(["response_match_score"])`` failed
with ``'str' object has no attribute 'name'`` from the sampling module, and
``replay(paths, criteria, goldens="goldens/")`` with ``'str' object has no attribute
'cases'`` from the matcher. Now a wrong type is a ``TypeError`` that names the parameter
and what it takes, raised by the call that received it.

Beyond lists of objects, the entry points take what people write:

* criteria as an eval config's ``criteria`` mapping (``{"response_match_score": 0.8}``),
  a whole eval config mapping (``{"criteria": {...}}``), or the path of an
  ``eval_config.json``; these go through the same validation as the file, so a mistake
  is the same :class:`~tracescore.exceptions.ConfigError`;
* goldens as paths (read by :func:`~tracescore.goldens.load_goldens`), one
  :class:`~tracescore.goldens.GoldenSet`, or both mixed in a list.

Two criteria of one name are refused: results, the JSON Lines output and the metrics
are all keyed by criterion name, so the second would overwrite the first.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeAlias, TypeVar

from tracescore.criteria import Criterion, criterion_class, informational_criteria
from tracescore.eval_config import criteria_from_config, load_eval_config
from tracescore.exceptions import ConfigError
from tracescore.goldens import GoldenSet, load_goldens
from tracescore.path_args import PathArg, items_of

__all__ = [
    "CriteriaArg",
    "GoldensArg",
    "criteria_argument",
    "expect_type",
    "goldens_argument",
    "port_argument",
    "with_informational",
]

#: Criterion objects, a ``criteria`` mapping or whole eval config, an eval config path.
CriteriaArg: TypeAlias = "Iterable[Criterion] | Mapping[str, object] | PathArg"
#: Golden sets, paths to read them from, or one of either.
GoldensArg: TypeAlias = "GoldenSet | PathArg | Iterable[GoldenSet | PathArg]"

_T = TypeVar("_T")
_CRITERIA_FORMS = (
    "a list of Criterion objects, a mapping of criterion names to thresholds "
    "({'response_match_score': 0.8}), or the path of an eval config file"
)


def criteria_argument(value: CriteriaArg | None, *, parameter: str = "criteria") -> list[Criterion]:
    """The criteria ``value`` stands for; None is ADK's defaults (no eval config).

    Raises:
        TypeError: ``value`` or one of its items is none of the accepted forms.
        ValueError: two criteria have the same name.
        ConfigError: a mapping or eval config file is invalid (as ``--config`` says).

    """
    if value is None:
        return load_eval_config(None)
    if isinstance(value, str) and _is_criterion_name(value):
        raise TypeError(
            f"{parameter}: {value!r} is a criterion name, not an eval config path; "
            f"pass {{{value!r}: threshold}} or criterion objects"
        )
    if isinstance(value, (str, os.PathLike)):
        return load_eval_config(value)
    if isinstance(value, Mapping):
        config = value if "criteria" in value else {"criteria": dict(value)}
        return criteria_from_config(config, source=f"the {parameter} argument")
    out: list[Criterion] = []
    seen: set[str] = set()
    for index, item in enumerate(items_of(value, parameter, _CRITERIA_FORMS)):
        if not isinstance(item, Criterion):
            hint = (
                f"the name {item!r} alone has no threshold: pass {{{item!r}: threshold}}"
                if isinstance(item, str)
                else f"got {type(item).__name__}"
            )
            raise TypeError(f"{parameter}[{index}]: expected a Criterion; {hint}")
        if item.name in seen:
            raise ValueError(
                f"{parameter}[{index}]: a second {item.name}; results and metrics are keyed "
                "by criterion name, so give each criterion once"
            )
        seen.add(item.name)
        out.append(item)
    return out


def _is_criterion_name(text: str) -> bool:
    try:
        criterion_class(text)
    except ConfigError:
        return False
    return True


def with_informational(criteria: Sequence[Criterion]) -> list[Criterion]:
    """``criteria`` plus every informational criterion they do not already include.

    The informational ones are reported on every run, as ADK does; an eval config
    cannot name them, so they are added here rather than asked for.
    """
    names = {c.name for c in criteria}
    return [*criteria, *(c for c in informational_criteria() if c.name not in names)]


def goldens_argument(
    value: GoldensArg, *, parameter: str = "goldens", tool_results: bool = True
) -> list[GoldenSet]:
    """The golden sets ``value`` stands for: the sets given, then those read from paths.

    Paths are read with or without the golden tool results (``load_goldens``); sets
    given are used as they are.

    Raises:
        TypeError: ``value`` or one of its items is neither a GoldenSet nor a path.
        ConfigError: a goldens file is unreadable or invalid (see ``load_goldens``).

    """
    if isinstance(value, GoldenSet):
        return [value]
    if isinstance(value, (str, os.PathLike)):
        return load_goldens(value, tool_results=tool_results)
    sets: list[GoldenSet] = []
    paths: list[PathArg] = []
    for index, item in enumerate(items_of(value, parameter, "GoldenSet objects or goldens paths")):
        if isinstance(item, GoldenSet):
            sets.append(item)
        elif isinstance(item, (str, os.PathLike)):
            paths.append(item)
        else:
            raise TypeError(
                f"{parameter}[{index}]: expected a GoldenSet or a goldens path; "
                f"got {type(item).__name__}"
            )
    # The paths are read in one call, so an eval id in two files is reported as usual.
    return [*sets, *load_goldens(paths, tool_results=tool_results)] if paths else sets


def expect_type(value: object, kind: type[_T], parameter: str) -> _T:
    """``value`` when it is a ``kind``.

    Raises:
        TypeError: it is not; the message names ``parameter``.

    """
    if not isinstance(value, kind):
        raise TypeError(f"{parameter}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def port_argument(value: object, parameter: str) -> int | None:
    """A TCP port to listen on (0: any free one), or None.

    Raises:
        TypeError: not an int (``True`` is not a port).
        ValueError: outside 0-65535.

    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{parameter}: expected an int port, got {type(value).__name__}")
    if not 0 <= value <= 65535:
        raise ValueError(f"{parameter}: {value} is not a port (0-65535; 0: any free port)")
    return value
