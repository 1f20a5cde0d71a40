#!/usr/bin/env python3
"""errshim extractor: builds a catalog layer from a library's sources.

  errshim_extract.py extract --lang rust --root DIR --repo OWNER/NAME --commit SHA
                     [--version V] [--include GLOB]... [--curated FILE]... > layer.yaml
      One source tree (one version).
  errshim_extract.py git --lang rust --git-dir DIR --repo OWNER/NAME [--rev REV]...
                     [--include GLOB]... [--curated FILE]... [--stats FILE] > layer.yaml
      Several revisions of a bare clone (read with git, never checked out),
      merged: one entry per distinct message, `applies_to` its version range.
      Without --rev: every release tag and HEAD.
  errshim_extract.py fold [--lint-log FILE] LAYER...
      Layers of separate runs: an entry whose text (names aside) an earlier
      layer has joins that entry (its places go to `also_at`); so does one
      that `errshim lint` (its output in FILE) finds won by another.
  errshim_extract.py facts ...same source options...
      The raw facts (sites, variants, constructions) as JSON, for inspection.

Only facts (messages, paths, lines, functions, conditions) reach the output;
the sources are never copied. Front ends live in their own modules
(rust_frontend.py); another language adds one beside it.
"""

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cpp_frontend  # noqa: E402
import layer  # noqa: E402
import python_frontend  # noqa: E402
import rust_frontend  # noqa: E402

import yaml  # noqa: E402

FRONT_ENDS = {"rust": (rust_frontend, (".rs",)),
              "cpp": (cpp_frontend, (".cpp", ".cc", ".h", ".hpp", ".cu", ".cuh")),
              "python": (python_frontend, (".py",))}
# Front ends whose sites carry message pieces (layer.collect_pieces).
PIECES = ("cpp", "python")
RELEASE_TAG = re.compile(r"^v?[0-9]+\.[0-9]+\.[0-9]+(?:-[A-Za-z]+\.?[0-9]*)?$")


EXCLUDE = []  # --exclude globs


def included(path, globs, exts):
    if not path.endswith(exts):
        return False
    if any(fnmatch.fnmatchcase(path, g) for g in EXCLUDE):
        return False
    return not globs or any(fnmatch.fnmatchcase(path, g) for g in globs)


def facts_of_files(files, front):
    """files: iterable of (path, text). The facts of all of them together."""
    sites, variants, constructions, structs = [], [], [], []
    errors = []
    for path, text in files:
        try:
            got = front.scan(text, path)
        except (rust_frontend.LexError, cpp_frontend.LexError, SyntaxError, ValueError, IndexError) as e:
            errors.append("%s: %s" % (path, e))
            continue
        s, v, c, st = got if isinstance(got, tuple) else (got, [], [], [])
        sites.extend(x.as_dict() for x in s)
        variants.extend(x.as_dict() for x in v)
        constructions.extend(x.as_dict() for x in c)
        structs.extend(st)
    return {"sites": sites, "variants": variants, "constructions": constructions, "structs": structs,
            "errors": errors}


def tree_files(root, globs, exts):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "target")
        for f in sorted(filenames):
            full = os.path.join(dirpath, f)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if included(rel, globs, exts):
                with open(full, encoding="utf-8", errors="replace") as fh:
                    yield rel, fh.read()


class GitReader:
    """Reads blobs of a bare clone through one `git cat-file --batch`."""

    def __init__(self, git_dir):
        self.git_dir = git_dir
        self.proc = subprocess.Popen(["git", "--git-dir", git_dir, "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def git(self, *args):
        return subprocess.run(["git", "--git-dir", self.git_dir] + list(args), check=True,
                              stdout=subprocess.PIPE).stdout.decode()

    def blob(self, sha):
        self.proc.stdin.write((sha + "\n").encode())
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().decode().split()
        size = int(header[2])
        data = self.proc.stdout.read(size)
        self.proc.stdout.read(1)
        return data.decode("utf-8", errors="replace")

    def tree(self, rev):
        out = []
        for line in self.git("ls-tree", "-r", rev).splitlines():
            meta, path = line.split("\t", 1)
            mode, kind, sha = meta.split()
            if kind == "blob":
                out.append((path, sha))
        return out

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def git_versions(reader, revs, globs, front, exts):
    """[(label, commit, facts)] for each revision, in release order; each
    distinct file content is scanned once."""
    cache = {}
    out = []
    for label, rev in revs:
        commit = reader.git("rev-parse", rev + "^{commit}").strip()
        sites, variants, constructions, structs, errors = [], [], [], [], []
        for path, sha in reader.tree(rev):
            if not included(path, globs, exts):
                continue
            if sha not in cache:
                cache[sha] = facts_of_files([("\0", reader.blob(sha))], front)
            f = cache[sha]
            for kind, dst in (("sites", sites), ("variants", variants), ("constructions", constructions),
                              ("structs", structs)):
                dst.extend(dict(x, path=path) for x in f[kind])
            errors.extend(e.replace("\0", path + "@" + label) for e in f["errors"])
        out.append((label, commit, {"sites": sites, "variants": variants, "constructions": constructions,
                                    "structs": structs, "errors": errors}))
    return out


def version_key(tag):
    m = re.match(r"v?([0-9]+)\.([0-9]+)\.([0-9]+)(?:-([A-Za-z]+)\.?([0-9]*))?$", tag)
    major, minor, patch = int(m.group(1)), int(m.group(2)), int(m.group(3))
    pre = (0, m.group(4), int(m.group(5) or 0)) if m.group(4) else (1, "", 0)
    return (major, minor, patch) + pre


def release_revs(reader):
    tags = [t for t in reader.git("tag").split() if RELEASE_TAG.match(t)]
    tags.sort(key=version_key)
    revs = [(t, t) for t in tags]
    head = reader.git("rev-parse", "HEAD").strip()
    last = reader.git("rev-parse", tags[-1] + "^{commit}").strip() if tags else None
    if head != last:
        revs.append((">" + tags[-1] if tags else "HEAD", "HEAD"))
    return revs


def curated_facts(files):
    """Templates and (path, line) pins of hand-written catalog files: a
    generated entry for the same text or the same site is not emitted."""
    templates, pins = set(), set()
    for f in files:
        with open(f, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
        for e in doc.get("entries") or []:
            if e.get("generated"):
                continue
            if "template" in e:
                templates.add(e["template"])
            for p in [e.get("source") or {}] + list(e.get("also_at") or []):
                if p.get("path") and p.get("line"):
                    pins.add((p["path"], p["line"]))
    return {"templates": templates, "pins": pins}


class Dumper(yaml.SafeDumper):
    pass


def _str(dumper, s):
    if "\n" in s:
        return dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", s)


Dumper.add_representer(str, _str)


def write_layer(out, entries, stats, repo, commit, library, header):
    doc = {"schema": 1, "library": library, "defaults": {"repo": repo, "commit": commit}, "entries": entries}
    out.write(header)
    out.write(yaml.dump(doc, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=110))


HEADER = """# errshim catalog, schema 1: GENERATED by tools/extract/errshim_extract.py from the sources of
# {repo} ({what}). Do not edit: regenerate with {regen}.
# Facts only (messages, paths, lines, functions, conditions); cause, trigger and remediation are
# the extractor's own words built from those facts. A hand-written entry for the same text or site
# wins: the extractor leaves such messages out, and every generated entry has priority -1.
"""


CAPTURES = re.compile(r"entry '([^']+)': (?:match example expects capture|capture '[^']*' is )")


def strip_captures(e):
    """An entry's examples with the captures they list read again from its
    template (what comes back changes once a capture pattern is relaxed)."""
    pats = e.get("capture_patterns") or {}
    parts = re.split(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}", e["template"])
    rx, seen = [], set()
    for k, part in enumerate(parts):
        if k % 2 == 0:
            rx.append(re.escape(part.replace("{{", "{").replace("}}", "}").replace("%%", "%")))
        elif part in seen:
            rx.append("(?P=%s)" % part)
        else:
            seen.add(part)
            rx.append("(?P<%s>%s)" % (part, pats.get(part) or ("[^\n]+" if k == len(parts) - 2 and not parts[-1]
                                                                  else "[^\n]+?")))
    for ex in e.get("examples", {}).get("match", []):
        if isinstance(ex, dict):
            ex.pop("captures", None)
            m = re.search("".join(rx), ex["text"])
            if m and m.groupdict():
                ex["captures"] = m.groupdict()


SKELETON = re.compile(r"(?<!\{)\{[A-Za-z_][A-Za-z0-9_]*\}")


def fold_layers(paths, lint_log=None):
    """Generated layers of one library written by separate runs (C++ and
    Python): an entry whose template an earlier file already has is left
    out, and its places join that entry's `also_at`, so one entry names
    every place raising the text. Files are rewritten in place."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    docs, headers = [], []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        headers.append("".join(l + "\n" for l in text.splitlines() if l.startswith("#")))
        docs.append(yaml.load(text, Loader=loader))
    first = {}
    folded = 0
    # lint's findings over all of them: "E is won by / overlaps with F"
    # between two generated entries folds E into F
    into = {}
    drop = set()
    if lint_log:
        with open(lint_log, encoding="utf-8", errors="replace") as fh:
            out = fh.read()
        pairs = [(m.group(1), m.group(2)) for m in WON_BY.finditer(out)]
        pairs += [(m.group(2), m.group(1)) for m in OVERLAP.finditer(out)]
        ids = {e["id"] for doc in docs for e in doc["entries"]}
        recapture = set(CAPTURES.findall(out))
        for loser, winner in pairs:
            if loser in ids and winner not in ids:
                drop.add(loser)  # a hand-written entry wins its text
            elif loser in ids and winner in ids and loser != winner and winner not in into:
                into.setdefault(loser, winner)
    by_id = {}
    for k, doc in enumerate(docs):
        for e in doc["entries"]:
            by_id[e["id"]] = (k, e)
            key = (e.get("severity", "error"), SKELETON.sub("{}", e["template"]))
            if key not in first:
                first[key] = (k, e)
            elif first[key][1] is not e and e["id"] not in into and into.get(first[key][1]["id"]) != e["id"]:
                into[e["id"]] = first[key][1]["id"]
    if lint_log:
        for doc in docs:
            for e in doc["entries"]:
                if e["id"] in recapture:
                    strip_captures(e)
    for k, doc in enumerate(docs):
        keep = []
        for e in doc["entries"]:
            if e["id"] in drop:
                folded += 1
                continue
            if e["id"] not in into:
                keep.append(e)
                continue
            j, w = by_id[into[e["id"]]]
            seen = {e["id"]}
            while w["id"] in into and w["id"] not in seen:
                seen.add(w["id"])
                j, w = by_id[into[w["id"]]]
            if w["id"] in seen:
                keep.append(e)  # a cycle of findings: leave the entry as it is
                continue
            if w.get("capture_patterns") != e.get("capture_patterns"):
                # the same text with values typed differently: the laxer one
                w.pop("capture_patterns", None)
                strip_captures(w)
            repo = doc["defaults"]["repo"]
            also = w.setdefault("also_at", [])
            for p in [e["source"]] + e.get("also_at", []):
                p = dict(p)
                p.setdefault("commit", doc["defaults"]["commit"])
                if repo != docs[j]["defaults"]["repo"]:
                    p.setdefault("repo", repo)
                if p.get("commit") == docs[j]["defaults"]["commit"]:
                    del p["commit"]
                if p not in also and (p["path"], p["line"]) != (w["source"]["path"], w["source"]["line"]):
                    also.append(p)
            folded += 1
        doc["entries"] = keep
    for path, doc, header in zip(paths, docs, headers):
        with open(path + ".tmp", "w", encoding="utf-8") as fh:
            fh.write(header)
            fh.write(yaml.dump(doc, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=110))
        os.replace(path + ".tmp", path)
    return folded


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "fold":
        rest = argv[1:]
        log = None
        if rest[:1] == ["--lint-log"]:
            log, rest = rest[1], rest[2:]
        n = fold_layers(rest, log)
        print("errshim_extract: %d entries folded into an earlier layer's entry of the same text" % n,
              file=sys.stderr)
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["extract", "git", "facts"])
    ap.add_argument("--lang", default="rust", choices=sorted(FRONT_ENDS))
    ap.add_argument("--root")
    ap.add_argument("--git-dir")
    ap.add_argument("--rev", action="append", default=[])
    ap.add_argument("--repo", required=True)
    ap.add_argument("--commit")
    ap.add_argument("--version")
    ap.add_argument("--library", default="candle")
    ap.add_argument("--include", action="append", default=[])
    ap.add_argument("--curated", action="append", default=[])
    ap.add_argument("--exclude", action="append", default=[], help="leave out files matching this glob")
    ap.add_argument("--stats")
    ap.add_argument("--errshim", help="errshim binary: lint the layer over the --curated files and settle "
                                       "overlaps (a curated entry wins; a generated entry that another "
                                       "generated one shadows is folded into it)")
    ap.add_argument("--regen", default="tools/extract/regenerate-candle.sh")
    ap.add_argument("--extra-root", action="append", default=[], metavar="DIR=PREFIX[,GENERATED]",
                    help="more files (installed headers) under DIR, named PREFIX/REL, or "
                         "GENERATED/REL when --root has no PREFIX/REL; one --root has is read from --root only")
    a = ap.parse_args(argv)
    front, exts = FRONT_ENDS[a.lang]
    EXCLUDE[:] = a.exclude

    if a.command in ("extract",) or (a.command == "facts" and a.root):
        if not a.root or not a.commit:
            ap.error("extract needs --root and --commit")
        files = list(tree_files(a.root, a.include, exts))
        have = {p for p, _ in files}
        for spec in a.extra_root:
            # DIR=PREFIX[,GENERATED]: DIR/REL is PREFIX/REL; one the source
            # tree lacks is a generated file, named GENERATED/REL
            d, _, prefixes = spec.partition("=")
            prefix, _, generated = prefixes.partition(",")
            for rel, text in tree_files(d, [], exts):
                name = (prefix.rstrip("/") + "/" + rel) if prefix else rel
                if os.path.exists(os.path.join(a.root, name)):
                    continue
                if generated:
                    name = generated.rstrip("/") + "/" + rel
                if name not in have:
                    have.add(name)
                    files.append((name, text))
        facts = facts_of_files(files, front)
        label = a.version or "HEAD"
        versions = [(label, a.commit, facts)]
        order = [label]
        head_commit = a.commit
        what = "commit %s" % a.commit
    else:
        if not a.git_dir:
            ap.error("git needs --git-dir")
        reader = GitReader(a.git_dir)
        revs = [(r, r) for r in a.rev] if a.rev else release_revs(reader)
        versions = git_versions(reader, revs, a.include, front, exts)
        reader.close()
        order = [label for label, _ in revs]
        head_commit = versions[-1][1]
        what = "%d revisions: %s .. %s" % (len(revs), revs[0][0], revs[-1][0])

    for label, _, f in versions:
        for e in f["errors"]:
            print("errshim_extract: warning: %s: %s (file skipped)" % (label, e), file=sys.stderr)
    if a.command == "facts":
        json.dump([{"version": l, "commit": c, **f} for l, c, f in versions], sys.stdout, indent=1)
        return 0
    messages = layer.collect_pieces(versions) if a.lang in PIECES else layer.collect(versions)
    entries, stats = layer.build_entries(messages, order, a.repo, head_commit, curated_facts(a.curated),
                                         library=a.library, style=STYLES.get(a.lang))
    if a.errshim:
        entries, shadow = settle_overlaps(a.errshim, a.curated, entries, a.library, a.repo, head_commit)
        stats.update(shadow)
    stats["sites_newest"] = count_sites(versions[-1][2])
    if a.stats:
        with open(a.stats, "w") as fh:
            json.dump(stats, fh, indent=1, sort_keys=True)
    write_layer(sys.stdout, entries, stats, a.repo, head_commit, a.library,
                HEADER.format(repo=a.repo, what=what, regen=a.regen))
    return 0


def torch_area(path):
    """An id part from a torch path: aten/src/ATen/native/cpu/X.cpp ->
    aten-native, torch/nn/functional.py -> nn-functional."""
    parts = [p for p in re.sub(r"\.[a-z]+$", "", path).split("/") if p not in ("src", "ATen", "csrc", "torch")]
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts[:2]).lower()).strip("-") or "core"


def cpp_wrap(text, m, site):
    """The message as torch 1.13 shows it in Python with
    TORCH_SHOW_CPP_STACKTRACES=1 (a warning: with its internal location)."""
    where = "./%s:%d" % (site["path"], site["line"])
    if getattr(m, "severity", "error") == "warning":
        return "/work/model.py:7: UserWarning: %s (Triggered internally at %s.)\n  out = layer(x)" % (text, where)
    return ("Traceback (most recent call last):\n  File \"/work/model.py\", line 7, in forward\n    out = layer(x)\n"
            "%s: %s\nException raised from %s at %s (most recent call first):\n"
            "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x9e (0x7f0000001000 in "
            "/lib/x86_64-linux-gnu/libc10.so.1.13)" % (site.get("python_class") or "RuntimeError", text,
                                                       site.get("function") or "operator()", where))


def python_wrap(text, m, site):
    """The message as Python shows it: a traceback ending in the raising
    file, a warning line, or a log line."""
    full = "/usr/lib/python3/dist-packages/" + site["path"]
    if site["form"].startswith("logger_"):
        return "WARNING:%s:%s" % (re.sub(r"\.py$", "", site["path"]).replace("/", "."), text)
    if getattr(m, "severity", "error") == "warning":
        return "%s:%d: %s: %s\n  warnings.warn(" % (full, site["line"], site.get("python_class") or "UserWarning",
                                                      text)
    return ('Traceback (most recent call last):\n  File "/work/model.py", line 7, in forward\n    out = layer(x)\n'
            '  File "%s", line %d, in %s\n    raise\n%s: %s' % (
                full, site["line"], (site.get("symbol") or "<module>").split(".")[-1],
                site.get("python_class") or "Exception", text))


STYLES = {"cpp": {"area": torch_area, "wrap": cpp_wrap, "version_key": "torch"},
          "python": {"area": torch_area, "wrap": python_wrap, "version_key": "torch"}}


WON_BY = re.compile(r"entry '([^']+)': match example is won by '([^']+)'")
OVERLAP = re.compile(r"entry '([^']+)': overlaps with '([^']+)'")
# an example another entry takes (a shorter or laxer template wins it)
GOES_TO = re.compile(r"entry '([^']+)': match example is not matched by this entry \(it goes to '([^']+)'\)")
UNMATCHED = re.compile(r"entry '([^']+)': match example is not matched by any entry: '(.{0,40})")


def settle_overlaps(errshim, curated, entries, library, repo, commit, rounds=6):
    """Runs `errshim lint CURATED... LAYER` and resolves what it reports
    between entries: an example of a generated entry E won by a curated
    entry drops E (the curated entry wins); won by, or tied with, another
    generated entry F drops E and lists E's places in F's `also_at`, so the
    entry that claims the text names every place raising it."""
    import tempfile
    by_id = {e["id"]: e for e in entries}
    stats = {"shadowed_by_curated": 0, "folded": 0, "curated_claims": [], "unmatched_dropped": 0,
             "wrapped_example_dropped": 0}
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "layer.yaml")
            with open(path, "w") as fh:
                write_layer(fh, list(by_id.values()), {}, repo, commit, library, "")
            r = subprocess.run([errshim, "lint"] + list(curated) + [path], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
            out = r.stdout.decode(errors="replace")
        pairs = [(m.group(1), m.group(2)) for m in WON_BY.finditer(out)]
        pairs += [(m.group(2), m.group(1)) for m in OVERLAP.finditer(out)]
        pairs += [(m.group(1), m.group(2)) for m in GOES_TO.finditer(out)]
        changed = False
        # an example errshim reads differently from what the extractor
        # rendered (a message that starts like an exception class, a
        # multi-line text inside a traceback): the wrapped form is left
        # out; when the bare text itself is not matched, the entry is
        for eid, head in UNMATCHED.findall(out):
            e = by_id.get(eid)
            if e is None:
                continue
            match = e["examples"]["match"]
            bare = match[0]["text"] if isinstance(match[0], dict) else match[0]
            if len(match) > 1 and not bare.startswith(head):
                e["examples"]["match"] = match[:1]
                stats["wrapped_example_dropped"] += 1
            else:
                del by_id[eid]
                stats["unmatched_dropped"] += 1
            changed = True
        for loser, winner in pairs:
            if loser not in by_id:
                continue
            if winner not in by_id:
                stats["shadowed_by_curated"] += 1
                stats["curated_claims"].append([loser, winner])
                del by_id[loser]
                changed = True
                continue
            if loser == winner:
                continue
            w, e = by_id[winner], by_id.pop(loser)
            also = w.setdefault("also_at", [])
            for p in [e["source"]] + e.get("also_at", []):
                if p not in also and p != w["source"]:
                    also.append(p)
            stats["folded"] += 1
            changed = True
        if not changed:
            if r.returncode != 0:
                raise SystemExit("errshim lint still reports problems:\n" + out[-4000:])
            break
    return list(by_id.values()), stats


def count_sites(facts):
    per = {}
    for s in facts["sites"] + facts["constructions"]:
        crate = s["path"].split("/", 1)[0]
        per[crate] = per.get(crate, 0) + 1
    return per


if __name__ == "__main__":
    sys.exit(main())
