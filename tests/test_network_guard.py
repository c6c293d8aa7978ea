"""The suite's network guard (tests/conftest.py) really blocks non-loopback traffic."""

from __future__ import annotations

import socket

import pytest


def test_connecting_outside_loopback_fails() -> None:
    with socket.socket() as s, pytest.raises(RuntimeError, match="may not reach the network"):
        s.connect(("93.184.216.34", 443))


def test_loopback_is_allowed() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.socket() as client:
            client.connect(server.getsockname())
