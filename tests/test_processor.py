"""ScoringSpanProcessor: real SDK spans in, Prometheus registry values out."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Tracer
from prometheus_client import CollectorRegistry

from live_agent import run_agent
from live_fixtures import PARIS, total, value, write_goldens
from tracescore.criteria import Criterion, EvalContext, informational_criteria
from tracescore.criteria.base import Score
from tracescore.eval_config import criteria_from_config
from tracescore.live.config import LiveSettings
from tracescore.live.cpu_share import CpuShare
from tracescore.live.engine import LiveEngine
from tracescore.live.options import PROCESSOR_CPU_SHARE, LiveOptions
from tracescore.live.scorer import LiveScorer
from tracescore.processor import ScoringSpanProcessor
from tracescore.sampling import SamplingPolicy

#: ``make(**options)``: a tracer and the processor it feeds (shut down after the test).
Make = Callable[..., tuple[Tracer, ScoringSpanProcessor]]

CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}


def criteria(spec: dict[str, Any] | None = None) -> list[Criterion]:
    return criteria_from_config({"criteria": spec or CRITERIA}, source="test")


@pytest.fixture
def make(request: pytest.FixtureRequest) -> Iterator[Make]:
    made: list[tuple[TracerProvider, ScoringSpanProcessor]] = []

    def build(**kw: Any) -> tuple[Tracer, ScoringSpanProcessor]:
        kw.setdefault("registry", CollectorRegistry())
        crit = kw.pop("criteria", None) or criteria()
        proc = ScoringSpanProcessor(crit, **kw)
        provider = TracerProvider()
        provider.add_span_processor(proc)
        made.append((provider, proc))
        return provider.get_tracer("test"), proc

    yield build
    for provider, _ in made:
        provider.shutdown()


def test_outcomes_scores_and_thresholds(make: Make, tmp_path: Path) -> None:
    goldens = write_goldens(
        tmp_path, {"paris": (PARIS, [("get_weather", {"city": "Paris"})], "It is 21C in Paris.")}
    )
    tracer, proc = make(goldens=goldens)
    ids = [run_agent(tracer) for _ in range(3)]
    run_agent(tracer, tools=[("get_weather", {"city": "Rome"}, "25C")])  # wrong argument
    run_agent(tracer, user="Something never seen")  # no golden
    with tracer.start_as_current_span("GET /health"):  # a trace without agent activity
        pass
    assert proc.force_flush(10_000)
    reg = proc.registry
    assert total(reg, "tracescore_invocations_total", "outcome") == {"scored": 4, "no_golden": 1}
    assert total(reg, "tracescore_traces_total", "outcome") == {
        "scored": 4,
        "no_golden": 1,
        "no_agent": 1,
    }
    ev = "tracescore_evaluations_total"
    labels = {"agent": "weather_agent", "criterion": "tool_trajectory_avg_score"}
    assert value(reg, ev, **labels, status="passed") == 3
    assert value(reg, ev, **labels, status="failed") == 1
    assert value(reg, ev, **labels, status="not_evaluated") == 1
    assert value(reg, "tracescore_score_count", **labels) == 4
    assert value(reg, "tracescore_score_sum", **labels) == 3.0
    assert value(reg, "tracescore_threshold", criterion="response_match_score") == 0.8
    assert value(reg, "tracescore_spans_received_total") == 5 * 4 + 1
    assert value(reg, "tracescore_queue_depth") == 0
    assert value(reg, "tracescore_traces_in_flight") == 0
    assert proc.scorer.invocation_outcomes == {"scored": 4, "no_golden": 1}
    from prometheus_client.openmetrics.exposition import generate_latest

    exposition = generate_latest(reg).decode()  # type: ignore[no-untyped-call]  # prometheus_client: unannotated
    assert any(f'trace_id="{i}"' in exposition for i in ids)  # exemplars link to traces


def test_half_an_emoji_in_the_agents_strings_does_not_break_the_scrape(
    make: Make, tmp_path: Path
) -> None:
    # A Python str can hold a lone surrogate; one in a Prometheus label value made every
    # scrape fail (UnicodeEncodeError), and json.dumps escaped in the messages lost them.
    cut = "\ud83d"
    goldens = write_goldens(
        tmp_path, {"paris": (PARIS + " \ufffd", [("get_weather", {"city": "Paris"})], "21C")}
    )
    tracer, proc = make(goldens=goldens)
    run_agent(
        tracer,
        agent=f"weather {cut}",
        user=f"{PARIS} {cut}",
        tools=[("get_weather", {"city": "Paris"}, f"21C {cut}")],
        answer="21C",
    )
    assert proc.force_flush(10_000)
    from prometheus_client.exposition import generate_latest

    exposition = generate_latest(proc.registry).decode()
    assert 'tracescore_invocations_total{agent="weather \ufffd",outcome="scored"} 1.0' in exposition
    labels = {"agent": "weather \ufffd", "criterion": "tool_trajectory_avg_score"}
    assert value(proc.registry, "tracescore_evaluations_total", **labels, status="passed") == 1


def test_windows_release_traces_without_flush(make: Make) -> None:
    now = [1000.0]
    tracer, proc = make(clock=lambda: now[0], options=LiveOptions(idle_s=5, tick_s=0.01))
    pumped, released = threading.Event(), threading.Event()
    proc.metrics.spans_received = _observe(proc.metrics.spans_received, pumped)  # type: ignore[method-assign]  # spy
    proc.metrics.record_trace = _observe(proc.metrics.record_trace, released)  # type: ignore[method-assign]  # spy
    run_agent(tracer)
    proc.engine._wake()
    assert pumped.wait(10)
    now[0] += 4.9
    assert not released.wait(0.1)  # the worker ticks every 10 ms: still inside the window
    assert proc.scorer.trace_outcomes == {}
    now[0] += 0.1
    assert released.wait(10)
    assert proc.scorer.trace_outcomes == {"no_golden": 1}


def _observe(fn: Any, event: threading.Event) -> Any:
    def wrapped(*a: Any, **kw: Any) -> Any:
        result = fn(*a, **kw)
        event.set()
        return result

    return wrapped


def test_sampling_is_counted_not_forgotten(make: Make) -> None:
    tracer, proc = make(sampling=SamplingPolicy(rate=0.5))
    for _ in range(200):
        run_agent(tracer)
    assert proc.force_flush(10_000)
    outcomes = total(proc.registry, "tracescore_invocations_total", "outcome")
    assert set(outcomes) == {"sampled_out", "no_golden"}
    assert sum(outcomes.values()) == 200
    assert 60 < outcomes["sampled_out"] < 140
    sampled = value(
        proc.registry,
        "tracescore_evaluations_total",
        agent="weather_agent",
        criterion="response_match_score",
        status="sampled_out",
    )
    assert sampled == outcomes["sampled_out"]


def test_errored_runs_always_scored(make: Make) -> None:
    tracer, proc = make(sampling=SamplingPolicy(rate=0.0, always_score_errors=True))
    run_agent(tracer)
    run_agent(tracer, error=True)
    assert proc.force_flush(10_000)
    assert proc.scorer.invocation_outcomes == {"sampled_out": 1, "no_golden": 1}


def test_queue_overflow_drops_new_spans_and_every_trace_is_counted(make: Make) -> None:
    tracer, proc = make(options=LiveOptions(max_queue=50, wake_at=10**9, tick_s=3600))
    # The worker sleeps (long tick, no wake-ups): the queue overflows. The first 50 spans
    # stay queued (12 whole runs and 2 spans of the 13th); every later span is dropped.
    for _ in range(40):
        run_agent(tracer)
    assert proc.force_flush(10_000)
    reg = proc.registry
    dropped = value(reg, "tracescore_spans_dropped_total", reason="queue_full")
    assert dropped == 40 * 4 - 50
    assert value(reg, "tracescore_spans_received_total") == 40 * 4
    outcomes = total(reg, "tracescore_invocations_total", "outcome")
    traces = total(reg, "tracescore_traces_total", "outcome")
    # every run ends in exactly one outcome; damaged traces are dropped, never half-scored
    assert sum(outcomes.values()) == 40 == sum(traces.values())
    assert outcomes == {"no_golden": 12, "dropped": 28}


class _OverShare(CpuShare):
    """A worker always over its CPU share: every look asks for a pause."""

    def __init__(self) -> None:
        super().__init__(0.5)
        self.looks = 0
        self.pausing = threading.Event()

    def pause_s(self) -> float:
        self.looks += 1
        if self.looks >= 2:  # the second look comes from within a pause
            self.pausing.set()
        return 1.0


def test_a_worker_over_its_cpu_share_pauses_and_a_flush_cuts_the_pause_short(
    make: Make,
) -> None:
    tracer, proc = make(options=LiveOptions(tick_s=0.05))
    over = _OverShare()
    proc.engine._cpu = over
    run_agent(tracer)  # taken in at the next tick; the share is then spent
    assert over.pausing.wait(10)
    for _ in range(3):
        run_agent(tracer)
    assert proc.engine.queue_depth() == 3 * 4  # the paused worker takes nothing in
    assert proc.force_flush(10_000)  # not held by the pause
    reg = proc.registry
    assert value(reg, "tracescore_worker_paused_seconds_total") > 0
    assert value(reg, "tracescore_spans_received_total") == 4 * 4
    assert sum(total(reg, "tracescore_traces_total", "outcome").values()) == 4


def test_the_processor_caps_its_worker_and_serve_does_not(make: Make) -> None:
    _, default = make()
    assert default.engine.options.max_cpu_share == PROCESSOR_CPU_SHARE == 0.25
    assert default.engine._cpu.share == 0.25
    _, chosen = make(options=LiveOptions(max_cpu_share=0.5, max_queue=100))
    assert (chosen.engine.options.max_cpu_share, chosen.engine.options.max_queue) == (0.5, 100)
    _, uncapped = make(options=LiveOptions(max_cpu_share=1.0))
    assert not uncapped.engine._cpu.limited
    # serve builds its engine from the settings file's [live], where None means no cap
    # (its own scorer: an engine points its scorer's queue gauges at itself)
    scorer = LiveScorer.build(list(informational_criteria()), registry=CollectorRegistry())
    serve = LiveEngine(scorer, options=LiveSettings().options())
    try:
        assert serve.options.max_cpu_share is None
        assert not serve._cpu.limited
    finally:
        serve.shutdown(1.0)


@pytest.mark.parametrize("share", [0.0, 1.5])
def test_a_cpu_share_outside_zero_to_one_is_refused(share: float) -> None:
    with pytest.raises(ValueError, match="max_cpu_share must be in"):
        LiveOptions(max_cpu_share=share)


_TRACER: list[Any] = []


@dataclass(frozen=True, kw_only=True)
class SpanMakingCriterion(Criterion):
    """A criterion that makes a span while scoring (as an instrumented library would)."""

    name: ClassVar[str] = "span_maker"

    def score(self, ctx: EvalContext) -> Score:
        with _TRACER[0].start_as_current_span("tracescore-internal"):
            pass
        return Score(value=1.0)


def test_spans_made_by_the_worker_are_never_scored(make: Make) -> None:
    crit = SpanMakingCriterion(threshold=0.5)
    tracer, proc = make(criteria=[crit])
    _TRACER[:] = [tracer]
    run_agent(tracer)
    assert proc.force_flush(10_000)
    assert proc.force_flush(10_000)
    assert value(proc.registry, "tracescore_spans_received_total") == 4
    assert total(proc.registry, "tracescore_traces_total", "outcome") == {"scored": 1}


def test_on_end_never_raises_and_shutdown_is_idempotent(make: Make) -> None:
    tracer, proc = make()
    proc.on_end(object())  # type: ignore[arg-type]  # garbage: counted as unreadable
    assert proc.force_flush(10_000)
    assert value(proc.registry, "tracescore_spans_dropped_total", reason="unreadable") == 1
    proc.shutdown()
    proc.shutdown()
    run_agent(tracer)  # after shutdown: ignored, not an error
    assert proc.force_flush(100) is True
    assert not proc.engine.ready()


def test_metrics_port_serves_the_registry(make: Make) -> None:
    import httpx

    tracer, proc = make(metrics_port=0)
    run_agent(tracer)
    assert proc.force_flush(10_000)
    body = httpx.get(f"http://127.0.0.1:{proc.metrics_port}/metrics").text
    assert 'tracescore_invocations_total{agent="weather_agent",outcome="no_golden"} 1.0' in body


def test_a_taken_metrics_port_is_logged_and_scoring_goes_on(
    make: Make, caplog: pytest.LogCaptureFixture
) -> None:
    import socket

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with caplog.at_level(logging.ERROR, logger="tracescore.processor"):
            tracer, proc = make(metrics_port=port)
    assert proc.metrics_port is None
    assert f"cannot serve /metrics on 127.0.0.1:{port}" in caplog.text
    run_agent(tracer)
    assert proc.force_flush(10_000)
    assert total(proc.registry, "tracescore_traces_total", "outcome") == {"no_golden": 1}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_worker_survives_fork(make: Make) -> None:
    tracer, proc = make()
    run_agent(tracer)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            run_agent(tracer)
            run_agent(tracer)
            ok = proc.force_flush(10_000)
            outcomes = proc.scorer.invocation_outcomes
            os.write(write, f"{ok} {outcomes.get('no_golden', 0)}".encode())
        finally:
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    report = os.read(read, 100).decode()
    assert os.waitstatus_to_exitcode(status) == 0
    # the child scored its own two runs with a fresh worker; the parent still has its one
    assert report == "True 2"
    assert proc.force_flush(10_000)
    assert proc.scorer.invocation_outcomes == {"no_golden": 1}


def test_unreadable_log_records_are_counted_not_fatal(make: Make) -> None:
    tracer, proc = make()
    proc.log_processor.on_emit(object())  # type: ignore[arg-type]
    run_agent(tracer)
    assert proc.force_flush(10_000)
    assert value(proc.registry, "tracescore_spans_dropped_total", reason="unreadable") == 1
    assert proc.scorer.invocation_outcomes == {"no_golden": 1}  # the worker went on


def test_log_records_dropped_at_a_full_queue_are_received_logs_not_spans(make: Make) -> None:
    _, proc = make(options=LiveOptions(max_queue=3, wake_at=10**9, tick_s=3600))
    for _ in range(5):  # the worker sleeps: two find the queue full
        proc.log_processor.on_emit(object())  # type: ignore[arg-type]
    assert proc.force_flush(10_000)
    reg = proc.registry
    assert value(reg, "tracescore_logs_received_total") == 2
    assert value(reg, "tracescore_spans_received_total") == 0
    assert value(reg, "tracescore_spans_dropped_total", reason="queue_full") == 2
    assert value(reg, "tracescore_spans_dropped_total", reason="unreadable") == 3


class _FakeClockRig:
    """A processor on a fake clock whose worker looks at the queue only when told.

    ``hold(n)`` ends ``n`` agent runs and waits until the worker holds them (not due yet);
    ``make_due()`` moves the clock past their idle window; ``spy(before)`` calls
    ``before(trace)`` on the worker before each trace is scored.
    """

    def __init__(self, **options: Any) -> None:
        from tracescore.criteria import informational_criteria

        self.now = 1000.0
        self.proc = ScoringSpanProcessor(
            list(informational_criteria()),
            registry=CollectorRegistry(),
            # No CPU cap: these tests follow the pump step by step, and a pause (when a
            # slow machine spends the worker's share) would move the steps.
            options=LiveOptions(
                idle_s=2.0, tick_s=3600.0, wake_at=100_000, max_cpu_share=1.0, **options
            ),
            clock=lambda: self.now,
        )
        self.provider = TracerProvider()
        self.provider.add_span_processor(self.proc)
        self.tracer = self.provider.get_tracer("t")

    def end_runs(self, count: int) -> None:
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}
        for _ in range(count):
            self.tracer.start_span("invoke_agent a", attributes=attrs).end()

    def hold(self, count: int) -> None:
        assembler = self.proc.engine._assembler
        reached = threading.Event()
        due = assembler.due

        def spy_due() -> Any:  # the worker looks for due traces after taking records in
            out = due()
            if assembler.in_flight >= count:
                reached.set()
            return out

        assembler.due = spy_due  # type: ignore[method-assign]
        self.end_runs(count)
        self.proc.engine._wake()
        assert reached.wait(10)
        assembler.due = due  # type: ignore[method-assign]

    def make_due(self) -> None:
        self.now += 10.0

    def spy(self, before: Callable[[Any], None]) -> None:
        submit = self.proc.scorer.submit

        def spy_submit(trace: Any) -> None:
            before(trace)
            submit(trace)

        self.proc.scorer.submit = spy_submit  # type: ignore[method-assign]

    def outcomes(self) -> dict[str, int]:
        assert self.proc.force_flush(10_000)
        return self.proc.scorer.trace_outcomes


@pytest.fixture
def rig() -> Iterator[Callable[..., _FakeClockRig]]:
    made: list[_FakeClockRig] = []

    def build(**options: Any) -> _FakeClockRig:
        made.append(_FakeClockRig(**options))
        return made[-1]

    yield build
    for r in made:
        r.provider.shutdown()


def test_a_backlog_releases_due_traces_instead_of_evicting_them(
    rig: Callable[..., _FakeClockRig],
) -> None:
    """Found by the soak: one pump adding more new traces than ``max_traces`` has room for
    used to evict the oldest held traces — complete ones, only waiting for the pump to end —
    as ``dropped``. Due traces are now released before every chunk."""
    r = rig(max_traces=100)
    r.hold(60)
    r.make_due()
    r.end_runs(60)  # 120 > max_traces, in one pump
    outcomes = r.outcomes()
    assert "dropped" not in outcomes
    assert sum(outcomes.values()) == 120


def test_spans_queued_during_a_scoring_burst_are_taken_in_between(
    rig: Callable[..., _FakeClockRig],
) -> None:
    """A queued ``ReadableSpan`` is a dozen objects every garbage collection scans, on the
    agent's thread too: while a burst of due traces is scored, the worker takes the queue
    in after a step of scoring instead of after the whole burst."""
    from tracescore.live import engine as engine_module

    step, burst = engine_module._SCORE_STEP, engine_module._MAX_RELEASED + 44
    r = rig()
    r.hold(burst)
    queued_at_submit: list[int] = []
    r.spy(lambda _: queued_at_submit.append(len(r.proc.engine._spans)))
    r.make_due()
    r.end_runs(10)  # queued while the burst waits
    outcomes = r.outcomes()
    assert queued_at_submit[0] == 10  # the burst started with the 10 spans queued
    assert queued_at_submit[step] == 0  # taken in after the first step
    assert sum(outcomes.values()) == burst + 10  # none lost or doubled


@pytest.mark.parametrize("pump_s", [None, 0.0])
def test_the_event_loop_runs_while_a_backlog_is_scored(
    rig: Callable[..., _FakeClockRig], monkeypatch: pytest.MonkeyPatch, pump_s: float | None
) -> None:
    """Found by the load test on a loaded CI machine: scoring a backlog (and the traces its
    interleaved intake released) ran without giving the event loop back for seconds, so
    every judge call timed out. The pump now yields between steps (here at every one).

    With ``pump_s`` 0, the pump returns at its deadline after its first step, as on a CI
    machine so loaded that a step took longer than ``_PUMP_S``: it yields before
    returning (else the flush that follows scored a second step first)."""
    import asyncio

    from tracescore.live import engine as engine_module

    monkeypatch.setattr(engine_module, "_YIELD_S", 0.0)
    backlog = 1000
    r = rig()
    r.hold(backlog)
    if pump_s is not None:  # once the backlog is held (it is taken in over many steps)
        monkeypatch.setattr(engine_module, "_PUMP_S", pump_s)
    scored_when_loop_ran: list[int] = []
    submitted = [0]

    def before(_: Any) -> None:
        if submitted[0] == 0:  # on the worker's loop: runs at its next turn
            asyncio.get_running_loop().call_soon(lambda: scored_when_loop_ran.append(submitted[0]))
        submitted[0] += 1

    r.spy(before)
    r.make_due()  # the whole backlog is due at once
    r.outcomes()
    assert scored_when_loop_ran == [engine_module._SCORE_STEP]  # after one step
    assert submitted[0] == backlog


def test_criteria_as_a_mapping_and_goldens_as_a_path(make: Make, tmp_path: Path) -> None:
    write_goldens(
        tmp_path, {"paris": (PARIS, [("get_weather", {"city": "Paris"})], "It is 21C in Paris.")}
    )
    tracer, proc = make(criteria={"tool_trajectory_avg_score": 1.0}, goldens=tmp_path)
    run_agent(tracer)
    assert proc.force_flush(10_000)
    ev = "tracescore_evaluations_total"
    labels = {"agent": "weather_agent", "criterion": "tool_trajectory_avg_score"}
    assert value(proc.registry, ev, **labels, status="passed") == 1
    # The informational criteria are added to those given, as on every replay.
    counted = {
        name: value(
            proc.registry, ev, agent="weather_agent", criterion=name, status="informational"
        )
        for name in ("tool_call_count_v1", "token_usage_v1")
    }
    assert counted == {"tool_call_count_v1": 1, "token_usage_v1": 1}


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"criteria": ["response_match_score"]}, TypeError, "criteria[0]: expected a Criterion"),
        ({"goldens": [{"eval_set_id": "x"}]}, TypeError, "goldens[0]: expected a GoldenSet"),
        ({"sampling": {"judged_rate": 0.5}}, TypeError, "sampling: expected SamplingPolicy"),
        ({"options": {"idle_s": 1}}, TypeError, "options: expected LiveOptions"),
        ({"registry": "default"}, TypeError, "registry: expected CollectorRegistry"),
        ({"judge": object()}, TypeError, "judge: expected JudgeClient"),
        ({"metrics_port": "9464"}, TypeError, "metrics_port: expected an int port, got str"),
        ({"metrics_port": 70000}, ValueError, "metrics_port: 70000 is not a port"),
    ],
)
def test_wrong_arguments_are_refused_by_name(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    threads = set(threading.enumerate())
    with pytest.raises(error) as err:
        ScoringSpanProcessor(**kwargs)
    assert str(err.value).startswith(message)
    assert set(threading.enumerate()) <= threads  # refused before any thread or server


@dataclass(frozen=True, kw_only=True)
class ReturnsAFloat(Criterion):
    """A user's criterion with a bug: ``score`` returns a bare float, not a Score."""

    name = "returns_a_float_for_test"
    needs_model_context = False

    def score(self, ctx: EvalContext) -> Score:
        return 0.9  # type: ignore[return-value]  # the bug


def test_a_criterion_returning_a_bare_number_costs_no_trace(make: Make) -> None:
    # Its traces were all counted as dropped (the error escaped the scorer).
    tracer, proc = make(criteria=[ReturnsAFloat(threshold=0.5), *criteria()])
    run_agent(tracer)
    assert proc.force_flush(10_000)
    reg = proc.registry
    assert total(reg, "tracescore_traces_total", "outcome") == {"no_golden": 1}
    ev = "tracescore_evaluations_total"
    broken = {"agent": "weather_agent", "criterion": "returns_a_float_for_test"}
    assert value(reg, ev, **broken, status="not_evaluated") == 1
    counts = {"agent": "weather_agent", "criterion": "tool_call_count_v1"}
    assert value(reg, ev, **counts, status="informational") == 1
