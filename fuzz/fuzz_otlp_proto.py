r"""Coverage-guided fuzzing of the OTLP protobuf readers.

Each input is tried as one serialized export request (signal detected, and forced to
traces and to logs), as the receiver's request body (``decode_protobuf_request``), and
as a length-prefixed protobuf file (the Collector ``file`` exporter's ``format: proto``)
of one frame, and of the raw bytes themselves when they do not look like JSON. Decoded
batches go through the import pipeline.

Run (see fuzz/README.md)::

    python fuzz/make_corpus.py
    python fuzz/fuzz_otlp_proto.py -timeout=10 -runs=200000 -max_total_time=600 \\
        fuzz/corpus/otlp_proto
"""

from __future__ import annotations

import contextlib
import sys
from typing import Literal

import _common
import atheris

with atheris.instrument_imports(include=_common.INSTRUMENT):
    import fuzz_helpers

    from tracescore.formats.otlp_proto import decode_proto_message, detect_signal
    from tracescore.server.decoding import MalformedRequest, decode_protobuf_request
    from tracescore.spans import Origin

SIGNALS: tuple[Literal["traces", "logs"], ...] = ("traces", "logs")
ORIGIN = Origin("fuzz.binpb", 1)
_JSON_FIRST_BYTES = frozenset(b" \t\r\n{[\xef\x1f")


def test_one_input(data: bytes) -> None:
    """Decode ``data`` every way a protobuf reader can; any contract breach raises."""
    batches = []
    for signal in (None, "traces", "logs"):
        batch = decode_proto_message(data, origin=ORIGIN, signal=signal)
        fuzz_helpers.check_batch(batch, path=ORIGIN.path)
        batches.append(batch)
    with contextlib.suppress(ValueError):  # documented: not well-formed down to the records
        detect_signal(data)
    for signal in SIGNALS:
        try:
            batch = decode_protobuf_request(signal, data, origin=ORIGIN)
        except MalformedRequest:
            continue
        fuzz_helpers.check_batch(batch, path=ORIGIN.path)
    fuzz_helpers.run_import(batches)
    framed = fuzz_helpers.length_prefixed([data])
    fuzz_helpers.run_import(fuzz_helpers.read_bytes(framed))
    if data[:1] and data[0] not in _JSON_FIRST_BYTES:
        fuzz_helpers.run_import(fuzz_helpers.read_bytes(data))


def main() -> None:
    """Hand the harness to libFuzzer (arguments as for any libFuzzer binary)."""
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
