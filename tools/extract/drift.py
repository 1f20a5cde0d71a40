#!/usr/bin/env python3
"""errshim drift: which catalog entries a newer source tree has moved, reworded or dropped.

  drift.py --catalog FILE... (--tree DIR | --git-dir DIR [--to REV]) [--repo OWNER/NAME]
           [--json] [--rewrite]

For every entry of the catalog files pinned to the repository (its `source`
and each `also_at`), the pinned text is looked for in the newer tree:

  unchanged   the text is raised at the pinned line
  moved       the same file raises it at another line
  moved-file  another file raises it (the pinned file lost it or is gone)
  reworded    no file holds the text; a string in the pinned file is close to it
  gone        nothing holds it (with --git-dir; from a plain tree, where an
              error enum's variant built at the pin cannot be told from a
              removed text, it is left unchecked)

The text looked for is the template's longest literal run (placeholders and
format escapes are the same in the template and in the code, so the run is
the code's own spelling). With --git-dir the old file is read at the pin's
commit, so the distance between the raise line and its text is known and a
moved pin keeps it; with --tree the raise line is found above the text.

--rewrite updates each moved or moved-file pin in place: its `line`, its
`path` when the file changed, and its `commit` (added when the pin had
none) to the newer revision; every other byte of the file is kept. Entries
that are reworded or gone are only reported: their text must be rewritten
by a person (or the layer regenerated).
"""

import argparse
import difflib
import json
import os
import re
import subprocess
import sys

import yaml

PLACEHOLDER = re.compile(r"\{\{|\}\}|%%|\{[^{}]*\}|%\([A-Za-z_]\w*\)[sdrifx]|%[sdrifx]")
STRING_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"|\'((?:[^\'\\\n]|\\.)*)\'')
# A line that raises: where a pin points when its text sits on the lines below.
RAISE_WORDS = re.compile(r"bail!|panic!|unimplemented!|todo!|Err\(|Error::|raise |warn|TORCH_|AT_ERROR|C10_|"
                         r"CAFFE_ENFORCE|logger\.|assert ")
MAX_RAISE_DISTANCE = 6  # lines between a raise and its text, at most
SOURCE_EXTS = (".rs", ".py", ".cpp", ".cc", ".h", ".hpp", ".cu", ".metal")


def literal_runs(template):
    """The literal runs of a template, escapes kept (as the code spells them)."""
    runs, last = [], 0
    for m in PLACEHOLDER.finditer(template):
        if m.group(0) in ("{{", "}}", "%%"):
            continue
        runs.append(template[last:m.start()])
        last = m.end()
    runs.append(template[last:])
    return [r.strip() for r in runs if r.strip()]


def key_text(template):
    runs = literal_runs(template)
    return max(runs, key=len) if runs else ""


def spellings(text):
    """How a string's text may be written in the code."""
    out = [text]
    for a, b in (('"', '\\"'), ("'", "\\'"), ("\\", "\\\\")):
        if a in text:
            out.append(text.replace(a, b))
    return out


def lines_holding(code, text):
    """1-based lines where `text` (in one of its spellings) starts."""
    found = set()
    for s in spellings(text):
        start = 0
        while True:
            at = code.find(s, start)
            if at < 0:
                break
            found.add(code.count("\n", 0, at) + 1)
            start = at + 1
    return sorted(found)


CODE_PLACEHOLDER = r"(?:\{[^{}\n]*\}|%(?:\([A-Za-z_]\w*\))?[-#0-9.]*[sdrifxg])"


class Finder:
    """Finds where a template's text starts in code: the whole string (its
    placeholders in any of the code's spellings, the string closed right
    after), or, for a message the code builds from several strings, its
    longest literal run."""

    def __init__(self, template, whole=True):
        self.template = template
        self.key = key_text(template)
        self.whole = whole
        parts, last = [], 0
        for m in PLACEHOLDER.finditer(template):
            if m.group(0) in ("{{", "}}", "%%"):
                continue
            parts.append(self._literal(template[last:m.start()]))
            parts.append(CODE_PLACEHOLDER)
            last = m.end()
        parts.append(self._literal(template[last:]))
        self.regex = re.compile("(?<=[\"'])" + "".join(parts) + "(?=[\"'])")

    @staticmethod
    def _literal(text):
        out = []
        for ch in text:
            if ch in "\"'":
                out.append("\\\\?" + re.escape(ch))
            elif ch == "\\":
                out.append(r"\\\\?")
            else:
                out.append(re.escape(ch))
        return "".join(out)

    def lines(self, code):
        if self.whole:
            return sorted({code.count("\n", 0, m.start()) + 1 for m in self.regex.finditer(code)})
        return lines_holding(code, self.key)

    def loose(self):
        return Finder(self.template, whole=False)


def raise_line_above(code_lines, text_line):
    for line in range(text_line, max(0, text_line - MAX_RAISE_DISTANCE) , -1):
        if RAISE_WORDS.search(code_lines[line - 1]):
            return line
    return text_line


class Tree:
    """The newer source tree: a directory, or a revision of a (bare) git repository."""

    def __init__(self, root=None, git_dir=None, rev="HEAD"):
        self.root, self.git_dir, self.rev = root, git_dir, rev
        self.commit = None
        if git_dir:
            self.commit = self._git("rev-parse", rev + "^{commit}").strip()
        self._files = None
        self._cache = {}

    def _git(self, *args):
        return subprocess.run(["git", "--git-dir", self.git_dir] + list(args), check=True, capture_output=True,
                              text=True, errors="replace").stdout

    def files(self):
        if self._files is None:
            if self.git_dir:
                names = self._git("ls-tree", "-r", "--name-only", self.commit).splitlines()
            else:
                names = []
                for d, dirs, fs in os.walk(self.root):
                    dirs[:] = [x for x in dirs if not x.startswith(".") and x != "target"]
                    names += [os.path.relpath(os.path.join(d, f), self.root).replace(os.sep, "/") for f in fs]
            self._files = sorted(n for n in names if n.endswith(SOURCE_EXTS))
        return self._files

    def read(self, path, rev=None):
        key = (path, rev)
        if key not in self._cache:
            try:
                if self.git_dir:
                    self._cache[key] = self._git("show", "%s:%s" % (rev or self.commit, path))
                else:
                    with open(os.path.join(self.root, path), encoding="utf-8", errors="replace") as fh:
                        self._cache[key] = fh.read()
            except (OSError, subprocess.CalledProcessError):
                self._cache[key] = None
        return self._cache[key]


def nearest(lines, target):
    return min(lines, key=lambda n: (abs(n - target), n)) if lines else None


def check_pin(tree, pin, template, default_commit):
    """The verdict for one pin: a dict with status and, where known, the new place."""
    path, line = pin.get("path"), int(pin.get("line") or 0)
    finder = Finder(template) if template else None
    out = {"path": path, "line": line, "text": finder.key if finder else ""}
    if not finder or not finder.key or not path:
        out["status"] = "unchecked"
        return out

    def near(found):
        at = nearest([n for n in found if n >= line], line)
        return at if at is not None and at - line <= MAX_RAISE_DISTANCE else None

    # Which finder holds at the pinned commit, and how far below the raise
    # line the text starts there. A pin whose file never held the text (the
    # site that builds an error enum's variant, whose text is the variant's)
    # is followed by the code of its own line instead.
    distance = None
    if tree.git_dir:
        old = tree.read(path, pin.get("commit") or default_commit)
        if old is not None:
            at = near(finder.lines(old))
            if at is None:
                finder = finder.loose()
                at = near(finder.lines(old))
            if at is not None:
                distance = at - line
            else:
                old_lines = old.split("\n")
                own = old_lines[line - 1].strip() if 0 < line <= len(old_lines) else ""
                if len(own) < 12 or old.count(own) != 1:
                    out["status"] = "unchecked"  # its line alone does not identify it
                    return out
                finder = Finder("", whole=False)
                finder.key = own
                distance = 0
                out["followed"] = "line"
    else:
        # No old file to say which finder holds: a close string in the file
        # is a new wording; else the text may be built from several strings.
        code = tree.read(path) or ""
        if not finder.lines(code) and not closest_string(code, template) and finder.loose().lines(code):
            finder = finder.loose()

    def place(code, text_line):
        if distance is not None:
            return max(1, text_line - distance)
        return raise_line_above(code.split("\n"), text_line)

    code = tree.read(path)
    if code is not None:
        held = finder.lines(code)
        if held:
            new = nearest([place(code, n) for n in held], line)
            out.update(status="unchanged" if new == line else "moved", new_line=new)
            return out
    for other in tree.files():
        if other == path:
            continue
        c = tree.read(other)
        held = finder.lines(c) if c else []
        if held:
            out.update(status="moved-file", new_path=other, new_line=place(c, held[0]))
            return out
    if code is not None and out.get("followed") != "line":
        close = closest_string(code, template if finder.whole else finder.key)
        if close:
            best, ratio, best_line = close
            out.update(status="reworded", new_text=best, new_line=place(code, best_line), similarity=ratio)
            return out
    # Without the history, a text found nowhere may as well be an enum
    # variant's, built at this pin and raised elsewhere: only git tells.
    out["status"] = "gone" if tree.git_dir else "unchecked"
    return out


def closest_string(code, text):
    """(string, similarity, line) of the string literal in `code` closest to `text`, if close."""
    best, best_ratio, best_line = None, 0.0, 0
    for m in STRING_LITERAL.finditer(code):
        s = m.group(1) if m.group(1) is not None else m.group(2)
        if len(s) < len(text) // 2:
            continue
        ratio = difflib.SequenceMatcher(None, text, s).ratio()
        if ratio > best_ratio:
            best, best_ratio, best_line = s, ratio, code.count("\n", 0, m.start()) + 1
    return (best, round(best_ratio, 2), best_line) if best is not None and best_ratio >= 0.6 else None


def entry_pins(entry):
    if isinstance(entry.get("source"), dict):
        yield "source", None, entry["source"]
    for i, p in enumerate(entry.get("also_at") or []):
        if isinstance(p, dict):
            yield "also_at", i, p


def drift(catalog_paths, tree, repo=None):
    report = []
    for cpath in catalog_paths:
        with open(cpath, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
        defaults = doc.get("defaults") or {}
        for entry in doc.get("entries") or []:
            template = entry.get("template") or ""
            for field, index, pin in entry_pins(entry):
                if repo and (pin.get("repo") or defaults.get("repo")) != repo:
                    continue
                v = check_pin(tree, pin, template, defaults.get("commit"))
                v.update(catalog=cpath, id=entry.get("id"), field=field if index is None else "%s[%d]" % (field, index))
                report.append(v)
    return report


# ------------------------------------------------------------------ rewriting

def _pin_nodes(doc_node):
    """(entry id, field, pin MappingNode) for every pin in a composed catalog."""
    def get(node, key):
        for k, v in node.value:
            if k.value == key:
                return v
        return None

    entries = get(doc_node, "entries")
    for e in entries.value if entries is not None else []:
        ident = get(e, "id")
        src = get(e, "source")
        if isinstance(src, yaml.MappingNode):
            yield ident.value if ident else None, "source", src
        also = get(e, "also_at")
        if isinstance(also, yaml.SequenceNode):
            for i, p in enumerate(also.value):
                if isinstance(p, yaml.MappingNode):
                    yield ident.value if ident else None, "also_at[%d]" % i, p


def rewrite(cpath, verdicts, commit):
    """Splices the new line/path/commit of moved pins into `cpath`; returns how many pins changed."""
    with open(cpath, encoding="utf-8", newline="") as fh:
        text = fh.read()
    todo = {(v["id"], v["field"]): v for v in verdicts
            if v["catalog"] == cpath and v["status"] in ("moved", "moved-file")}
    edits = []  # (start, end, replacement)
    for ident, field, node in _pin_nodes(yaml.compose(text)):
        v = todo.get((ident, field))
        if not v:
            continue
        values = {k.value: val for k, val in node.value}
        edits.append((values["line"].start_mark.index, values["line"].end_mark.index, str(v["new_line"])))
        if "new_path" in v:
            edits.append((values["path"].start_mark.index, values["path"].end_mark.index, v["new_path"]))
        if commit:
            if "commit" in values:
                edits.append((values["commit"].start_mark.index, values["commit"].end_mark.index, commit))
            elif node.flow_style:
                end = values["line"].end_mark.index
                edits.append((end, end, ", commit: " + commit))
            else:
                # A line of its own below `line:`, indented like it, with the file's line end.
                key = next(k for k, _ in node.value if k.value == "line")
                nl = text.find("\n", values["line"].end_mark.index)
                eol = "\r\n" if nl > 0 and text[nl - 1] == "\r" else "\n"
                added = " " * key.start_mark.column + "commit: " + commit
                edits.append((nl + 1, nl + 1, added + eol) if nl >= 0 else (len(text), len(text), eol + added))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    if edits:
        with open(cpath, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    return len(todo)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--catalog", nargs="+", required=True, help="catalog YAML files")
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--tree", help="a checkout of the newer sources")
    where.add_argument("--git-dir", help="a (bare) git repository")
    ap.add_argument("--to", default="HEAD", help="the newer revision in --git-dir (default HEAD)")
    ap.add_argument("--commit", help="with --tree: the commit the tree is at (needed by --rewrite)")
    ap.add_argument("--repo", help="only pins of this repository (OWNER/NAME)")
    ap.add_argument("--json", action="store_true", help="one JSON document")
    ap.add_argument("--rewrite", action="store_true", help="update moved pins in the catalog files")
    a = ap.parse_args(argv)
    tree = Tree(root=a.tree) if a.tree else Tree(git_dir=a.git_dir, rev=a.to)
    if a.tree:
        tree.commit = a.commit
    if a.rewrite and not tree.commit:
        ap.error("--rewrite with --tree needs --commit SHA: a pin's new line is a fact of that commit")
    report = drift(a.catalog, tree, a.repo)
    counts = {}
    for v in report:
        counts[v["status"]] = counts.get(v["status"], 0) + 1
    if a.json:
        json.dump({"commit": tree.commit, "counts": counts, "pins": report}, sys.stdout, indent=1)
        print()
    else:
        for v in report:
            if v["status"] in ("unchanged", "unchecked"):
                continue
            where = "%s:%s" % (v.get("new_path", v["path"]), v.get("new_line", "?"))
            extra = ' now "%s"' % v["new_text"] if "new_text" in v else ""
            print("%-10s %s %s %s:%d -> %s%s" % (v["status"], v["id"], v["field"], v["path"], v["line"],
                                                 where if v["status"] != "gone" else "-", extra))
        print("drift: " + ", ".join("%d %s" % (n, s) for s, n in sorted(counts.items())))
    if a.rewrite:
        changed = sum(rewrite(c, report, tree.commit) for c in a.catalog)
        print("drift: rewrote %d pin(s)" % changed, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
