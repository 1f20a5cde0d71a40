#!/usr/bin/env python3
"""samples/server run like production, scraped by a real Prometheus.

Starts sample_server on a free loopback port and Debian's prometheus (own data
folder, 1 s scrape interval) with a scrape config for it; sends requests that
hit known errors (remediated: 200), known errors without an allowed fix (422)
and errors the catalog does not know (500, counted); while a background
client keeps sending requests, replaces the catalog with a good one (new
entry: the next such request is remediated), a broken one (refused on the
file change and on SIGHUP, the good one kept), the good one again and a
SIGHUP of it. Then asks Prometheus's HTTP API for the counters it scraped and
compares them with what the client saw, checks the audit log, and runs
`promtool check metrics` on the exposition. Everything it started is stopped
at the end, on failure too; it stops itself at --deadline seconds.

Standard library only. Loopback only: both servers listen on 127.0.0.1.
"""
import argparse
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

CHECKS = 0


class Failure(Exception):
    pass


def check(ok, what):
    global CHECKS
    CHECKS += 1
    if not ok:
        raise Failure(what)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent():
    # The child gets SIGTERM if this driver dies (even by SIGKILL from ctest),
    # so no server outlives the test.
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def http(method, url, body=None, timeout=10):
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def wait_for(what, predicate, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if predicate():
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    raise Failure(f"timed out waiting for {what}")


def write_atomically(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


# What each kind of request sends, and the status the server must answer.
REQUESTS = {
    "plain": ({"prompt_tokens": 5, "max_new_tokens": 2}, 200),
    # 30 + 8 positions overflow the static cache of 32: libtorch.index_copy.out_of_bounds, fixed by a dynamic cache.
    "long": ({"prompt_tokens": 30, "max_new_tokens": 8}, 200),
    # A float16 cache for the float32 model: libtorch.index_copy.dtype_mismatch, fixed by the model's dtype.
    "cache_dtype": ({"prompt_tokens": 5, "max_new_tokens": 2, "cache_dtype": "float16"}, 200),
    # Past the rotary table (64): the dynamic cache fix is applied, then libtorch.narrow.out_of_range has advice only.
    "too_long": ({"prompt_tokens": 60, "max_new_tokens": 8}, 422),
    # The server's own errors, not in the shipped catalog.
    "cuda": ({"prompt_tokens": 5, "cache_device": "cuda"}, 500),
    "int8": ({"prompt_tokens": 5, "dtype": "int8"}, 500),
}


class Client:
    def __init__(self, base):
        self.base = base
        self.lock = threading.Lock()
        self.sent = {}  # (kind, status) -> count

    def send(self, kind, expect=None):
        body, status = REQUESTS[kind]
        if expect is not None:
            status = expect
        got, text = http("POST", self.base + "/v1/generate", json.dumps(body))
        with self.lock:
            self.sent[(kind, got)] = self.sent.get((kind, got), 0) + 1
        check(got == status, f"{kind}: HTTP {got}, expected {status}: {text[:300]}")
        reply = json.loads(text)
        if got == 500:
            check(reply.get("error") == "unrecognised" and reply.get("message"), f"{kind}: 500 without the message")
        return reply

    def count(self, kind, status=None):
        with self.lock:
            return sum(n for (k, s), n in self.sent.items() if k == kind and (status is None or s == status))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--prometheus", required=True)
    ap.add_argument("--promtool", required=True)
    ap.add_argument("--policy", required=True)
    ap.add_argument("--catalogs", required=True, help="folder with catalog-good.yaml and catalog-broken.yaml")
    ap.add_argument("--deadline", type=float, default=80)
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()

    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="errshim-server-test-")
    procs = []
    logs = {}

    def stop_all():
        for name, p in reversed(procs):
            if p.poll() is None:
                p.terminate()
        for name, p in reversed(procs):
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def on_signal(signum, frame):
        raise Failure(f"signal {signum}: stopping")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGALRM, lambda s, f: on_signal("SIGALRM (deadline)", f))
    signal.alarm(int(args.deadline))

    good = open(os.path.join(args.catalogs, "catalog-good.yaml")).read()
    broken = open(os.path.join(args.catalogs, "catalog-broken.yaml")).read()
    ok = False
    try:
        catalog = os.path.join(tmp, "catalog.yaml")
        write_atomically(catalog, "schema: 1\nentries: []\n")  # the operator's layer, empty at start
        audit = os.path.join(tmp, "audit.jsonl")
        port_file = os.path.join(tmp, "port")

        def start(name, cmd, env=None):
            log = open(os.path.join(tmp, name + ".log"), "w")
            logs[name] = log.name
            p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=tmp,
                                 env=env, preexec_fn=die_with_parent)
            procs.append((name, p))
            return p

        env = dict(os.environ, OMP_NUM_THREADS="1")
        server = start("sample_server", [args.server, "--host", "127.0.0.1", "--port", "0", "--port-file", port_file,
                                         "--policy", args.policy, "--audit", audit, "--catalog", catalog,
                                         "--watch-ms", "100"], env)
        wait_for("the server's port", lambda: os.path.exists(port_file), 20)
        port = int(open(port_file).read())
        base = f"http://127.0.0.1:{port}"
        wait_for("the server's /healthz", lambda: http("GET", base + "/healthz")[0] == 200, 10)

        prom_port = free_port()
        prom = f"http://127.0.0.1:{prom_port}"
        config = os.path.join(tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: errshim-server\n    metrics_path: /metrics\n"
                    f"    static_configs:\n      - targets: ['127.0.0.1:{port}']\n")
        start("prometheus", [args.prometheus, f"--config.file={config}",
                             f"--storage.tsdb.path={os.path.join(tmp, 'prometheus-data')}",
                             f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"])
        wait_for("Prometheus to be ready", lambda: http("GET", prom + "/-/ready")[0] == 200, 20)

        def query(expr):
            status, text = http("GET", prom + "/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
            check(status == 200, f"query {expr}: HTTP {status}: {text[:200]}")
            r = json.loads(text)
            check(r["status"] == "success", f"query {expr}: {text[:200]}")
            return r["data"]["result"]

        def scalar(expr):
            result = query(expr)
            return float(result[0]["value"][1]) if result else None

        client = Client(base)
        for kind in ["plain", "long", "cache_dtype", "too_long", "cuda", "int8", "long", "cuda", "cache_dtype", "plain"]:
            client.send(kind)

        # From here a background client keeps requests running through every reload.
        stop_bg = threading.Event()
        bg_errors = []

        def background():
            kinds = ["plain", "long"]
            i = 0
            while not stop_bg.is_set():
                try:
                    client.send(kinds[i % 2])
                except Exception as e:  # noqa: BLE001 - reported below
                    bg_errors.append(repr(e))
                    return
                i += 1

        bg = threading.Thread(target=background)
        bg.start()

        def generation():
            text = http("GET", base + "/healthz")[1]
            return int(text.split("generation=")[1].split()[0])

        def refused():
            n = 0
            with open(audit) as f:
                for line in f:
                    r = json.loads(line)
                    n += r["event"] == "catalog-reload" and r["outcome"] == "refused"
            return n

        check(generation() == 2, "the startup catalog is generation 2")
        write_atomically(catalog, good)  # noticed by the file watch
        wait_for("the good catalog (generation 3)", lambda: generation() == 3, 10)
        cuda_fixed = 0
        for _ in range(3):
            r = client.send("cuda", expect=200)
            check(r["remediation"]["decisions"][0]["entry"] == "sample_server.cache_device.unknown",
                  "the reloaded entry remediated the cuda request")
            cuda_fixed += 1

        write_atomically(catalog, broken)  # refused on the file change
        wait_for("the broken catalog refused", lambda: refused() == 1, 10)
        server.send_signal(signal.SIGHUP)  # and refused again when forced
        wait_for("the broken catalog refused on SIGHUP", lambda: refused() == 2, 10)
        check(generation() == 3, "the good catalog stays after the broken one")
        for _ in range(2):
            client.send("cuda", expect=200)  # still remediated: the old catalog is current
            cuda_fixed += 1

        write_atomically(catalog, good)
        wait_for("the good catalog again (generation 4)", lambda: generation() == 4, 10)
        server.send_signal(signal.SIGHUP)  # a forced reload of an unchanged file swaps too
        wait_for("the SIGHUP reload (generation 5)", lambda: generation() == 5, 10)
        client.send("int8")  # still unknown: the new entry is only for the cache device

        stop_bg.set()
        bg.join(timeout=20)
        check(not bg.is_alive(), "the background client stopped")
        check(not bg_errors, f"background requests failed: {bg_errors}")
        check(client.count("plain", 200) >= 3 and client.count("long", 200) >= 3, "the background client ran")

        # What the counters must read, from what the client saw.
        long_ok = client.count("long", 200)
        unknown = client.count("cuda", 500) + client.count("int8", 500)
        expected = {
            'errshim_remediations_total{entry="libtorch.index_copy.out_of_bounds",outcome="succeeded"}': long_ok,
            'errshim_remediations_total{entry="libtorch.index_copy.dtype_mismatch",outcome="succeeded"}':
                client.count("cache_dtype", 200),
            'errshim_remediations_total{entry="sample_server.cache_device.unknown",outcome="succeeded"}': cuda_fixed,
            'errshim_remediations_total{entry="libtorch.narrow.out_of_range",outcome="failed"}':
                client.count("too_long", 422),
            'errshim_remediation_attempts_total{entry="libtorch.index_copy.out_of_bounds",safety="slower"}':
                long_ok + client.count("too_long", 422),
            'errshim_remediation_attempts_total{entry="sample_server.cache_device.unknown",safety="safe"}': cuda_fixed,
            'errshim_decisions_total{entry="libtorch.narrow.out_of_range",outcome="gave-up"}':
                client.count("too_long", 422),
            "sum(errshim_unrecognised_errors_total)": unknown,
            'errshim_unrecognised_errors_total{class="other"}': 0,
            'errshim_match_duration_seconds_count{result="unrecognised"}': unknown,
            'errshim_catalog_reloads_total{outcome="swapped"}': 4,
            'errshim_catalog_reloads_total{outcome="refused"}': 2,
            "errshim_catalog_generation": 5,
            'up{job="errshim-server"}': 1,
        }
        # Prometheus scrapes every second: wait until it holds the final values.
        final = 'errshim_catalog_generation == 5 and on() sum(errshim_unrecognised_errors_total) == %d' % unknown
        wait_for("Prometheus to scrape the final counters", lambda: bool(query(final)), 15)
        for expr, want in expected.items():
            got = scalar(expr)
            check(got == want, f"Prometheus: {expr} = {got}, expected {want}")
        # Two fingerprints: the cuda device and the int8 dtype errors.
        buckets = query('errshim_unrecognised_errors_total{class!="other"} > 0')
        check(len(buckets) == 2, f"two unrecognised fingerprints, got {buckets}")
        lat = scalar('errshim_match_duration_seconds_count{result="recognised"}')
        check(lat is not None and lat >= long_ok, f"recognised lookups timed: {lat}")

        print("scraped by Prometheus (instant query at the end):")
        for series in query('{__name__=~"errshim_.*(_total|_count|generation|entries)"}'):
            m = series["metric"]
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(m.items()) if k not in ("__name__", "instance", "job"))
            print(f"  {m['__name__']}{{{labels}}} {series['value'][1]}")

        # The exposition itself passes promtool's lint.
        status, exposition = http("GET", base + "/metrics")
        check(status == 200, "/metrics answers")
        lint = subprocess.run([args.promtool, "check", "metrics"], input=exposition.encode(), capture_output=True,
                              timeout=20)
        check(lint.returncode == 0, f"promtool check metrics: {lint.stdout.decode()}{lint.stderr.decode()}")

        # The audit log: one JSON object per line, one "request" record per request answered.
        records = [json.loads(line) for line in open(audit)]
        by_event = {}
        for r in records:
            by_event.setdefault(r["event"], []).append(r)
        total = sum(client.sent.values())
        check(len(by_event.get("request", [])) == total, f"{len(by_event.get('request', []))} request records, {total} sent")
        check(len(by_event.get("unrecognised", [])) == unknown, "one unrecognised record per unknown error")
        reloads = by_event.get("catalog-reload", [])
        check([(r["trigger"], r["outcome"]) for r in reloads] ==
              [("startup", "swapped"), ("file-change", "swapped"), ("file-change", "refused"), ("sighup", "refused"),
               ("file-change", "swapped"), ("sighup", "swapped")], f"reload records: {reloads}")
        check(all(any("cuase" in p for p in r["problems"]) for r in reloads if r["outcome"] == "refused"),
              "a refused reload says which key is wrong")
        check(all("outcome" in r and "entry" in r for r in by_event.get("decision", [])), "decision records")

        server.send_signal(signal.SIGTERM)
        check(server.wait(timeout=10) == 0, "the server stops cleanly on SIGTERM")
        ok = True
        print(f"requests sent: {total} ({', '.join(f'{k} {s}: {n}' for (k, s), n in sorted(client.sent.items()))})")
        print(f"server test: all {CHECKS} checks passed in {time.monotonic() - started:.1f} s")
    except Failure as e:
        print(f"server test: FAILED: {e}")
    finally:
        signal.alarm(0)
        stop_all()
        if not ok:
            for name, path in logs.items():
                print(f"--- {name} log (last 40 lines)")
                with open(path, errors="replace") as f:
                    print("".join(f.readlines()[-40:]), end="")
        if args.keep or not ok and os.environ.get("ERRSHIM_KEEP_SERVER_TEST"):
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
