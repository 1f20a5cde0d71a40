"""Counters of what errshim decided, per catalog entry and outcome: the C++
errshim::Metrics for Python servers.

    from errshim.metrics import PrometheusMetrics
    metrics = PrometheusMetrics(registry)          # prometheus_client's registry (default: REGISTRY)
    errshim.remediate(build, config, metrics=metrics)

exposes errshim_decisions_total{entry="...",outcome="applied"} on the
server's own /metrics. Metrics (no dependency) keeps the same counters and
writes the same text as the C++ Metrics::prometheus().

    lookups = metrics.attach()                     # every lookup in the process: diagnose, explain, translate, ...

adds errshim_unrecognised_errors_total{fingerprint} (errors the catalog does
not know, one series per fingerprint for the first `fingerprint_buckets`
seen, the rest under "other") and errshim_match_duration_seconds{result},
as the C++ errshim::PrometheusMetrics does.
"""

import threading

NAME = "errshim_decisions"
HELP = "Decisions errshim made about inference errors, by catalog entry and outcome."
UNRECOGNISED = "errshim_unrecognised_errors"
UNRECOGNISED_HELP = ("Errors the catalog does not recognise, by fingerprint (a bounded set; the rest under "
                     "\"other\").")
DURATION = "errshim_match_duration_seconds"
DURATION_HELP = "Time of a catalog lookup, by result."
# The C++ PrometheusOptions defaults.
LATENCY_BUCKETS = (1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 1e-2, 1e-1)


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
    prometheus_client's duplicate-name ValueError). `fingerprint_buckets`:
    the distinct unrecognised fingerprints that get series of their own."""

    def __init__(self, registry=None, fingerprint_buckets=16):
        try:
            import prometheus_client
        except ImportError as e:
            raise ImportError("errshim.metrics.PrometheusMetrics needs prometheus_client "
                              "(apt-get install python3-prometheus-client, or pip install prometheus-client)") from e
        if registry is None:
            registry = prometheus_client.REGISTRY
        self.registry = registry
        self.counter = prometheus_client.Counter(NAME, HELP, ["entry", "outcome"], registry=registry)
        self.unrecognised = prometheus_client.Counter(UNRECOGNISED, UNRECOGNISED_HELP, ["fingerprint"],
                                                      registry=registry)
        self.duration = prometheus_client.Histogram(DURATION, DURATION_HELP, ["result"], registry=registry,
                                                    buckets=LATENCY_BUCKETS)
        self.fingerprint_buckets = fingerprint_buckets
        self._lock = threading.Lock()
        self._fingerprints = set()  # those with a series of their own; a counter never moves to "other"

    def count(self, decision):
        entry, outcome = _key(decision)
        self.counter.labels(entry=entry, outcome=outcome).inc()

    def value(self, entry, outcome):
        v = self.registry.get_sample_value(NAME + "_total", {"entry": entry, "outcome": outcome})
        return int(v) if v is not None else 0

    def attach(self):
        """Counts every lookup errshim makes in this process until the
        returned errshim.Observer is closed (keep it while you serve)."""
        import errshim

        return errshim.observe(self.observe)

    def observe(self, lookup):
        """Counts one errshim.Lookup."""
        self.duration.labels(result="recognised" if lookup.recognised else "unrecognised").observe(lookup.elapsed)
        if lookup.recognised:
            return
        label = lookup.fingerprint or "other"
        with self._lock:
            if label not in self._fingerprints:
                if len(self._fingerprints) >= self.fingerprint_buckets:
                    label = "other"
                else:
                    self._fingerprints.add(label)
        self.unrecognised.labels(fingerprint=label).inc()

    def unrecognised_value(self, fingerprint):
        """The count of errshim_unrecognised_errors_total{fingerprint=...}."""
        v = self.registry.get_sample_value(UNRECOGNISED + "_total", {"fingerprint": fingerprint})
        return int(v) if v is not None else 0
