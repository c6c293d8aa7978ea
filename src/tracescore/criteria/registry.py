"""Criteria by name: built-ins and a user's own, registered the same way.

``register_criterion`` is a class decorator; names are what configs and metrics use.
Unknown names fail with the list of known ones and the closest match; names whose
meaning differs between ADK and its peers say so (ADK's names win).
"""

from __future__ import annotations

import difflib
import inspect
import logging
from collections.abc import Callable
from typing import Final, TypeVar, overload

from tracescore.criteria.base import Criterion
from tracescore.exceptions import ConfigError

__all__ = [
    "criterion_class",
    "informational_criteria",
    "known_criteria",
    "register_criterion",
]

C = TypeVar("C", bound=type[Criterion])

logger = logging.getLogger(__name__)

_CRITERIA: dict[str, type[Criterion]] = {}
_ALIASES: dict[str, str] = {}

#: Names a peer uses with another meaning: what to write instead.
NAME_CLASHES: Final[dict[str, str]] = {
    "response_match_score": (
        "in ADK (and here) response_match_score is ROUGE-1; AgentFlow uses the same name "
        "for an LLM semantic match, which is ADK's final_response_match_v2"
    ),
}


@overload
def register_criterion(cls: C, /) -> C: ...
@overload
def register_criterion(*, aliases: tuple[str, ...] = ()) -> Callable[[C], C]: ...
def register_criterion(
    cls: C | None = None, /, *, aliases: tuple[str, ...] = ()
) -> C | Callable[[C], C]:
    """Class decorator: make a :class:`Criterion` subclass available by its ``name``.

    Written ``@register_criterion()`` or ``@register_criterion`` (with ``aliases``, the
    first). Defining the same class again (same module and qualified name: a notebook
    cell run twice, a reloaded module) replaces the earlier definition.

    Raises:
        TypeError: ``cls`` is not a Criterion subclass, or leaves an abstract method
            (``score``) unimplemented.
        ValueError: the name or an alias is not a name (empty, or with spaces), or is
            already taken by another class (which the message names).

    """

    def register(cls: C) -> C:
        _check_registrable(cls, aliases)
        for key in (cls.name, *aliases):
            owner = _owner(key)
            if owner is None or owner is cls:
                continue
            if (owner.__module__, owner.__qualname__) == (cls.__module__, cls.__qualname__):
                logger.debug("criterion %r redefined by %s", key, _where(cls))
                continue
            raise ValueError(f"criterion name {key!r} is already registered by {_where(owner)}")
        _CRITERIA[cls.name] = cls
        for alias in aliases:
            _ALIASES[alias] = cls.name
        return cls

    return register if cls is None else register(cls)


def _check_registrable(cls: object, aliases: tuple[str, ...]) -> None:
    if not (isinstance(cls, type) and issubclass(cls, Criterion)):
        raise TypeError(f"register_criterion: {cls!r} is not a Criterion subclass")
    name = getattr(cls, "name", None)
    if name is None:
        raise TypeError(
            f"register_criterion: {cls.__qualname__} has no name (the class attribute "
            "configs and metrics use, e.g. name = 'politeness')"
        )
    for key in (name, *aliases):
        if not isinstance(key, str) or not key or not key.isprintable() or " " in key:
            raise ValueError(
                f"register_criterion: {cls.__qualname__}: {key!r} is not a criterion name "
                "(non-empty, printable, no spaces)"
            )
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        raise TypeError(f"register_criterion: {cls.__qualname__} does not implement {missing}")


def _owner(key: str) -> type[Criterion] | None:
    """The class registered under ``key``, as a name or an alias."""
    owner = _CRITERIA.get(key)
    if owner is None and key in _ALIASES:
        owner = _CRITERIA.get(_ALIASES[key])
    return owner


def _where(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


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
