#!/usr/bin/env python3
"""The share of real torch errors errshim claims at the file that raised them,
with the generated torch layers (patterns/generated/torch-*.yaml) loaded on
top of the embedded catalog.

    tests/torch_python/claims_test.py --errshim build/tools/errshim [--min-share 0.9]
                                       [--min-distinct 60] [--before] [--json]

Runs provoke.py through Debian's python3-torch twice, as Python shows the
errors and with TORCH_SHOW_CPP_STACKTRACES=1 (C++ frames inside the message).
The raising file is what torch itself prints ("Exception raised from F at
PATH:LINE", the last traceback frame inside the torch package) or, where it
prints none, the file the case states. Every form of every case is given to
`errshim scan --json` in one log; a case is claimed at its raise file when the
winning entry's source or an `also_at` names that file. Exits 77 (skipped)
without torch, 1 below the share or the number of distinct errors.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "realworld"))

import report  # noqa: E402  (load_pins: entry id -> the files it is pinned to)

PYTHON = "/usr/bin/python3"
LAYERS = ["torch-cpp.yaml", "torch-cpp-csrc.yaml", "torch-python.yaml"]
MARK = "errshim-case "


def provoke(cpp_stacktraces):
    env = dict(os.environ)
    env.pop("TORCH_SHOW_CPP_STACKTRACES", None)
    if cpp_stacktraces:
        env["TORCH_SHOW_CPP_STACKTRACES"] = "1"
    r = subprocess.run([PYTHON, os.path.join(HERE, "provoke.py")], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=600, check=True)
    return json.loads(r.stdout.decode("utf-8"))


def scan(errshim, catalogs, texts, warnings_at=()):
    """{index: result} for each text: one `errshim scan` over a log holding
    all of them, each after a marker line; a warning (which scan does not
    take for an error block) through `errshim explain` of its own."""
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "cases.log")
        starts = []
        line = 1
        with open(log, "w", encoding="utf-8") as f:
            for k, t in enumerate(texts):
                f.write("%s%d\n" % (MARK, k))
                starts.append((line + 1, line + t.count("\n") + 1, k))
                f.write(t + "\n\n")
                line += t.count("\n") + 3
        args = []
        if catalogs:
            snap = os.path.join(tmp, "torch.snapshot")
            cmd = [errshim, "snapshot"]
            for c in catalogs:
                cmd += ["--catalog", c]
            subprocess.run(cmd + [snap], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            args = ["--catalog", snap]
        r = subprocess.run([errshim, "scan", "--json"] + args + [log], stdout=subprocess.PIPE, timeout=600)
        if r.returncode not in (0, 1):
            raise SystemExit("errshim scan failed (%d)" % r.returncode)
        explained = {}
        for k in warnings_at:
            w = subprocess.run([errshim, "explain", "--json"] + args + ["-"], input=texts[k].encode("utf-8"),
                               stdout=subprocess.PIPE, timeout=120)
            explained[k] = json.loads(w.stdout.decode("utf-8").strip().splitlines()[-1])
    got = {}
    for row in r.stdout.decode("utf-8").splitlines():
        if not row.startswith("{"):
            continue
        res = json.loads(row)
        at = res.get("line", 0)
        for lo, hi, k in starts:
            if lo <= at <= hi:
                # the block nearest the case's end is its final error line
                if k not in got or res.get("matched"):
                    got[k] = res
                break
    got.update(explained)
    return got


def verdict(res, path, pins):
    if not res or not res.get("matched"):
        return "unclaimed"
    src = res.get("source") or {}
    at = pins.get(res["id"], [(src.get("repo", ""), src.get("path", ""))])
    return "at_raise_file" if any(p == path for _, p in at) else "wrong_file"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--errshim", default=os.path.join(ROOT, "build", "tools", "errshim"))
    ap.add_argument("--min-share", type=float, default=0.9)
    ap.add_argument("--min-distinct", type=int, default=60)
    ap.add_argument("--before", action="store_true", help="also measure the embedded catalog alone")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if not os.path.exists(PYTHON) or subprocess.run([PYTHON, "-c", "import torch"], stdout=subprocess.DEVNULL,
                                                    stderr=subprocess.DEVNULL).returncode != 0:
        print("skipped: %s has no torch (Debian: python3-torch)" % PYTHON)
        return 77

    plain, cpp = provoke(False), provoke(True)
    cases = []
    for p, c in zip(plain, cpp):
        assert p["name"] == c["name"]
        path = c["raised_path"] or p["raised_path"] or c["raise_path"]
        if c["raise_path"] and not c["raised_path"]:
            path = c["raise_path"]
        if not p["text"] or not path:
            print("note: %s raised nothing torch places (%s)" % (p["name"], (p["text"] or "no error")[-80:]),
                  file=sys.stderr)
            continue
        line = c["raised_line"] or p["raised_line"]
        for form, t in (("plain", p["text"]), ("cpp_stacktraces", c["text"])):
            cases.append({"name": p["name"], "group": p["group"], "kind": p["kind"], "form": form, "text": t,
                          "path": path, "site": (path, line)})

    pins = report.load_pins(os.path.join(ROOT, "patterns"))
    pins.update(report.load_pins(os.path.join(ROOT, "patterns", "generated")))
    gen = os.path.join(ROOT, "patterns", "generated")
    runs = [("with_layers", [os.path.join(gen, f) for f in LAYERS])]
    if a.before:
        runs.append(("embedded_only", []))
    summary = {}
    for label, catalogs in runs:
        got = scan(a.errshim, catalogs, [c["text"] for c in cases],
                   [k for k, c in enumerate(cases) if c["kind"] == "warning"])
        counts = {"at_raise_file": 0, "wrong_file": 0, "unclaimed": 0}
        misses = []
        for k, c in enumerate(cases):
            v = verdict(got.get(k), c["path"], pins)
            counts[v] += 1
            if v != "at_raise_file":
                res = got.get(k) or {}
                misses.append("%-9s %-26s %-15s %s (%s at %s)" % (
                    v, c["name"], c["form"], c["path"], res.get("id", "-"),
                    (res.get("source") or {}).get("path", "-")))
        share = counts["at_raise_file"] / float(len(cases)) if cases else 0.0
        summary[label] = dict(counts, cases=len(cases), share=round(share, 4), misses=misses)
    distinct = len({c["site"] for c in cases if c["kind"] == "error"})
    summary["distinct_errors"] = distinct
    summary["groups"] = sorted({c["group"] for c in cases})
    if a.json:
        print(json.dumps(summary, indent=1))
    else:
        for label, _ in runs:
            s = summary[label]
            print("%s: %d of %d forms claimed at the raising file (share %.3f); %d at a wrong file, %d unclaimed"
                  % (label, s["at_raise_file"], s["cases"], s["share"], s["wrong_file"], s["unclaimed"]))
            for m in s["misses"]:
                print("  " + m)
        print("distinct errors (raise sites): %d, in groups %s" % (distinct, ", ".join(summary["groups"])))
    ok = True
    if distinct < a.min_distinct:
        print("FAIL: %d distinct errors, fewer than %d" % (distinct, a.min_distinct))
        ok = False
    if summary["with_layers"]["share"] < a.min_share:
        print("FAIL: share %.3f below %.2f" % (summary["with_layers"]["share"], a.min_share))
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
