#!/usr/bin/env python3
"""What one short hit costs in instructions, counted rather than timed.

  bench/hit_instructions.py [--build-dir build-release] [--hits 2000]

Runs errshim_layers_bench's child (`--errshim-hits=CATALOG:N`: build the
catalog, diagnose one message N + 1 times, exit) under valgrind's callgrind
twice, with N hits and with none, and prints the difference per hit:
instructions, level-1 instruction-cache misses (callgrind's cache model of
this machine), and mispredicted branches. On a shared VM whose speed changes
from one spell to the next by a third, these counts do not change between
runs of the same binary, so a change to the hit path is read from them; the
time budgets are still read from errshim_layers_bench.

Rows: the embedded catalog alone and with every generated layer, on the
embedded catalog's message and on one only the candle layer explains.
"""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The events read (named on the output file's `events:` line).
EVENTS = ["Ir", "I1mr", "Bcm", "Bim"]


def counts(bench, spec, hits, tmp):
    out = os.path.join(tmp, "callgrind.out")
    cmd = ["valgrind", "--tool=callgrind", "--cache-sim=yes", "--branch-sim=yes",
           f"--callgrind-out-file={out}", bench, f"--errshim-hits={spec}:{hits}"]
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    events, summary = None, None
    with open(out) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("summary:") and summary is None:
                summary = list(map(int, line.split()[1:]))
    if events is None or summary is None:
        raise RuntimeError(f"{out}: no events or summary line")
    got = dict(zip(events, summary))
    return {k: got.get(k, 0) for k in EVENTS}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build-release"))
    ap.add_argument("--hits", type=int, default=2000)
    args = ap.parse_args(argv)
    bench = os.path.join(args.build_dir, "bench", "errshim_layers_bench")
    if not os.path.exists(bench):
        print(f"hit_instructions: no {bench} (build the bench target first)", file=sys.stderr)
        return 2
    print(f"per hit, the difference between {args.hits} hits and none (valgrind --tool=callgrind "
          "--cache-sim=yes --branch-sim=yes)")
    print()
    print("| catalog | message | instructions | L1 instruction misses | mispredicted branches |")
    print("|---|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for catalog in ("embedded", "embedded+all"):
            for generated in (False, True):
                if generated and catalog == "embedded":
                    continue
                spec = catalog + ("/generated" if generated else "")
                base, many = counts(bench, spec, 0, tmp), counts(bench, spec, args.hits, tmp)
                per = {k: (many[k] - base[k]) / args.hits for k in EVENTS}
                message = "a generated entry's" if generated else "the embedded entry's"
                print(f"| {catalog} | {message} | {per['Ir']:.0f} | {per['I1mr']:.0f} | "
                      f"{per['Bcm'] + per['Bim']:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
