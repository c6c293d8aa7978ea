"""A command's outputs must not be among the files it reads.

Outputs are written to a temporary file and renamed over the target when complete, so
``tracescore import traces.jsonl -o traces.jsonl`` read the traces and then replaced them
with invocations, and ``replay --goldens g.evalset.json --output g.evalset.json``
replaced the goldens with results. Both now fail before any work (usage error, exit 2).

The one exception is an output that a tracescore command wrote, found among the inputs:
the ``results.jsonl`` an earlier replay wrote into the traces directory, say. Its JSON
Lines start ``{"trace_id":"`` (replay results and ``import --format jsonl`` alike; no
trace format does), or it is XML (JUnit). It is left out of the inputs with a note:
reading it could only give bad records, and this run replaces it anyway. Evalsets are
never taken for disposable outputs: an imported evalset is meant to be curated into
goldens.

Files are compared by device and inode, so a path spelled another way, a hard link or a
symbolic link is the same file; paths that do not exist yet (two outputs) by their
resolved form.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import click

from tracescore.path_args import expand_paths

if TYPE_CHECKING:
    from tracescore.cli.app import Diagnostics

__all__ = ["check_outputs", "drop_outputs", "input_files"]


def _identity(path: str | None) -> tuple[int, int] | str | None:
    """Device and inode of an existing file, else its resolved path; None for none or -."""
    if not path or path == "-":
        return None
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # missing (an output not written yet), or a NUL in it
        return os.path.realpath(path) if "\0" not in path else None
    return (st.st_dev, st.st_ino)


def check_outputs(
    outputs: Mapping[str, str | None], inputs: Mapping[str, Iterable[str | None]]
) -> None:
    """Refuse outputs that are files this run reads, or one file for two outputs.

    Args:
        outputs: Option name (``"--output"``) to the path given, or None when unset.
        inputs: What the files are (``"a trace file read"``) to the paths named.

    Raises:
        click.UsageError: naming the option, the path and what it also is.

    """
    seen: dict[tuple[int, int] | str, str] = {}
    for option, path in outputs.items():
        ident = _identity(path)
        if ident is None:
            continue
        if ident in seen:
            raise click.UsageError(f"{seen[ident]} and {option} are the same file: {path}")
        seen[ident] = option
        for role, paths in inputs.items():
            if any(_identity(p) == ident for p in paths):
                raise click.UsageError(
                    f"{option} {path} is also {role}: it would be overwritten; "
                    "write the output elsewhere"
                )


def _replaceable(path: str) -> bool:
    """Whether ``path`` holds what a tracescore command writes (not an evalset), or nothing."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64).lstrip()
    except OSError:
        return False
    return not head or head.startswith((b'{"trace_id":"', b"<?xml", b"<testsuites"))


def drop_outputs(
    files: Sequence[str], outputs: Mapping[str, str | None]
) -> tuple[list[str], list[tuple[str, str]]]:
    """``files`` without this run's outputs, and the ``(file, option)`` pairs left out.

    Args:
        files: Input files, named or found by walking directories and globs.
        outputs: Option name to path, as for :func:`check_outputs`.

    Raises:
        click.UsageError: an output is one of ``files`` and not a tracescore output
            (traces, an evalset, anything else this run would lose).

    """
    targets = {ident: option for option, path in outputs.items() if (ident := _identity(path))}
    if not targets:
        return list(files), []
    kept: list[str] = []
    dropped: list[tuple[str, str]] = []
    for file in files:
        ident = _identity(file)
        option = targets.get(ident) if ident is not None else None
        if option is None:
            kept.append(file)
        elif _replaceable(file):
            dropped.append((file, option))
        else:
            raise click.UsageError(
                f"{option} {outputs[option]} is also one of the inputs: it would be "
                "overwritten; write the output elsewhere"
            )
    return kept, dropped


def input_files(
    paths: Sequence[str],
    outputs: Mapping[str, str | None],
    err: Diagnostics,
    *,
    quiet: bool,
    also: Mapping[str, Iterable[str | None]] | None = None,
) -> list[str]:
    """The files behind ``paths`` (:func:`expand_paths`), this run's outputs left out.

    Args:
        paths: The command's PATH arguments.
        outputs: Option name to output path.
        err: Where the note about an output left out goes (unless ``quiet``).
        quiet: No note.
        also: Other files the run reads (goldens, the config), by what they are.

    Raises:
        click.UsageError: an output is an input or one of ``also`` (:func:`check_outputs`,
            :func:`drop_outputs`).
        InputError: as :func:`expand_paths`.

    """
    check_outputs(outputs, also or {})
    files, dropped = drop_outputs(expand_paths(paths), outputs)
    if not quiet:
        for file, option in dropped:
            err.print(f"note: {file} left out of the inputs: it is this run's {option}")
    return files
