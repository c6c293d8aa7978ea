"""Settings files: TOML or YAML, precedence argument > env > file > default, located errors."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from tracescore.cli import main
from tracescore.exceptions import ConfigError
from tracescore.settings import load_settings

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_toml_and_yaml_load_with_paths_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(
        '[replay]\ngoldens = ["g/"]\neval_config = "cfg.json"\n\n[import]\nidle_records = 7\n'
    )
    (tmp_path / "s.yaml").write_text(
        "replay:\n  goldens: [g/]\n  eval_config: cfg.json\nimport:\n  idle_records: 7\n"
    )
    for name in ("s.toml", "s.yaml"):
        settings = load_settings(tmp_path / name)
        assert settings.replay.goldens == [str(tmp_path / "g/")]
        assert settings.replay.eval_config == str(tmp_path / "cfg.json")
        assert settings.default_map()["import"] == {"idle_records": 7}
        assert settings.default_map()["replay"]["config_path"] == str(tmp_path / "cfg.json")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[replay]\ngolden = 1\n", "replay.golden: unknown key (allowed: criteria, detailed"),
        (
            "[import]\nidle_records = 'many'\n",
            "import.idle_records: Input should be a valid integer",
        ),
        (
            "[nope]\n",
            "nope: unknown key (allowed: events, import, judge, live, metrics, replay, sampling, serve)",
        ),
        ("[replay\n", "invalid TOML"),
    ],
)
def test_mistakes_name_the_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "tracescore.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_settings(path)
    assert str(err.value).startswith(f"{path}: ")
    assert message in str(err.value)


def _replay(
    tmp_path: Path, settings: str, *extra: str, env: dict[str, str] | None = None
) -> tuple[int, str]:
    path = tmp_path / "tracescore.toml"
    path.write_text(settings)
    out = tmp_path / "results.jsonl"
    args = ["--settings", str(path), "replay", str(EXAMPLES / "traces"), "-q", *extra]
    result = CliRunner().invoke(main, args, env=env)
    return result.exit_code, out.read_text() if out.exists() else ""


def test_file_supplies_defaults_and_embedded_criteria(tmp_path: Path) -> None:
    settings = (
        f'[replay]\ngoldens = ["{EXAMPLES / "goldens"}"]\noutput = "results.jsonl"\n'
        "criteria = { response_match_score = 0.5 }\n"
    )
    code, out = _replay(tmp_path, settings)
    assert code == 1  # the examples' changed golden answer fails
    first = orjson.loads(out.splitlines()[0])
    assert "response_match_score" in first["criteria"]
    assert (
        "tool_trajectory_avg_score" not in first["criteria"]
    )  # embedded criteria replace defaults


def test_argument_beats_env_beats_file(tmp_path: Path) -> None:
    settings = f'[replay]\ngoldens = ["{EXAMPLES / "goldens"}"]\noutput = "from-file.jsonl"\n'
    env_out = tmp_path / "from-env.jsonl"
    arg_out = tmp_path / "from-arg.jsonl"
    _replay(tmp_path, settings, env={"TRACESCORE_REPLAY_OUTPUT": str(env_out)})
    assert env_out.exists()
    assert not (tmp_path / "from-file.jsonl").exists()
    _replay(
        tmp_path, settings, "--output", str(arg_out), env={"TRACESCORE_REPLAY_OUTPUT": str(env_out)}
    )
    assert arg_out.exists()
    env_out.unlink()
    _replay(tmp_path, settings)
    assert (tmp_path / "from-file.jsonl").exists()


def test_bad_settings_exit_2_without_traceback(tmp_path: Path) -> None:
    path = tmp_path / "tracescore.yaml"
    path.write_text("replay: [1, 2]\n")
    result = CliRunner().invoke(main, ["--settings", str(path), "replay", str(EXAMPLES / "traces")])
    assert result.exit_code == 2
    assert "tracescore.yaml" in result.stderr
    assert "Traceback" not in result.stderr


def test_live_sections_feed_serve_defaults(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        "[serve]\ndrain_timeout_s = 5\ngrpc_port = 0\nrequest_timeout_s = 7.5\n"
        'max_connections = 64\n[live]\ngoldens = ["g"]\n'
        'eval_config = "c.json"\n[sampling]\nrate = 0.5\nby = "conversation"\n'
    )
    settings = load_settings(path)
    serve = settings.default_map()["serve"]
    assert serve["drain_timeout"] == 5 and serve["grpc_port"] == 0
    assert serve["request_timeout"] == 7.5 and serve["max_connections"] == 64
    assert serve["goldens"] == [str(tmp_path / "g")]
    assert serve["config_path"] == str(tmp_path / "c.json")
    policy = settings.sampling.policy()
    assert (policy.rate, policy.by) == (0.5, "conversation")


def test_live_defaults_of_the_settings_file_are_the_engines() -> None:
    # A processor built from a settings file behaves like one built from Python: every
    # bound the file can set defaults to the engine's value, none is left out.
    from tracescore.live.config import LiveSettings
    from tracescore.live.engine import LiveOptions

    assert LiveSettings().options() == LiveOptions()
    assert set(LiveOptions.__dataclass_fields__) <= set(LiveSettings.model_fields)
