"""Push a replay's scores to a Prometheus Pushgateway (``tracescore replay --pushgateway``).

A replay is a batch job: nothing stays up to be scraped, so its metrics go to a
Pushgateway, from which Prometheus scrapes them with the ``job`` label. One push
replaces everything previously pushed under the same job (HTTP PUT), so the gateway
always holds the latest replay of each job.
"""

from __future__ import annotations

import urllib.error
from collections.abc import Iterable, Sequence
from typing import Final
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry, push_to_gateway
from prometheus_client.metrics_core import Metric

from tracescore.criteria.base import Criterion
from tracescore.exceptions import ConfigError, InputError
from tracescore.scoring import InvocationResult
from tracescore.sinks.prometheus import ScoreMetrics

__all__ = ["push_results"]

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
    (the mean over this replay) and ``tracescore_threshold``, all with the label
    ``job``. The push replaces whatever the gateway held for ``job``. Exemplars are
    not pushed: the Pushgateway takes the text format, which has none.

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
    target = _checked_url(url)
    if not job:
        raise ConfigError("the Pushgateway job name must not be empty")
    registry = CollectorRegistry()
    metrics = ScoreMetrics(registry)
    metrics.set_thresholds(criteria)
    for result in results:
        metrics.record(result)
    try:
        push_to_gateway(target, job=job, registry=_Only(registry, _PUSHED), timeout=timeout_s)
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
