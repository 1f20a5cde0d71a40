"""Tests of drift.py on a small git repository built for them: a file whose
raise sites move, change wording, leave for another file or disappear."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import drift  # noqa: E402

OLD_A = """fn a() {
    bail!("cache of {n} entries is full")
}
fn b() {
    bail!("head dim {d} is not supported")
}
fn c() {
    candle::bail!(
        "sliding window needs flash attention"
    )
}
fn d() {
    bail!("this one goes away entirely")
}
fn e() { return Err(Error::Foo { x: 1 }) }
"""

NEW_A = """// two lines
// above everything
fn a() {
    bail!("cache of {n} entries is full")
}
fn b() {
    bail!("head dim {d} is not supported by this kernel")
}
fn d() {
}
fn e() { return Err(Error::Foo { x: 1 }) }
"""

NEW_B = """fn c() {
    candle::bail!(
        "sliding window needs flash attention"
    )
}
"""


def catalog(commit, crlf=False):
    text = (
        "schema: 1\n"
        "library: test\n"
        "defaults: {repo: o/r, commit: %s}\n"
        "entries:\n"
        "  - id: t.full   # a comment that must stay\n"
        "    template: 'cache of {n} entries is full'\n"
        "    source:\n"
        "      path: src/a.rs\n"
        "      line: 2\n"
        "  - id: t.head\n"
        "    template: 'head dim {d} is not supported'\n"
        "    source: {path: src/a.rs, line: 5}\n"
        "  - id: t.window\n"
        "    template: sliding window needs flash attention\n"
        "    source: {path: src/a.rs,   line: 8, commit: %s}\n"
        "  - id: t.gone\n"
        "    template: this one goes away entirely\n"
        "    source: {path: src/a.rs, line: 13}\n"
        "  - id: t.variant\n"
        "    template: 'foo happened: {x}'\n"
        "    source: {path: src/a.rs, line: 15}\n"
    ) % (commit, commit)
    return text.replace("\n", "\r\n") if crlf else text


class DriftOnAGitHistory(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.repo = os.path.join(self.tmp.name, "repo")
        os.makedirs(os.path.join(self.repo, "src"))
        self.git("init", "-q")
        self.old = self.commit({"src/a.rs": OLD_A})
        self.new = self.commit({"src/a.rs": NEW_A, "src/b.rs": NEW_B})
        self.tree = drift.Tree(git_dir=os.path.join(self.repo, ".git"), rev="HEAD")

    def tearDown(self):
        self.tmp.cleanup()

    def git(self, *args):
        env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                   GIT_COMMITTER_EMAIL="t@t")
        return subprocess.run(["git", "-C", self.repo] + list(args), check=True, capture_output=True, text=True,
                              env=env).stdout.strip()

    def commit(self, files):
        for path, text in files.items():
            with open(os.path.join(self.repo, path), "w") as fh:
                fh.write(text)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "x")
        return self.git("rev-parse", "HEAD")

    def write_catalog(self, crlf=False):
        path = os.path.join(self.tmp.name, "cat.yaml")
        with open(path, "w", newline="") as fh:
            fh.write(catalog(self.old, crlf))
        return path

    def verdicts(self, path):
        return {v["id"]: v for v in drift.drift([path], self.tree)}

    def test_reports_each_kind_of_drift(self):
        v = self.verdicts(self.write_catalog())
        self.assertEqual((v["t.full"]["status"], v["t.full"]["new_line"]), ("moved", 4))
        self.assertEqual(v["t.head"]["status"], "reworded")
        self.assertEqual(v["t.head"]["new_text"], "head dim {d} is not supported by this kernel")
        self.assertEqual(v["t.head"]["new_line"], 7)
        # The raise line keeps its distance to its text (two lines above it here).
        self.assertEqual((v["t.window"]["status"], v["t.window"]["new_path"], v["t.window"]["new_line"]),
                         ("moved-file", "src/b.rs", 2))
        self.assertEqual(v["t.gone"]["status"], "gone")
        # Its text is not in the file (an enum variant's): followed by its own line.
        self.assertEqual((v["t.variant"]["status"], v["t.variant"]["new_line"]), ("moved", 11))

    def test_unchanged_when_the_tree_is_the_pinned_commit(self):
        tree = drift.Tree(git_dir=os.path.join(self.repo, ".git"), rev=self.old)
        statuses = {v["id"]: v["status"] for v in drift.drift([self.write_catalog()], tree)}
        self.assertEqual(statuses, {"t.full": "unchanged", "t.head": "unchanged", "t.window": "unchanged",
                                    "t.gone": "unchanged", "t.variant": "unchanged"})

    def check_rewrite(self, crlf):
        path = self.write_catalog(crlf)
        before = catalog(self.old, crlf)
        changed = drift.rewrite(path, drift.drift([path], self.tree), self.tree.commit)
        self.assertEqual(changed, 3)  # full, window, variant; reworded and gone are only reported
        with open(path, newline="") as fh:
            after = fh.read()
        eol = "\r\n" if crlf else "\n"
        expected = (before
                    .replace("      line: 2" + eol, "      line: 4" + eol + "      commit: " + self.new + eol)
                    .replace("{path: src/a.rs,   line: 8, commit: " + self.old + "}",
                             "{path: src/b.rs,   line: 2, commit: " + self.new + "}")
                    .replace("{path: src/a.rs, line: 15}", "{path: src/a.rs, line: 11, commit: " + self.new + "}"))
        self.assertEqual(after, expected)
        v = self.verdicts(path)
        self.assertEqual(v["t.full"]["status"], "unchanged")
        self.assertEqual(v["t.window"]["status"], "unchanged")

    def test_rewrite_changes_only_the_moved_pins(self):
        self.check_rewrite(crlf=False)

    def test_rewrite_keeps_crlf_line_ends(self):
        self.check_rewrite(crlf=True)

    def test_tree_mode_finds_the_raise_line_above_the_text(self):
        root = os.path.join(self.tmp.name, "tree")
        os.makedirs(os.path.join(root, "src"))
        for name, text in (("a.rs", NEW_A), ("b.rs", NEW_B)):
            with open(os.path.join(root, "src", name), "w") as fh:
                fh.write(text)
        v = {x["id"]: x for x in drift.drift([self.write_catalog()], drift.Tree(root=root))}
        self.assertEqual((v["t.full"]["status"], v["t.full"]["new_line"]), ("moved", 4))
        self.assertEqual((v["t.window"]["new_path"], v["t.window"]["new_line"]), ("src/b.rs", 2))
        self.assertEqual(v["t.head"]["status"], "reworded")
        # A plain tree cannot tell a removed text from a variant built at the pin.
        self.assertEqual((v["t.gone"]["status"], v["t.variant"]["status"]), ("unchecked", "unchecked"))

    def test_rewrite_from_a_tree_needs_its_commit(self):
        with self.assertRaises(SystemExit):
            drift.main(["--catalog", self.write_catalog(), "--tree", self.repo, "--rewrite"])


class TemplateText(unittest.TestCase):
    def test_key_text_is_the_longest_literal_run_with_escapes_kept(self):
        self.assertEqual(drift.key_text("q {a} and {{literal}} braces {b:?}"), "and {{literal}} braces")
        self.assertEqual(drift.key_text("got %d heads, expected %(n)s"), "heads, expected")


if __name__ == "__main__":
    unittest.main()
