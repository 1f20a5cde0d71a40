#!/usr/bin/env python3
"""Raise sites of torch 1.13.1 that the catalog covers, before and after the
generated torch layers: a site is covered when an entry pins its file and
line (`source` or `also_at`).

    tests/torch_python/measure_sites.py TORCH_SOURCE_DIR [--json]

TORCH_SOURCE_DIR is what scripts/fetch-torch-source.sh prints; the Python
sites are read from the installed python3-torch (--python-root). Same file selection as
tools/extract/regenerate-torch.sh.
"""

import argparse
import collections
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "extract"))

import cpp_frontend  # noqa: E402
import errshim_extract as ex  # noqa: E402
import python_frontend  # noqa: E402

import yaml  # noqa: E402

CPP_INCLUDE = ["aten/src/ATen/*", "c10/*", "caffe2/serialize/*", "torch/csrc/*"]
CPP_EXCLUDE = ["*/test/*", "*/benchmarks/*", "aten/src/ATen/native/quantized/cpu/qnnpack/*", "torch/csrc/deploy/*"]
PY_EXCLUDE = ["torch/testing/*", "torch/utils/benchmark/*"]


def pins(files):
    out = set()
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for f in files:
        with open(f, encoding="utf-8") as fh:
            doc = yaml.load(fh, Loader=loader)
        for e in doc.get("entries") or []:
            for p in [e.get("source") or {}] + list(e.get("also_at") or []):
                if p.get("path") and p.get("line"):
                    out.add((p["path"], p["line"]))
    return out


def area(path):
    if path.startswith("torch/csrc/"):
        return "torch/csrc"
    if path.endswith(".py"):
        return "python"
    return path.split("/", 1)[0] if not path.startswith("aten/") else "aten"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--python-root", default="/usr/lib/python3/dist-packages",
                    help="where python3-torch installs the torch package")
    a = ap.parse_args()
    ex.EXCLUDE[:] = CPP_EXCLUDE
    sites = []
    for rel, text in ex.tree_files(a.source, CPP_INCLUDE, ex.FRONT_ENDS["cpp"][1]):
        try:
            sites += [(s.path, s.line, s.severity) for s in cpp_frontend.scan(text, rel)]
        except cpp_frontend.LexError:
            pass
    py_root = a.python_root
    ex.EXCLUDE[:] = PY_EXCLUDE
    for rel, text in ex.tree_files(py_root, ["torch/*"], (".py",)):
        try:
            sites += [(s.path, s.line, s.severity) for s in python_frontend.scan(text, rel)]
        except SyntaxError:
            pass
    curated = [os.path.join(ROOT, "patterns", f) for f in ("libtorch.yaml", "torch.yaml")]
    generated = [os.path.join(ROOT, "patterns", "generated", f)
                 for f in ("torch-cpp.yaml", "torch-cpp-csrc.yaml", "torch-python.yaml")]
    before, after = pins(curated), pins(curated + generated)
    table = collections.OrderedDict()
    for path, line, sev in sites:
        t = table.setdefault(area(path), collections.Counter())
        t["sites"] += 1
        t["warnings"] += sev == "warning"
        t["before"] += (path, line) in before
        t["after"] += (path, line) in after
    if a.json:
        print(json.dumps(table, indent=1))
        return 0
    print("%-12s %7s %9s %8s %8s" % ("area", "sites", "warnings", "before", "after"))
    for k, t in table.items():
        print("%-12s %7d %9d %8d %8d  (%.1f%% -> %.1f%%)" % (k, t["sites"], t["warnings"], t["before"], t["after"],
                                                         100.0 * t["before"] / t["sites"],
                                                         100.0 * t["after"] / t["sites"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
