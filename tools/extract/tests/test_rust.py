"""Tests of the errshim extractor's Rust front end and layer builder, on
fixture files written for them (tests/fixtures). With ERRSHIM set to an
errshim binary, the layer built from the fixtures is also linted by it."""

import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
sys.path.insert(0, os.path.dirname(HERE))

import errshim_extract  # noqa: E402
import layer  # noqa: E402
import rust_frontend  # noqa: E402
import rustfmt_template as rt  # noqa: E402

import yaml  # noqa: E402

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def read(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as fh:
        return fh.read()


def facts(*names):
    return errshim_extract.facts_of_files([(n, read(n)) for n in names], rust_frontend)


def site_at(f, line):
    found = [s for s in f["sites"] if s["line"] == line]
    assert len(found) == 1, (line, found)
    return found[0]


def build(names, curated=None):
    versions = [("HEAD", COMMIT, facts(*names))]
    return layer.build_entries(layer.collect(versions), ["HEAD"], "x/y", COMMIT, curated)


def by_template(entries):
    return {e["template"]: e for e in entries}


class Lexer(unittest.TestCase):
    def test_raw_string_keeps_quotes_and_braces(self):
        toks = rust_frontend.tokenize('let s = r#"a "b" {c}"#;')
        self.assertEqual([t.value for t in toks if t.kind == "str"], ['a "b" {c}'])

    def test_line_continuation_drops_newline_and_indent(self):
        toks = rust_frontend.tokenize('"ab \\\n      cd"')
        self.assertEqual(toks[0].value, "ab cd")

    def test_char_literal_brace_and_lifetime_are_not_strings_or_brackets(self):
        toks = rust_frontend.tokenize("fn f<'a>(x: &'a u8) { let c = '{'; }")
        kinds = [(t.kind, t.text) for t in toks if t.kind in ("char", "lifetime")]
        self.assertEqual(kinds, [("lifetime", "'a"), ("lifetime", "'a"), ("char", "'{'")])

    def test_nested_block_comment_is_skipped_with_its_lines(self):
        toks = rust_frontend.tokenize("/* a /* b */ c\n */ x")
        self.assertEqual([(t.text, t.line) for t in toks], [("x", 2)])


class Sites(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.f = facts("raise_sites.rs")

    def test_macro_across_lines_is_read_with_its_arguments(self):
        s = site_at(self.f, 15)
        self.assertEqual(s["form"], "bail")
        self.assertEqual(s["message"], "kv cache would overflow: {} + {len} > {}")
        self.assertEqual(s["args"], ["self.cur_len", "self.max_len"])
        self.assertEqual(s["symbol"], "Cache::append")

    def test_guard_condition_comes_from_the_enclosing_if(self):
        self.assertEqual(site_at(self.f, 15)["condition"], "self.kv_cache_enabled && len > self.max_len")

    def test_else_branches_negate_the_conditions_before_them(self):
        self.assertEqual(site_at(self.f, 30)["condition"],
                         "not (lhs.dims() != rhs.dims()) and lhs.dtype() != rhs.dtype()")
        self.assertTrue(site_at(self.f, 32)["condition"].endswith("and not (lhs.dtype() != rhs.dtype())"))

    def test_match_arm_pattern_is_the_condition_of_an_arm_without_braces(self):
        self.assertEqual(site_at(self.f, 39)["condition"], 'matches "head"')
        self.assertEqual(site_at(self.f, 68)["condition"], "matches 1")

    def test_comments_and_strings_mentioning_bail_are_not_sites(self):
        messages = [s["message"] for s in self.f["sites"]]
        self.assertNotIn("not a site", messages)
        self.assertNotIn("nor this", messages)
        self.assertNotIn('inside a string', " ".join(messages))

    def test_raw_string_and_concat_messages(self):
        self.assertEqual(site_at(self.f, 32)["message"],
                         'a raw "quoted" message with {{braces}} and {0} again {0}')
        self.assertEqual(site_at(self.f, 40)["message"], "a message split by concat! for width {}")

    def test_error_msg_forms_and_context(self):
        self.assertEqual(site_at(self.f, 44)["form"], "msg")
        self.assertEqual(site_at(self.f, 44)["args"], ['format!("{n:?}")'])  # nested format! argument
        plain = site_at(self.f, 47)
        self.assertEqual((plain["form"], plain["is_format"]), ("msg", False))
        self.assertEqual(site_at(self.f, 49)["message"], "no first element in selection")
        self.assertEqual(site_at(self.f, 50)["message"], "no second element after {first}")
        self.assertEqual(site_at(self.f, 51)["form"], "msg_fn")

    def test_expect_with_a_literal_is_a_panic_site(self):
        s = site_at(self.f, 85)
        self.assertEqual((s["form"], s["message"], s["symbol"]), ("expect", "failed to start the worker pool",
                                                                  "worker_pool"))

    def test_cfg_gated_module_is_recorded(self):
        s = site_at(self.f, 58)
        self.assertEqual(s["cfg"], ['feature = "cuda"'])
        self.assertEqual(s["symbol"], "cuda::launch")
        self.assertEqual(s["message"], "grid size too large for this device: {grid}")

    def test_panic_family_with_text_only(self):
        forms = {s["line"]: s["form"] for s in self.f["sites"]}
        self.assertEqual((forms[67], forms[68], forms[69]), ("unimplemented", "todo", "panic"))
        self.assertNotIn(70, forms)  # unimplemented!() has no text of its own


class Variants(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.f = facts("error.rs")
        cls.v = {v["name"]: v for v in cls.f["variants"]}

    def test_struct_tuple_and_unit_variants_with_display_text(self):
        self.assertEqual(self.v["DTypeMismatchBinaryOp"]["fields"],
                         [["lhs", "DType"], ["rhs", "DType"], ["op", "&'static str"]])
        self.assertTrue(self.v["UnsupportedDTypeForOp"]["tuple_like"])
        self.assertEqual(self.v["NonContiguous"]["display"],
                         "tensor with layout {layout:?} is not contiguous, needed by {op}")
        self.assertEqual(self.v["NoAccelerator"]["fields"], [])
        self.assertIsNone(self.v["Zip"]["display"])  # transparent
        self.assertEqual(self.v["Zip"]["cfg"], ['feature = "zip"'])

    def test_constructions_not_patterns(self):
        built = sorted((c["variant"], c["line"]) for c in self.f["constructions"])
        self.assertEqual(built, [("DTypeMismatchBinaryOp", 41), ("Internal", 54), ("NonContiguous", 48),
                                 ("Striding", 75), ("UnsupportedDTypeForOp", 43)])

    def test_debug_form_of_struct_and_tuple_variants(self):
        text, tmpl = layer.variant_debug(self.v["DTypeMismatchBinaryOp"])
        self.assertEqual(text, "DTypeMismatchBinaryOp {{ lhs: {lhs:?}, rhs: {rhs:?}, op: {op:?} }}")
        self.assertEqual(tmpl.kinds, {"lhs": "dtype", "rhs": "dtype", "op": "qstr"})
        self.assertTrue(re.search(tmpl.regex(), 'DTypeMismatchBinaryOp { lhs: F32, rhs: BF16, op: "add" }'))
        text, tmpl = layer.variant_debug(self.v["NonContiguous"])
        msg = ('WithBacktrace { inner: NonContiguous { layout: Layout { shape: [2, 3], stride: [1, 2], '
               'start_offset: 0 }, op: "softmax" }, backtrace: Backtrace [] }')
        self.assertEqual(re.search(tmpl.regex(), msg).group("op"), '"softmax"')
        text, _ = layer.variant_debug(self.v["UnsupportedDTypeForOp"])
        self.assertEqual(text, "UnsupportedDTypeForOp({dtype:?}, {text:?})")

    def test_debug_of_a_boxed_struct_field_is_expanded_from_the_struct(self):
        structs = {s["name"]: s["fields"] for s in self.f["structs"]}
        text, tmpl = layer.variant_display(self.v["Striding"], structs)
        self.assertEqual(text, "Striding {{ lhs_l: {lhs_l:?}, bmnk: {bmnk:?}, msg: {msg:?} }}")
        self.assertEqual(tmpl.kinds, {"lhs_l": "layout", "bmnk": "tuple_int", "msg": "qstr"})
        msg = ('Striding { lhs_l: Layout { shape: [2, 3], stride: [1, 2], start_offset: 0 }, '
               'bmnk: (1, 2, 3, 4), msg: "non-contiguous lhs" }')
        self.assertEqual(re.search(tmpl.regex(), msg).group("msg"), '"non-contiguous lhs"')
        # without the struct, the bare `{0:?}` is too generic to stand alone
        self.assertEqual(layer.variant_display(self.v["Striding"])[0], "{0:?}")

    def test_wrapper_variants_get_no_entry_and_the_inner_debug_form_does(self):
        entries, _ = build(["wrappers.rs"])
        t = by_template(entries)
        self.assertFalse([x for x in t if "inner" in x], list(t))
        e = t["BackwardNotSupported {{ op: {op:?} }}"]  # one CamelCase name counts as several words
        self.assertRegex('WithBacktrace { inner: BackwardNotSupported { op: "ceil" }, backtrace: Backtrace [] }',
                         Templates.regex_of(None, e))
        self.assertIn("backward is not supported for {op}", t)

    def test_format_payload_of_a_one_field_variant_gives_its_own_text(self):
        entries, _ = build(["wrappers.rs"])
        t = by_template(entries)
        e = t["Metal error kernel {name} failed to compile"]
        self.assertEqual((e["source"]["path"], e["source"]["symbol"]), ("wrappers.rs", "compile"))
        # the Debug form Message("..") is read back as the bare text
        self.assertEqual(t["kernel {name} failed to compile"]["source"]["line"], e["source"]["line"])

    def test_construction_with_literal_field_gives_its_own_text(self):
        entries, _ = build(["error.rs"])
        e = by_template(entries)["internal error 'rank zero layout in strided'"]
        self.assertEqual((e["source"]["path"], e["source"]["line"]), ("error.rs", 54))
        self.assertEqual(e["also_at"][0]["symbol"], "Error::Internal")
        self.assertIn("matches 0", e["trigger"])
        self.assertEqual(by_template(entries)["rank zero layout in strided"]["source"]["line"], 54)


class Templates(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.entries, cls.stats = build(["raise_sites.rs", "error.rs"])
        cls.t = by_template(cls.entries)

    def test_positional_arguments_are_named_from_their_expressions(self):
        e = self.t["kv cache would overflow: {} + {len} > {}"]
        self.assertEqual(e["captures"], ["cur_len", "max_len"])
        e = self.t["shape mismatch in check, lhs: {:?}, rhs: {:?}"]
        self.assertEqual(e["captures"], ["lhs_shape", "rhs_dims"])

    def test_debug_of_known_types_gets_a_pattern_of_its_shape(self):
        e = self.t["shape mismatch in check, lhs: {:?}, rhs: {:?}"]
        self.assertEqual(e["capture_patterns"], {"lhs_shape": rt.TYPE_PATTERNS["shape"],
                                                 "rhs_dims": rt.TYPE_PATTERNS["shape"]})
        e = self.t["dtype mismatch in {op}, lhs: {lhs:?}, rhs: {rhs:?}"]
        self.assertEqual(e["capture_patterns"], {"lhs": rt.TYPE_PATTERNS["dtype"], "rhs": rt.TYPE_PATTERNS["dtype"]})
        self.assertNotRegex("dtype mismatch in add, lhs: [2, 3], rhs: F32", self.regex_of(e))

    def test_plain_text_braces_and_percent_are_escaped(self):
        self.assertIn("single selection needs {{explicit}} braces and 100%% care", self.t)

    def test_panic_macros_carry_the_std_prefix(self):
        self.assertIn("not implemented: mode zero has no kernel for {}", self.t)
        self.assertIn("not yet implemented: mode one needs the tiled reduction", self.t)

    def test_generic_texts_are_not_free_standing(self):
        for generic in ("{}", "{x:?}", "bad {x}", "{0}"):
            self.assertNotIn(generic, self.t)
        self.assertGreaterEqual(self.stats["generic"], 4)

    def test_each_entry_has_a_matching_example_and_a_near_neighbour_that_does_not(self):
        for e in self.entries:
            rx = self.regex_of(e)
            ex = e["examples"]["match"][0]
            self.assertRegex(ex["text"], rx, e["id"])
            self.assertNotRegex(e["examples"]["no_match"][0], rx, e["id"])
            self.assertTrue(e["generated"])
            self.assertEqual(e["priority"], -1)

    def test_cause_and_trigger_are_built_from_the_facts(self):
        e = self.t["kv cache would overflow: {} + {len} > {}"]
        self.assertIn("`Cache::append` (raise_sites.rs:15)", e["cause"])
        self.assertIn("`cur_len` is the value of `self.cur_len`", e["cause"])
        self.assertIn("`self.kv_cache_enabled && len > self.max_len`", e["trigger"])
        e = self.t["grid size too large for this device: {grid}"]
        self.assertIn('`cfg(feature = "cuda")`', e["trigger"])

    def regex_of(self, e):
        text, is_format = e["template"], True
        pieces = rt.parse_format(text.replace("%%", "%"))
        names = iter(e.get("captures", []))
        order = {}
        tp = []
        implicit = 0
        for p in pieces:
            if isinstance(p, str):
                tp.append(p)
                continue
            arg = p["arg"]
            if arg is None or isinstance(arg, int):
                idx = implicit if arg is None else arg
                if arg is None:
                    implicit += 1
                if idx not in order:
                    order[idx] = next(names)
                name = order[idx]
            else:
                name = arg
            tp.append({"name": name, "debug": p["debug"], "pretty": p["pretty"]})
        kinds = {k: next(t for t, rx in rt.TYPE_PATTERNS.items() if rx == v)
                 for k, v in e.get("capture_patterns", {}).items()}
        del is_format
        return rt.Template(tp, [], kinds).regex()


class Curated(unittest.TestCase):
    def test_a_curated_template_or_site_wins(self):
        curated = {"templates": {"kv cache would overflow: {} + {len} > {}"}, "pins": {("raise_sites.rs", 58)}}
        entries, stats = build(["raise_sites.rs"], curated)
        templates = {e["template"] for e in entries}
        self.assertNotIn("kv cache would overflow: {} + {len} > {}", templates)
        self.assertNotIn("grid size too large for this device: {grid}", templates)
        self.assertEqual(stats["curated"], 2)
        self.assertIn("head count {n} is not divisible by {}", templates)

    def test_curated_facts_read_templates_and_pins_of_hand_written_entries_only(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
            fh.write("schema: 1\nentries:\n"
                     "  - {id: a.b, template: 'x {y}', source: {path: p.rs, line: 3}}\n"
                     "  - {id: a.c, template: 'z', generated: true, source: {path: q.rs, line: 4}}\n")
        try:
            got = errshim_extract.curated_facts([fh.name])
        finally:
            os.unlink(fh.name)
        self.assertEqual(got, {"templates": {"x {y}"}, "pins": {("p.rs", 3)}})


class Versions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        order = ["0.1.0", "0.2.0", "0.3.0"]
        versions = []
        for v in order:
            root = os.path.join(FIXTURES, "versions", v)
            files = errshim_extract.tree_files(root, [], (".rs",))
            versions.append((v, COMMIT[:-1] + v[2], errshim_extract.facts_of_files(files, rust_frontend)))
        cls.entries, _ = layer.build_entries(layer.collect(versions), order, "x/y", versions[-1][1])
        cls.t = by_template(cls.entries)

    def test_a_text_present_in_some_versions_gets_their_range(self):
        e = self.t["too many heads: {n} (at most eight are supported)"]
        self.assertEqual(e["applies_to"], {"candle": "<0.3.0"})
        # pinned at the newest version holding it, with that version's commit and line
        self.assertEqual(e["source"]["line"], 6)
        self.assertEqual(e["source"]["commit"], COMMIT[:-1] + "2")

    def test_a_changed_wording_gives_one_entry_per_wording(self):
        old = self.t["head count must be positive"]
        new = self.t["the head count must be positive, got zero"]
        self.assertEqual(old["applies_to"], {"candle": "<0.2.0"})
        self.assertEqual(new["applies_to"], {"candle": ">=0.2.0"})
        self.assertNotIn("commit", new["source"])  # the layer's default commit

    def test_version_range_bridges_gaps_and_reports_them(self):
        self.assertEqual(layer.version_range(["0.1.0", "0.3.0"], ["0.1.0", "0.2.0", "0.3.0"]), (None, True))
        self.assertEqual(layer.version_range(["0.2.0"], ["0.1.0", "0.2.0", "0.3.0", ">0.3.0"]),
                         (">=0.2.0,<0.3.0", False))
        self.assertEqual(layer.version_range([">0.3.0"], ["0.1.0", "0.2.0", "0.3.0", ">0.3.0"]),
                         (">0.3.0", False))

    def test_release_tags_sort_prereleases_before_their_release(self):
        tags = ["0.10.0", "0.9.0", "0.9.0-alpha.2", "0.9.0-alpha.10", "0.8.4"]
        self.assertEqual(sorted(tags, key=errshim_extract.version_key),
                         ["0.8.4", "0.9.0-alpha.2", "0.9.0-alpha.10", "0.9.0", "0.10.0"])


@unittest.skipUnless(os.environ.get("ERRSHIM"), "set ERRSHIM to an errshim binary to lint the fixture layer")
class LintsClean(unittest.TestCase):
    def test_layer_built_from_the_fixtures_lints_clean(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "fixture.yaml")
            with open(out, "w") as fh:
                subprocess.run([sys.executable, os.path.join(os.path.dirname(HERE), "errshim_extract.py"),
                                "extract", "--lang", "rust", "--root", FIXTURES, "--repo", "x/y",
                                "--commit", COMMIT, "--include", "*.rs", "--include", "*/*/*.rs"],
                               check=True, stdout=fh)
            with open(out) as fh:
                doc = yaml.safe_load(fh)
            self.assertGreater(len(doc["entries"]), 15)
            r = subprocess.run([os.environ["ERRSHIM"], "lint", out], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
            self.assertEqual(r.returncode, 0, r.stdout.decode())

    def test_a_curated_entry_that_wins_a_generated_example_drops_the_generated_entry(self):
        curated = ("schema: 1\nlibrary: candle\nentries:\n"
                   "  - id: candle.hand.head_divisible\n"
                   "    pattern: 'head count \\S+ is not divisible'\n"
                   "    source: {repo: x/y, commit: %s, path: other.rs, line: 1}\n"
                   "    error_class: candle::Error::Msg\n    kind: validation\n"
                   "    cause: c\n    trigger: t\n    remediation: [{text: r}]\n"
                   "    examples: {match: [head count 6 is not divisible by 4]}\n" % COMMIT)
        entries, _ = build(["raise_sites.rs"])
        with tempfile.TemporaryDirectory() as tmp:
            cur = os.path.join(tmp, "hand.yaml")
            with open(cur, "w") as fh:
                fh.write(curated)
            kept, stats = errshim_extract.settle_overlaps(os.environ["ERRSHIM"], [cur], entries, "candle",
                                                          "x/y", COMMIT)
        dropped = {e["id"] for e in entries} - {e["id"] for e in kept}
        self.assertEqual(len(dropped), 1)
        self.assertEqual(stats["shadowed_by_curated"], 1)
        self.assertEqual(stats["curated_claims"][0][1], "candle.hand.head_divisible")
        self.assertNotIn("head count {n} is not divisible by {}", {e["template"] for e in kept})


if __name__ == "__main__":
    unittest.main()
