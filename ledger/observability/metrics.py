"""Prometheus metrics of one service or process: its own registry, request metrics, scrape-time
gauges and the text exposition.

Every service builds its own ``CollectorRegistry`` (``new_registry``), never the library's
global default one: ``notary up`` runs the four services in one process, and each must
expose only its own figures on its own port. Names follow the Prometheus conventions
(https://prometheus.io/docs/practices/naming/): a ``notary_<service>_`` prefix, the unit as
suffix (``_seconds``, ``_blocks``), ``_total`` on counters.

Figures that need a database query or a call to another service are not kept up to date
on every request: a ``ScrapeCollector`` computes them when ``/metrics`` is read, so the
hot paths pay nothing for them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

__all__ = [
    "CONTENT_TYPE",
    "LATENCY_BUCKETS_S",
    "RequestMetrics",
    "ScrapeCollector",
    "gauge_families",
    "new_registry",
    "render",
]

#: ``Content-Type`` of the text exposition format 0.0.4.
CONTENT_TYPE = CONTENT_TYPE_LATEST

#: Histogram buckets of request latencies, seconds: 0.5 ms (a node read) to 10 s.
LATENCY_BUCKETS_S: tuple[float, ...] = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)

#: HTTP methods kept as label values; any other verb is counted as ``OTHER`` so that a
#: client cannot grow the label set.
_KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def new_registry(*, process: bool = True) -> CollectorRegistry:
    """A registry of its own, with the process, platform and GC collectors when ``process``.

    ``process_*`` figures (resident memory in bytes, CPU seconds, open file descriptors)
    are those of the whole process: in ``notary up`` every service reports the same ones.
    """
    registry = CollectorRegistry(auto_describe=True)
    if process:
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        GCCollector(registry=registry)
    return registry


def render(registry: CollectorRegistry) -> bytes:
    """The registry in the text exposition format (``CONTENT_TYPE``), collected now."""
    return generate_latest(registry)


class ScrapeCollector(Collector):
    """A collector whose figures are computed at scrape time by ``collect_fn``.

    Args:
        collect_fn: returns the metric families (``GaugeMetricFamily``, ...) as of now; it
            runs in the thread that renders ``/metrics`` (never on an event loop), so it may
            query a database. Keep it cheap: it runs on every scrape.
        registry: registered there at once.

    ``describe`` returns nothing, so registering never runs ``collect_fn``.
    """

    def __init__(
        self, collect_fn: Callable[[], Iterable[Metric]], *, registry: CollectorRegistry
    ) -> None:
        self._collect_fn = collect_fn
        registry.register(self)

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterable[Metric]:
        return list(self._collect_fn())


class RequestMetrics:
    """HTTP request counts and latencies by method, route template and status.

    Args:
        registry: where the two metrics are registered.
        prefix: metric name prefix: ``notary_api`` gives ``notary_api_requests_total``
            ``{method,route,status}`` and ``notary_api_request_seconds{method,route}``.
        buckets: latency histogram buckets, seconds.

    ``route`` is the template (``/v1/chains/{chain_id}``), never the literal path, so the
    label set stays bounded; paths no route matches share ``route="other"``.
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        prefix: str,
        *,
        buckets: Sequence[float] = LATENCY_BUCKETS_S,
    ) -> None:
        self.requests = Counter(
            f"{prefix}_requests",
            "HTTP requests answered, by method, route template and status.",
            ("method", "route", "status"),
            registry=registry,
        )
        self.seconds = Histogram(
            f"{prefix}_request_seconds",
            "Time from receiving an HTTP request to the end of its answer, seconds.",
            ("method", "route"),
            buckets=tuple(buckets),
            registry=registry,
        )
        # Resolved children by label values: ``labels()`` costs a lock and a tuple build
        # per call, a dict look-up does not (the label sets are small and bounded).
        self._counts: dict[tuple[str, str, int], Counter] = {}
        self._timings: dict[tuple[str, str], Histogram] = {}
        self._lock = threading.Lock()

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one answered request and record its latency (``seconds``)."""
        method = method if method in _KNOWN_METHODS else "OTHER"
        count = self._counts.get((method, route, status))
        if count is None:
            count = self._child_count(method, route, status)
        count.inc()
        timing = self._timings.get((method, route))
        if timing is None:
            timing = self._child_timing(method, route)
        timing.observe(seconds)

    def _child_count(self, method: str, route: str, status: int) -> Counter:
        with self._lock:
            child = self.requests.labels(method, route, str(status))
            self._counts[(method, route, status)] = child
            return child

    def _child_timing(self, method: str, route: str) -> Histogram:
        with self._lock:
            child = self.seconds.labels(method, route)
            self._timings[(method, route)] = child
            return child


class RpcCallMetrics:
    """JSON-RPC calls by method and outcome: ``<prefix>_requests_total{method,outcome}``.

    Args:
        registry: where the counter family is registered.
        prefix: metric name prefix (``notary_node``).

    ``method`` is the method's primary name (an alias counts under it) or ``unknown``;
    ``outcome`` is ``ok`` or ``error`` (an error object answered). ``observe`` matches
    ``ledger.jsonrpc.observed.CallObserver``. The node's ingest calls it twice per entry,
    so it is a plain dictionary increment (no lock: the servers dispatch on their event
    loop's one thread), turned into a counter family when scraped.
    """

    def __init__(self, registry: CollectorRegistry, prefix: str) -> None:
        self.name = f"{prefix}_requests"
        self._counts: dict[tuple[str, bool], int] = {}
        ScrapeCollector(self._families, registry=registry)

    def observe(self, method: str, ok: bool) -> None:
        """Count one call of ``method`` (``ok``: answered with a result)."""
        key = (method, ok)
        self._counts[key] = self._counts.get(key, 0) + 1

    def _families(self) -> Iterable[Metric]:
        family = CounterMetricFamily(
            self.name,
            "JSON-RPC calls answered (each item of a batch counts), by method and outcome.",
            labels=("method", "outcome"),
        )
        for (method, ok), count in self._counts.copy().items():  # copy: one atomic step
            family.add_metric((method, "ok" if ok else "error"), count)
        return [family]


def gauge_families(prefix: str, rows: Iterable[tuple[str, str, float]]) -> list[Metric]:
    """One gauge family per ``(name, documentation, value)`` row, named ``<prefix>_<name>``
    (a scrape-time collector's figures)."""
    return [GaugeMetricFamily(f"{prefix}_{name}", doc, value=value) for name, doc, value in rows]
