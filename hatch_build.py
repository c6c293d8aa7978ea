"""Build hook: compile the import's and replay's hot modules with mypyc.

Why: ``tracescore import`` and ``replay`` spend their time in pure-Python code that is
fully typed (mypy --strict): rebuilding agent runs from spans and scoring them. mypyc
turns those modules into C extensions, with the same source and semantics, and the
import runs ~15% faster for it (docs/performance.md, *Compiled modules*).

What it does, for a regular wheel (``pip install .``, ``pip wheel .``):

* copies ``src/tracescore`` (no bytecode, no extension modules) to a temporary
  directory, so that the source tree never holds build output: a stale extension
  module beside its ``.py`` would shadow later edits;
* runs mypyc's setuptools build there, in a child process, on the modules that
  ``[tool.hatch.build.targets.wheel.hooks.custom] compile`` lists; they share one
  extension library, ``tracescore/_compiled__mypyc...so``. No installed package is read
  for types, so the code is the same whatever environment installs it;
* adds the extension modules to the wheel beside their ``.py`` files (Python imports an
  extension module before a source file of the same name) and tags the wheel for the
  interpreter that built it.

Editable installs (``pip install -e .``) stay pure Python, as does every build with
``TRACESCORE_PURE_PYTHON=1``. When compiling fails (no C compiler, say), the wheel is
built pure Python with a warning, unless ``TRACESCORE_REQUIRE_COMPILED=1`` asks for the
failure instead (CI and the container image set it). At run time,
:mod:`tracescore.build_info` (and ``tracescore --version``) tells which modules are
compiled.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

_PACKAGE = "tracescore"
#: The extension library every compiled module links into (mypyc's "group").
_GROUP = f"{_PACKAGE}._compiled"

_SETUP = textwrap.dedent(
    """\
    import sys

    from mypyc.build import mypycify
    from setuptools import setup

    modules, cache_dir, target_dir = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
    del sys.argv[1:4]
    setup(
        name="tracescore-compiled",
        ext_modules=mypycify(
            [
                # The same code whatever the installing environment holds: no installed
                # package is read for types (each is Any: generic code, the same
                # results), and errors in the modules that stay Python do not stop the
                # build (mypy --strict in CI checks them with every package's types).
                "--no-site-packages",
                "--ignore-missing-imports",
                "--follow-imports",
                "silent",
                "--cache-dir",
                cache_dir,
                *modules,
            ],
            opt_level="3",
            group_name={group!r},
            target_dir=target_dir,
        ),
    )
    """
).format(group=_GROUP)


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Compile the listed modules into the wheel (see the module docstring)."""

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Add the compiled modules to a regular wheel's build data."""
        if self.target_name != "wheel" or version == "editable":
            return
        if os.environ.get("TRACESCORE_PURE_PYTHON", "") not in ("", "0"):
            self.app.display_info("tracescore: TRACESCORE_PURE_PYTHON is set: pure Python")
            return
        modules = self.config.get("compile", [])
        if not modules:
            return
        # Kept until finalize: the wheel is assembled from the extension modules there.
        self._tmp = tempfile.TemporaryDirectory(prefix="tracescore-mypyc-")
        try:
            built = self._compile(Path(self._tmp.name), list(modules))
        except (OSError, subprocess.CalledProcessError, RuntimeError) as exc:
            self._tmp.cleanup()
            if os.environ.get("TRACESCORE_REQUIRE_COMPILED", "") not in ("", "0"):
                raise RuntimeError(f"tracescore: compiling with mypyc failed: {exc}") from exc
            self.app.display_warning(
                f"tracescore: compiling with mypyc failed ({exc}); building pure Python,"
                " which gives the same results more slowly"
            )
            return
        for path in sorted(built.rglob("*.so")) + sorted(built.rglob("*.pyd")):
            build_data["force_include"][str(path)] = path.relative_to(built).as_posix()
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        """Remove the build's temporary directory once the wheel holds its modules."""
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            tmp.cleanup()

    def _compile(self, tmp: Path, modules: list[str]) -> Path:
        """Build the extension modules of ``modules`` (paths under src/); their folder."""
        src = tmp / "src"
        shutil.copytree(
            Path(self.root) / "src" / _PACKAGE,
            src / _PACKAGE,
            ignore=lambda _dir, names: [
                n for n in names if n == "__pycache__" or n.endswith((".so", ".pyd", ".pyc"))
            ],
        )
        missing = [m for m in modules if not (src / m).is_file()]
        if missing:
            raise RuntimeError(f"modules to compile not found under src/: {missing}")
        (tmp / "setup.py").write_text(_SETUP, encoding="utf-8")
        lib = tmp / "lib"
        jobs = str(max(1, min(os.cpu_count() or 1, 8)))
        self.app.display_info(f"tracescore: compiling {len(modules)} modules with mypyc")
        done = subprocess.run(
            [
                sys.executable,
                str(tmp / "setup.py"),
                ",".join(modules),
                str(tmp / "mypy_cache"),
                str(tmp / "c"),
                "build_ext",
                "--build-lib",
                str(lib),
                "--build-temp",
                str(tmp / "obj"),
                "--parallel",
                jobs,
            ],
            cwd=src,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            check=False,
        )
        if done.returncode:
            tail = done.stdout.decode("utf-8", "replace").strip().splitlines()[-30:]
            raise RuntimeError("mypyc build failed:\n" + "\n".join(tail))
        return lib
