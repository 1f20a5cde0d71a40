"""Tests of the extractor's C++ and Python front ends (torch's error macros,
Python raise idioms) and of the layer they build, on fixture files written
for them (fixtures/torch, fixtures/torch_py). With ERRSHIM set to an errshim
binary, the layer built from the fixtures is also linted by it."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
sys.path.insert(0, os.path.dirname(HERE))

import cpp_frontend  # noqa: E402
import errshim_extract  # noqa: E402
import layer  # noqa: E402
import python_frontend  # noqa: E402

import yaml  # noqa: E402

COMMIT = "0123456789abcdef0123456789abcdef01234567"
CPP = "aten/src/ATen/native/Attention.cpp"
PY = "torch/nn/attention.py"


def read(root, rel):
    with open(os.path.join(FIXTURES, root, rel), encoding="utf-8") as fh:
        return fh.read()


def cpp_sites():
    return {s.line: s for s in cpp_frontend.scan(read("torch", CPP), CPP)}


def py_sites():
    return {s.line: s for s in python_frontend.scan(read("torch_py", PY), PY)}


def text(pieces):
    return layer.pieces_template(pieces)[0]


class CppFrontEnd(unittest.TestCase):
    def test_stream_arguments_become_literals_and_placeholders(self):
        s = cpp_sites()[11]
        self.assertEqual(text(s.pieces), "embed_dim {q_size} is not divisible by num_heads {num_heads}")
        self.assertEqual(s.function, "check_heads")
        self.assertEqual(s.condition, "!(q.size(-1) % num_heads == 0)")

    def test_check_without_message_gets_torchs_default_text(self):
        s = cpp_sites()[15]
        self.assertEqual(s.pieces, ["Expected q.dim() == 3 to be true, but got false.  (Could this error message "
                                    "be improved?  If so, please report an enhancement request to PyTorch.)"])

    def test_check_forms_raise_their_own_classes(self):
        sites = cpp_sites()
        self.assertEqual((sites[17].error_class, sites[17].python_class), ("c10::ValueError", "ValueError"))
        self.assertEqual((sites[19].error_class, sites[19].python_class), ("c10::IndexError", "IndexError"))
        self.assertEqual(sites[34].error_class, "c10::ValueError")

    def test_guard_joins_the_enclosing_if_and_the_failed_check(self):
        self.assertEqual(cpp_sites()[17].condition, "(num_heads > 64) && (!(num_heads <= 128))")
        self.assertEqual(cpp_sites()[34].condition, "kv.dim() == 0")

    def test_c10_str_and_shift_chains_are_read_as_arguments(self):
        sites = cpp_sites()
        self.assertEqual(text(sites[19].pieces), "head index {num_heads} is negative")
        self.assertEqual(text(sites[36].pieces), "appending {kv_size} rows to a cache of {cache_size}")

    def test_structured_kernel_function_is_what_func_prints(self):
        s = cpp_sites()[23]
        self.assertEqual((s.function, s.symbol), ("meta", "structured_fused_attention::meta"))
        self.assertEqual([p["kind"] for p in s.pieces if isinstance(p, dict)], ["shape", "shape"])

    def test_internal_assert_and_enforce_carry_their_location_prefix(self):
        sites = cpp_sites()
        self.assertTrue(sites[27].pieces[0].startswith(
            'cache.is_contiguous() INTERNAL ASSERT FAILED at "./%s":27, please report a bug to PyTorch. ' % CPP))
        self.assertEqual(sites[32].pieces, ["[enforce fail at Attention.cpp:32] kv.numel() > 0. the new keys are empty"])

    def test_warnings_have_warning_severity(self):
        sites = cpp_sites()
        self.assertEqual((sites[28].severity, sites[36].severity), ("warning", "warning"))
        self.assertEqual(sites[30].severity, "error")

    def test_dispatch_site_is_pinned_where_the_kernel_dispatches(self):
        s = cpp_sites()[37]
        self.assertEqual(s.form, "dispatch")
        self.assertEqual(text(s.pieces), "\"cache_update_kernel\" not implemented for '{dtype}'")
        self.assertEqual((s.path, s.function), (CPP, "operator()"))
        self.assertEqual(cpp_sites()[39].function, "operator()")

    def test_comments_strings_and_macro_bodies_are_no_sites(self):
        self.assertEqual(sorted(cpp_sites()), [11, 15, 17, 19, 23, 27, 28, 30, 32, 34, 36, 37, 39])


class PythonFrontEnd(unittest.TestCase):
    def test_fstring_percent_format_and_concatenation(self):
        sites = py_sites()
        self.assertEqual(text(sites[11].pieces), "embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.assertEqual(text(sites[13].pieces), "dropout must be at most 1, got {dropout} for {num_heads} heads")
        self.assertEqual(text(sites[17].pieces),
                         "a dropout of one half on attention weights is unusual; got {dropout}")

    def test_assert_message_and_negated_branches(self):
        s = py_sites()[15]
        self.assertEqual((s.form, s.error_class), ("assert", "AssertionError"))
        self.assertEqual(text(s.pieces), "num_heads must be positive, not {num_heads}")
        self.assertEqual(s.condition, "(not (embed_dim % num_heads != 0)) and (not (dropout > 1)) and "
                                      "(not (num_heads > 0))")

    def test_message_assigned_to_a_name_first(self):
        s = py_sites()[28]
        self.assertEqual(text(s.pieces), "expected a batched 3-D query, but got a {query_dim}-D one")
        self.assertEqual(s.symbol, "Attention.forward")

    def test_warnings_and_logger_calls_are_warnings_with_their_class(self):
        sites = py_sites()
        self.assertEqual((sites[24].severity, sites[24].error_class), ("warning", "DeprecationWarning"))
        self.assertEqual([p["kind"] for p in sites[24].pieces if isinstance(p, dict)], ["torch_dtype", "torch_dtype"])
        self.assertEqual((sites[29].form, sites[29].severity), ("logger_warning_once", "warning"))
        self.assertEqual(text(sites[29].pieces), "attention falls back to the slow path for a query of "
                                                 "{query_size} tokens")

    def test_key_error_text_is_its_repr(self):
        self.assertEqual(py_sites()[30].pieces, ["'head name can\\'t contain \".\"'"])


class TorchLayer(unittest.TestCase):
    def build(self, lang, root, library):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "layer.yaml")
            stdout = sys.stdout
            with open(out, "w") as fh:
                sys.stdout = fh
                try:
                    errshim_extract.main(["extract", "--lang", lang, "--root", os.path.join(FIXTURES, root),
                                          "--repo", "pytorch/pytorch", "--commit", COMMIT, "--library", library])
                finally:
                    sys.stdout = stdout
            with open(out, encoding="utf-8") as fh:
                doc = yaml.safe_load(fh)
            errshim = os.environ.get("ERRSHIM")
            if errshim:
                r = subprocess.run([errshim, "lint", out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                self.assertEqual(r.returncode, 0, r.stdout.decode(errors="replace"))
        return {e["source"]["line"]: e for e in doc["entries"]}

    def test_cpp_layer_entries_pin_the_site_and_keep_severity(self):
        by_line = self.build("cpp", "torch", "libtorch")
        e = by_line[37]
        self.assertEqual(e["template"], "\"cache_update_kernel\" not implemented for '{dtype}'")
        self.assertEqual(e["source"]["path"], CPP)
        self.assertEqual(by_line[28]["severity"], "warning")
        self.assertNotIn("severity", by_line[30])
        # the C++-stack-trace form names the raise site as torch prints it
        self.assertIn("Exception raised from operator() at ./%s:37" % CPP, e["examples"]["match"][1])

    def test_python_layer_wraps_examples_in_a_traceback_ending_at_the_site(self):
        by_line = self.build("python", "torch_py", "torch")
        e = by_line[11]
        self.assertEqual(e["error_class"], "ValueError")
        self.assertIn('torch/nn/attention.py", line 11, in __init__', e["examples"]["match"][1])
        self.assertEqual(by_line[24]["severity"], "warning")


if __name__ == "__main__":
    unittest.main()
