"""Fixtures for the receiver tests: a fresh intake and registry per test, servers on port 0."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

sys.path.insert(0, str(Path(__file__).parent))

from server_helpers import ListIntake, ServerThread

from tracescore.server import ServeOptions

TOKEN = "s3cret-token"


@pytest.fixture
def intake() -> ListIntake:
    return ListIntake()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def start_server(
    intake: ListIntake, registry: CollectorRegistry
) -> Iterator[Callable[..., ServerThread]]:
    """Start a server on 127.0.0.1 with free ports; stopped when the test ends."""
    started: list[ServerThread] = []

    def start(**options: Any) -> ServerThread:
        options.setdefault("http_port", 0)
        options.setdefault("grpc_port", 0)
        thread = ServerThread(
            intake, options=ServeOptions(host="127.0.0.1", **options), registry=registry
        )
        started.append(thread)
        return thread.start()

    yield start
    for thread in started:
        thread.stop()


@pytest.fixture
def server(start_server: Callable[..., ServerThread]) -> ServerThread:
    """A server without auth and with the default limits."""
    return start_server()
