"""Command-line options that read ``TRACESCORE_*`` variables by their flag's name.

Every option of every command can be set from the environment, as
``TRACESCORE_<COMMAND>_<FLAG>`` (``--config`` of ``replay``: ``TRACESCORE_REPLAY_CONFIG``;
the group's ``--settings``: ``TRACESCORE_SETTINGS``), or from the settings file. Click's
own automatic variables follow the *parameter's* name instead, which differs from the
flag for a few options (``config_path``, ``fmt``, ``settings_path``): the variable a user
would set was silently ignored. Those spellings still work, after the flag's.

A value that the environment or the settings file gave and that the option refuses
names where it came from, since the user did not type it: ``Invalid value for '-j' /
'--jobs': -1 is not in the range x>=0 (from TRACESCORE_IMPORT_JOBS).``
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, Final

import click
from click.core import ParameterSource
from click.decorators import FC

__all__ = ["Option", "option"]

#: ``ctx.meta`` key: option name -> (source of its value, environment variable if any).
_SOURCES: Final = "tracescore.option_sources"


class Option(click.Option):
    """A :class:`click.Option` whose variable follows the flag and whose errors say where."""

    def envvar_names(self, ctx: click.Context) -> list[str]:
        """The variables this option reads, first set wins: its own, the flag's, click's."""
        names: list[str] = []
        if isinstance(self.envvar, str):
            names.append(self.envvar)
        elif self.envvar:
            names.extend(self.envvar)
        prefix = ctx.auto_envvar_prefix
        if self.allow_from_autoenv and prefix is not None and self.name:
            flag = next((o for o in self.opts if o.startswith("--")), None)
            if flag is not None:
                names.append(f"{prefix}_{flag[2:].replace('-', '_').upper()}")
            names.append(f"{prefix}_{self.name.upper()}")
        return list(dict.fromkeys(names))

    def resolve_envvar_value(self, ctx: click.Context) -> str | None:
        """The first non-empty variable of :meth:`envvar_names`, remembered as the source."""
        for name in self.envvar_names(ctx):
            value = os.environ.get(name)
            if value:  # click ignores empty variables too
                ctx.meta.setdefault(_SOURCES, {})[self.name] = (ParameterSource.ENVIRONMENT, name)
                return value
        return None

    def consume_value(
        self, ctx: click.Context, opts: Mapping[str, Any]
    ) -> tuple[Any, ParameterSource]:
        """Click's value and source; the source is kept for :meth:`process_value`."""
        value, source = super().consume_value(ctx, opts)
        sources = ctx.meta.setdefault(_SOURCES, {})
        if source is not ParameterSource.ENVIRONMENT:
            sources[self.name] = (source, None)
        return value, source

    def process_value(self, ctx: click.Context, value: Any) -> Any:
        """Click's conversion; a refused value not from the command line says where from."""
        try:
            return super().process_value(ctx, value)
        except click.BadParameter as exc:
            where = self._origin(ctx)
            if where is None:
                raise
            raise click.BadParameter(
                f"{exc.message.rstrip('.')} (from {where}).", ctx=exc.ctx, param=exc.param
            ) from None

    def _origin(self, ctx: click.Context) -> str | None:
        """Where a refused value came from, unless the command line (None)."""
        source, envvar = ctx.meta.get(_SOURCES, {}).get(self.name, (None, None))
        if source is ParameterSource.ENVIRONMENT:
            return str(envvar)
        if source is ParameterSource.DEFAULT_MAP and self.name and ctx.info_name:
            # Lazy: the settings module pulls in pydantic, which `import` does not need.
            from tracescore.settings import settings_key  # noqa: PLC0415

            path = ctx.obj[0] if isinstance(ctx.obj, tuple) else "the settings file"
            return f"{path}: {settings_key(ctx.info_name, self.name)}"
        return None


def option(*param_decls: str, **attrs: Any) -> Callable[[FC], FC]:
    """:func:`click.option` with :class:`Option`: use it for every tracescore option."""
    return click.option(*param_decls, cls=Option, **attrs)
