"""Criteria by name: built-ins and a user's own, registered the same way.

``register_criterion`` is a class decorator; names are what configs and metrics use.
Unknown names fail with the list of known ones and the closest match; names whose
meaning differs between ADK and its peers say so (ADK's names win).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Final, TypeVar

from tracescore.criteria.base import Criterion
from tracescore.exceptions import ConfigError

__all__ = [
    "criterion_class",
    "informational_criteria",
    "known_criteria",
    "register_criterion",
]

C = TypeVar("C", bound=type[Criterion])

_CRITERIA: dict[str, type[Criterion]] = {}
_ALIASES: dict[str, str] = {}

#: Names a peer uses with another meaning: what to write instead.
NAME_CLASHES: Final[dict[str, str]] = {
    "response_match_score": (
        "in ADK (and here) response_match_score is ROUGE-1; AgentFlow uses the same name "
        "for an LLM semantic match, which is ADK's final_response_match_v2"
    ),
}


def register_criterion(*, aliases: tuple[str, ...] = ()) -> Callable[[C], C]:
    """Class decorator: make a :class:`Criterion` subclass available by its ``name``.

    Raises:
        ValueError: the name or an alias is already taken by another class.

    """

    def register(cls: C) -> C:
        for key in (cls.name, *aliases):
            owner = _CRITERIA.get(key) or _CRITERIA.get(_ALIASES.get(key, ""))
            if owner is not None and owner is not cls:
                raise ValueError(f"criterion name {key!r} is already registered")
        _CRITERIA[cls.name] = cls
        for alias in aliases:
            _ALIASES[alias] = cls.name
        return cls

    return register


def known_criteria() -> list[str]:
    """Registered criterion names (aliases excluded), sorted."""
    return sorted(_CRITERIA)


def criterion_class(name: str) -> type[Criterion]:
    """The class registered under ``name`` or one of its aliases.

    Raises:
        ConfigError: unknown name; lists the known ones and suggests the closest.

    """
    key = _ALIASES.get(name, name)
    cls = _CRITERIA.get(key)
    if cls is not None:
        return cls
    candidates = [*_CRITERIA, *_ALIASES]
    close = difflib.get_close_matches(name, candidates, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ConfigError(
        f"unknown criterion {name!r}.{hint} Known criteria: {', '.join(known_criteria())}"
    )


def informational_criteria() -> list[Criterion]:
    """One instance of every informational criterion, reported on every replay as ADK does."""
    return [cls() for name, cls in sorted(_CRITERIA.items()) if cls.informational]
