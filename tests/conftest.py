"""Shared test setup.

* Tests import their helpers (span builders, harnesses) from this folder.
* No test may reach the network: every socket connection to anything but loopback (or a
  Unix socket) fails, so a test that would call a real LLM or fetch a model fails loudly.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent / "formats"))

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_local(address: Any) -> bool:
    if not isinstance(address, tuple):
        return True  # AF_UNIX path
    host = address[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: would need DNS, i.e. the network


class NetworkAccessError(RuntimeError):
    """Raised when a test tries to connect anywhere but loopback."""


def _guarded(real: Any) -> Any:
    def connect(self: socket.socket, address: Any) -> Any:
        if not _is_local(address):
            raise NetworkAccessError(f"tests may not reach the network (tried {address!r})")
        return real(self, address)

    return connect


@pytest.fixture(autouse=True, scope="session")
def _no_network() -> Iterator[None]:
    socket.socket.connect = _guarded(_real_connect)  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded(_real_connect_ex)  # type: ignore[method-assign]
    try:
        yield
    finally:
        socket.socket.connect = _real_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = _real_connect_ex  # type: ignore[method-assign]


@pytest.fixture
def refuse_listing(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    """``refuse_listing(d)``: listing ``d`` fails with EACCES, as for a non-root user.

    Root lists any directory (CI runs as root), so the refusal comes from ``os.scandir``,
    which ``os.walk`` and ``Path.rglob`` both call, for that one directory.
    """
    real_scandir = os.scandir
    refused: set[str] = set()

    def scandir(path: Any = ".") -> Any:
        if os.fspath(path) in refused:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    return lambda directory: refused.add(str(directory))
