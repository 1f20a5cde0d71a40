#!/usr/bin/env python3
"""What the generated transformers layer adds, measured two ways:

1. raise sites pinned: of the sites the Python front end finds in each version
   of transformers-files.txt, how many an entry pins (path and line at that
   version's commit) or whose text a hand-written entry has, with the
   hand-written catalog alone and with patterns/generated/transformers.yaml;
   and how many `errshim explain` claims at their file, for a message
   rendered from the site's template (sample values), without a version;
2. the real-report corpus (tests/data/realworld/transformers.yaml, its
   `expect: claim` cases): the share `errshim explain` claims at the raise
   file (an entry whose source or also_at names one of the case's paths, as
   tests/realworld_test.cpp judges), the embedded catalog alone and with the
   layer (--catalog), the reporter's version as context.

  tools/extract/measure_transformers.py [--cache DIR | --git CLONE] [--errshim BIN] [--json]
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import errshim_extract as ex  # noqa: E402
import layer  # noqa: E402
import python_frontend  # noqa: E402
import transformers_layer as tl  # noqa: E402
import yaml  # noqa: E402

TOP = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
GEN = os.path.join(TOP, "patterns", "generated", "transformers.yaml")
CORPUS = os.path.join(TOP, "tests", "data", "realworld", "transformers.yaml")
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(path):
    with open(path, encoding="utf-8") as fh:
        return yaml.load(fh, Loader=LOADER)


def curated_files():
    d = os.path.join(TOP, "patterns")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".yaml"))


def pins_of(files):
    """(commit, path, line) of every pin, and id -> {(repo, path)}."""
    pins, paths = set(), {}
    for f in files:
        doc = load(f)
        defaults = doc.get("defaults") or {}
        for e in doc.get("entries") or []:
            ps = set()
            for p in [e.get("source") or {}] + list(e.get("also_at") or []):
                if not p.get("path"):
                    continue
                ps.add((p.get("repo", defaults.get("repo", "")), p["path"]))
                if p.get("line"):
                    pins.add((p.get("commit", defaults.get("commit")), p["path"], p["line"]))
            paths[e["id"]] = ps
    return pins, paths


def claims(a, curated, gen, facts_by_label):
    """Of every version's sites, how many `errshim explain` claims at the
    site's file for a message rendered from its template (sample values),
    the embedded catalog alone and with the layer; one run per distinct
    (file, message)."""
    _, paths = pins_of(curated + [gen])
    texts = {}
    for label, commit, facts in facts_by_label:
        for msg in layer.collect_pieces([(label, commit, facts)]):
            ex_ = layer.example_for(msg.tmpl)
            if ex_ is None:
                continue
            for s in msg.sites[label]:
                texts.setdefault((s["path"], ex_[0]["text"]), 0)
                texts[(s["path"], ex_[0]["text"])] += 1
    out = {"sites": sum(texts.values())}
    with tempfile.TemporaryDirectory() as tmp:
        snap = os.path.join(tmp, "transformers.snapshot")
        subprocess.run([a.errshim, "snapshot", "--catalog", gen, snap], check=True, stdout=subprocess.DEVNULL)
        for name, catalog in (("curated", None), ("with_layer", snap)):
            n = 0
            for (path, text), count in texts.items():
                res = explain(a.errshim, catalog, text, None)
                if res.get("matched") and any(p == path for _, p in paths.get(res["id"], ())):
                    n += count
            out[name] = n
    return out


def coverage(a, curated, gen):
    rows = tl.read_manifest(a.manifest)
    before, _ = pins_of(curated)
    after = before | pins_of([gen])[0]
    templates = ex.curated_facts(curated)["templates"]
    # a generated entry names a text at one line per file (the newest
    # version's); an older version's site of that text in that file counts
    # when the entry's range holds the version
    named = collections.defaultdict(list)
    for e in load(gen)["entries"]:
        files = {p["path"] for p in [e["source"]] + list(e.get("also_at") or [])}
        named[(e.get("severity", "error"), ex.SKELETON.sub("{}", e["template"]))].append(
            (files, (e.get("applies_to") or {}).get("transformers")))
    out = collections.OrderedDict()
    by_label = collections.OrderedDict()
    a.facts = []
    for r in rows:
        by_label.setdefault(r["label"], []).append(r)
    for label, rs in by_label.items():
        commit = rs[0]["commit"]
        facts = ex.facts_of_files([(r["path"], tl.checked(a, r)) for r in rs], python_frontend)
        a.facts.append((label, commit, facts))
        n = b = g = 0
        for msg in layer.collect_pieces([(label, commit, facts)]):
            known = msg.text in templates
            entries = named.get((msg.severity, ex.SKELETON.sub("{}", msg.text)), [])
            for s in msg.sites[label]:
                key = (commit, s["path"], s["line"])
                n += 1
                b += known or key in before
                g += known or key in after or any(s["path"] in files and in_range(label, rng)
                                                  for files, rng in entries)
        out[label] = {"sites": n, "before": b, "after": g}
    return out


def vkey(v):
    nums = [int(x) for x in v.split(".")[:3] if x.isdigit()]
    return tuple(nums) + ((0,) if "dev" in v else (1,))


def in_range(label, rng):
    """Whether release `label` is in an applies_to range like ">=4.40.0,<4.48.0"."""
    for part in (rng or "").split(","):
        op = ">=" if part.startswith(">=") else "<"
        bound = part[len(op):]
        if op == ">=" and vkey(label) < vkey(bound) or op == "<" and not vkey(label) < vkey(bound):
            return False
    return True


def explain(errshim, catalog, text, version):
    cmd = [errshim, "explain", "--json"]
    if catalog:
        cmd += ["--catalog", catalog]
    if version:
        cmd += ["--context", "transformers=" + version]
    r = subprocess.run(cmd + ["-"], input=text.encode("utf-8"), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       timeout=120)
    lines = r.stdout.decode("utf-8", "replace").strip().splitlines()
    return json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}


def realworld(a, curated, gen):
    cases = [c for c in load(CORPUS)["cases"] if c.get("expect") == "claim"]
    _, paths = pins_of(curated + [gen])
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        snap = os.path.join(tmp, "transformers.snapshot")
        subprocess.run([a.errshim, "snapshot", "--catalog", gen, snap], check=True, stdout=subprocess.DEVNULL)
        for name, catalog in (("curated", None), ("with_layer", snap)):
            tally = collections.Counter()
            newly = []
            for c in cases:
                raise_ = c.get("raise") or {}
                want = set([raise_.get("path")] + list(c.get("alt_paths") or []))
                v = str(c.get("version") or "")
                v = v if v and all(ch.isdigit() or ch == "." for ch in v) else None
                res = explain(a.errshim, catalog, c["text"], v)
                if not res.get("matched"):
                    tally["unclaimed"] += 1
                    continue
                got = paths.get(res["id"], set())
                at = any(path in want and repo in ("", raise_.get("repo")) for repo, path in got)
                tally["at_raise_file" if at else "wrong_file"] += 1
                if at and name == "with_layer" and res["id"].startswith("transformers.gen."):
                    newly.append(c["id"])
            out[name] = dict(tally, cases=len(cases), share=round(tally["at_raise_file"] / len(cases), 4))
            if newly:
                out[name]["by_generated_entry"] = newly
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", default="/var/cache/errshim/transformers")
    ap.add_argument("--git")
    ap.add_argument("--manifest", default=tl.MANIFEST)
    ap.add_argument("--errshim", default=os.path.join(TOP, "build", "tools", "errshim"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.git and os.path.isdir(os.path.join(a.git, ".git")):
        a.git = os.path.join(a.git, ".git")
    curated = curated_files()
    out = {"coverage": coverage(a, curated, GEN)}
    out["claims"] = claims(a, curated, GEN, a.facts)
    out["realworld"] = realworld(a, curated, GEN)
    if a.json:
        json.dump(out, sys.stdout, indent=1)
        print()
        return 0
    for label, c in out["coverage"].items():
        print("sites %-11s %5d: pinned %4d before, %4d with the layer" % (label, c["sites"], c["before"], c["after"]))
    c = out["claims"]
    print("sites of all versions %d: claimed at their file %d (%.3f) by the embedded catalog, %d (%.3f) with the layer"
          % (c["sites"], c["curated"], c["curated"] / c["sites"], c["with_layer"], c["with_layer"] / c["sites"]))
    for name, r in out["realworld"].items():
        print("realworld %-10s %d cases: %d claimed at the raise file (%.3f), %d at a wrong file, %d unclaimed" % (
            name, r["cases"], r.get("at_raise_file", 0), r["share"], r.get("wrong_file", 0), r.get("unclaimed", 0)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
