"""Goldens: ADK evalsets read as expected invocations, and matching live runs to them.

* :mod:`tracescore.goldens.evalset` loads ``*.evalset.json`` and old ``*.test.json`` files
  (:func:`load_goldens`) into :class:`GoldenSet` / :class:`GoldenCase`, whose turns are
  :class:`tracescore.model.Invocation` objects (the expected side).
* :mod:`tracescore.goldens.matching` finds the golden turn of a live invocation
  (:class:`GoldenIndex`): explicit ``tracescore.golden.*`` tags first, else normalised
  user text, turn by turn within a conversation; ambiguity is reported, never guessed.
* :mod:`tracescore.goldens.schema` holds the pydantic models mirroring ADK's;
  :mod:`tracescore.goldens.fastpath` reads the common evalset shapes without them, several
  times faster on large files, and leaves the rest (and every error) to them.
* :mod:`tracescore.goldens.cases` holds the golden dataclasses.
"""

from __future__ import annotations

from tracescore.goldens.evalset import (
    GoldenCase,
    GoldenRubric,
    GoldenScenario,
    GoldenSet,
    golden_files,
    load_golden_file,
    load_goldens,
    parse_goldens,
)
from tracescore.goldens.matching import (
    EVAL_ID_TAG,
    EVAL_SET_ID_TAG,
    TURN_TAG,
    GoldenIndex,
    GoldenMatch,
    GoldenRef,
    MatchOutcome,
    normalize_text,
)

__all__ = [
    "EVAL_ID_TAG",
    "EVAL_SET_ID_TAG",
    "TURN_TAG",
    "GoldenCase",
    "GoldenIndex",
    "GoldenMatch",
    "GoldenRef",
    "GoldenRubric",
    "GoldenScenario",
    "GoldenSet",
    "MatchOutcome",
    "golden_files",
    "load_golden_file",
    "load_goldens",
    "normalize_text",
    "parse_goldens",
]
