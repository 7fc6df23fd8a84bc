"""What every service and long-running command needs to be operated: health, metrics, logs.

=================  ========================================================================
module             what it holds
=================  ========================================================================
``metrics``        a Prometheus registry per service (``new_registry``), request and
                   JSON-RPC call metrics, scrape-time collectors, the text exposition
``health``         readiness checks (``Readiness``, ``Check``, ``CheckResult``) and the
                   probes several services share (an SQLite file, a JSON-RPC service)
``asgi``           ``ObservabilityMiddleware``: ``/health``, ``/health/live``,
                   ``/health/ready``, ``/metrics``, and request counts and latencies
``logs``           ``configure_logging``: one line per event, text or JSON, secrets hidden
=================  ========================================================================

Shared by the services and the pipeline (``notary watch``, ``notary collect --listen``):
it imports no service and no pipeline package (an import contract in ``pyproject.toml``).
"""

from ledger.observability.asgi import (
    HEALTH_PATH,
    LIVE_PATH,
    METRICS_PATH,
    READY_PATH,
    ROUTE_KEY,
    Observability,
    ObservabilityMiddleware,
    fixed_routes,
    not_found_app,
)
from ledger.observability.health import (
    Check,
    CheckResult,
    Probe,
    Readiness,
    ReadinessReport,
    jsonrpc_check,
    sqlite_file_check,
)
from ledger.observability.logs import (
    LOG_FORMATS,
    JsonFormatter,
    LogFormat,
    TextFormatter,
    configure_logging,
)
from ledger.observability.metrics import (
    CONTENT_TYPE,
    RequestMetrics,
    RpcCallMetrics,
    ScrapeCollector,
    gauge_families,
    new_registry,
    render,
)

__all__ = [
    "CONTENT_TYPE",
    "HEALTH_PATH",
    "LIVE_PATH",
    "LOG_FORMATS",
    "METRICS_PATH",
    "READY_PATH",
    "ROUTE_KEY",
    "Check",
    "CheckResult",
    "JsonFormatter",
    "LogFormat",
    "Observability",
    "ObservabilityMiddleware",
    "Probe",
    "Readiness",
    "ReadinessReport",
    "RequestMetrics",
    "RpcCallMetrics",
    "ScrapeCollector",
    "TextFormatter",
    "configure_logging",
    "fixed_routes",
    "gauge_families",
    "jsonrpc_check",
    "new_registry",
    "not_found_app",
    "render",
    "sqlite_file_check",
]
