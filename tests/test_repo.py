"""Checks on the repository itself: what CI runs is what the README promises."""

from __future__ import annotations

import re
from pathlib import Path

import tracescore

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first_screen = text.split("---", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", first_screen)


def test_readme_first_screen_has_exactly_two_commands() -> None:
    commands = _readme_commands()
    assert len(commands) == 2
    assert "tracescore replay examples/traces" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert _readme_commands()[1] in ci.splitlines()


def test_public_api_all_is_sorted_and_importable() -> None:
    names = tracescore.__all__
    assert names == sorted(names)
    for name in names:
        assert hasattr(tracescore, name)
