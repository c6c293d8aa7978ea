"""Path arguments: one path or any number of them, and the files they name.

Functions that read files (:func:`~tracescore.importer.import_paths`,
:func:`~tracescore.replay.replay`, :func:`~tracescore.goldens.load_goldens`, ...) take
several paths. A ``str`` is itself a sequence, of characters, so before this check
``load_goldens("goldens/")`` read the paths ``"g"``, ``"o"``, ... and ``"/"``: it searched
the whole file system for evalsets. One ``str`` or :class:`os.PathLike` is now one path,
and anything that is not a path is refused by name.

:func:`expand_paths` turns arguments (files, directories, globs, ``-``) into the files to
read, for the command line and the API alike.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from typing import TypeAlias

from tracescore.exceptions import InputError

__all__ = ["PathArg", "Paths", "expand_paths", "items_of", "path_list", "real_path"]

#: One path, as a string or a path object.
PathArg: TypeAlias = "str | os.PathLike[str]"
#: What a reading function accepts: one path, or an iterable of them.
Paths: TypeAlias = "str | os.PathLike[str] | Iterable[str | os.PathLike[str]]"


def path_list(paths: Paths, *, parameter: str = "paths") -> list[str]:
    """``paths`` as a list of strings: one path is a list of one.

    Args:
        paths: One path (``str`` or :class:`os.PathLike`), or an iterable of them.
        parameter: The caller's parameter name, for the error message.

    Raises:
        TypeError: ``paths``, or one of its items, is not a path (bytes included: the
            readers name files in messages and JSON, which need text).

    """
    if isinstance(paths, str):
        return [paths]
    if isinstance(paths, os.PathLike):
        return [_text(paths, parameter)]
    out: list[str] = []
    items = items_of(paths, parameter, "a path (str or os.PathLike) or an iterable of paths")
    for index, path in enumerate(items):
        if isinstance(path, str):
            out.append(path)
        elif isinstance(path, os.PathLike):
            out.append(_text(path, f"{parameter}[{index}]"))
        else:
            raise TypeError(
                f"{parameter}[{index}]: expected a path (str or os.PathLike), "
                f"got {type(path).__name__}"
            )
    return out


def items_of(value: object, parameter: str, expected: str) -> Iterable[object]:
    """``value`` as an iterable of unchecked items, for an argument that takes several.

    Raises:
        TypeError: ``value`` is not iterable, or is bytes (whose items are ints): the
            message names ``parameter`` and says what was ``expected``.

    """
    if isinstance(value, (bytes, bytearray)) or not isinstance(value, Iterable):
        raise TypeError(f"{parameter}: expected {expected}; got {type(value).__name__}")
    return value


def _text(path: os.PathLike[str], where: str) -> str:
    text = os.fspath(path)
    if not isinstance(text, str):  # an os.PathLike[bytes]
        raise TypeError(f"{where}: expected a text path, got {type(text).__name__}")
    return text


def real_path(path: str) -> str:
    """``os.path.realpath``, or the absolute path when a link on the way cannot be read.

    Only a key to tell one file named twice: Python 3.11's ``realpath`` raises on a link
    it may not read (``/proc/1/cwd``), and reading the file is what reports that.
    """
    try:
        return os.path.realpath(path)
    except OSError:
        return os.path.abspath(path)


def expand_paths(paths: Paths) -> list[str]:
    """The files named by command-line arguments, in order, each once.

    An argument is ``"-"`` (stdin), a file, a directory (its files, recursively, sorted,
    skipping hidden files and directories), or a glob pattern (``*``, ``?``, ``[...]``;
    ``**`` spans directories) whose matches are expanded the same way. One path alone is
    one argument (:func:`path_list`).

    Raises:
        InputError: an argument names nothing: a missing path, a pattern without
            matches, or a directory without files; or a directory (or one below it)
            cannot be listed.
        TypeError: ``paths`` is not a path or an iterable of paths.

    """
    # Keyed by the real path: `traces/` and `./traces/a.jsonl` name one file, read once.
    found: dict[str, str] = {}
    for path in path_list(paths):
        if path == "-":
            matches = ["-"]
        elif os.path.exists(path):
            matches = _expand_one(path)
        elif any(char in path for char in "*?["):
            matches = [
                file
                for match in sorted(glob.glob(path, recursive=True))
                for file in _expand_one(match)
            ]
            if not matches:
                raise InputError(f"{path}: no file matches this pattern")
        else:
            raise InputError(f"{path}: no such file or directory")
        if not matches:
            raise InputError(f"{path}: no files in this directory")
        for match in matches:
            found.setdefault(match if match == "-" else real_path(match), match)
    return list(found.values())


def _expand_one(path: str) -> list[str]:
    if not os.path.isdir(path):
        return [path]
    files: list[str] = []
    for top, dirs, names in os.walk(path, onerror=_unlistable):
        dirs[:] = [name for name in dirs if not name.startswith(".")]
        files.extend(os.path.join(top, name) for name in names if not name.startswith("."))
    return sorted(files)


def _unlistable(exc: OSError) -> None:
    # os.walk skips a directory it cannot list without a word; its files would be lost.
    raise InputError(f"{exc.filename}: cannot list directory: {exc.strerror or exc}") from exc
