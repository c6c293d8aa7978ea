"""hatch_build.py, the build hook: a pure wheel when asked or when compiling fails.

Each test builds a real wheel from this checkout with pip (build isolation: the hook's
own dependencies come from the package index, as for a user). The compiled wheel itself
is what the README's test command installs; tests/test_compiled.py checks it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _build(
    tmp_path: Path, *, verbose: bool = False, **env: str
) -> tuple[subprocess.CompletedProcess[str], list[Path]]:
    # A copy of what the wheel is built from: pip builds in the source tree, and the
    # checkout must not collect build output.
    src = tmp_path / "src"
    src.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "hatch_build.py"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    out = tmp_path / "dist"
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v" if verbose else "-q"]
    done = subprocess.run(
        [*pip, "-w", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "TRACESCORE_REQUIRE_COMPILED": "0", **env},
    )
    return done, sorted(out.glob("*.whl")) if out.exists() else []


def _extensions(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        return [n for n in zf.namelist() if n.endswith((".so", ".pyd"))]


def test_pure_python_when_asked(tmp_path: Path) -> None:
    done, wheels = _build(tmp_path, TRACESCORE_PURE_PYTHON="1")
    assert done.returncode == 0, done.stdout + done.stderr
    [wheel] = wheels
    assert wheel.name.endswith("-py3-none-any.whl")
    assert _extensions(wheel) == []
    with zipfile.ZipFile(wheel) as zf:
        assert "tracescore/trajectory.py" in zf.namelist()


@pytest.mark.skipif(sys.platform == "win32", reason="the compiler is swapped through CC")
def test_a_failed_compile_builds_pure_python_or_fails_when_required(tmp_path: Path) -> None:
    # A compiler that fails: mypyc's C does not build.
    done, wheels = _build(tmp_path / "a", verbose=True, CC="false", LDSHARED="false")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "compiling with mypyc failed" in done.stdout + done.stderr  # said, not silent
    [wheel] = wheels
    assert wheel.name.endswith("-py3-none-any.whl")
    assert _extensions(wheel) == []
    required, none = _build(
        tmp_path / "b", CC="false", LDSHARED="false", TRACESCORE_REQUIRE_COMPILED="1"
    )
    assert required.returncode != 0
    assert none == []
    assert "compiling with mypyc failed" in required.stdout + required.stderr
