#!/usr/bin/env python3
"""Runs `errshim explain --json` over the real-report corpus (tests/data/realworld/) and prints,
per library, the share of cases claimed at their raise file, the claims at a wrong file (each one
a catalog bug), and a ranking of the unclaimed errors by how many cases report them: the work
list for new catalog entries.

    tools/realworld/report.py [--errshim build/tools/errshim] [--top 30] [--json] [--check]

--check exits 1 on the rules tests/realworld_test.cpp enforces: a library's share below the
`claimed_share_floor` of its data file, a wrong-file claim without a `known_wrong` reason, a stale
`known_wrong` note, a `claimed: true` case no longer claimed at its raise file, or an
`expect: none` case claimed. Needs Python 3 and PyYAML only.
"""
import argparse
import collections
import concurrent.futures
import json
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
FILES = ("candle.yaml", "transformers.yaml", "pytorch.yaml")


def load_cases(data_dir):
    """Cases of every data file, each with its file's library; and the floors by library."""
    cases, floors = [], {}
    for name in FILES:
        with open(os.path.join(data_dir, name), encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        lib = doc["library"]
        floors[lib] = float(doc.get("claimed_share_floor", 0.0))
        for c in doc["cases"]:
            c["library"] = lib
            cases.append(c)
    return cases, floors


def load_pins(patterns_dir):
    """Entry id -> list of (repo, path) it is pinned to (source and also_at), from the catalog
    files the binary embeds: `explain --json` reports the source only."""
    pins = {}
    for name in sorted(os.listdir(patterns_dir)):
        if not name.endswith((".yaml", ".yml")):
            continue
        with open(os.path.join(patterns_dir, name), encoding="utf-8") as f:
            doc = yaml.safe_load(f) or {}
        repo = (doc.get("defaults") or {}).get("repo", "")
        for e in doc.get("entries") or []:
            src = e.get("source") or {}
            at = [(src.get("repo", repo), src.get("path", ""))]
            for p in e.get("also_at") or []:
                at.append((p.get("repo", src.get("repo", repo)), p.get("path", "")))
            pins[e["id"]] = at
    return pins


def context_of(case):
    """The reporter's library version as a context, as the test passes it: plain dotted versions
    only, and none for pytorch (the catalog scopes no entry by torch version)."""
    v = case.get("version")
    v = "" if v is None else str(v)
    if v and re.fullmatch(r"[0-9.]+", v) and case["library"] != "pytorch":
        return "%s=%s" % (case["library"], v)
    return ""


def explain(errshim, case):
    cmd = [errshim, "explain", "--json"]
    ctx = context_of(case)
    if ctx:
        cmd += ["--context", ctx]
    cmd.append("-")
    r = subprocess.run(cmd, input=case["text"].encode("utf-8"), capture_output=True, timeout=60)
    if r.returncode not in (0, 1):
        raise RuntimeError("%s failed on %s: %s" % (errshim, case["id"], r.stderr.decode(errors="replace")))
    return json.loads(r.stdout.decode("utf-8").strip().splitlines()[-1])


def raise_paths(case):
    return [case["raise"]["path"]] + list(case.get("alt_paths") or [])


def judge(case, result, pins):
    """'unclaimed', 'at_raise_file' or 'wrong_file'."""
    if not result.get("matched"):
        return "unclaimed"
    repo = case["raise"]["repo"]
    paths = raise_paths(case)
    src = result.get("source") or {}
    at = pins.get(result["id"], [(src.get("repo", ""), src.get("path", ""))])
    for r, p in at:
        if (not r or r == repo) and p in paths:
            return "at_raise_file"
    return "wrong_file"


MASKS = [
    (re.compile(r"\x1b\[[0-9;]*m"), ""),
    (re.compile(r"(?:[A-Za-z]:)?(?:[\\/][\w.\-+~]+){2,}"), "<path>"),
    (re.compile(r"0x[0-9a-fA-F]+"), "<hex>"),
    (re.compile(r"'[^'\n]{1,80}'|\"[^\"\n]{1,80}\"|`[^`\n]{1,80}`"), "<q>"),
    (re.compile(r"\[[0-9, ]+\]|\([0-9x, ]+\)"), "<dims>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
]
ERROR_LINE = re.compile(r"(Error|error|Exception|panicked|failed|not |cannot|must |invalid|mismatch|deprecated)")
CLASS_LINE = re.compile(r"^(?:\W*)(?:[\w.]+(?:Error|Exception|Warning)|Error|thread '.*' panicked)\b")
FRAME_LINE = re.compile(r"^(?:File |frame #|at |\d+: |->|\^|~)")


PREFIXES = [
    re.compile(r"^[\w.-]+\s+\|\s?"),                                   # docker-compose service prefix
    re.compile(r"^\[rank\d+\]:\s?"),                                     # torchrun rank prefix
    re.compile(r"^\[?\d{4}-\d\d-\d\d[T ][\d:.]+Z?\]?\s+(?:\w+\s+[\w:]+:\s)?"),  # timestamp / tracing log prefix
    re.compile(r"^(?:ERROR|INFO|WARNING|DEBUG) \d\d-\d\d [\d:]+ (?:\[[^\]]+\] |[\w.]+:\d+\] )"),  # vllm log prefix
    re.compile(r"^E\s{2,}"),                                               # pytest E-lines
]
RUST_FRAME = re.compile(r"^(?:\d+: )?[\w:<>{}\[\] ,&*()]*::[\w:<>{}\[\] ,&*()]*$")


def strip_prefixes(line):
    for rx in PREFIXES:
        line = rx.sub("", line)
    return line.strip()


def headline(text):
    """The line a reader would call 'the error': the cause under the last `Caused by:` if any,
    else the last line naming an exception class (or Rust's `Error:`), else the last error-like
    line; log, compose and rank prefixes dropped, values that differ between reports masked."""
    lines = [strip_prefixes(l.strip()) for l in text.splitlines() if l.strip()]
    lines = [l for l in lines if l]
    pick = ""
    if any(l == "Caused by:" for l in lines):
        after = lines[len(lines) - 1 - lines[::-1].index("Caused by:") + 1:]
        causes = [l for l in after if not RUST_FRAME.match(l) and not l.startswith("at ")]
        pick = causes[-1] if causes else ""
    for rx in (CLASS_LINE, ERROR_LINE):
        if pick:
            break
        for l in lines:
            if rx.search(l) and not FRAME_LINE.match(l):
                pick = l
    pick = pick or (lines[-1] if lines else "")
    for rx, rep in MASKS:
        pick = rx.sub(rep, pick)
    return pick[:160]


def error_key(line):
    """What two reports of one error share: the headline without its exception class, markup,
    case and names (tensor names, paths, dotted identifiers), cut to its first words (reporters
    cut and re-wrap the tail)."""
    k = re.sub(r"^\W*(?:[\w.]+(?:Error|Exception|Warning)\W*\s|Error:\s*)", "", line)
    k = re.sub(r"[\w-]*(?:[./\\][\w-]+)+", "<name>", k)
    k = re.sub(r"[`*\"'<>]", "", k).lower()
    return " ".join(k.split()[:4])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--errshim", default=os.path.join(ROOT, "build", "tools", "errshim"))
    ap.add_argument("--data", default=os.path.join(ROOT, "tests", "data", "realworld"))
    ap.add_argument("--patterns", default=os.path.join(ROOT, "patterns"))
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    ap.add_argument("--check", action="store_true", help="exit 1 below a floor or on an unlisted wrong-file claim")
    a = ap.parse_args()

    cases, floors = load_cases(a.data)
    pins = load_pins(a.patterns)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        results = list(pool.map(lambda c: explain(a.errshim, c), cases))

    per_lib = collections.OrderedDict()
    wrong, unclaimed, bad = [], collections.defaultdict(list), []
    for case, res in zip(cases, results):
        t = per_lib.setdefault(case["library"], collections.Counter())
        t["cases"] += 1
        verdict = judge(case, res, pins)
        if case.get("expect") == "none":
            t["none"] += 1
            if verdict != "unclaimed":
                bad.append("%s: expect none but %s claims it" % (case["id"], res["id"]))
            continue
        t["expected"] += 1
        t[verdict] += 1
        if verdict == "wrong_file":
            wrong.append({"case": case["id"], "url": case["url"], "entry": res["id"],
                          "entry_path": (res.get("source") or {}).get("path", ""),
                          "raise": "%s/%s" % (case["raise"]["repo"], case["raise"]["path"]),
                          "known_wrong": case.get("known_wrong", "")})
            if not case.get("known_wrong"):
                bad.append("%s: claimed by %s at a wrong file" % (case["id"], res["id"]))
        elif verdict == "unclaimed":
            h = headline(case["text"])
            key = (case["library"], case["raise"]["repo"], case["raise"]["path"],
                   str(case["raise"].get("symbol") or ""), error_key(h))
            unclaimed[key].append((case["id"], h))
        if case.get("known_wrong") and verdict != "wrong_file":
            bad.append("%s: listed as known_wrong but now %s: remove the note" % (case["id"], verdict))
        if verdict != "at_raise_file" and case.get("claimed"):
            bad.append("%s: recorded as claimed but now %s" % (case["id"], verdict))

    shares = {}
    for lib, t in per_lib.items():
        shares[lib] = t["at_raise_file"] / t["expected"] if t["expected"] else 0.0
        if shares[lib] + 5e-4 < floors.get(lib, 0.0):
            bad.append("%s: share %.3f below the floor %.3f" % (lib, shares[lib], floors[lib]))
    total = collections.Counter()
    for t in per_lib.values():
        total.update(t)
    # One row per raise site; the error shown is the headline most of its cases share.
    ranking = []
    for k, items in unclaimed.items():
        common = collections.Counter(h for _, h in items).most_common(1)[0][0]
        ranking.append((k[:4] + (common,), [i for i, _ in items]))
    ranking.sort(key=lambda kv: (-len(kv[1]), kv[0]))

    if a.json:
        print(json.dumps({
            "libraries": {lib: dict(t, share=round(shares[lib], 4), floor=floors.get(lib, 0.0))
                          for lib, t in per_lib.items()},
            "total": dict(total, share=round(total["at_raise_file"] / max(1, total["expected"]), 4)),
            "wrong_file": wrong,
            "unclaimed": [{"library": k[0], "raise": "%s/%s" % (k[1], k[2]), "symbol": k[3], "error": k[4],
                           "cases": ids} for k, ids in ranking],
            "problems": bad,
        }, indent=1))
    else:
        print("share of cases claimed at the raise file (cases with expect: claim)")
        for lib, t in per_lib.items():
            print("  %-12s %4d/%-4d = %.3f (floor %.3f); %d at a wrong file; %d no-claim cases; %d cases in all"
                  % (lib, t["at_raise_file"], t["expected"], shares[lib], floors.get(lib, 0.0),
                     t["wrong_file"], t["none"], t["cases"]))
        print("  %-12s %4d/%-4d = %.3f; %d at a wrong file" % (
            "total", total["at_raise_file"], total["expected"],
            total["at_raise_file"] / max(1, total["expected"]), total["wrong_file"]))
        print("\nclaims at a wrong file (catalog bugs)")
        for w in wrong or [{"case": "(none)", "entry": "", "entry_path": "", "raise": "", "known_wrong": ""}]:
            if w["case"] == "(none)":
                print("  (none)")
                break
            print("  %s: won by %s (%s), raised at %s%s" % (
                w["case"], w["entry"], w["entry_path"], w["raise"],
                "  [known: %s]" % w["known_wrong"] if w["known_wrong"] else ""))
        print("\nunclaimed errors, by number of cases (top %d of %d)" % (a.top, len(ranking)))
        for i, (k, ids) in enumerate(ranking[:a.top], 1):
            print("  %2d. %3d  %-12s %s/%s%s\n            %s\n            e.g. %s"
                  % (i, len(ids), k[0], k[1], k[2], " (%s)" % k[3] if k[3] else "", k[4], ", ".join(ids[:3])))
        if bad:
            print("\nproblems:\n  " + "\n  ".join(bad))
    return 1 if (a.check and bad) else 0


if __name__ == "__main__":
    sys.exit(main())
