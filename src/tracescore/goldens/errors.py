"""Turn pydantic validation errors into one-line ``ConfigError`` messages.

The message names the file, the JSON location as written in the file (``eval_cases[0]
.conversation[1].user_content.parts[0]``), and what is allowed there: the allowed keys for
an unknown key, both spellings for a missing one, the expected type otherwise.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from tracescore.exceptions import ConfigError
from tracescore.goldens import schema

__all__ = ["validation_error"]


def _candidates(tp: Any) -> list[Any]:
    """Flatten Annotated / Optional / Union into the concrete types they allow."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _candidates(typing.get_args(tp)[0])
    if origin is typing.Union or origin is types.UnionType:
        return [c for arg in typing.get_args(tp) for c in _candidates(arg)]
    return [tp]


def _step(tp: Any, key: str | int) -> Any:
    """The type found at ``key`` inside a value of type ``tp`` (None when unknown)."""
    for cand in _candidates(tp):
        origin, args = typing.get_origin(cand), typing.get_args(cand)
        if isinstance(cand, type) and issubclass(cand, BaseModel):
            if key == cand.__name__:  # a discriminator tag names the chosen model
                return cand
            for name, info in cand.model_fields.items():
                if key in (name, info.alias):
                    return info.annotation
        elif isinstance(key, int) and origin is list and args:
            return args[0]
        elif isinstance(key, int) and origin is tuple and key < len(args):
            return args[key]
        elif origin is dict and len(args) == 2:
            return args[1]
    return None


def _model_at(root: Any, loc: Sequence[str | int]) -> type[BaseModel] | None:
    tp = root
    for key in loc:
        tp = _step(tp, key)
    models = [c for c in _candidates(tp) if isinstance(c, type) and issubclass(c, BaseModel)]
    return models[0] if len(models) == 1 else None


def _location(loc: Sequence[str | int], root: Any) -> str:
    out, tp = "", root
    for key in loc:
        step = _step(tp, key)
        tp = step
        if isinstance(key, str) and key == getattr(step, "__name__", None):
            continue  # a discriminator tag, not a key of the file
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else key)
    return out or "(top level)"


def _describe(err: ErrorDetails, root: Any) -> str:
    loc = err["loc"]
    where = _location(loc, root)
    kind = err["type"]
    if kind == "missing":
        parent = _model_at(root, loc[:-1])
        key = str(loc[-1])
        if parent is not None:
            for name, info in parent.model_fields.items():
                if key in (name, info.alias):
                    key = name if info.alias in (None, name) else f"{name} (or {info.alias})"
        return f"{_location(loc[:-1], root)}: missing required key {key}"
    if kind == "extra_forbidden":
        parent = _model_at(root, loc[:-1])
        allowed = "" if parent is None else ", ".join(parent.model_fields)
        camel = "" if parent is schema.EvalSet else " (snake_case or camelCase)"
        hint = f"; allowed keys{camel}: {allowed}" if allowed else ""
        return f"{where}: unknown key{hint}"
    msg = err["msg"].removeprefix("Value error, ")
    got = type(err["input"]).__name__
    return f"{where}: {msg}" + ("" if kind == "value_error" else f" (got {got})")


def validation_error(path: str, error: ValidationError, root: Any) -> ConfigError:
    """The first error of ``error`` as a located ``ConfigError`` (``root``: the validated type)."""
    errors = error.errors(include_url=False)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return ConfigError(f"{path}: {_describe(errors[0], root)}{more}")
