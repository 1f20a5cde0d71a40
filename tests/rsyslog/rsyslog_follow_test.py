#!/usr/bin/env python3
"""errshim scan --follow as an rsyslog omprog action, against a real rsyslogd.

Starts rsyslogd in the foreground with a config of its own in a temporary
folder (a unix-socket input there, never /dev/log), its omprog action running
`errshim scan --follow --confirm`. Worker threads log exceptions through
Python's SysLogHandler (logger.exception: the message and its traceback as one
record), among ordinary records; then one worker forwards a traceback line by
line, one message each. Midway the errshim child is stopped twice (SIGTERM, as
omprog itself does when it restarts a program with signalOnClose): rsyslog
starts it again and re-sends what was not confirmed. Checks that every error
came out as one JSON line with the right verdict, that the child was really
restarted, and prints the streaming latency (a record written to its JSON
line read back). Every process started is stopped at the end, also on failure.

usage: rsyslog_follow_test.py ERRSHIM [RSYSLOGD]
"""

import json
import logging
import logging.handlers
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ERRSHIM = sys.argv[1]
RSYSLOGD = sys.argv[2] if len(sys.argv) > 2 else "/usr/sbin/rsyslogd"
DEADLINE = time.monotonic() + 75  # ctest's TIMEOUT is 90 s
WORKERS = 4
MAX_ERRORS_PER_WORKER = 400  # workers write until both restarts are over
# Long enough that the block open when the child is stopped is still open:
# the stop must print it, or it is lost.
IDLE_MS = 1000
QUANTIZED = ("This model does not support the quantized cache. If you want your model to support quantized cache, "
             "please open an issue and tag @zucchini-nlp.")
QUANTIZED_ID = "transformers.generation.quantized_cache_unsupported"

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, flush=True)


def children_of(pid):
    """Pids of the direct children of `pid` (omprog's programs)."""
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return out


def config(tmp, sock):
    # The template starts each message with a timestamp, so errshim reads
    # every message as a log record of its own: the record after a
    # traceback ends it (no wait for the idle timeout).
    args = f"scan --follow --confirm --syslog-escapes --idle-ms {IDLE_MS} --out {tmp}/blocks.jsonl -"
    return f"""
global(workDirectory="{tmp}/work")
module(load="imuxsock" SysSock.Use="off")
input(type="imuxsock" Socket="{sock}" CreatePath="on" RateLimit.Interval="0")
module(load="omprog")
template(name="errshim_line" type="string" string="%timegenerated:::date-rfc3339% %syslogtag%%msg%\\n")
if $syslogtag startswith "worker" then {{
  action(type="omprog" name="errshim" binary="{ERRSHIM} {args}" template="errshim_line"
         confirmMessages="on" confirmTimeout="10000" signalOnClose="on" closeTimeout="2000"
         output="{tmp}/errshim.stderr" action.resumeInterval="1" action.resumeRetryCount="-1"
         queue.type="LinkedList" queue.size="10000")
}}
*.* action(type="omfile" file="{tmp}/all.log")
"""


class Worker(threading.Thread):
    """A serving process: ordinary records and, now and then, an exception
    logged with its traceback. Records when each error was written."""

    def __init__(self, n, sock, sent, stop, pause):
        super().__init__(daemon=True)
        self.n, self.sent, self.stop, self.pause = n, sent, stop, pause
        self.log = logging.getLogger(f"worker{n}")
        self.log.propagate = False
        h = logging.handlers.SysLogHandler(address=sock)
        h.setFormatter(logging.Formatter(f"worker-{n}[{1000 + n}]: %(levelname)s %(message)s"))
        self.log.addHandler(h)
        self.log.setLevel(logging.INFO)

    def fail(self, rid):
        if rid % 2 == 0:
            raise ValueError(f"{QUANTIZED} (request id={rid})")
        # Not in the catalog: an error the log stage reports as unrecognised.
        raise RuntimeError(f"shard {rid % 3} of request id={rid} lost its KV block at 0x{rid * 4096:x}")

    def run(self):
        rnd = random.Random(self.n)
        for i in range(MAX_ERRORS_PER_WORKER):
            if self.stop.is_set():
                break
            rid = self.n * 1000 + i
            self.log.info("request %d started", rid)
            time.sleep(rnd.uniform(0.002, 0.01))
            try:
                self.fail(rid)
            except Exception:
                self.log.exception("request id=%d failed", rid)
                self.sent[rid] = time.monotonic()
            while self.pause.is_set():  # hold still after an error: the child is stopped with a block open
                time.sleep(0.001)
            time.sleep(rnd.uniform(0.005, 0.03))
            self.log.info("request %d answered 500", rid)


def line_worker(sock, sent):
    """A forwarder of one process's output: each line its own message."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    rid = 9000
    lines = ["Traceback (most recent call last):",
             '  File "/srv/app/serve.py", line 88, in handle',
             "    out = model.generate(**inputs)",
             f"ValueError: {QUANTIZED}"]
    for k in range(3):
        for j, text in enumerate(lines):
            if j == len(lines) - 1:
                text += f" (request id={rid + k})"
            s.sendto(f"<11>worker-9[1009]: {text}".encode(), sock)
            if j == len(lines) - 1:
                sent[rid + k] = time.monotonic()
            time.sleep(0.003)
        time.sleep(0.02)
        s.sendto(f"<14>worker-9[1009]: INFO request {rid + k} answered 500".encode(), sock)
        time.sleep(0.02)
    s.close()


def read_blocks(path, seen, blocks, pos):
    """Reads new JSON lines, stamping when each request id first appeared."""
    try:
        with open(path, "rb") as f:
            f.seek(pos)
            data = f.read()
    except FileNotFoundError:
        return pos
    end = data.rfind(b"\n") + 1
    now = time.monotonic()
    for raw in data[:end].splitlines():
        b = json.loads(raw)
        blocks.append(b)
        text = b.get("text", "") + b.get("segment", "") + json.dumps(b)
        for tok in text.split("id=")[1:]:
            digits = "".join(ch for ch in tok[:6] if ch.isdigit())
            if digits:
                seen.setdefault(int(digits), now)
    return pos + end


def percentile(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def main():
    tmp = tempfile.mkdtemp(prefix="errshim-rsyslog-")
    os.makedirs(f"{tmp}/work")
    sock = f"{tmp}/log.sock"
    conf = f"{tmp}/rsyslog.conf"
    with open(conf, "w") as f:
        f.write(config(tmp, sock))
    rsyslogd = None
    started = set()
    try:
        rsyslogd = subprocess.Popen([RSYSLOGD, "-n", "-f", conf, "-i", f"{tmp}/rsyslogd.pid"],
                                    stdout=open(f"{tmp}/rsyslogd.out", "wb"), stderr=subprocess.STDOUT)
        while not os.path.exists(sock):
            if rsyslogd.poll() is not None or time.monotonic() > DEADLINE:
                raise RuntimeError("rsyslogd did not start: " + open(f"{tmp}/rsyslogd.out").read())
            time.sleep(0.01)

        sent, seen, blocks = {}, {}, []
        pos = 0
        stop, pause = threading.Event(), threading.Event()
        workers = [Worker(n, sock, sent, stop, pause) for n in range(1, WORKERS + 1)]
        for w in workers:
            w.start()
        # Stop the errshim child twice while the workers write.
        restarts = 0
        kills = []  # [when stopped, when the next JSON line came]
        next_kill = time.monotonic() + 0.3
        while any(w.is_alive() for w in workers) and time.monotonic() < DEADLINE:
            for c in children_of(rsyslogd.pid):
                started.add(c)
            if restarts < 2 and time.monotonic() >= next_kill:
                pause.set()
                time.sleep(0.2)  # every worker's last record is an error: errshim holds it as an open block
                kids = children_of(rsyslogd.pid)
                if kids:
                    os.kill(kids[0], signal.SIGTERM)
                    restarts += 1
                    kills.append([time.monotonic(), None])
                    next_kill = DEADLINE
                pause.clear()
            pos = read_blocks(f"{tmp}/blocks.jsonl", seen, blocks, pos)
            # Recovered: an error written after the stop has come out.
            if kills and kills[-1][1] is None and any(sent[r] > kills[-1][0] for r in seen if r in sent):
                kills[-1][1] = time.monotonic()
                next_kill = kills[-1][1] + 0.3
            if restarts == 2 and kills[-1][1] is not None and time.monotonic() > kills[-1][1] + 1.5:
                stop.set()  # after a stretch of steady streaming
            time.sleep(0.001)
        line_worker(sock, sent)
        while set(sent) - set(seen) and time.monotonic() < DEADLINE:
            for c in children_of(rsyslogd.pid):
                started.add(c)
            pos = read_blocks(f"{tmp}/blocks.jsonl", seen, blocks, pos)
            time.sleep(0.001)

        if os.environ.get("ERRSHIM_TEST_TRACE"):
            t0 = min(sent.values())
            for r in sorted(sent, key=sent.get):
                print(f"{r} sent {(sent[r]-t0)*1000:8.1f} seen {((seen.get(r) or 0)-t0)*1000:8.1f}")
        check(len(sent) >= WORKERS * 10 + 3, f"only {len(sent)} errors written")
        missing = sorted(set(sent) - set(seen))
        check(not missing, f"errors never reported: {missing}")
        check(restarts == 2, f"errshim child stopped {restarts} times, 2 expected")
        check(len(started) >= 3, f"errshim children seen: {sorted(started)} (a restart makes a new one)")

        by_id = {}
        for b in blocks:
            for rid in sent:
                if f"id={rid}" in json.dumps(b):
                    by_id.setdefault(rid, []).append(b)
        dups = {rid: len(v) for rid, v in by_id.items() if len(v) > 1}
        # At least once: a message errshim read but had not confirmed when it
        # was stopped is sent again; never more than once per restart.
        check(sum(n - 1 for n in dups.values()) <= restarts, f"errors reported more than once: {dups}")
        for rid, bs in sorted(by_id.items()):
            b = bs[0]
            known = rid >= 9000 or (rid % 1000) % 2 == 0
            check(b["kind"] == "python-traceback", f"request {rid}: kind {b['kind']}")
            check(b.get("id") == QUANTIZED_ID if known else not b["matched"],
                  f"request {rid}: verdict {b.get('id', b['matched'])}")
            check("Traceback (most recent call last):" in json.dumps(b) or b["matched"],
                  f"request {rid}: the traceback is not in the block")
            if rid < 9000:
                check(b["lines"] >= 5, f"request {rid}: {b['lines']} lines (record, traceback, frames, exception)")
            else:
                check(b["lines"] == 4, f"request {rid}: {b['lines']} lines, 4 sent as separate messages")

        def around_restart(r):
            return any(sent[r] < (done or DEADLINE) and seen[r] > start for start, done in kills)

        for name, rids in (("steady", [r for r in sent if r in seen and not around_restart(r)]),
                           ("across a restart", [r for r in sent if r in seen and around_restart(r)]),
                           ("all", [r for r in sent if r in seen])):
            lat = [(seen[r] - sent[r]) * 1000 for r in rids]
            if lat:
                print(f"streaming latency, {name}, {len(lat)} errors (record written -> its JSON line read): "
                      f"median {statistics.median(lat):.1f} ms, p99 {percentile(lat, 99):.1f} ms, "
                      f"max {max(lat):.1f} ms", flush=True)
        print(f"{len(blocks)} JSON lines, {len(seen)} of {len(sent)} errors reported, "
              f"{len(started)} errshim processes", flush=True)
    finally:
        left = []
        if rsyslogd is not None:
            if rsyslogd.poll() is None:
                left = children_of(rsyslogd.pid)
                rsyslogd.send_signal(signal.SIGTERM)
                try:
                    rsyslogd.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    rsyslogd.kill()
                    rsyslogd.wait()
        for c in left:  # omprog's child, if rsyslogd left it behind (and it is still ours)
            try:
                with open(f"/proc/{c}/cmdline", "rb") as f:
                    if ERRSHIM.encode() in f.read():
                        os.kill(c, signal.SIGKILL)
            except (OSError, ProcessLookupError):
                pass
        if failures:
            for name in ("rsyslogd.out", "errshim.stderr"):
                try:
                    print(f"--- {name}\n" + open(f"{tmp}/{name}", errors="replace").read()[-3000:])
                except OSError:
                    pass
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
