#!/usr/bin/env python3
"""Whole-process log scan throughput: errshim scan against ripgrep, same run.

  bench/run --scan [--scan-sizes 64,512] [--scan-densities 2000,50] [--repeat 3]

Generates synthetic server logs into /tmp (INFO/DEBUG/WARNING noise, and one
error block per DENSITY lines: Python tracebacks, a Rust "Caused by:" chain, a
panic, log-prefixed ERROR records, cut from tests/data/scan/), then times, on
a warm page cache:
  errshim scan --json -j 1   (and -j 2)
  rg -c -f PATTERNS         the catalog's patterns, exported by `errshim list
                            --patterns`, in ripgrep's syntax (when rg exists)
  rg -F -c Error            a single literal pass, the floor
Prints MB/s (best and median of --repeat runs; the -j runs take turns),
errshim / rg, -j 2 / -j 1, and the peak RSS of each process. With -j 1 and
-j 2, two -j 1 runs at once take their turn too: twice the log in their
time, against one -j 1 run, is what this machine gives two busy processes
in that run, the ceiling -j 2 / -j 1 is read against (a VM's second core
can be far from a whole one, and not the same from hour to hour). With
--layers, the errshim runs are repeated at the first size with those catalogs loaded, ripgrep
skipped: a library name (or `all`) is a generated layer (`--generated NAME`,
found in share/errshim/generated or $ERRSHIM_GENERATED_DIR), a path a catalog
file (`--catalog FILE`).
With --fresh-timestamps each error block's timestamps are the time it is
written at, as in a real log: the blocks that carry them never repeat (the
logs otherwise repeat five blocks word for word, which errshim's per-thread
verdict cache serves). The logs are deleted afterwards unless --keep.
"""
import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MB = 1 << 20


def build(build_dir):
    cfg = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DERRSHIM_BUILD_TESTS=OFF",
           "-DERRSHIM_BUILD_SAMPLES=OFF", "-DERRSHIM_BUILD_TOOLS=ON", "-DERRSHIM_BUILD_BENCH=ON"]
    subprocess.run(cfg, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build_dir, "--target", "errshim_cli", "-j2"], check=True,
                   stdout=subprocess.DEVNULL)


# ------------------------------------------------------------------ the log

NOISE = [
    "{ts} INFO  server.app - POST /v1/generate request_id={hex} model=t5-small",
    "{ts} INFO  server.app - 200 POST /v1/generate {n}ms",
    "{ts} DEBUG server.batcher - batch of {n} requests, {n} tokens queued",
    "{ts} INFO  server.models - cache hit for prompt prefix ({n} tokens)",
    "{ts} WARNING server.app - slow request request_id={hex} took {n}ms",
    "{ts} DEBUG server.kv - kv blocks in use {n}/4096",
    "{ts} INFO  uvicorn.access - 10.0.{n}.7:5123 - \"GET /health HTTP/1.1\" 200",
]


def corpus_blocks():
    """Error blocks cut from the scan corpus, by (file, first line, last line)."""
    def lines(name):
        with open(os.path.join(ROOT, "tests", "data", "scan", name), encoding="utf-8") as f:
            return f.read().split("\n")
    serving, candle = lines("serving.log"), lines("candle.log")
    return [
        serving[5:17],    # ERROR record with a Python traceback under it (quantized cache)
        candle[4:20],     # Rust "Error:" with its "Caused by:" chain and backtrace
        candle[21:24],    # a panic, its message and note
        candle[25:26],    # a tracing ERROR record
        serving[42:43],   # an ERROR record nothing in the catalog knows
    ]


TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?Z?")


def generate(path, size, density, seed=1, fresh=False):
    """`size` bytes of log, one error block per `density` lines on average."""
    rng = random.Random(seed)
    blocks = corpus_blocks()
    # A unique stretch of 8 MiB, repeated: the scanner's cost does not depend
    # on a stretch being seen before, and generating 512 MiB in Python is slow.
    # (With `fresh`, the whole log is generated: a repeat would repeat texts.)
    unit, unit_size, t = [], 0, 0
    while unit_size < (size if fresh else min(size, 8 * MB)):
        t += rng.randint(1, 900)
        ts = "2026-11-30 {:02d}:{:02d}:{:02d},{:03d}".format(t // 3600000 % 24, t // 60000 % 60, t // 1000 % 60,
                                                               t % 1000)
        if rng.randrange(density) == 0:
            block = blocks[rng.randrange(len(blocks))]
            chunk = "\n".join([TIMESTAMP.sub(ts, l) for l in block] if fresh else block) + "\n"
        else:
            chunk = rng.choice(NOISE).format(ts=ts, hex="%08x" % rng.getrandbits(32), n=rng.randint(1, 999)) + "\n"
        unit.append(chunk)
        unit_size += len(chunk)
    data = "".join(unit).encode()
    with open(path, "wb") as f:
        written = 0
        while written < size:
            piece = data[: size - written]
            f.write(piece)
            written += len(piece)


# ------------------------------------------------------------------ ripgrep's patterns

def for_ripgrep(pattern):
    """A catalog pattern (Boost perl syntax) as a superset ripgrep reads, the way
    bench/errshim_bench.cpp's for_comparator() rewrites them for Hyperscan and
    RE2: named groups plain, backreferences any text, tempered possessive runs
    plain runs, a leading run's look-behind anchor dropped."""
    p = re.sub(r"\(\?:\(\?!(?:\\.|[^)\\])*\)(\[\^\\n\]|\[\\s\\S\])\)\+\+", r"\1+", pattern)
    p = re.sub(r"\(\?:\^\|\(\?<=(?:\\.|[^)\\])*\)\)", "", p)
    p = re.sub(r"\(\?<(?![=!])[A-Za-z_][A-Za-z0-9_]*>", "(?:", p)
    p = re.sub(r"\\k<[A-Za-z_][A-Za-z0-9_]*>", r"[^\\n]*?", p)
    p = p.replace("*+", "*").replace("++", "+").replace("?+", "?")
    return p


def rg_patterns(errshim, rg, out_path):
    raw = subprocess.run([errshim, "list", "--patterns"], check=True, capture_output=True, text=True).stdout
    pats = [for_ripgrep(p) for p in raw.splitlines() if p]
    kept = []
    for p in pats:
        r = subprocess.run([rg, "-c", "-e", p, "--", os.devnull], capture_output=True, text=True)
        if r.returncode in (0, 1):  # 2: ripgrep cannot read the pattern
            kept.append(p)
    with open(out_path, "w") as f:
        f.write("\n".join(kept) + "\n")
    return len(pats), len(kept)


# ------------------------------------------------------------------ timing

def timed(cmd, rss=False):
    """Wall and CPU seconds and peak RSS (MiB) of one run, output discarded.
    With `rss`, the RSS comes from /usr/bin/time when present: the child's
    own rusage would count the forked Python it was before exec. Without it
    no wrapper runs (its fork and exec added about 4 ms to every run) and the
    RSS is 0. A list of commands runs them all at once: the wall until the
    last ends, their CPU summed, the largest RSS."""
    cmds = cmd if isinstance(cmd[0], list) else [cmd]
    procs = []
    start = time.perf_counter()
    for c in cmds:
        rss_file = None
        if rss and os.path.exists("/usr/bin/time"):
            fd, rss_file = tempfile.mkstemp(suffix=".rss")
            os.close(fd)
            c = ["/usr/bin/time", "-f", "%M", "-o", rss_file] + c
        procs.append((c, rss_file, subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)))
    cpu, rss = 0.0, 0.0
    for c, rss_file, proc in procs:
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"{' '.join(c)}: exit {proc.returncode}: {err.strip()}")
        cpu += usage.ru_utime + usage.ru_stime
        one = usage.ru_maxrss / 1024 if rss else 0.0
        if rss_file:
            with open(rss_file) as f:
                one = int(f.read().split()[-1]) / 1024
            os.remove(rss_file)
        rss = max(rss, one)
    return time.perf_counter() - start, cpu, rss


def measure_all(cmds, repeat, size):
    """Each command `repeat` times, taking turns: a shared machine's slow
    spells fall on all of them alike, not on whichever ran then. Then once
    more each for its peak RSS."""
    runs = {k: [] for k in cmds}
    for _ in range(repeat):
        for k, cmd in cmds.items():
            runs[k].append(timed(cmd))
    out = {}
    for k, rs in runs.items():
        walls, cpus = [r[0] for r in rs], [r[1] for r in rs]
        out[k] = {"best": size / MB / min(walls), "median": size / MB / statistics.median(walls),
                  "cpu": size / MB / min(cpus), "rss": timed(cmds[k], rss=True)[2]}
    return out


def measure(cmd, repeat, size):
    return measure_all({0: cmd}, repeat, size)[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scan-sizes", default="64,512", help="log sizes in MiB")
    ap.add_argument("--scan-densities", default="2000,50", help="lines per error block")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", default="1,2", help="errshim scan -j values")
    # Not bench/run's build-bench: that one is configured without the CLI.
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build-bench-scan"))
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--tmp", default=tempfile.gettempdir())
    ap.add_argument("--keep", action="store_true", help="keep the generated logs")
    ap.add_argument("--layers", default="",
                    help="comma-separated generated layer names (or 'all') or catalog files, for extra errshim "
                         "rows at the first size")
    ap.add_argument("--fresh-timestamps", action="store_true",
                    help="error blocks carry the time they are written at (no repeated ERROR records)")
    args = ap.parse_args(argv)

    if not args.no_build:
        print(f"scan bench: building errshim (Release) in {args.build_dir}", file=sys.stderr)
        build(args.build_dir)
    errshim = os.path.join(args.build_dir, "tools", "errshim")
    rg = shutil.which("rg")
    jobs = [int(j) for j in args.jobs.split(",")]
    pattern_file = os.path.join(args.tmp, "errshim-scan-bench.patterns")
    if rg:
        total, kept = rg_patterns(errshim, rg, pattern_file)
        print(f"ripgrep: {kept} of the catalog's {total} patterns (the rest use syntax it lacks)")
    else:
        print("ripgrep not found: its rows are skipped")
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print(f"machine: {cpu}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start; "
          f"{args.repeat} runs each; command: errshim scan --json -j N LOG")
    print()
    print("MB/s: wall best / median; [cpu]: MB per CPU-second (user + sys), which the other load on a\n"
          "shared machine affects less; ratios are of the best wall figures")
    print()
    print("| log | errshim -j1 MB/s [cpu] | " + " | ".join(f"-j{j} MB/s [cpu]" for j in jobs if j != 1) +
          " | rg -f MB/s [cpu] | rg -F Error MB/s | errshim / rg | -j2 / -j1 | two -j1 at once | peak RSS " +
          " / ".join(f"-j{j}" for j in jobs) + " |")
    print("|---|---:|" + "---:|" * (len([j for j in jobs if j != 1]) + 6))
    made = []
    sizes = [int(s) for s in args.scan_sizes.split(",")]
    densities = [int(d) for d in args.scan_densities.split(",")]
    layers = [p for p in args.layers.split(",") if p]
    runs = [(size_mb, density, []) for size_mb in sizes for density in densities]
    if layers:
        runs += [(sizes[0], density, layers) for density in densities]
    tag = "-fresh" if args.fresh_timestamps else ""
    try:
        for size_mb, density, catalogs in runs:
            path = os.path.join(args.tmp, f"errshim-scan-bench-{size_mb}M-1in{density}{tag}.log")
            size = size_mb * MB
            if not (os.path.exists(path) and os.path.getsize(path) == size):
                generate(path, size, density, fresh=args.fresh_timestamps)
            if path not in made:
                made.append(path)
            subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
            extra = [a for c in catalogs
                     for a in (("--catalog", c) if os.sep in c or "." in c else ("--generated", c))]
            cmds = {j: [errshim, "scan", "--json", "-j", str(j)] + extra + [path] for j in jobs}
            if 1 in jobs and 2 in jobs:
                cmds["pair"] = [cmds[1], cmds[1]]
            es = measure_all(cmds, args.repeat, size)
            with_rg = rg and not catalogs
            rgf = measure([rg, "-c", "-f", pattern_file, path], args.repeat, size) if with_rg else None
            lit = measure([rg, "-F", "-c", "Error", path], args.repeat, size) if with_rg else None
            one = es[jobs[0]]
            fmt = lambda m: f"{m['best']:.0f} / {m['median']:.0f} [{m['cpu']:.0f}]"
            label = f"{size_mb} MiB, 1 in {density}"
            if catalogs:
                label += ", + " + " ".join(os.path.splitext(os.path.basename(c))[0] for c in catalogs)
            row = [label, fmt(one)]
            row += [fmt(es[j]) for j in jobs if j != 1]
            row += [fmt(rgf) if rgf else "-", f"{lit['best']:.0f} / {lit['median']:.0f}" if lit else "-"]
            row.append(f"{one['best'] / rgf['best']:.1f}x" if rgf else "-")
            row.append(f"{es[2]['best'] / one['best']:.2f}x" if 2 in es else "-")
            # Throughput of two -j1 runs at once over one's: the most -j2 could
            # make of the second core in this run.
            row.append(f"{2 * es['pair']['best'] / es[1]['best']:.2f}x" if "pair" in es else "-")
            row.append(" / ".join(f"{es[j]['rss']:.0f} MiB" for j in jobs))
            print("| " + " | ".join(row) + " |", flush=True)
    finally:
        if not args.keep:
            for p in made:
                os.remove(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
