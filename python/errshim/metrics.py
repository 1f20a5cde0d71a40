"""Counters of what errshim decided, per catalog entry and outcome: the C++
errshim::Metrics for Python servers.

    from errshim.metrics import PrometheusMetrics
    metrics = PrometheusMetrics(registry)          # prometheus_client's registry (default: REGISTRY)
    errshim.remediate(build, config, metrics=metrics)

exposes errshim_decisions_total{entry="...",outcome="applied"} on the
server's own /metrics. Metrics (no dependency) keeps the same counters and
writes the same text as the C++ Metrics::prometheus().
"""

import threading

NAME = "errshim_decisions"
HELP = "Decisions errshim made about inference errors, by catalog entry and outcome."


def _key(decision):
    return str(decision.get("entry") or ""), str(decision.get("outcome") or "")


def _label(value):
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    """Thread-safe counters; count() takes an audit record of remediate()."""

    def __init__(self):
        self._lock = threading.Lock()
        self._counts = {}

    def count(self, decision):
        key = _key(decision)
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + 1

    def value(self, entry, outcome):
        with self._lock:
            return self._counts.get((entry, outcome), 0)

    def total(self):
        with self._lock:
            return sum(self._counts.values())

    def prometheus(self):
        """The Prometheus text format, as the C++ Metrics::prometheus()."""
        with self._lock:
            items = sorted(self._counts.items())
        out = "# HELP %s_total %s\n# TYPE %s_total counter\n" % (NAME, HELP, NAME)
        for (entry, outcome), n in items:
            out += '%s_total{entry="%s",outcome="%s"} %d\n' % (NAME, _label(entry), _label(outcome), n)
        return out


class PrometheusMetrics:
    """The same counters as a prometheus_client Counter registered in
    `registry` (prometheus_client.REGISTRY by default), so the server's own
    exposition shows them. Needs prometheus_client (Debian:
    python3-prometheus-client); one instance per registry (a second raises
    prometheus_client's duplicate-name ValueError)."""

    def __init__(self, registry=None):
        try:
            import prometheus_client
        except ImportError as e:
            raise ImportError("errshim.metrics.PrometheusMetrics needs prometheus_client "
                              "(apt-get install python3-prometheus-client, or pip install prometheus-client)") from e
        if registry is None:
            registry = prometheus_client.REGISTRY
        self.registry = registry
        self.counter = prometheus_client.Counter(NAME, HELP, ["entry", "outcome"], registry=registry)

    def count(self, decision):
        entry, outcome = _key(decision)
        self.counter.labels(entry=entry, outcome=outcome).inc()

    def value(self, entry, outcome):
        v = self.registry.get_sample_value(NAME + "_total", {"entry": entry, "outcome": outcome})
        return int(v) if v is not None else 0
