"""The live worker: one thread, one event loop, bounded queues in front of it.

Two intakes feed it. The span processor's hot path (:meth:`LiveEngine.push_span`) appends
an SDK span to a deque and, every ``wake_at`` spans, wakes the worker; a span that finds
the deque full is dropped and its trace remembered (:mod:`tracescore.live.drops`), to be
released as dropped (never scored on partial data) and counted. The receiver's intake
(:meth:`LiveEngine.offer`) takes whole decoded batches or refuses them when full, so the
sender retries (HTTP 429 / gRPC ``RESOURCE_EXHAUSTED``) and nothing is lost silently.

The worker wakes every ``tick_s`` (or when woken), moves queued records into the
:class:`~tracescore.live.assembly.LiveAssembler`, and hands released traces to the
:class:`~tracescore.live.scorer.LiveScorer`. Judge calls run as tasks on the same loop.
With ``max_cpu_share`` below 1 (the span processor's default), the worker pauses between
steps to keep within that share of a CPU (:mod:`tracescore.live.cpu_share`).
Everything the worker does runs with OTel instrumentation suppressed, and spans ended on
the worker thread are ignored, so tracescore never scores its own work.

Threading contract: ``push_span``/``push_log`` may be called from any thread, never block
and never raise; ``offer`` never blocks; ``force_flush`` and ``shutdown`` block at most
their timeout. After ``fork`` the child starts a fresh worker with empty queues (the
parent scores what it had).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from opentelemetry import context as otel_context

from tracescore.live.assembly import LiveAssembler, LiveTrace
from tracescore.live.cpu_share import CpuShare
from tracescore.live.drops import QueueDrops
from tracescore.live.options import LiveOptions
from tracescore.live.sdk_records import Taken, take_logs, take_spans
from tracescore.spans import LogRecord, SpanRecord

if TYPE_CHECKING:
    from opentelemetry.sdk._logs import ReadableLogRecord, ReadWriteLogRecord
    from opentelemetry.sdk.trace import ReadableSpan

    from tracescore.live.scorer import LiveScorer

__all__ = ["LiveEngine"]

logger = logging.getLogger(__name__)

# The key OTel instrumentations check (opentelemetry-instrumentation's
# ``suppress_instrumentation`` sets the same one); the SDK's exporters set it too.
_SUPPRESS_KEY = otel_context._SUPPRESS_INSTRUMENTATION_KEY
_CHUNK = 1024  # queued records converted per step
_SCORE_STEP = 64  # released traces scored per step (~0.1 ms each)
_YIELD_S = 0.05  # longest stretch of work before the event loop runs again
_PUMP_S = 0.25  # a pump under sustained load returns to the main loop after this
_MAX_RELEASED = 256  # released traces waiting, beyond which the queue is left to wait


class LiveEngine:
    """Bounded intake, trace assembly and scoring on one worker thread.

    Args:
        scorer: Scores released traces (and owns the sinks).
        options: Bounds and windows.
        clock: Monotonic seconds (tests pass a fake one to drive the windows).

    """

    def __init__(
        self,
        scorer: LiveScorer,
        *,
        options: LiveOptions | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.scorer = scorer
        self.options = options or LiveOptions()
        self._clock = clock
        self._init_state()
        metrics = scorer.metrics
        if metrics is not None:
            metrics.track(queue_depth=self.queue_depth, traces_in_flight=self.traces_in_flight)
        ref = weakref.WeakMethod(self._after_fork)
        os.register_at_fork(after_in_child=lambda: (m := ref()) is not None and m())
        self._start()

    # ---- state -------------------------------------------------------------------------

    def _init_state(self) -> None:
        opts = self.options
        self._spans: deque[ReadableSpan] = deque()
        self._logs: deque[ReadableLogRecord | ReadWriteLogRecord] = deque()
        self._batches: deque[tuple[Sequence[SpanRecord], Sequence[LogRecord]]] = deque()
        self._batched = 0  # records in _batches
        self._batch_lock = threading.Lock()
        self._drops = QueueDrops(opts.max_queue)
        self._flush_waiters: deque[threading.Event] = deque()
        self._wake_requested = False
        self._shutdown = False
        self._stopping = False
        self._lifecycle = threading.Lock()
        self._releasing: deque[LiveTrace] = deque()  # released, not scored yet
        self._assembler = LiveAssembler(
            idle_s=opts.idle_s,
            orphan_ttl_s=opts.orphan_ttl_s,
            max_traces=opts.max_traces,
            max_spans_per_trace=opts.max_spans_per_trace,
            clock=self._clock,
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake_event: asyncio.Event | None = None
        self._started = threading.Event()
        self._worker_ident: int | None = None
        self._thread: threading.Thread | None = None
        self._flushes: set[asyncio.Task[None]] = set()
        self._stop_deadline = 0.0
        self._drained = False
        share = opts.max_cpu_share
        self._cpu = CpuShare(1.0 if share is None else share)

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="tracescore-worker", daemon=True)
        self._thread.start()
        self._started.wait(5.0)

    def _after_fork(self) -> None:
        # The child has no worker thread and possibly locks held by threads that do not
        # exist there: start over with empty queues (the parent scores what it had).
        self._init_state()
        self._start()

    # ---- intake ------------------------------------------------------------------------

    def push_span(self, span: ReadableSpan) -> None:
        """The processor's hot path: queue an SDK span. O(1); never blocks or raises."""
        if self._shutdown or threading.get_ident() == self._worker_ident:
            return
        queue = self._spans
        if len(queue) < self.options.max_queue:
            queue.append(span)
        else:
            self._drops.drop(span)
        if len(queue) >= self.options.wake_at and not self._wake_requested:
            self._wake()

    def push_log(self, record: ReadableLogRecord | ReadWriteLogRecord) -> None:
        """The log processor's hot path: queue an SDK log record (same contract)."""
        if self._shutdown or threading.get_ident() == self._worker_ident:
            return
        queue = self._logs
        if len(queue) < self.options.max_queue:
            queue.append(record)
        else:
            self._drops.drop_log()

    def offer(self, spans: Sequence[SpanRecord], logs: Sequence[LogRecord]) -> bool:
        """Queue a decoded batch from a receiver; False (nothing taken) when full.

        A batch larger than the whole queue is taken when the queue is empty, so no
        batch is refused forever.
        """
        count = len(spans) + len(logs)
        if self._shutdown:
            return False
        with self._batch_lock:
            if self._batched and self._batched + count > self.options.max_queue:
                return False
            self._batched += count
            self._batches.append((spans, logs))
        if self._batched >= self.options.wake_at and not self._wake_requested:
            self._wake()
        return True

    def ready(self) -> bool:
        """Running, not shutting down, and with room in the queue."""
        thread = self._thread
        return (
            not self._shutdown
            and thread is not None
            and thread.is_alive()
            and self._batched < self.options.max_queue
        )

    def drain(self, timeout_s: float) -> bool:
        """Stop taking records and score what is queued and in flight (SIGTERM)."""
        return self.shutdown(timeout_s)

    def queue_depth(self) -> float:
        """Records waiting for the worker."""
        return float(len(self._spans) + len(self._logs) + self._batched)

    def traces_in_flight(self) -> float:
        """Traces held by the assembler."""
        return float(self._assembler.in_flight)

    def _wake(self) -> None:
        loop, event = self._loop, self._wake_event
        if loop is None or event is None:
            return
        self._wake_requested = True
        with contextlib.suppress(RuntimeError):  # loop closed: shutting down
            loop.call_soon_threadsafe(event.set)

    # ---- flush and shutdown ------------------------------------------------------------

    def force_flush(self, timeout_s: float = 30.0) -> bool:
        """Score everything received so far; True when done within ``timeout_s``.

        Traces whose root has not ended are released as incomplete. Judge calls in
        flight are awaited (within the timeout, after which they go on in the
        background).
        """
        thread = self._thread
        if thread is None or not thread.is_alive():
            return self.queue_depth() == 0 and self._assembler.in_flight == 0
        done = threading.Event()
        self._flush_waiters.append(done)
        self._wake()
        return done.wait(max(0.0, timeout_s))

    def shutdown(self, timeout_s: float | None = None) -> bool:
        """Stop taking records, score what is pending, stop the worker. Idempotent.

        Returns True when everything was scored within ``timeout_s`` (default
        ``options.shutdown_timeout_s``); judge calls still running at the deadline are
        cancelled and their invocations counted as dropped.
        """
        with self._lifecycle:
            if self._stopping:
                return True
            self._shutdown = True
            self._stopping = True
        deadline = self.options.shutdown_timeout_s if timeout_s is None else timeout_s
        self._stop_deadline = time.monotonic() + max(0.0, deadline)
        self._wake()
        thread = self._thread
        if thread is None:
            return True
        thread.join(max(0.0, deadline) + 1.0)
        return not thread.is_alive() and self._drained

    # ---- the worker --------------------------------------------------------------------

    def _run(self) -> None:
        self._worker_ident = threading.get_ident()
        otel_context.attach(otel_context.set_value(_SUPPRESS_KEY, True))
        loop = asyncio.new_event_loop()
        self._drained = False
        try:
            loop.run_until_complete(self._main(loop))
        except Exception:  # the worker must not die silently; the host app goes on
            logger.exception("tracescore worker stopped")
        finally:
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _main(self, loop: asyncio.AbstractEventLoop) -> None:
        self._wake_event = asyncio.Event()
        self._loop = loop
        self._started.set()
        while True:
            if self._releasing:  # a pump cut short by its deadline: go on at once
                await asyncio.sleep(0)
            else:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake_event.wait(), self.options.tick_s)
            self._wake_event.clear()
            self._wake_requested = False
            await self._pump(paced=True)
            if self._stopping:
                await self._finish()
                return
            if self._flush_waiters:
                await self._flush()

    async def _pump(self, *, paced: bool = False) -> None:
        """Move queued records into the assembler and score what it releases.

        In steps, each one: release the due traces, convert up to ``_CHUNK`` queued
        records, score up to ``_SCORE_STEP`` released traces; every ``_YIELD_S`` the event
        loop serves judge I/O (a long stretch without it made judge calls time out; a
        yield per step costs throughput, as every poll hands the GIL to the agent's
        threads). Records are converted while scoring keeps up (fewer than
        ``_MAX_RELEASED`` traces waiting), so a burst of due traces does not hold the
        queue back; beyond that, under overload, the queue fills and sheds the spans
        that arrive, the cheapest place to shed (a trace dropped after its conversion
        wastes the work). Returns when there is nothing left to do, or, under a sustained load,
        once the records queued at the start were taken and ``_PUMP_S`` passed (flush and
        shutdown requests are looked at between pumps).

        When ``paced``, the worker keeps within ``max_cpu_share`` (see
        :mod:`tracescore.live.cpu_share`), pausing between steps; a flush or a shutdown
        waiting makes it go on without pauses (the pumps they run are not paced).
        """
        budget = len(self._spans) + len(self._logs) + len(self._batches)
        now = time.perf_counter()
        next_yield, deadline = now + _YIELD_S, now + _PUMP_S
        while True:
            self._release(self._assembler.due())
            taken = 0
            if len(self._releasing) < _MAX_RELEASED:
                taken = self._intake(_CHUNK)
                if self._batches:
                    batch_spans, batch_logs = self._batches.popleft()
                    with self._batch_lock:
                        self._batched -= len(batch_spans) + len(batch_logs)
                    taken += 1
                    self._release(self._assembler.add(batch_spans, batch_logs))
                    self._take("spans", len(batch_spans))
                    self._take("logs", len(batch_logs))
                budget -= taken
            self._report_drops()
            scored = self._score(_SCORE_STEP)
            if not taken and not scored:
                return
            now = time.perf_counter()
            if paced and await self._pause():
                next_yield = time.perf_counter() + _YIELD_S  # the loop ran meanwhile
            elif now >= next_yield:
                # Before the deadline's return too: a flush right after the pump scores a
                # step before it yields, and the loop would wait two steps.
                await asyncio.sleep(0)  # let judge replies in
                next_yield = time.perf_counter() + _YIELD_S
            if budget <= 0 and now >= deadline:
                return

    async def _pause(self) -> bool:
        """Pause (the event loop runs) while the worker is over its CPU share.

        Returns whether it paused. A pause ends early when a flush or shutdown is asked
        for (both wake the worker); each wait lasts at most ``tick_s`` before the share
        is looked at again. Between waits the traces the hot path dropped spans of are
        marked: the queue sheds fastest while the worker pauses, and the ids it
        remembers are bounded.
        """
        pause = self._cpu.pause_s()
        if not pause:
            return False
        paused = 0.0
        wake = self._wake_event
        assert wake is not None  # set before the first pump
        while pause > 0 and not (self._stopping or self._flush_waiters):
            start = time.perf_counter()
            wake.clear()  # inside a pump already: only a flush or a shutdown matters
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(wake.wait(), min(pause, self.options.tick_s))
            paused += time.perf_counter() - start
            self._mark_damaged()
            pause = self._cpu.pause_s()
        metrics = self.scorer.metrics
        if metrics is not None and paused:
            metrics.worker_paused(paused)
        return bool(paused)

    def _intake(self, limit: int) -> int:
        """Convert up to ``limit`` queued SDK spans and log records and assemble them.

        Returns how many records were taken. Called at every step of the pump, so that
        queued SDK objects do not pile up (see :mod:`tracescore.live.sdk_records`).
        """
        self._mark_damaged()
        taken = Taken()
        n_spans, n_logs = min(len(self._spans), limit), min(len(self._logs), limit)
        if n_spans or n_logs:
            self._release(
                self._assembler.add(
                    take_spans(self._spans, n_spans, taken, self._unreadable),
                    take_logs(self._logs, n_logs, taken, self._unreadable),
                    local_roots=taken.local_roots,
                )
            )
            self._take("spans", taken.spans)
            self._take("logs", taken.logs)
        return taken.spans + taken.logs

    def _unreadable(self) -> None:
        self._count_drop("unreadable", 1)

    def _mark_damaged(self) -> None:
        for trace_id in self._drops.take_traces():
            self._release(self._assembler.damage(trace_id))

    def _take(self, kind: str, count: int) -> None:
        if not count:
            return
        metrics = self.scorer.metrics
        if metrics is not None:
            if kind == "spans":
                metrics.spans_received(count)
            else:
                metrics.logs_received(count)

    def _count_drop(self, reason: str, count: int) -> None:
        metrics = self.scorer.metrics
        if metrics is not None and count:
            metrics.spans_dropped(reason, count)

    def _report_drops(self) -> None:
        """Report the hot path's and the assembler's drops (spans received, not scored)."""
        spans, logs, untracked = self._drops.new_counts()
        if untracked:
            logger.warning(
                "%d traces lost spans to the full queue and could not be remembered (more "
                "than max_queue of them between two looks of the worker): each may end "
                "without an outcome, or be scored on partial data",
                untracked,
            )
        # Dropped records were received too; the drop counter, like the assembler's
        # no_trace_id and late_record, counts log records beside spans.
        self._take("spans", spans)
        self._take("logs", logs)
        self._count_drop("queue_full", spans + logs)
        for reason, count in self._assembler.dropped.items():
            self._count_drop(reason, count)
        self._assembler.dropped.clear()

    def _release(self, traces: list[LiveTrace]) -> None:
        """Queue released traces for scoring (by :meth:`_score`, a step at a time)."""
        self._releasing.extend(traces)

    def _score(self, limit: int) -> int:
        """Score up to ``limit`` released traces; returns how many."""
        pending = self._releasing
        count = min(limit, len(pending))
        for _ in range(count):
            trace = pending.popleft()
            try:
                self.scorer.submit(trace)
            except Exception:  # a bug in scoring must not stop the worker
                logger.exception("scoring trace %s failed", trace.trace_id)
                self.scorer.count_failed(trace)
        return count

    async def _score_all(self) -> None:
        """Score every released trace, letting the event loop run between steps."""
        while self._score(_SCORE_STEP):
            await asyncio.sleep(0)

    async def _flush(self) -> None:
        """Release everything received so far; a task signals the waiters when scored.

        The waiting runs beside the main loop, which keeps pumping: a slow judge delays
        the flush, not the intake.
        """
        waiters = []
        while self._flush_waiters:
            waiters.append(self._flush_waiters.popleft())
        await self._pump()
        self._release(self._assembler.flush())
        self._report_drops()
        await self._score_all()
        pending = self.scorer.snapshot()

        async def finish() -> None:
            if pending:
                await asyncio.wait(pending)
            await self._flush_sinks(30.0)
            for done in waiters:
                done.set()

        task = asyncio.ensure_future(finish())
        self._flushes.add(task)
        task.add_done_callback(self._flushes.discard)

    async def _finish(self) -> None:
        await self._pump()
        self._mark_damaged()
        self._release(self._assembler.flush())
        self._report_drops()
        await self._score_all()
        remaining = self._stop_deadline - time.monotonic()
        drained = await self.scorer.wait(max(0.0, remaining))
        if self._flushes:
            await asyncio.wait(set(self._flushes), timeout=max(0.0, remaining))
        judge = self.scorer.judge
        if judge is not None:
            with contextlib.suppress(Exception):
                await judge.backend.aclose()
        await self._flush_sinks(max(0.1, self._stop_deadline - time.monotonic()))
        events = self.scorer.events
        if events is not None:
            await asyncio.to_thread(events.shutdown)
        self._drained = drained
        while self._flush_waiters:
            self._flush_waiters.popleft().set()

    async def _flush_sinks(self, timeout_s: float) -> None:
        events = self.scorer.events
        if events is not None:
            ok = await asyncio.to_thread(events.force_flush, int(timeout_s * 1000))
            if not ok:
                logger.warning("evaluation events not flushed within %.1fs", timeout_s)
