"""Tests of the transformers layer builder (transformers_layer.py): the
manifest's sha256 check and the merge of several versions into
version-ranged entries, on two versions of a fixture file written for them
(fixtures/transformers: multi-line f-strings, `%` and `.format` messages,
`warning_once` with logging's % arguments, `warnings.warn`)."""

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures", "transformers")
sys.path.insert(0, os.path.dirname(HERE))

import transformers_layer  # noqa: E402

import yaml  # noqa: E402

PATH = "src/transformers/generation/toy.py"
# three releases: v1, then v2 twice (a text is present until the release
# before the first one without it)
RELEASES = [("a" * 40, "4.40.0.dev0", "4.40.0", "v1"), ("b" * 40, "4.41.0.dev0", "4.41.0", "v2"),
            ("c" * 40, "4.42.0.dev0", "4.42.0", "v2")]


def build(tweak=None, lint=False):
    """The layer (parsed) and stats built from a cache of the fixtures; with
    `lint`, also `errshim lint`'s exit code and output on it (ERRSHIM)."""
    tmp = tempfile.mkdtemp()
    try:
        rows = []
        for commit, version, label, tree in RELEASES:
            dst = os.path.join(tmp, "cache", commit, PATH)
            os.makedirs(os.path.dirname(dst))
            shutil.copy(os.path.join(FIXTURES, tree, PATH), dst)
            with open(dst, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            rows.append("\t".join((commit, version, label, PATH, digest)))
        if tweak:
            rows = tweak(rows)
        manifest = os.path.join(tmp, "files.txt")
        with open(manifest, "w") as fh:
            fh.write("# fixture manifest\n" + "\n".join(rows) + "\n")
        stats = os.path.join(tmp, "stats.json")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            transformers_layer.main(["build", "--cache", os.path.join(tmp, "cache"), "--manifest", manifest,
                                     "--stats", stats])
        with open(stats) as fh:
            st = json.load(fh)
        if lint:
            path = os.path.join(tmp, "layer.yaml")
            with open(path, "w") as fh:
                fh.write(out.getvalue())
            r = subprocess.run([os.environ["ERRSHIM"], "lint", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            return r.returncode, r.stdout.decode("utf-8", "replace")
        return yaml.safe_load(out.getvalue()), st
    finally:
        shutil.rmtree(tmp)


def by_text(doc, words):
    found = [e for e in doc["entries"] if words in e["template"]]
    assert len(found) == 1, (words, [e["template"] for e in found])
    return found[0]


class TransformersLayer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.doc, cls.stats = build()

    def test_text_in_every_version_has_no_range_and_the_newest_line(self):
        e = by_text(self.doc, "has to be divisible by")
        self.assertEqual(e["template"], "`num_beams` ({num_beams}) has to be divisible by `num_beam_groups` "
                                        "({num_groups}) for grouped beam search.")
        self.assertNotIn("applies_to", e)
        self.assertEqual(e["source"]["line"], 16)  # v2's line; v1 raises it at 13
        self.assertEqual(e["source"]["symbol"], "ToyGenerator.check_beams")
        self.assertEqual(e["error_class"], "ValueError")

    def test_removed_text_ends_before_the_first_release_without_it(self):
        e = by_text(self.doc, "is not known to the toy generator")
        self.assertEqual(e["template"], "The toy cache implementation {cache_name} is not known to the toy "
                                        "generator")
        self.assertEqual(e["applies_to"], {"transformers": "<4.41.0"})
        self.assertEqual(e["error_class"], "NotImplementedError")
        self.assertEqual(e["source"]["commit"], "a" * 40)  # only v1 raises it

    def test_added_text_starts_at_its_first_release(self):
        e = by_text(self.doc, "is not supported by the toy generator")
        self.assertEqual(e["template"], "The toy cache implementation {cache_name} is not supported by the toy "
                                        "generator")
        self.assertEqual(e["applies_to"], {"transformers": ">=4.41.0"})
        self.assertNotIn("commit", e["source"])  # the newest version's, the layer's default

    def test_warning_once_with_logging_arguments_is_a_warning(self):
        e = by_text(self.doc, "tokens is longer than")
        self.assertEqual(e["severity"], "warning")
        self.assertEqual(e["template"], "The prompt of {prompt_length} tokens is longer than the toy generator's "
                                        "max_length of {max_length} tokens")
        self.assertIn("logger_warning_once", e["tags"])

    def test_warnings_warn_keeps_its_category_and_range(self):
        e = by_text(self.doc, "use_old_toy_path")
        self.assertEqual((e["severity"], e["error_class"]), ("warning", "FutureWarning"))
        self.assertEqual(e["applies_to"], {"transformers": "<4.41.0"})

    def test_bare_placeholder_and_few_letter_messages_are_not_entries(self):
        self.assertFalse([e for e in self.doc["entries"] if e["template"] in ("{name}", "bad {name}")])
        self.assertGreaterEqual(self.stats["generic"], 1)
        self.assertEqual(len(self.doc["entries"]), 5)
        self.assertEqual([v["label"] for v in self.stats["versions"]], ["4.40.0", "4.41.0", "4.42.0"])

    def test_changed_file_stops_the_build(self):
        def corrupt(rows):
            commit, version, label, path, _ = rows[1].split("\t")
            rows[1] = "\t".join((commit, version, label, path, "0" * 64))
            return rows
        with self.assertRaises(SystemExit) as cm:
            build(corrupt)
        self.assertIn("sha256", str(cm.exception))
        self.assertIn("b" * 40, str(cm.exception))

    @unittest.skipUnless(os.environ.get("ERRSHIM"), "ERRSHIM (an errshim binary) not set")
    def test_layer_is_lint_clean(self):
        rc, out = build(lint=True)
        self.assertEqual(rc, 0, out)


if __name__ == "__main__":
    unittest.main()
