"""Options from the environment and the settings file: named by the flag, errors located."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import TypeVar

import click
import orjson
import pytest
from click.testing import CliRunner

from bundled_examples import EXAMPLES, REPLAY_ARGS
from tracescore.cli import main
from tracescore.cli.options import Option
from tracescore.live.config import LiveSettings, ServeSettings
from tracescore.settings import (
    ImportSettings,
    ReplaySettings,
    Settings,
    load_settings,
    settings_key,
)

TRACES = str(EXAMPLES / "traces")
_Model = TypeVar("_Model", ImportSettings, ReplaySettings, ServeSettings)


def _commands() -> dict[str, click.Command]:
    ctx = click.Context(main)
    found = {name: main.get_command(ctx, name) for name in main.list_commands(ctx)}
    return {"": main, **{name: cmd for name, cmd in found.items() if cmd is not None}}


def _options() -> list[tuple[str, click.Option]]:
    return [
        (name, param)
        for name, cmd in _commands().items()
        for param in cmd.params
        if isinstance(param, click.Option) and param.name not in ("version", "help")
    ]


def test_every_option_reads_the_variable_named_after_its_flag() -> None:
    # A new option declared with click.option would read TRACESCORE_<COMMAND>_<PARAMETER>,
    # which for `--config` (config_path) is not the variable the README promises.
    seen = 0
    for command, param in _options():
        assert isinstance(param, Option), f"{command} {param.opts}: declare it with option()"
        flag = next(o for o in param.opts if o.startswith("--"))
        prefix = "_".join(p for p in ("TRACESCORE", command.upper()) if p)
        ctx = click.Context(main, auto_envvar_prefix=prefix)
        expected = f"{prefix}_{flag[2:].replace('-', '_').upper()}"
        assert param.envvar_names(ctx)[0] == expected
        seen += 1
    assert seen > 30  # every command's options were found


def _run(*args: str, env: dict[str, str] | None = None) -> click.testing.Result:
    return CliRunner().invoke(main, list(args), env=env)


def test_variables_spelled_as_the_flags_work(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    # --format is the parameter `fmt`: TRACESCORE_IMPORT_FORMAT used to be ignored.
    result = _run("import", TRACES, "-q", "-o", str(out), env={"TRACESCORE_IMPORT_FORMAT": "jsonl"})
    assert result.exit_code == 0, result.output
    assert orjson.loads(out.read_bytes().splitlines()[0])["trace_id"]  # JSON Lines
    # click's own spelling, which worked before, still does.
    result = _run("import", TRACES, "-q", "-o", str(out), env={"TRACESCORE_IMPORT_FMT": "jsonl"})
    assert result.exit_code == 0 and b"eval_set_id" not in out.read_bytes()
    # The flag wins over both variables.
    env = {"TRACESCORE_IMPORT_FORMAT": "jsonl"}
    result = _run("import", TRACES, "-q", "-o", str(out), "--format", "evalset", env=env)
    assert result.exit_code == 0 and b'"eval_set_id"' in out.read_bytes()


def test_settings_and_config_from_the_environment(tmp_path: Path) -> None:
    settings = tmp_path / "tracescore.toml"
    settings.write_text(f'[replay]\ngoldens = ["{EXAMPLES / "goldens"}"]\n')
    config = tmp_path / "eval_config.json"
    config.write_text('{"criteria": {"response_match_score": 0.1}}')
    out = tmp_path / "results.jsonl"
    env = {"TRACESCORE_SETTINGS": str(settings), "TRACESCORE_REPLAY_CONFIG": str(config)}
    result = _run("replay", TRACES, "-q", "--output", str(out), env=env)
    assert result.exit_code in (0, 1), result.output
    lines = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    # The goldens came from the settings file, the criteria from the variable's config.
    assert any(line["golden"] for line in lines)
    matched = [line for line in lines if line["golden"]]
    assert all(set(line["criteria"]) >= {"response_match_score"} for line in matched)
    assert all("tool_trajectory_avg_score" not in line["criteria"] for line in lines)
    assert {line["criteria"]["response_match_score"]["threshold"] for line in matched} == {0.1}


@pytest.mark.parametrize(
    ("args", "env", "settings", "origin"),
    [
        (["import", TRACES, "-j", "-1"], {}, None, None),
        (["import", TRACES], {"TRACESCORE_IMPORT_JOBS": "-1"}, None, "TRACESCORE_IMPORT_JOBS"),
        (["import", TRACES], {}, "[import]\njobs = -1\n", "import.jobs"),
        (["import", TRACES], {}, '[import]\nformat = "xml"\n', "import.format"),
        (["replay", TRACES], {}, "[replay]\nidle_records = 0\n", "replay.idle_records"),
        (["replay", TRACES], {}, "[replay]\njobs = -2\n", "replay.jobs"),
    ],
)
def test_a_refused_value_names_where_it_came_from(
    tmp_path: Path,
    args: list[str],
    env: dict[str, str],
    settings: str | None,
    origin: str | None,
) -> None:
    prefix: list[str] = []
    path = tmp_path / "tracescore.toml"
    if settings is not None:
        path.write_text(settings)
        prefix = ["--settings", str(path)]
    result = _run(*prefix, *args, "-q", env=env)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    if origin is None:
        assert "(from " not in result.stderr  # typed on the command line: no origin
    elif origin.startswith("TRACESCORE_"):
        assert f"(from {origin})." in result.stderr
    else:
        assert f"(from {path}: {origin})." in result.stderr


def test_replay_jobs_in_the_settings_file(tmp_path: Path) -> None:
    path = tmp_path / "tracescore.toml"
    path.write_text("[replay]\njobs = 1\n")
    assert load_settings(path).default_map()["replay"]["jobs"] == 1
    result = _run("--settings", str(path), *REPLAY_ARGS, "-q")
    assert result.exit_code == 1  # README command one's verdicts: some criteria fail


def _every_key_set(model: type[_Model]) -> _Model:
    """``model`` with a value of the right type in every field (criteria left out)."""
    values: dict[str, object] = {}
    for name, field in model.model_fields.items():
        kinds = [a for a in typing.get_args(field.annotation) if a is not type(None)]
        kind = kinds[0] if kinds else field.annotation
        if name != "criteria":
            samples: dict[object, object] = {str: "x", int: 2048, float: 1.5, bool: True}
            values[name] = samples.get(kind, ["x"])
    return model.model_construct(**values)  # type: ignore[arg-type]


def test_settings_keys_are_the_commands_parameters() -> None:
    """Every key of [import], [replay], [serve] (and [live]'s goldens and eval_config) is a
    parameter of its command, and errors name it back by its key."""
    sections: dict[str, type[ImportSettings | ReplaySettings | ServeSettings]] = {
        "import": ImportSettings,
        "replay": ReplaySettings,
        "serve": ServeSettings,
    }
    full = Settings.model_construct(
        import_=_every_key_set(ImportSettings),
        replay=_every_key_set(ReplaySettings),
        serve=_every_key_set(ServeSettings),
        live=LiveSettings.model_construct(goldens=["g"], eval_config="c.json"),
    )
    commands = _commands()
    default_map = full.default_map()
    for command, model in sections.items():
        params = {p.name for p in commands[command].params}
        given = default_map[command]
        assert set(given) <= params, f"[{command}] keys without a parameter"
        keys = {settings_key(command, name) for name in given}
        expected = {f"{command}.{k}" for k in model.model_fields} - {"replay.criteria"}
        if command == "serve":
            expected |= {"live.goldens", "live.eval_config"}
        assert keys == expected
