#!/usr/bin/env python3
"""The generated transformers layer: transformers' key files at one commit per
release, merged into version-ranged entries (used by
regenerate-transformers.sh).

  transformers_layer.py manifest --git DIR [--from 4.30] --tip COMMIT > transformers-files.txt
      Picks the versions from the first-parent history of
      src/transformers/__init__.py: for each release 4.N (N >= --from), the
      last main commit before `__version__` left "4.N.0.dev0" (the tree the
      4.N release branch was cut from), and the tip commit given. One row per
      key file present there: commit, __version__, release label, path, sha256.
  transformers_layer.py fill --git DIR --cache DIR [--manifest FILE]
      Writes each manifest row's file to CACHE/<commit>/<path> (git show).
  transformers_layer.py build (--git DIR | --cache DIR) [--manifest FILE]
                        [--curated FILE]... [--other-layer FILE]... [--errshim BIN] [--stats FILE]
                        > transformers.yaml
      Checks every file's sha256, runs the Python front end on each version
      and merges them (layer.py): one entry per distinct message, `applies_to:
      {transformers: RANGE}` the releases whose files hold it.

No transformers code reaches the output; only facts (messages, paths, lines,
functions, conditions).
"""

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import errshim_extract as ex  # noqa: E402
import layer  # noqa: E402
import python_frontend  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "transformers-files.txt")
REPO = "huggingface/transformers"
KEY_FILES = [
    "generation/utils.py", "generation/configuration_utils.py", "cache_utils.py", "modeling_utils.py",
    "integrations/sdpa_attention.py", "integrations/flash_attention.py", "modeling_flash_attention_utils.py",
    "masking_utils.py", "modeling_rope_utils.py", "generation/candidate_generator.py",
    "generation/logits_process.py", "generation/stopping_criteria.py",
] + ["models/%s/modeling_%s.py" % (m, m) for m in ("llama", "mistral", "qwen2", "gemma", "t5", "bart", "whisper",
                                                   "gpt2")]
KEY_PATHS = ["src/transformers/" + p for p in KEY_FILES]
VERSION = re.compile(r'^__version__\s*=\s*"([^"]+)"', re.M)


def git(git_dir, *args):
    return subprocess.run(["git", "--git-dir", git_dir] + list(args), check=True,
                          stdout=subprocess.PIPE).stdout


def version_at(git_dir, commit):
    text = git(git_dir, "show", "%s:src/transformers/__init__.py" % commit).decode("utf-8", "replace")
    m = VERSION.search(text)
    return m.group(1) if m else None


def pick_versions(git_dir, tip, first_minor):
    """[(commit, __version__, label)]: per release 4.N the parent of the main
    commit that moved __version__ off "4.N.0.dev0", oldest first; then the tip."""
    commits = git(git_dir, "log", "--first-parent", "--format=%H", tip, "--",
                  "src/transformers/__init__.py").decode().split()
    out = []
    newer = None  # (commit, version) of the next newer commit touching __init__.py
    for c in commits:
        v = version_at(git_dir, c)
        if newer is not None and v != newer[1]:
            m = re.fullmatch(r"4\.([0-9]+)\.0\.dev0", v or "")
            if m and int(m.group(1)) >= first_minor:
                cut = git(git_dir, "rev-parse", newer[0] + "^1").decode().strip()
                out.append((cut, version_at(git_dir, cut), "4.%s.0" % m.group(1)))
        newer = (c, v)
    out.reverse()
    tip_commit = git(git_dir, "rev-parse", tip + "^{commit}").decode().strip()
    if tip_commit not in {c for c, _, _ in out}:
        v = version_at(git_dir, tip_commit)
        out.append((tip_commit, v, v))
    return out


def read_manifest(path):
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 5:
                raise SystemExit("%s:%d: expected 5 tab-separated fields (commit, version, label, path, "
                                 "sha256), got %d" % (path, n, len(parts)))
            rows.append(dict(zip(("commit", "version", "label", "path", "sha256"), parts), line=n))
    return rows


def cmd_manifest(a):
    print("# transformers' key files read for patterns/generated/transformers.yaml: one row per file and")
    print("# version. commit (huggingface/transformers), __version__ at that commit, the release the tree")
    print("# stands for (main just before the release branch was cut; the last row: the tip read), path,")
    print("# sha256 of `git show COMMIT:PATH`. Written by tools/extract/transformers_layer.py manifest.")
    for commit, version, label in pick_versions(a.git, a.tip, a.first_minor):
        have = set(git(a.git, "ls-tree", "-r", "--name-only", commit, "--", *KEY_PATHS).decode().split())
        for p in KEY_PATHS:
            if p in have:
                blob = git(a.git, "show", "%s:%s" % (commit, p))
                print("\t".join((commit, version, label, p, hashlib.sha256(blob).hexdigest())))


def blob_of(a, row):
    if a.git:
        return git(a.git, "show", "%s:%s" % (row["commit"], row["path"]))
    with open(os.path.join(a.cache, row["commit"], row["path"]), "rb") as fh:
        return fh.read()


def checked(a, row):
    data = blob_of(a, row)
    got = hashlib.sha256(data).hexdigest()
    if got != row["sha256"]:
        raise SystemExit("%s:%d: %s at %s has sha256 %s, the manifest says %s (another clone, or a damaged "
                         "cache?)" % (a.manifest, row["line"], row["path"], row["commit"], got, row["sha256"]))
    return data.decode("utf-8", "replace")


def cmd_fill(a):
    for row in read_manifest(a.manifest):
        dst = os.path.join(a.cache, row["commit"], row["path"])
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        data = git(a.git, "show", "%s:%s" % (row["commit"], row["path"]))
        with open(dst + ".tmp", "wb") as fh:
            fh.write(data)
        os.replace(dst + ".tmp", dst)


def area(path):
    """An id part: src/transformers/generation/utils.py -> generation-utils,
    src/transformers/models/llama/modeling_llama.py -> llama."""
    p = re.sub(r"^src/transformers/", "", re.sub(r"\.py$", "", path))
    m = re.fullmatch(r"models/([a-z0-9_]+)/modeling_\1", p)
    return re.sub(r"[^a-z0-9]+", "-", (m.group(1) if m else p).lower()).strip("-")


def wrap(text, m, site):
    """The message as a user meets it (errshim_extract.python_wrap), from an
    installed transformers: site-packages hold src/transformers/ as transformers/."""
    return ex.python_wrap(text, m, dict(site, path=re.sub(r"^src/", "", site["path"])))


STYLE = {"area": area, "wrap": wrap, "version_key": "transformers"}


def cmd_build(a):
    rows = read_manifest(a.manifest)
    labels, by_label = [], {}
    for row in rows:
        if row["label"] not in by_label:
            labels.append(row["label"])
            by_label[row["label"]] = []
        by_label[row["label"]].append(row)
    versions = []
    for label in labels:
        commits = {r["commit"] for r in by_label[label]}
        if len(commits) != 1:
            raise SystemExit("%s: release %s has rows of %d commits; one tree per release" % (
                a.manifest, label, len(commits)))
        files = [(r["path"], checked(a, r)) for r in by_label[label]]
        facts = ex.facts_of_files(files, python_frontend)
        for e in facts["errors"]:
            print("transformers_layer: warning: %s: %s (file skipped)" % (label, e), file=sys.stderr)
        versions.append((label, commits.pop(), facts))
    head_commit = versions[-1][1]
    messages = layer.collect_pieces(versions)
    entries, stats = layer.build_entries(messages, labels, REPO, head_commit, ex.curated_facts(a.curated),
                                         library="transformers", style=STYLE)
    if a.other_layer:
        entries, stats["same_text_in_other_layer"] = without_other_layers_texts(entries, a.other_layer)
    if a.errshim:
        entries, shadow = ex.settle_overlaps(a.errshim, a.curated, entries, "transformers", REPO, head_commit)
        stats.update(shadow)
    stats["sites_newest"] = {p: n for p, n in sorted(count_by_file(versions[-1][2]).items())}
    stats["sites_all_versions"] = sum(len(f["sites"]) for _, _, f in versions)
    stats["versions"] = [{"label": l, "commit": c, "files": len(by_label[l])} for l, c, _ in versions]
    if a.stats:
        with open(a.stats, "w") as fh:
            json.dump(stats, fh, indent=1, sort_keys=True)
    what = "%d files at %d versions: %s .. %s, listed in tools/extract/transformers-files.txt" % (
        len(KEY_PATHS), len(labels), labels[0], labels[-1])
    ex.write_layer(sys.stdout, entries, stats, REPO, head_commit, "transformers",
                   ex.HEADER.format(repo=REPO, what=what, regen="tools/extract/regenerate-transformers.sh"))


def without_other_layers_texts(entries, layers):
    """Entries whose text (names aside) another generated layer already has
    are left out: torch's own Python files raise some of the same generic
    texts (`module {..} has no attribute {..}`), and two generated entries of
    one text and priority tie, so lint finds them shadowing each other.
    Returns (entries kept, [[id left out, the other layer's id]])."""
    loader = getattr(ex.yaml, "CSafeLoader", ex.yaml.SafeLoader)
    theirs = {}
    for path in layers:
        with open(path, encoding="utf-8") as fh:
            for e in ex.yaml.load(fh, Loader=loader).get("entries") or []:
                theirs.setdefault((e.get("severity", "error"), ex.SKELETON.sub("{}", e["template"])), e["id"])
    kept, left = [], []
    for e in entries:
        other = theirs.get((e.get("severity", "error"), ex.SKELETON.sub("{}", e["template"])))
        if other:
            left.append([e["id"], other])
        else:
            kept.append(e)
    return kept, left


def count_by_file(facts):
    per = {}
    for s in facts["sites"]:
        per[s["path"]] = per.get(s["path"], 0) + 1
    return per


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["manifest", "fill", "build"])
    ap.add_argument("--git", help="a clone of huggingface/transformers (its git directory or work tree)")
    ap.add_argument("--cache", help="CACHE/<commit>/<path> files (see `fill`)")
    ap.add_argument("--manifest", default=MANIFEST)
    ap.add_argument("--tip", default="HEAD")
    ap.add_argument("--from", dest="first_minor", type=int, default=30, help="the oldest 4.N release read")
    ap.add_argument("--curated", action="append", default=[])
    ap.add_argument("--other-layer", action="append", default=[],
                    help="another library's generated layer: a text it has is left out of this one")
    ap.add_argument("--errshim")
    ap.add_argument("--stats")
    a = ap.parse_args(argv)
    if a.git and os.path.isdir(os.path.join(a.git, ".git")):
        a.git = os.path.join(a.git, ".git")
    if a.command in ("manifest", "fill") and not a.git:
        ap.error("%s needs --git" % a.command)
    if a.command == "fill" and not a.cache:
        ap.error("fill needs --cache")
    if a.command == "build" and not (a.git or a.cache):
        ap.error("build needs --git or --cache")
    {"manifest": cmd_manifest, "fill": cmd_fill, "build": cmd_build}[a.command](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
