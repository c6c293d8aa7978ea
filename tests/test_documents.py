"""A trace file, an evalset or an eval config in another's place is named for what it is."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bundled_examples import EXAMPLES
from tracescore.cli import main
from tracescore.documents import identify, identify_lines, where_it_goes
from tracescore.eval_config import load_eval_config
from tracescore.exceptions import ConfigError
from tracescore.goldens import load_golden_file

TRACE_FILE = EXAMPLES / "traces" / "adk-schema1-legacy.jsonl"
EVALSET = EXAMPLES / "goldens" / "weather.evalset.json"
EVAL_CONFIG = EXAMPLES / "eval_config.json"


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        ({"eval_set_id": "s", "eval_cases": []}, "evalset"),
        ({"evalSetId": "s"}, "evalset"),
        ({"eval_set_id": "s", "criteria": {}}, "evalset"),  # an evalset first
        ({"criteria": {"response_match_score": 0.8}}, "eval_config"),
        ({"resourceSpans": []}, "traces"),
        ({"resource_logs": []}, "traces"),
        ({"batches": []}, "traces"),  # Tempo
        # tracescore's own JSON Lines: a result line has "criteria", yet no eval config.
        ({"trace_id": "t", "outcome": "scored", "criteria": {}}, "results"),
        ({"trace_id": "t", "tool_calls": [], "final_response": None}, "invocations"),
        ({"trace_id": "t"}, None),
        # An ADK eval result names its eval set too: a result first.
        ({"eval_set_result_id": "r", "eval_set_id": "s", "eval_case_results": []}, "eval_result"),
        ({"evalCaseResults": []}, "eval_result"),
        ({"nothing": 1}, None),
        ([{"query": "q"}], None),  # an old-format test file is a list: not guessed
        ("text", None),
    ],
)
def test_identify(data: object, kind: str | None) -> None:
    assert identify(data) == kind


def test_identify_lines_reads_the_first_line() -> None:
    assert identify_lines(TRACE_FILE.read_bytes()) == "traces"
    assert identify_lines(TRACE_FILE.read_text()) == "traces"
    assert identify_lines(b"\n  {oops\n") is None
    assert where_it_goes("traces", "traces") is None
    assert where_it_goes(None, "evalset") is None


def test_goldens_loader_names_a_trace_file_or_an_eval_config(tmp_path: Path) -> None:
    one = tmp_path / "one.json"
    one.write_bytes(TRACE_FILE.read_bytes().split(b"\n", 1)[0])
    for path, said in [
        (TRACE_FILE, "not an evalset but an OTLP trace file: it is a PATH to score"),
        (one, "not an evalset but an OTLP trace file: it is a PATH to score"),
        (EVAL_CONFIG, "not an evalset but an ADK eval config (criteria): it goes to --config"),
    ]:
        with pytest.raises(ConfigError) as err:
            load_golden_file(str(path))
        assert str(err.value) == f"{path}: {said}"


def test_eval_config_loader_names_an_evalset_or_a_trace_file() -> None:
    with pytest.raises(
        ConfigError, match="not an eval config but an ADK evalset: it goes to --goldens"
    ):
        load_eval_config(EVALSET)
    with pytest.raises(ConfigError, match="not an eval config but an OTLP trace file"):
        load_eval_config(TRACE_FILE)


def test_broken_json_is_still_reported_as_such(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"criteria": 3\n')
    with pytest.raises(ConfigError, match="invalid JSON"):
        load_eval_config(bad)
    with pytest.raises(ConfigError, match=r"bad.json:2:1: invalid JSON"):
        load_golden_file(str(bad))


def test_replay_says_it_in_one_line() -> None:
    args = ["replay", str(EXAMPLES / "traces"), "--goldens", str(EVAL_CONFIG), "-q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: {EVAL_CONFIG}: not an evalset but an ADK eval config (criteria): "
        "it goes to --config"
    )
