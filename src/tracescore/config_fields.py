"""Field types shared by the settings file's sections (pydantic, at the edge)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator

__all__ = ["OneOrMany"]


def _one_or_many(value: object) -> object:
    # `goldens = "goldens/"` means the list of that one path, as `--goldens goldens/` does
    # on the command line; refusing it would only make the user add brackets.
    return [value] if isinstance(value, str) else value


#: A list of strings that may be written as one string.
OneOrMany = Annotated[list[str], BeforeValidator(_one_or_many)]
