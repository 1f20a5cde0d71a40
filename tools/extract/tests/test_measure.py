"""Tests of measure_candle.py's neighbour sets (no clone or binary needed):
which site a neighbour expects, and which ones read two ways."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import measure_candle as mc  # noqa: E402


def entry(eid, template, path, text, captures=None, near="x", capture_patterns=None):
    e = {"id": eid, "template": template, "source": {"path": path, "line": 1},
         "examples": {"match": [{"text": text, "captures": captures or {}}], "no_match": [near]}}
    if capture_patterns:
        e["capture_patterns"] = capture_patterns
    return e


class NeighbourCases(unittest.TestCase):
    def test_placeholder_neighbour_expects_the_donors_site_and_names_the_wrapper(self):
        outer = entry("g.outer", "failed to load the weights: {reason}", "a.rs", "failed to load the weights: Q1",
                      {"reason": "Q1"})
        inner = entry("g.inner", "lstm is not supported", "b.rs", "lstm is not supported")
        cases = [c for c in mc.neighbour_cases([outer, inner]) if c[0].startswith("neighbour-placeholder")]
        self.assertEqual(len(cases), 1)  # only the entry with a free-text capture
        tag, text, expect, wrapper, nested = cases[0]
        self.assertTrue(text.startswith("failed to load the weights: "))
        donor = text[len("failed to load the weights: "):]
        self.assertEqual(expect, {"b.rs"} if donor == "lstm is not supported" else {"a.rs"})
        self.assertEqual(nested, ("g.outer", donor))
        self.assertEqual(wrapper, {"a.rs"} - expect)

    def test_typed_capture_gets_no_placeholder_neighbour(self):
        typed = entry("g.typed", "unexpected dtype {dtype} here", "a.rs", "unexpected dtype F32 here",
                      {"dtype": "F32"}, capture_patterns={"dtype": "[A-Z0-9]+"})
        self.assertEqual([c[0] for c in mc.neighbour_cases([typed])], ["neighbour-literal"])

    def test_donor_holding_the_wrappers_literal_is_ambiguous(self):
        outer = entry("g.outer", "shape should be [{n}]", "a.rs", "shape should be [Q1]", {"n": "Q1"})
        donor = entry("g.donor", "kernel shape [{s}] is bad", "b.rs", "kernel shape [2, 3] is bad",
                      {"s": "2, 3"}, capture_patterns={"s": "[0-9, ]+"})
        tags = {c[0] for c in mc.neighbour_cases([outer, donor], seed=1) if c[0] != "neighbour-literal"}
        # whichever donor the seed picks, the outer's "]" is in it
        self.assertEqual(tags, {"neighbour-placeholder-ambiguous"})

    def test_literal_runs_read_escaped_braces(self):
        self.assertEqual(mc.literal_runs("Op {{ name: {n:?} }}"), ["Op { name: ", " }"])


if __name__ == "__main__":
    unittest.main()
