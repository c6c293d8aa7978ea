r"""Coverage-guided fuzzing of the trace file readers and the OTLP/JSON request decoder.

Each input is one file's bytes, read as ``tracescore import`` reads stdin: gzip, JSON
Lines, one JSON document (OTLP, Tempo, Jaeger v1/v3), or length-prefixed protobuf,
told apart by content. The batches go through the import pipeline (assembly, trajectory
builder, the JSON Lines export record). The same bytes are also an OTLP/HTTP JSON
request body for the receiver's decoder.

Run (see fuzz/README.md)::

    python fuzz/make_corpus.py
    python fuzz/fuzz_otlp_json.py -dict=fuzz/otlp_json.dict -timeout=10 \\
        -runs=200000 -max_total_time=600 fuzz/corpus/otlp_json
"""

from __future__ import annotations

import sys
from typing import Literal

import _common
import atheris

with atheris.instrument_imports(include=_common.INSTRUMENT):
    import fuzz_helpers

    from tracescore.server.decoding import MalformedRequest, decode_json_request
    from tracescore.spans import Origin

SIGNALS: tuple[Literal["traces", "logs"], ...] = ("traces", "logs")
ORIGIN = Origin("otlp-http")


def test_one_input(data: bytes) -> None:
    """Read ``data`` as a file and as a receiver request; any contract breach raises."""
    fuzz_helpers.run_import(fuzz_helpers.read_bytes(data))
    for signal in SIGNALS:
        try:
            batch = decode_json_request(signal, data, origin=ORIGIN)
        except MalformedRequest:
            continue
        fuzz_helpers.check_batch(batch, path=ORIGIN.path)
        fuzz_helpers.run_import([batch])


def main() -> None:
    """Hand the harness to libFuzzer (arguments as for any libFuzzer binary)."""
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
