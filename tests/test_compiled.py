"""The mypyc build (hatch_build.py): what it compiles, and what compiling must not change.

The README's test command installs tracescore as a regular wheel, so the suite runs on
the compiled modules; CI also runs part of it on the sources (``PYTHONPATH=src``), as an
editable install or a machine without a compiler runs them.
"""

from __future__ import annotations

import ast
import importlib
import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

import tracescore
from tracescore.build_info import compiled_modules, describe
from tracescore.cli import main

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def _listed() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    paths: list[str] = config["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]["custom"][
        "compile"
    ]
    return paths


def _module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


LISTED = _listed()


def test_the_list_names_existing_modules_once_in_order() -> None:
    assert sorted(set(LISTED)) == LISTED
    for path in LISTED:
        assert (ROOT / "src" / path).is_file(), path
        assert not path.endswith("__init__.py")  # a package's __init__ stays Python


def _nodes(path: str) -> list[ast.AST]:
    return list(ast.walk(ast.parse((ROOT / "src" / path).read_text(encoding="utf-8"))))


def _is_lower(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "lower"
    )


def _is_sum_of_generator(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "sum"
        and bool(node.args)
        and isinstance(node.args[0], ast.GeneratorExp)
    )


def _third_party_bases(nodes: list[ast.AST]) -> list[str]:
    """Classes whose base comes from another package (not tracescore, not the stdlib)."""
    foreign: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            top = node.module.split(".")[0]
            if top != "tracescore" and top not in sys.stdlib_module_names:
                foreign.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top != "tracescore" and top not in sys.stdlib_module_names:
                    foreign.add(alias.asname or top)
    offenders = []
    for node in nodes:
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                root = base
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in foreign:
                    offenders.append(node.name)
    return offenders


@pytest.mark.parametrize("path", LISTED)
def test_a_compiled_module_avoids_what_mypyc_compiles_differently(path: str) -> None:
    """Four constructs mean something else once compiled, so compiled modules avoid them:

    * a class with a base from another package (a msgspec ``Struct``): the build reads
      no installed package's types (hatch_build.py), so mypyc would make it a native
      class, which cannot have the base's metaclass; such records live in modules that
      stay Python (run_records.py, conventions/records.py...);

    * a class statement's keywords: mypyc drops them (python/mypy#21938), so a msgspec
      Struct would silently lose ``kw_only``, ``frozen`` or ``forbid_unknown_fields``;
      such classes live in modules that stay Python (conventions/records.py, chat.py...);
    * ``text.lower()``: mypyc's (Python < 3.13) maps character by character and misses
      the final-sigma rule (``"ΣΑΣ"`` gives ``"σασ"``, not ``"σας"``); compiled modules
      call ``tracescore.unicode_case.lower``, ``str.lower`` through a name;
    * ``sum(<generator>)``: mypyc's own left-to-right ``+``, where CPython 3.12+ sums
      floats with compensation; ``sum`` of a list calls CPython's.
    """
    nodes = _nodes(path)
    bases = _third_party_bases(nodes)
    keywords = [n.name for n in nodes if isinstance(n, ast.ClassDef) and n.keywords]
    lowers = [getattr(n, "lineno", 0) for n in nodes if _is_lower(n)]
    sums = [getattr(n, "lineno", 0) for n in nodes if _is_sum_of_generator(n)]
    assert (bases, keywords, lowers, sums) == ([], [], [], []), path


def test_roles_lower_case_as_cpython_does() -> None:
    from tracescore.conventions.messages import message_from_obj

    message = message_from_obj({"role": "ΣΥΝΤΑΚΤΗΣ", "content": "γεια"})
    assert message is not None
    assert message.role == "ΣΥΝΤΑΚΤΗΣ".lower() == "συντακτης"[:-1] + "ς"


def test_the_structs_keep_their_configuration() -> None:
    """What the rule above protects, read off the imported classes, compiled or not."""
    from tracescore.conventions.chat import TextPart
    from tracescore.conventions.records import ReadReply, Usage
    from tracescore.formats.otlp_json_structs import AnyValue, Document, KeyValue

    assert ReadReply.__struct_config__.frozen
    assert AnyValue.__struct_config__.frozen
    assert Document.__struct_config__.forbid_unknown_fields
    assert not KeyValue.__struct_config__.gc
    for keyword_only in (Usage, TextPart):
        positional: Any = keyword_only
        with pytest.raises(TypeError):
            positional(1)
    with pytest.raises(msgspec.ValidationError, match="unknown field"):
        msgspec.json.decode(b'{"resourceSpans": [], "resource_spans": []}', type=Document)


def test_the_installed_modules_are_all_compiled_or_none() -> None:
    """Never a mix: a stale build would leave an extension shadowing newer sources."""
    found = compiled_modules()
    listed = sorted(_module_name(p) for p in LISTED)
    assert found in ([], listed)
    for name in listed:
        origin = importlib.import_module(name).__file__ or ""
        assert origin.endswith(tuple(EXTENSION_SUFFIXES)) is bool(found), (name, origin)
    if os.environ.get("TRACESCORE_REQUIRE_COMPILED", "") not in ("", "0"):
        assert found == listed  # CI builds the wheel it tests
    expected = f"{len(listed)} modules compiled with mypyc" if found else "pure Python"
    assert describe() == expected
    version = CliRunner().invoke(main, ["--version"])
    assert version.exit_code == 0
    assert version.output == f"tracescore {tracescore.__version__} ({expected})\n"


def test_a_python_subclass_of_a_compiled_reader_class_works() -> None:
    """Users register readers of their own: ConventionReader stays open to subclasses."""
    from tracescore.conventions.base import ConventionReader, SpanView
    from tracescore.spans import SpanRecord

    class Mine(ConventionReader):
        name = "mine"

        def agent_name(self, span: SpanRecord) -> str | None:
            return "x" if span.name == "mine" else None

    span = SpanRecord(
        trace_id="1" * 32, span_id="2" * 16, parent_span_id=None, name="mine", start_ns=1
    )
    assert Mine().agent_name(span) == "x"
    assert Mine().llm_input(SpanView(span)) is None  # the base class's answer
    assert sys.modules["tracescore.conventions.base"].ConventionReader is ConventionReader
