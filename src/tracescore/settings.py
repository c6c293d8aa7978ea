"""tracescore's own settings file (TOML or YAML), feeding every command's defaults.

One file holds what would otherwise be repeated flags: goldens, the ADK criteria (embedded
or a path to an ``eval_config.json``), outputs, the idle window. Precedence is
argument > environment (``TRACESCORE_<COMMAND>_<OPTION>``) > file > built-in default: the
CLI hands the file's values to click as its ``default_map``, which click ranks below the
command line and the environment.

Example (``tracescore.toml``)::

    [replay]
    goldens = ["goldens/"]
    eval_config = "eval_config.json"      # or an embedded table:
    # criteria = { response_match_score = 0.8 }
    output = "results.jsonl"

    [import]
    idle_records = 50000

Paths are relative to the settings file, and ``~`` is the user's home directory, as in a
shell. A key given twice is an error, in YAML as in TOML. Mistakes name the file, the key
and what is allowed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, ValidationError

from tracescore.config_fields import OneOrMany
from tracescore.exceptions import ConfigError
from tracescore.judge.config import JudgeSettings
from tracescore.live.config import (
    EventsSettings,
    LiveSettings,
    MetricsSettings,
    SamplingSettings,
    ServeSettings,
)

__all__ = ["ImportSettings", "ReplaySettings", "Settings", "load_settings", "settings_key"]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ImportSettings(_Section):
    """Defaults of ``tracescore import``."""

    output: str | None = None
    format: str | None = None
    eval_set_id: str | None = None
    idle_records: int | None = None
    jobs: int | None = None
    strict: bool | None = None


class ReplaySettings(_Section):
    """Defaults of ``tracescore replay``; ``criteria`` embeds an ADK ``criteria`` table."""

    goldens: OneOrMany | None = None
    eval_config: str | None = None
    criteria: dict[str, Any] | None = None
    output: str | None = None
    junit: str | None = None
    detailed: bool | None = None
    idle_records: int | None = None
    jobs: int | None = None
    strict: bool | None = None


#: Keys whose command parameter has another name: section -> {key: parameter}.
_PARAMETERS: Final[dict[str, dict[str, str]]] = {
    "import": {"format": "fmt"},
    "replay": {"eval_config": "config_path"},
    "serve": {"drain_timeout_s": "drain_timeout", "request_timeout_s": "request_timeout"},
}
#: Command parameters that the file sets from another section than the command's own.
_FROM_SECTION: Final[dict[tuple[str, str], str]] = {
    ("serve", "goldens"): "live.goldens",
    ("serve", "config_path"): "live.eval_config",
}


def settings_key(command: str, parameter: str) -> str:
    """The settings file's key (``section.key``) behind ``command``'s ``parameter``.

    The inverse of :meth:`Settings.default_map`, for errors about a value the file gave.
    """
    moved = _FROM_SECTION.get((command, parameter))
    if moved is not None:
        return moved
    keys = {param: key for key, param in _PARAMETERS.get(command, {}).items()}
    return f"{command}.{keys.get(parameter, parameter)}"


class Settings(_Section):
    """The whole settings file."""

    import_: ImportSettings = ImportSettings()
    replay: ReplaySettings = ReplaySettings()
    judge: JudgeSettings = JudgeSettings()
    live: LiveSettings = LiveSettings()
    sampling: SamplingSettings = SamplingSettings()
    metrics: MetricsSettings = MetricsSettings()
    events: EventsSettings = EventsSettings()
    serve: ServeSettings = ServeSettings()

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def default_map(self) -> dict[str, dict[str, Any]]:
        """Per-command defaults for click (only what the file sets)."""
        sections = {
            "import": self.import_.model_dump(exclude_none=True),
            "replay": self.replay.model_dump(exclude_none=True, exclude={"criteria"}),
            "serve": self.serve.model_dump(exclude_none=True),
        }
        out = {
            command: {_PARAMETERS.get(command, {}).get(k, k): v for k, v in values.items()}
            for command, values in sections.items()
        }
        live = {"goldens": self.live.goldens, "config_path": self.live.eval_config}
        out["serve"].update({k: v for k, v in live.items() if v is not None})
        return out


def _parse(path: Path) -> object:
    data = path.read_bytes()
    if path.suffix.lower() == ".toml":
        try:
            # utf-8-sig: a byte-order mark (Windows editors write one) is not TOML's
            # "invalid statement at line 1"; YAML allows it already.
            return tomllib.loads(data.decode("utf-8-sig"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        from tracescore.yaml_strict import YAMLError, load_yaml  # noqa: PLC0415 - YAML only

        try:
            return load_yaml(data) or {}
        except YAMLError as exc:
            raise ConfigError(f"{path}: invalid YAML: {exc}") from None
    raise ConfigError(f"{path}: settings must be .toml, .yaml or .yml")


def load_settings(path: str | Path) -> Settings:
    """Read and validate a settings file; relative paths become relative to it.

    Raises:
        ConfigError: unreadable, unparsable, or a key that is unknown or of the wrong type.

    """
    file = Path(path)
    try:
        raw = _parse(file)
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read: {exc.strerror or exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{file}: expected a table of sections "
            "(events, import, judge, live, metrics, replay, sampling, serve)"
        )
    if "import" in raw:
        raw["import_"] = raw.pop("import")
    try:
        settings = Settings.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join("import" if p == "import_" else str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            section = loc.split(".")[0]
            sections: dict[str, type[BaseModel]] = {
                "import": ImportSettings,
                "replay": ReplaySettings,
                "judge": JudgeSettings,
                "live": LiveSettings,
                "sampling": SamplingSettings,
                "metrics": MetricsSettings,
                "events": EventsSettings,
                "serve": ServeSettings,
            }
            model = sections.get(section) if loc.count(".") == 1 else None
            allowed = (
                sorted(model.model_fields)
                if model
                else (sorted(sections) if "." not in loc else [])
            )
            if not allowed:
                raise ConfigError(f"{file}: {loc}: unknown key") from None
            raise ConfigError(
                f"{file}: {loc}: unknown key (allowed: {', '.join(allowed)})"
            ) from None
        raise ConfigError(f"{file}: {loc}: {err['msg']}") from None
    return _relative_to(settings, file.parent)


def _relative_to(settings: Settings, base: Path) -> Settings:
    def fix(value: str | None) -> str | None:
        if value is None or value == "-":
            return value
        # A shell expands ~ in a flag; left alone here, `cache = "~/.cache/judge.db"`
        # would create a directory named "~" beside the settings file.
        path = Path(value).expanduser()
        return str(path if path.is_absolute() else base / path)

    replay = settings.replay.model_copy(
        update={
            "goldens": [fix(g) or g for g in settings.replay.goldens]
            if settings.replay.goldens
            else None,
            "eval_config": fix(settings.replay.eval_config),
            "output": fix(settings.replay.output),
            "junit": fix(settings.replay.junit),
        }
    )
    imp = settings.import_.model_copy(update={"output": fix(settings.import_.output)})
    judge = settings.judge.model_copy(update={"cache": fix(settings.judge.cache)})
    live = settings.live.model_copy(
        update={
            "goldens": [fix(g) or g for g in settings.live.goldens]
            if settings.live.goldens
            else None,
            "eval_config": fix(settings.live.eval_config),
        }
    )
    return settings.model_copy(
        update={"replay": replay, "import_": imp, "judge": judge, "live": live}
    )
