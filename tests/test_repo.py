"""Checks on the repository itself: what CI runs is what the README promises."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tracescore
from tracescore.criteria import informational_criteria
from tracescore.processor import ScoringSpanProcessor

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


def test_readme_own_criterion_example_runs_as_written() -> None:
    """The README's own-criterion code registers, is named in a config and scores."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    [code] = [b for b in re.findall(r"```python\n(.+?)```", text, re.S) if "class Politeness" in b]
    namespace: dict[str, object] = {"__name__": __name__}  # dataclass looks its module up
    exec(compile(code, "README.md", "exec"), namespace)

    from tracescore.criteria import EvalContext
    from tracescore.eval_config import criteria_from_config
    from tracescore.model import Invocation

    config = {"criteria": {"politeness": {"threshold": 0.5, "keywords": ["thanks"]}}}
    [crit] = criteria_from_config(config, source="readme")
    assert type(crit) is namespace["Politeness"]
    assert not crit.needs_model_context
    thanked = Invocation(trace_id="t", invocation_id="i", final_response="Thanks, bye.")
    assert crit.evaluate(EvalContext(actual=thanked)).status == "passed"
    rude = Invocation(trace_id="t", invocation_id="i", final_response="Bye.")
    assert crit.evaluate(EvalContext(actual=rude)).status == "failed"


def test_readme_processor_example_runs_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's ScoringSpanProcessor code, run beside the bundled example files."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk.trace import TracerProvider

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    [code] = [
        b
        for b in re.findall(r"```python\n(.+?)```", text, re.S)
        if "processor = ScoringSpanProcessor(" in b
    ]
    # The relative paths it names are those of examples/; any free port instead of 9464.
    monkeypatch.chdir(ROOT / "examples")
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    namespace: dict[str, object] = {
        "tracer_provider": tracer_provider,
        "logger_provider": logger_provider,
    }
    exec(
        compile(code.replace("metrics_port=9464", "metrics_port=0"), "README.md", "exec"), namespace
    )
    processor = namespace["processor"]
    try:
        assert isinstance(processor, ScoringSpanProcessor)
        assert [c.name for c in processor.scorer.criteria] == [
            "tool_trajectory_avg_score",
            "response_match_score",
            *(c.name for c in informational_criteria()),
        ]
        assert processor.metrics_port
    finally:
        tracer_provider.shutdown()
        logger_provider.shutdown()
