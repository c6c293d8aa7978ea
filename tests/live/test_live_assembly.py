"""Live trace assembly by wall-clock windows (fake clock, no sleeps)."""

from __future__ import annotations

import dataclasses
import gc

from spanbuilder import TraceBuilder
from tracescore.live.assembly import _MAX_RESOURCES, LiveAssembler, _Flight
from tracescore.spans import Origin, SpanEvent, SpanRecord


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_complete_after_idle_window_and_orphans_after_ttl() -> None:
    clock = Clock()
    asm = LiveAssembler(idle_s=2, orphan_ttl_s=30, clock=clock)
    rooted, orphan = TraceBuilder(), TraceBuilder()
    root = rooted.span("root")
    child = rooted.span("child", root)
    orphan.span("child", orphan.span("remote-parent"))
    orphan.spans[0].parent_span_id = "ffffffffffffffff"  # its root lives elsewhere
    asm.add([child, *orphan.spans])
    clock.now += 1.5
    asm.add([root])
    clock.now += 1.9
    assert asm.due() == []  # the idle window counts from the last record
    clock.now += 0.2
    [done] = asm.due()
    assert done.trace_id == rooted.trace_id and done.kind == "complete"
    assert [s.name for s in done.spans] == ["child", "root"]
    clock.now += 30
    [late] = asm.due()
    assert late.trace_id == orphan.trace_id and late.kind == "incomplete"
    assert asm.in_flight == 0
    # a record of a released trace is late: dropped and counted, never scored twice
    asm.add([rooted.span("straggler", root)])
    assert asm.dropped["late_record"] == 1 and asm.in_flight == 0


def test_remote_parent_is_a_local_root() -> None:
    clock = Clock()
    asm = LiveAssembler(idle_s=1, orphan_ttl_s=60, clock=clock)
    t = TraceBuilder()
    span = t.span("server")
    span.parent_span_id = "abcdefabcdefabcd"
    asm.add([span], local_roots=frozenset({span.span_id}))
    clock.now += 1
    [done] = asm.due()
    assert done.kind == "complete"


def test_bounds_drop_oldest_and_count() -> None:
    clock = Clock()
    asm = LiveAssembler(idle_s=1, max_traces=2, max_spans_per_trace=3, clock=clock)
    traces = [TraceBuilder() for _ in range(3)]
    for t in traces:
        t.span("child").parent_span_id = "ffffffffffffffff"  # rootless: not scored early
    asm.add(traces[0].spans)
    asm.add(traces[1].spans)
    clock.now += 0.1
    asm.add(traces[0].spans)  # trace 0 is now the most recent
    evicted = asm.add(traces[2].spans)
    assert [e.trace_id for e in evicted] == [traces[1].trace_id]
    assert evicted[0].kind == "dropped" and evicted[0].drop_reason == "max_traces"
    assert asm.dropped["trace_evicted"] == 1
    big = TraceBuilder()
    root = big.span("root")
    asm2 = LiveAssembler(max_spans_per_trace=3, clock=clock)
    asm2.add([root, *(big.span(f"c{i}", root) for i in range(4))])
    assert asm2.dropped["trace_too_large"] == 2


def test_a_full_assembler_releases_due_traces_before_dropping_any() -> None:
    """Found by the load test on a slow machine: a worker behind its due() calls filled
    the assembler with finished traces, then dropped them one by one to make room."""
    clock = Clock()
    asm = LiveAssembler(idle_s=1, orphan_ttl_s=60, max_traces=3, clock=clock)
    done_a, done_b, running = TraceBuilder(), TraceBuilder(), TraceBuilder()
    asm.add([done_a.span("root")])
    asm.add([done_b.span("root")])
    running.span("child", running.span("root-not-ended-yet"))
    asm.add(running.spans[1:])  # rootless so far: not due, however quiet
    clock.now += 1.5  # a and b are due, nobody called due()
    newcomer = TraceBuilder()
    released = asm.add([newcomer.span("root")])
    assert [(t.trace_id, t.kind) for t in released] == [
        (done_a.trace_id, "complete"),
        (done_b.trace_id, "complete"),
    ]
    assert asm.dropped["trace_evicted"] == 0 and asm.in_flight == 2
    # full again with nothing due: the least recently active is dropped, counted
    asm.add([TraceBuilder().span("root")])
    [dropped] = asm.add([TraceBuilder().span("root")])
    assert (dropped.trace_id, dropped.kind) == (running.trace_id, "dropped")
    assert dropped.drop_reason == "max_traces" and asm.dropped["trace_evicted"] == 1
    # full, nothing due, the oldest has its root: scored now (its window cut short)
    [early] = asm.add([TraceBuilder().span("root")])
    assert (early.trace_id, early.kind) == (newcomer.trace_id, "complete")
    assert asm.dropped["trace_evicted"] == 1 and asm.in_flight == 3


def test_damaged_traces_are_released_as_dropped() -> None:
    clock = Clock()
    asm = LiveAssembler(idle_s=1, clock=clock)
    t = TraceBuilder()
    asm.damage(t.trace_id)  # its span was lost before it arrived
    asm.add([t.span("root")])
    rootless = TraceBuilder()  # the lost span was its root: no waiting for the orphan TTL
    asm.damage(rootless.trace_id)
    asm.add([rootless.span("child", rootless.span("lost-root"))])
    clock.now += 1
    done = asm.due()
    assert [(x.trace_id, x.kind, x.drop_reason) for x in done] == [
        (t.trace_id, "dropped", "queue_full"),
        (rootless.trace_id, "dropped", "queue_full"),
    ]
    # logs without a trace id cannot be tied to anything
    from tracescore.spans import LogRecord

    asm.add([], [LogRecord(trace_id=None, span_id=None)])
    assert asm.dropped["no_trace_id"] == 1
    assert [x.kind for x in asm.flush()] == []


def test_damage_respects_max_traces() -> None:
    clock = Clock()
    asm = LiveAssembler(idle_s=1, max_traces=2, clock=clock)
    builders = [TraceBuilder() for _ in range(2)]
    for t in builders:
        asm.add([t.span("root")])
    evicted = asm.damage(TraceBuilder().trace_id)
    assert [e.trace_id for e in evicted] == [builders[0].trace_id]
    assert asm.in_flight == 2


def test_traces_get_a_log_list_only_when_a_log_arrives() -> None:
    """Most live traces have no log records: no empty list per trace for the GC to scan."""
    import gc

    from tracescore.spans import LogRecord

    clock = Clock()
    asm = LiveAssembler(idle_s=1, orphan_ttl_s=60, clock=clock)
    quiet, chatty = TraceBuilder(), TraceBuilder()
    root_q, root_c = quiet.span("root"), chatty.span("root")
    logs = [
        LogRecord(trace_id=chatty.trace_id, span_id=root_c.span_id, event_name=f"e{i}")
        for i in range(2)
    ]
    asm.add([root_q, root_c], logs[:1])
    asm.add([], logs[1:])
    clock.now += 1
    done = {t.trace_id: t for t in asm.due()}
    assert done[quiet.trace_id].logs == () and not gc.is_tracked(done[quiet.trace_id].logs)
    assert [r.event_name for r in done[chatty.trace_id].logs] == ["e0", "e1"]


# --- spans in flight are kept where the garbage collector stops tracking them -------------


def _in_flight(asm: LiveAssembler) -> _Flight:
    [flight] = asm._pending.values()
    return flight


def _record(trace: str, span: str, **fields: object) -> SpanRecord:
    return SpanRecord(trace_id=trace, span_id=span, parent_span_id=None, name=span, **fields)  # type: ignore[arg-type]


def test_spans_come_back_from_flight_unchanged_and_sharing_their_resource() -> None:
    resource = {"service.name": "agent", "host.cores": 2}
    spans = [
        _record(
            "a" * 32,
            "1" * 16,
            kind=3,
            start_ns=5,
            end_ns=9,
            attributes={
                "gen_ai.operation.name": "chat",
                "finish": ["stop"],
                "nested": [["a"]],
                "n": 1.5,
            },
            status_code=2,
            status_message="boom",
            resource=resource,
            scope="genai",
        ),
        _record("a" * 32, "2" * 16, events=(SpanEvent(name="e", time_ns=7),), resource=resource),
        _record("a" * 32, "3" * 16, origin=Origin("otlp-http"), resource=resource),
    ]
    expected = [dataclasses.replace(s) for s in spans]
    asm = LiveAssembler(idle_s=1, clock=Clock())
    asm.add(spans)
    [trace] = asm.flush()
    assert trace.spans == expected
    assert all(s.resource is resource for s in trace.spans)


def test_a_plain_span_in_flight_is_not_tracked_by_the_collector() -> None:
    # Why the packing exists: every full collection walks what is tracked, on whichever
    # thread allocates (the agent's, in the span processor).
    builder = TraceBuilder()
    builder.span("invoke_agent", attrs={"gen_ai.agent.name": "a", "n": 3})
    listed = _record(builder.trace_id, "9" * 16, attributes={"tags": ["x", "y"]})
    asm = LiveAssembler(idle_s=1, clock=Clock())
    asm.add([*builder.spans, listed])
    flight = _in_flight(asm)
    held = flight[3]
    assert isinstance(held, tuple) and all(isinstance(h, tuple) for h in held)
    gc.collect()
    assert not gc.is_tracked(held[0])
    gc.collect()  # one level of nesting per collection: the list value became a tuple
    assert not gc.is_tracked(held[1])
    gc.collect()
    gc.collect()
    assert not gc.is_tracked(held)  # the trace's spans too,
    assert not gc.is_tracked(flight)  # and the trace itself
    [trace] = asm.flush()
    assert trace.spans[1].attributes == {"tags": ["x", "y"]}


def test_a_released_trace_stays_packed_until_its_spans_are_read() -> None:
    # Under overload hundreds of released traces wait for the scorer: unpacked, each span
    # would be tracked objects every collection walks.
    spans = [
        _record("d" * 32, "1" * 16, attributes={"gen_ai.agent.name": "a"}),
        dataclasses.replace(
            _record("d" * 32, "2" * 16, attributes={"tags": ["x"]}), parent_span_id="1" * 16
        ),
    ]
    expected = [dataclasses.replace(s) for s in spans]
    asm = LiveAssembler(idle_s=1, clock=Clock())
    asm.add(spans)
    [trace] = asm.flush()
    for _ in range(3):  # one level of nesting per collection (the list value a tuple)
        gc.collect()
    assert not gc.is_tracked(trace.held)
    assert trace.spans == expected
    assert trace.spans is trace.spans  # unpacked once, then kept
    assert trace.held == ()  # the packed form is let go


def test_a_long_trace_keeps_every_span_in_order_past_the_tuple_size() -> None:
    from tracescore.live.assembly import _TUPLE_SPANS

    asm = LiveAssembler(idle_s=1, max_spans_per_trace=_TUPLE_SPANS + 10, clock=Clock())
    spans = [_record("c" * 32, f"{i + 1:016x}") for i in range(_TUPLE_SPANS + 20)]
    for span in spans:  # one at a time: each append grows the held spans
        asm.add([span])
    assert isinstance(_in_flight(asm)[3], list)  # past the size, appends stop copying
    assert asm.dropped["trace_too_large"] == 10
    [done] = asm.flush()
    assert [s.span_id for s in done.spans] == [s.span_id for s in spans[: _TUPLE_SPANS + 10]]


def test_past_the_resource_table_spans_fly_as_they_came() -> None:
    asm = LiveAssembler(idle_s=1, clock=Clock())
    resources = [{"service.name": f"s{i}"} for i in range(_MAX_RESOURCES + 3)]
    spans = [_record("b" * 32, f"{i:016x}", resource=r) for i, r in enumerate(resources)]
    asm.add(spans)
    held = _in_flight(asm)[3]
    assert sum(isinstance(h, SpanRecord) for h in held) == 3
    [trace] = asm.flush()
    assert [s.resource for s in trace.spans] == resources
    assert all(a.resource is b for a, b in zip(trace.spans, resources, strict=True))


def test_the_packer_knows_every_span_field() -> None:
    """A field added to SpanRecord must be carried through flight (or opt the span out of
    packing, as events and origin do): this lists the fields the packer was written for."""
    packed = {"trace_id", "span_id", "parent_span_id", "name", "kind", "start_ns", "end_ns"}
    packed |= {"attributes", "status_code", "status_message", "resource", "scope"}
    kept_as_they_came = {"events", "origin"}
    assert {f.name for f in dataclasses.fields(SpanRecord)} == packed | kept_as_they_came
