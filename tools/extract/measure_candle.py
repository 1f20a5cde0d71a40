#!/usr/bin/env python3
"""Measures the generated candle layer against a clone of candle.

  measure_candle.py --git-dir DIR [--errshim build/tools/errshim] [--json OUT]

1. Raise sites at HEAD per crate, and how many a catalog entry names (source
   or also_at) before (hand-written patterns/*.yaml) and after (plus
   patterns/generated/candle.yaml).
2. A set of candle error messages built from the sources with values other
   than the examples': every raise site at HEAD rendered (Display), each
   variant's Display as a plain message, as `Error: ..` and inside an anyhow
   `Caused by:` chain, the derived Debug forms (plain, in `WithBacktrace`,
   after `unwrap()`) of the versions that derive Debug, and the candle
   records of tests/data/corpus/messages.yaml (real reports). Each is
   explained by `errshim explain --json --catalog patterns/generated/`; it
   counts as claimed at the right place when the winning entry names the
   raising file in `source` or `also_at`.
3. Wrong-site claims by generated entries on the near-miss corpus and on
   generated neighbours (one literal changed; a placeholder given the text
   of another entry).
"""

import argparse
import collections
import json
import os
import random
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import errshim_extract as ex  # noqa: E402
import layer  # noqa: E402
import rust_frontend  # noqa: E402
import rustfmt_template as rt  # noqa: E402

import yaml  # noqa: E402

# the corpus the C++ tests read (a copy of the shared one, kept in the checkout)
CORPUS = os.path.join(TOP, "tests", "data", "corpus")
INCLUDE = ["candle-core/src/*", "candle-nn/src/*", "candle-transformers/src/*", "candle-metal-kernels/src/*"]
EVAL = {"shape": ["[4, 16, 64]", "[1, 32]"], "dtype": ["F32", "BF16"], "int": ["128", "5"],
        "layout": ["Layout { shape: [4, 16], stride: [16, 1], start_offset: 8 }"],
        "location": ["Metal { gpu_id: 1 }"], "qstr": ['"w_q"'], "tuple_int": ["(2, 64, 64, 32)"],
        None: ["model.layers.3.attn", "w_q"]}


def eval_values(tmpl, k=0):
    return {n: EVAL[tmpl.kinds.get(n)][(j + k) % len(EVAL[tmpl.kinds.get(n)])]
            for j, n in enumerate(tmpl.names())}


class Explainer:
    def __init__(self, errshim, catalogs):
        self.errshim = errshim
        self.catalogs = catalogs
        self.cache = {}

    def __call__(self, message):
        if message not in self.cache:
            args = [self.errshim, "explain", "--json"]
            for c in self.catalogs:
                args += ["--catalog", c]
            r = subprocess.run(args + ["-"], input=message.encode(), stdout=subprocess.PIPE)
            try:
                self.cache[message] = json.loads(r.stdout.decode().splitlines()[0])
            except (ValueError, IndexError):
                self.cache[message] = {"matched": False}
        return self.cache[message]


def entry_paths(files):
    paths = {}
    for f in files:
        with open(f) as fh:
            doc = yaml.safe_load(fh)
        for e in doc.get("entries") or []:
            ps = {(e.get("source") or {}).get("path")}
            ps |= {p.get("path") for p in e.get("also_at") or []}
            paths[e["id"]] = ps
    return paths


def entry_pins(files, head):
    pins = set()
    for f in files:
        with open(f) as fh:
            doc = yaml.safe_load(fh)
        default = (doc.get("defaults") or {}).get("commit")
        for e in doc.get("entries") or []:
            for p in [e.get("source") or {}] + list(e.get("also_at") or []):
                if p.get("line") and p.get("commit", default) == head:
                    pins.add((p["path"], p["line"]))
    return pins


def entry_sites(e):
    return {e["source"]["path"]} | {q["path"] for q in e.get("also_at", [])}


def neighbour_cases(gen, seed=14):
    """(set, message, expected paths, outer paths) of the generated
    neighbours: each entry's no_match example (one literal changed: nothing
    may claim it at another site), and for each entry with a free-text
    capture its match example with that capture given another entry's
    example. By the nested-claim rule (patterns/README.md) the entry whose
    example fills the placeholder is the answer: the right site is the
    donor's; a claim by the wrapper (outer paths) hides the inner error."""
    out = []
    for e in gen:
        out.append(("neighbour-literal", e["examples"]["no_match"][0], entry_sites(e), set(), None))
    donors = [(g["examples"]["match"][0]["text"], g) for g in gen]
    rnd = random.Random(seed)
    for e in gen:
        # a free-text capture (a name, a path, a message) can hold any text;
        # one of a typed capture (a shape, a dtype) cannot
        caps = {k: v for k, v in (e["examples"]["match"][0].get("captures") or {}).items()
                if k not in (e.get("capture_patterns") or {})}
        if not caps:
            continue
        name = sorted(caps)[0]
        donor, d = rnd.choice(donors)
        text = e["examples"]["match"][0]["text"].replace(caps[name], donor, 1)
        # a donor holding one of the wrapper's own literals (`]`, `, `)
        # leaves no reading that can tell where the placeholder ends
        tag = "neighbour-placeholder"
        if any(lit.strip() and lit in donor for lit in literal_runs(e["template"])):
            tag += "-ambiguous"
        out.append((tag, text, entry_sites(d), entry_sites(e) - entry_sites(d), (e["id"], donor)))
    return out


def literal_runs(template):
    t = template.replace("{{", "\x00").replace("}}", "\x01")
    return [r.replace("\x00", "{").replace("\x01", "}") for r in re.split(r"\{[^{}]*\}", t)]


def sites_and_cases(a, curated_files, gen_file):
    """Parts 1 and 2: coverage of HEAD's raise sites, and the messages
    built from the sources (with the expected raising file)."""
    reader = ex.GitReader(a.git_dir)
    revs = ex.release_revs(reader)
    versions = ex.git_versions(reader, revs, INCLUDE, rust_frontend, (".rs",))
    reader.close()
    head_label, head, head_facts = versions[-1]

    # 1. coverage of raise sites at HEAD
    before = entry_pins(curated_files, head)
    after = before | entry_pins([gen_file], head)
    curated_templates = ex.curated_facts(curated_files)["templates"]
    cov = collections.defaultdict(lambda: collections.Counter())
    for s in head_facts["sites"] + head_facts["constructions"]:
        crate = s["path"].split("/", 1)[0]
        key = (s["path"], s["line"])
        cov[crate]["sites"] += 1
        text_known = s.get("message") is not None and s["message"] in curated_templates
        cov[crate]["before"] += key in before or text_known
        cov[crate]["after"] += key in after or text_known
    coverage = {k: dict(v) for k, v in sorted(cov.items())}

    cases = []  # (set, message, expected path or set of paths)

    # 2a. every raise site at HEAD, rendered with evaluation values
    for s in head_facts["sites"]:
        r = layer.site_messages([s])
        if not r:
            continue
        tmpl = r[0][2]
        cases.append(("site-display", tmpl.render(eval_values(tmpl, 1)), {s["path"]}, r[0][5]))
    # 2b. variants: Display per construction site (literal fields written in), three renderings
    for label, commit, facts in [versions[-1]] + [v for v in versions if any(
            x["derived_debug"] and x["enum"] == "Error" and x["path"] == "candle-core/src/error.rs"
            for x in v[2]["variants"])][-1:]:
        structs = {st["name"]: st["fields"] for st in facts.get("structs", [])}
        by_variant = {}
        for v in facts["variants"]:
            by_variant.setdefault((v["enum"], v["name"]), []).append(v)
        for c in facts["constructions"]:
            defs = by_variant.get((c["enum"], c["variant"]))
            if not defs:
                continue
            v = sorted(defs, key=lambda d: ("dummy" in d["path"], d["path"]))[0]
            spec = layer.specialise(v, c)
            disp = spec or layer.variant_display(v, structs)
            if disp is None:
                continue
            tmpl = disp[1]
            msg = tmpl.render(eval_values(tmpl))
            if label == head_label:
                cases.append(("variant-display", msg, {c["path"]}, None))
                cases.append(("variant-display-error", "Error: " + msg, {c["path"]}, None))
                cases.append(("variant-display-anyhow",
                              "Error: failed to load the model\n\nCaused by:\n    " + msg, {c["path"]}, None))
            if v["derived_debug"] and v["fields"]:
                dt = layer.variant_debug(v, structs)[1]
                vals = eval_values(dt)
                # text fields as the construction writes them (a literal, a format!)
                names = layer.variant_field_names(v)
                for k, (msg, is_format, args, named) in layer.payloads(v, c).items():
                    ptmpl = rt.build_template(msg, is_format, args, named)[1]
                    vals[names[k]] = json.dumps(ptmpl.render(eval_values(ptmpl)))
                dbg = dt.render(vals)
                tag = "debug@" + label
                cases.append((tag, dbg, {c["path"]}, None))
                cases.append((tag + "-backtrace", "WithBacktrace { inner: %s, backtrace: Backtrace [] }" % dbg,
                              {c["path"]}, None))
                cases.append((tag + "-unwrap", "thread 'main' panicked at src/main.rs:9:41:\ncalled `Result::unwrap()` "
                              "on an `Err` value: %s" % dbg, {c["path"]}, None))
    # 2c. real reports
    with open(os.path.join(CORPUS, "messages.yaml")) as fh:
        records = yaml.safe_load(fh)
    for r in records:
        if r.get("repo") == "huggingface/candle" and r.get("example"):
            cases.append(("corpus-messages", r["example"], {r["path"]}, None))

    return coverage, cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--git-dir", help="a clone of candle (parts 1 and 2 need it)")
    ap.add_argument("--errshim", default=os.path.join(TOP, "build/tools/errshim"))
    ap.add_argument("--json")
    ap.add_argument("--limit", type=int, default=0, help="at most this many messages per set (0: all)")
    ap.add_argument("--near-only", action="store_true",
                    help="only part 3 (near misses and neighbours): no clone needed")
    a = ap.parse_args()
    if not a.git_dir and not a.near_only:
        ap.error("--git-dir is required unless --near-only")
    curated_files = [os.path.join(TOP, "patterns", f) for f in ("candle.yaml", "transformers.yaml", "libtorch.yaml")]
    gen_file = os.path.join(TOP, "patterns/generated/candle.yaml")
    paths = entry_paths(curated_files + [gen_file])
    out = {}
    cases = []  # (set, message, expected path or set of paths)
    explain = Explainer(a.errshim, [gen_file])
    if not a.near_only:
        out["coverage"], cases = sites_and_cases(a, curated_files, gen_file)

    # 3. near misses: corpus, and neighbours of generated entries
    with open(os.path.join(CORPUS, "near-misses.yaml")) as fh:
        near = yaml.safe_load(fh)
    near_cases = [("near-miss-corpus", n["message"], {n["path"]}, set(), None) for n in near if n.get("message")]
    with open(gen_file) as fh:
        gen = yaml.safe_load(fh)["entries"]
    near_cases += neighbour_cases(gen)
    if a.limit:
        cases = cases[:a.limit]
    # explain runs one process per message; two at a time
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(explain, sorted({c[1] for c in cases} | {c[1] for c in near_cases})))
    results = collections.defaultdict(collections.Counter)
    misses = collections.defaultdict(list)
    for tag, msg, expect, _ in cases:
        r = explain(msg)
        res = results[tag]
        res["messages"] += 1
        if not r.get("matched"):
            res["unclaimed"] += 1
            misses[tag].append(("unclaimed", msg[:160]))
            continue
        got = paths.get(r["id"], {r.get("source", {}).get("path")})
        if got & expect:
            res["right_file"] += 1
        else:
            res["wrong_file"] += 1
            misses[tag].append(("wrong:" + r["id"], msg[:160]))
    for tag, msg, expect, outer, nested in near_cases:
        r = explain(msg)
        res = results[tag]
        res["messages"] += 1
        if not r.get("matched"):
            res["unclaimed"] += 1
            continue
        got = paths.get(r["id"], set())
        if got & expect:
            res["same_site"] += 1
        elif nested and r["id"] == nested[0] and not any(
                nested[1] in str(v) for v in (r.get("captures") or {}).values()):
            # "A {x}" holding "{y} B" reads "A y B" both ways: the wrapper
            # claimed as the inner error of the donor is the other reading
            res["other_reading"] += 1
        elif got & outer:
            # the wrapper claimed the error its placeholder holds
            res["wrong_site_outer"] += 1
            misses[tag].append(("outer:" + r["id"], msg[:160]))
        elif ".gen." in r["id"]:
            res["wrong_site_generated"] += 1
            misses[tag].append(("wrong:" + r["id"], msg[:160]))
        else:
            res["wrong_site_curated"] += 1
            misses[tag].append(("curated:" + r["id"], msg[:160]))
    out["claims"] = {k: dict(v) for k, v in sorted(results.items())}
    out["examples_of_misses"] = {k: v[:12] for k, v in sorted(misses.items())}
    text = json.dumps(out, indent=1)
    if a.json:
        with open(a.json, "w") as fh:
            fh.write(text)
    print(text)


if __name__ == "__main__":
    main()
