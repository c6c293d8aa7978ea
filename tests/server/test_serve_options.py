"""ServeOptions validation and the server's public surface and lifecycle."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

import pytest
from prometheus_client import CollectorRegistry
from server_helpers import ListIntake, ServerThread

import tracescore.server
from tracescore.exceptions import ConfigError
from tracescore.server import OTLPServer, ServeOptions


def test_public_api_all_is_sorted_and_importable() -> None:
    names = tracescore.server.__all__
    assert names == sorted(names)
    assert names == ["OTLPServer", "ServeOptions", "run"]
    for name in names:
        assert hasattr(tracescore.server, name)


def test_defaults_follow_otlp() -> None:
    options = ServeOptions()
    assert (options.host, options.grpc_port, options.http_port) == ("127.0.0.1", 4317, 4318)
    assert options.auth_token is None
    assert options.max_request_bytes == 8 * 1024 * 1024
    assert options.drain_timeout_s == 30.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"grpc_port": None, "http_port": None}, "nothing to listen on"),
        ({"http_port": 70000}, "http_port must be 0-65535"),
        ({"grpc_port": -1}, "grpc_port must be 0-65535"),
        ({"grpc_port": 5000, "http_port": 5000}, "both 5000"),
        ({"host": ""}, "host"),
        ({"auth_token": ""}, "auth_token"),
        ({"auth_token": "two words"}, "auth_token"),
        ({"auth_token": "jetón"}, "auth_token"),
        ({"max_request_bytes": 0}, "max_request_bytes"),
        ({"max_request_bytes": 2**31}, "max_request_bytes"),
        ({"drain_timeout_s": -1.0}, "drain_timeout_s"),
        ({"drain_timeout_s": float("inf")}, "drain_timeout_s"),
        ({"request_timeout_s": 0.0}, "request_timeout_s"),
        ({"request_timeout_s": float("nan")}, "request_timeout_s"),
        ({"max_connections": 0}, "max_connections"),
        ({"max_connections": True}, "max_connections"),
    ],
)
def test_bad_options_are_config_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ServeOptions(**kwargs)  # type: ignore[arg-type]


def test_port_zero_for_both_is_allowed() -> None:
    ServeOptions(grpc_port=0, http_port=0)


def test_options_are_keyword_only_and_frozen() -> None:
    with pytest.raises(TypeError):
        ServeOptions("0.0.0.0")  # type: ignore[call-arg]
    options = ServeOptions()
    with pytest.raises(AttributeError):
        options.host = "0.0.0.0"  # type: ignore[misc]


def test_start_binds_free_ports_and_stop_is_idempotent(
    start_server: Callable[..., ServerThread],
) -> None:
    server = start_server()
    otlp = server.server
    assert otlp is not None
    assert otlp.http_port and otlp.grpc_port
    assert otlp.http_port != otlp.grpc_port
    server.call(otlp.stop(0.5))
    assert otlp.draining
    server.call(otlp.stop(0.5))  # again: returns at once
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", otlp.http_port)) != 0


@pytest.mark.parametrize("which", ["http_port", "grpc_port"])
def test_only_one_listener(start_server: Callable[..., ServerThread], which: str) -> None:
    server = start_server(**{which: None})
    otlp = server.server
    assert otlp is not None
    assert getattr(otlp, which) is None
    other = "grpc_port" if which == "http_port" else "http_port"
    assert getattr(otlp, other)


@pytest.mark.parametrize("which", ["http_port", "grpc_port"])
def test_port_in_use_is_a_config_error(which: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        options = {"http_port": 0, "grpc_port": 0, which: port}
        server = ServerThread(ListIntake(), options=ServeOptions(**options))
        with pytest.raises(ConfigError, match="cannot listen"):
            server.start()
        server.stop()


def test_start_twice_is_an_error() -> None:
    async def go() -> None:
        otlp = OTLPServer(
            ListIntake(),
            registry=CollectorRegistry(),
            options=ServeOptions(http_port=0, grpc_port=None),
        )
        await otlp.start()
        try:
            with pytest.raises(RuntimeError, match="only be called once"):
                await otlp.start()
        finally:
            await otlp.stop(0)

    asyncio.run(go())


def test_one_registry_per_server() -> None:
    registry = CollectorRegistry()
    OTLPServer(ListIntake(), registry=registry, options=ServeOptions())
    with pytest.raises(ValueError, match="Duplicated"):
        OTLPServer(ListIntake(), registry=registry, options=ServeOptions())
