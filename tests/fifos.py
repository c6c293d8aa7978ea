"""Named pipes as command outputs, read the way a consumer (``gzip``, ``jq``) reads them."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def fifo_read(path: Path) -> Iterator[list[bytes]]:
    """A named pipe at ``path``, and what a reader got from it (filled on exit).

    The reader waits at most 30 s after the block: a writer that never opened the pipe
    (renamed a file over it, say) leaves the list empty instead of hanging the test.
    """
    os.mkfifo(path)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(path.read_bytes()), daemon=True)
    reader.start()
    yield got
    reader.join(timeout=30)
