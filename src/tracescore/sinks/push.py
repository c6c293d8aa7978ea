"""Push a replay's scores to a Prometheus Pushgateway (``tracescore replay --pushgateway``).

A replay is a batch job: nothing stays up to be scraped, so its metrics go to a
Pushgateway, from which Prometheus scrapes them with the ``job`` label. One push
replaces everything previously pushed under the same job (HTTP PUT), so the gateway
always holds the latest replay of each job.

A replay that fails before it can score (unreadable input, a broken config, nothing to
score) pushes only the time it failed (:func:`push_failure`, HTTP POST): the last scores
stay, and the failure, present until a replay scores again, tells that they are no
longer current. Without it the gateway would go on showing the last good night as if it
were tonight's.
"""

from __future__ import annotations

import urllib.error
from collections.abc import Callable, Iterable, Sequence
from typing import Final
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry, Gauge, push_to_gateway, pushadd_to_gateway
from prometheus_client.metrics_core import Metric

from tracescore.criteria.base import Criterion
from tracescore.exceptions import ConfigError, InputError
from tracescore.scoring import InvocationResult
from tracescore.sinks.prometheus import ScoreMetrics

__all__ = ["LAST_FAILURE", "LAST_SUCCESS", "check_pushgateway", "push_failure", "push_results"]

#: When the job's latest replay that scored ended (Unix time), pushed with its scores.
LAST_SUCCESS: Final = "tracescore_replay_last_success_timestamp_seconds"
#: When a replay of the job last failed before it could score (Unix time), pushed alone.
LAST_FAILURE: Final = "tracescore_replay_last_failure_timestamp_seconds"

#: Families a replay knows about. The receiver's series (spans received, queue depth,
#: judge calls, ...) are left out: pushed as zeros they would claim a replay read nothing.
_PUSHED: Final = frozenset(
    {
        "tracescore_invocations",
        "tracescore_evaluations",
        "tracescore_not_evaluated",
        "tracescore_score",
        "tracescore_score_mean",
        "tracescore_threshold",
        LAST_SUCCESS,
    }
)


class _Only:
    """The families of ``registry`` named in ``names`` (a collector for the push)."""

    def __init__(self, registry: CollectorRegistry, names: frozenset[str]) -> None:
        self._registry = registry
        self._names = names

    def collect(self) -> Iterable[Metric]:
        return [m for m in self._registry.collect() if m.name in self._names]


def push_results(
    results: Sequence[InvocationResult],
    criteria: Sequence[Criterion],
    *,
    url: str,
    job: str = "tracescore",
    timeout_s: float = 10.0,
) -> None:
    """Push the invocation outcomes, evaluations, scores and thresholds of a replay.

    The metrics are those of :class:`~tracescore.sinks.prometheus.ScoreMetrics`, on a
    fresh registry: ``tracescore_invocations_total``, ``tracescore_evaluations_total``,
    ``tracescore_not_evaluated_total``, ``tracescore_score``, ``tracescore_score_mean``
    (the mean over this replay) and ``tracescore_threshold``, and :data:`LAST_SUCCESS`,
    all with the label ``job``. The push replaces whatever the gateway held for ``job``
    (a :data:`LAST_FAILURE` included). Exemplars are not pushed: the Pushgateway takes
    the text format, which has none.

    Args:
        results: The replay's per-invocation results.
        criteria: The configured criteria (their thresholds are pushed).
        url: The Pushgateway, e.g. ``http://pushgateway:9091`` (``http://`` is assumed
            when no scheme is given).
        job: The ``job`` label and grouping key.
        timeout_s: Bound on the HTTP request.

    Raises:
        ConfigError: ``url`` is not an http(s) URL with a host, or ``job`` is empty.
        InputError: The Pushgateway could not be reached or refused the push; the
            message names the URL.

    """
    target = check_pushgateway(url, job)
    registry = CollectorRegistry()
    metrics = ScoreMetrics(registry)
    metrics.set_thresholds(criteria)
    for result in results:
        metrics.record(result)
    _last(LAST_SUCCESS, "When this job's latest replay that scored ended.", registry)
    _push(push_to_gateway, target, job, _Only(registry, _PUSHED), url, timeout_s)


def push_failure(*, url: str, job: str = "tracescore", timeout_s: float = 10.0) -> None:
    """Record that a replay of ``job`` failed before it could score: :data:`LAST_FAILURE`.

    Pushed with HTTP POST, which replaces only that metric of the job's group: the last
    scores and their :data:`LAST_SUCCESS` stay. The next replay that scores removes it
    (its push is a PUT), so while it is there, the job's latest replay failed.

    Raises:
        ConfigError: as :func:`push_results`.
        InputError: as :func:`push_results`.

    """
    target = check_pushgateway(url, job)
    registry = CollectorRegistry()
    _last(LAST_FAILURE, "When a replay of this job last failed before it could score.", registry)
    _push(pushadd_to_gateway, target, job, registry, url, timeout_s)


def check_pushgateway(url: str, job: str) -> str:
    """The URL pushes go to (``http://`` added when there is no scheme).

    Raises:
        ConfigError: ``url`` is not an http(s) URL with a host, or ``job`` is empty.

    """
    target = _checked_url(url)
    if not job:
        raise ConfigError("the Pushgateway job name must not be empty")
    return target


def _last(name: str, documentation: str, registry: CollectorRegistry) -> None:
    Gauge(name, documentation, registry=registry).set_to_current_time()


def _push(
    send: Callable[..., None],
    target: str,
    job: str,
    registry: CollectorRegistry | _Only,
    url: str,
    timeout_s: float,
) -> None:
    try:
        send(target, job=job, registry=registry, timeout=timeout_s)
    except urllib.error.HTTPError as exc:
        # The gateway explains a refusal in the body (e.g. inconsistent metrics); one
        # line of it is enough for the error message.
        detail = " ".join(_body(exc).split())[:200] or str(exc.reason)
        raise InputError(
            f"cannot push metrics to the Pushgateway at {url}: HTTP {exc.code}: {detail}"
        ) from exc
    except urllib.error.URLError as exc:
        raise InputError(f"cannot push metrics to the Pushgateway at {url}: {exc.reason}") from exc
    except (OSError, ValueError) as exc:
        # Timeouts and resets are OSErrors; a malformed port or host a ValueError.
        raise InputError(f"cannot push metrics to the Pushgateway at {url}: {exc}") from exc


def _checked_url(url: str) -> str:
    """``url`` with ``http://`` added when it has no scheme; ConfigError when malformed."""
    target = url if "://" in url else f"http://{url}"
    parts = urlsplit(target)
    try:
        parts.port  # noqa: B018 - parsing the port is the check: it raises on garbage
    except ValueError:
        raise ConfigError(f"pushgateway URL {url!r}: the port is not a number") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"pushgateway URL {url!r}: expected http(s)://host[:port]")
    return target


def _body(exc: urllib.error.HTTPError) -> str:
    try:
        return exc.read().decode("utf-8", "replace")
    except OSError:
        return ""
