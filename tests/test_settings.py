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
    ("name", "text", "message"),
    [
        (
            "tracescore.toml",
            "[replay]\ngolden = 1\n",
            "replay.golden: unknown key (allowed: criteria, detailed",
        ),
        (
            "tracescore.toml",
            "[import]\nidle_records = 'many'\n",
            "import.idle_records: Input should be a valid integer",
        ),
        (
            "tracescore.toml",
            "[nope]\n",
            "nope: unknown key (allowed: events, import, judge, live, metrics, replay, sampling, serve)",
        ),
        ("tracescore.toml", "[replay\n", "invalid TOML"),
        (
            "tracescore.toml",
            "[live]\nmax_cpu_share = 1.5\n",
            "live.max_cpu_share: Input should be less than or equal to 1",
        ),
        # A key given twice in YAML: the second replaced the first (here: jobs was lost).
        (
            "tracescore.yaml",
            "replay:\n  jobs: 1\nreplay:\n  strict: true\n",
            "invalid YAML: line 3, column 1: key 'replay' given twice (first on line 1)",
        ),
        (
            "tracescore.yaml",
            "sampling:\n  rate: 0.5\n  by: trace\n  rate: 1\n",
            "invalid YAML: line 4, column 3: key 'rate' given twice",
        ),
        (
            "tracescore.yaml",
            "live:\n  criteria: {rouge_match: 0.5, rouge_match: 0.9}\n",
            "invalid YAML: line 2, column 32: key 'rouge_match' given twice",
        ),
    ],
)
def test_mistakes_name_the_file_and_key(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
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
    from tracescore.live.options import LiveOptions

    assert LiveSettings().options() == LiveOptions()
    assert set(LiveOptions.__dataclass_fields__) <= set(LiveSettings.model_fields)


def test_a_byte_order_mark_does_not_break_toml(tmp_path: Path) -> None:
    path = tmp_path / "tracescore.toml"
    path.write_bytes(b"\xef\xbb\xbf[replay]\njobs = 3\n")  # what Notepad saves as "UTF-8"
    assert load_settings(path).replay.jobs == 3


def test_yaml_merge_keys_may_still_be_overridden(tmp_path: Path) -> None:
    path = tmp_path / "tracescore.yaml"
    path.write_text("replay: &base\n  jobs: 1\n  strict: true\nimport:\n  <<: *base\n  jobs: 4\n")
    settings = load_settings(path)
    assert (settings.replay.jobs, settings.import_.jobs, settings.import_.strict) == (1, 4, True)


def test_tilde_in_a_path_is_the_home_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    path = tmp_path / "conf" / "tracescore.toml"
    path.parent.mkdir()
    path.write_text(
        '[judge]\ncache = "~/.cache/judge.sqlite"\n[replay]\ngoldens = ["~/g", "rel/g"]\n'
    )
    settings = load_settings(path)
    # Not tmp_path/conf/~/.cache/...: a directory named "~" beside the file.
    assert settings.judge.cache == str(home / ".cache" / "judge.sqlite")
    assert settings.replay.goldens == [str(home / "g"), str(path.parent / "rel" / "g")]


def test_one_string_where_a_list_goes_is_a_list_of_one(tmp_path: Path) -> None:
    path = tmp_path / "tracescore.toml"
    path.write_text(
        '[replay]\ngoldens = "g/"\n[live]\ngoldens = "lg"\n'
        '[sampling]\nagents = "weather"\nexclude_agents = "debug"\n'
    )
    settings = load_settings(path)
    assert settings.replay.goldens == [str(tmp_path / "g/")]
    assert settings.live.goldens == [str(tmp_path / "lg")]
    assert settings.sampling.policy().agents == ("weather",)
    assert settings.sampling.policy().exclude_agents == ("debug",)


def test_duplicate_yaml_key_exits_2_from_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "tracescore.yaml"
    path.write_text(f"replay:\n  goldens: [{EXAMPLES / 'goldens'}]\nreplay:\n  jobs: 1\n")
    result = CliRunner().invoke(main, ["--settings", str(path), "replay", str(EXAMPLES / "traces")])
    assert result.exit_code == 2
    assert "key 'replay' given twice" in result.stderr
    assert "Traceback" not in result.stderr
