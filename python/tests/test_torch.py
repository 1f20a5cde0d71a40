"""errshim on real torch errors: a small attention block with a KV cache and
a generation loop (tinylm.py) driven into the errors a server meets, caught
by translate(), explain(), the hooks and remediate(), the fix applied and
the loop recovering where a config change is the remedy.

Needs torch (Debian: python3-torch, for /usr/bin/python3); skipped without
it unless ERRSHIM_REQUIRE_TORCH=1 (ctest's python.torch and python.wheel).
"""

import asyncio
import contextlib
import io
import json
import logging
import os
import subprocess
import sys
import unittest
import warnings

try:
    import torch
except ImportError:
    if os.environ.get("ERRSHIM_REQUIRE_TORCH") == "1":
        raise
    torch = None

import errshim

if torch is not None:
    import tinylm

ATTENTION = "component=attention"

# A layer a user could add for their own stack (errshim.Catalog): the mask
# dtype error and torch's warning about byte masks have no entry in the
# embedded catalog yet. The messages are torch 1.13.1's, as it prints them.
TINYLM_LAYER = """\
schema: 1
library: tinylm
defaults: {repo: example/tinylm, commit: 0123456789abcdef0123456789abcdef01234567}
entries:
  - id: tinylm.mask.not_bool
    template: 'where expected condition to be a boolean tensor, but got a tensor with dtype {dtype}'
    source: {path: python/tests/tinylm.py, line: 1}
    error_class: RuntimeError
    kind: dtype-mismatch
    cause: the attention mask was built in a floating dtype; torch.where needs a boolean condition
    trigger: mask_dtype set to a float type
    remediation:
      - text: build the mask as bool
        fix:
          set: {mask_dtype: bool}
          safety: safe
    examples:
      match: [{text: 'where expected condition to be a boolean tensor, but got a tensor with dtype Float', captures: {dtype: Float}}]
  - id: tinylm.mask.byte_mask_deprecated
    template: 'masked_fill_ received a mask with dtype torch.uint8, this behavior is now deprecated,please use a mask with dtype torch.bool instead.'
    source: {path: python/tests/tinylm.py, line: 1}
    error_class: UserWarning
    kind: dtype-mismatch
    severity: warning
    cause: a byte mask passed to masked_fill
    trigger: masks built as uint8
    remediation:
      - text: build the mask as bool
    examples:
      match: ['masked_fill_ received a mask with dtype torch.uint8, this behavior is now deprecated,please use a mask with dtype torch.bool instead.']
"""

# name: (config changes, generate() arguments, context, entry id, exception type)
CASES = {
    "head_dim_mismatch": ({"kv_head_dim": 6}, {}, None, "libtorch.bmm.batch2_shape", RuntimeError),
    "kv_heads_not_dividing": ({"num_kv_heads": 3}, {}, ATTENTION, "libtorch.attention.kv_heads_not_dividing",
                              RuntimeError),
    "cache_concatenation": ({}, {"cache": "prefix with 2 heads"}, None, "libtorch.cat.size_mismatch", RuntimeError),
    "static_cache_dtype": ({"cache_implementation": "static", "cache_dtype": "float16"}, {}, None,
                           "libtorch.index_copy.dtype_mismatch", RuntimeError),
    "static_cache_too_short": ({"cache_implementation": "static", "max_cache_len": 8}, {}, None,
                               "libtorch.index_copy.out_of_bounds", IndexError),
    "half_on_cpu": ({"dtype": "float16"}, {}, None, "libtorch.dtype.half_not_implemented", RuntimeError),
    "positions_past_the_embedding": ({"max_position_embeddings": 8}, {}, None, "libtorch.index.out_of_range_in_self",
                                     IndexError),
    "mask_dtype": ({"mask_dtype": "float32"}, {}, None, "tinylm.mask.not_bool", RuntimeError),
}


def _args(kwargs):
    if kwargs.get("cache") == "prefix with 2 heads":  # a cache made for another head count
        return {"cache": tinylm.DynamicCache(torch.zeros(1, 2, 3, 8), torch.zeros(1, 2, 3, 8))}
    return kwargs


@unittest.skipIf(torch is None, "torch is not installed (Debian: python3-torch)")
class TorchTestCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.catalog = errshim.Catalog()
        cls.catalog.add_yaml(TINYLM_LAYER, name="tinylm.yaml")
        cls.baseline = tinylm.generate(tinylm.BASE)

    def run_case(self, name):
        changes, kwargs, _, _, _ = CASES[name]
        return tinylm.generate(tinylm.config(**changes), **_args(kwargs))


class TorchErrorsTest(TorchTestCase):
    def test_each_error_is_explained_and_translated(self):
        for name, (_, _, context, entry, exc_type) in CASES.items():
            with self.subTest(name):
                with self.assertRaises(exc_type) as caught:
                    self.run_case(name)
                original = caught.exception
                d = errshim.explain(original, context=context, catalog=self.catalog)
                self.assertIsNotNone(d, str(original))
                self.assertEqual(d.id, entry)

                with self.assertRaises(errshim.TranslatedError) as t:
                    with errshim.translate(context=context, catalog=self.catalog):
                        self.run_case(name)
                self.assertIsInstance(t.exception, exc_type)  # `except RuntimeError:` still catches it
                self.assertEqual(t.exception.diagnosis.id, entry)
                self.assertIsInstance(t.exception.original, exc_type)
                self.assertIs(t.exception.__cause__, t.exception.original)

    def test_the_captures_come_from_torchs_message(self):
        with self.assertRaises(IndexError) as caught:
            self.run_case("static_cache_too_short")
        d = errshim.explain(caught.exception)
        self.assertEqual((d.captures["index"], d.captures["dim"], d.captures["size"]), ("8", "2", "8"))

    def test_an_error_the_catalog_does_not_know_passes_through_unchanged(self):
        # The mask error without the user's layer: the embedded catalog has no entry.
        with self.assertRaises(RuntimeError) as caught:
            with errshim.translate():
                self.run_case("mask_dtype")
        self.assertIs(type(caught.exception), RuntimeError)
        self.assertIsNone(errshim.explain(caught.exception))


class TorchRemediateTest(TorchTestCase):
    def remediate(self, name, **kwargs):
        changes = CASES[name][0]
        cfg = tinylm.config(**changes)
        before = json.dumps(cfg, sort_keys=True)
        try:
            return cfg, errshim.remediate(lambda c: tinylm.generate(c), cfg, catalog=self.catalog, **kwargs)
        finally:
            self.assertEqual(json.dumps(cfg, sort_keys=True), before)  # the caller's config is never changed

    def test_half_on_cpu_recovers_in_float32_when_changes_output_is_allowed(self):
        _, r = self.remediate("half_on_cpu", allowed="safe,slower,changes-output")
        self.assertEqual(r.config["dtype"], "float32")
        self.assertEqual(r.value, self.baseline)
        self.assertEqual(r.report.calls, 2)
        outcomes = [(d["entry"], d["outcome"]) for d in r.report.decisions]
        self.assertEqual(outcomes, [("libtorch.dtype.half_not_implemented", "applied"),
                                    ("libtorch.dtype.half_not_implemented", "succeeded")])
        self.assertEqual(r.report.applied_changes(), [{"path": "dtype", "before": "float16", "after": "float32", "created": False}])
        self.assertIsInstance(r.report.errors[0], RuntimeError)

    def test_half_on_cpu_is_refused_by_the_default_policy(self):
        with self.assertRaises(errshim.RemediationError) as caught:
            self.remediate("half_on_cpu")
        err = caught.exception
        self.assertEqual(err.diagnosis.id, "libtorch.dtype.half_not_implemented")
        self.assertIsInstance(err.original, RuntimeError)
        refused = [d for d in err.report.decisions if d["outcome"] == "refused"]
        self.assertTrue(refused and "changes-output" in refused[0]["reason"], err.report.decisions)
        self.assertEqual(err.report.decisions[-1]["outcome"], "gave-up")

    def test_a_pinned_dtype_is_never_changed(self):
        with self.assertRaises(errshim.RemediationError) as caught:
            self.remediate("half_on_cpu", allowed="safe,slower,changes-output", pinned=["dtype"])
        self.assertTrue(any("pinned" in d["reason"] for d in caught.exception.report.decisions),
                        caught.exception.report.decisions)

    def test_a_static_cache_too_short_becomes_dynamic(self):
        _, r = self.remediate("static_cache_too_short")
        self.assertEqual(r.config["cache_implementation"], "dynamic")
        self.assertEqual(r.value, self.baseline)

    def test_a_static_cache_in_the_wrong_dtype_takes_the_models(self):
        _, r = self.remediate("static_cache_dtype")
        self.assertEqual(tinylm.dtype_of(r.config["cache_dtype"]), torch.float32)
        self.assertEqual(r.value, self.baseline)

    def test_kv_heads_that_do_not_divide_become_plain_multi_head(self):
        _, r = self.remediate("kv_heads_not_dividing", allowed="safe,slower,changes-output", context=ATTENTION)
        self.assertEqual(int(r.config["num_kv_heads"]), 4)
        self.assertEqual(len(r.value), len(self.baseline))

    def test_the_users_own_catalog_fixes_the_mask(self):
        _, r = self.remediate("mask_dtype")
        self.assertEqual(r.config["mask_dtype"], "bool")
        self.assertEqual(r.value, self.baseline)

    def test_two_errors_two_fixes(self):
        cfg = tinylm.config(dtype="float16", cache_implementation="static", max_cache_len=8)
        r = errshim.remediate(lambda c: tinylm.generate(c), cfg, allowed="safe,slower,changes-output")
        self.assertEqual(r.report.calls, 3)
        self.assertEqual([d["entry"] for d in r.report.decisions if d["outcome"] == "applied"],
                         ["libtorch.dtype.half_not_implemented", "libtorch.index_copy.out_of_bounds"])
        self.assertEqual(r.value, self.baseline)

    def test_the_retry_bound_stops_the_loop(self):
        cfg = tinylm.config(dtype="float16", cache_implementation="static", max_cache_len=8)
        with self.assertRaises(errshim.RemediationError) as caught:
            errshim.remediate(lambda c: tinylm.generate(c), cfg, allowed="safe,slower,changes-output", max_retries=1)
        self.assertIn("the retry bound (1) is reached", str(caught.exception))
        self.assertEqual(caught.exception.report.calls, 2)
        self.assertIsInstance(caught.exception.original, IndexError)  # the last error

    def test_an_error_without_a_config_fix_gives_up_with_the_report(self):
        with self.assertRaises(errshim.RemediationError) as caught:
            self.remediate("head_dim_mismatch")
        self.assertIn("no remediation step is allowed", str(caught.exception))
        self.assertEqual(caught.exception.report.calls, 1)

    def test_suggest_mode_changes_nothing(self):
        with self.assertRaises(errshim.RemediationError) as caught:
            self.remediate("static_cache_too_short", mode="suggest")
        d = caught.exception.report.decisions[-1]
        self.assertEqual((d["outcome"], d["changes"][0]["after"]), ("suggested", "dynamic"))
        self.assertEqual(caught.exception.report.calls, 1)

    def test_prometheus_counters_in_the_callers_registry(self):
        try:
            import prometheus_client
        except ImportError:
            if os.environ.get("ERRSHIM_REQUIRE_TORCH") == "1":
                raise
            self.skipTest("prometheus_client is not installed (Debian: python3-prometheus-client)")
        from errshim.metrics import PrometheusMetrics

        registry = prometheus_client.CollectorRegistry()
        metrics = PrometheusMetrics(registry)
        self.remediate("static_cache_too_short", metrics=metrics)
        self.remediate("static_cache_too_short", metrics=metrics)
        self.assertEqual(metrics.value("libtorch.index_copy.out_of_bounds", "applied"), 2)
        text = prometheus_client.generate_latest(registry).decode()
        self.assertIn('errshim_decisions_total{entry="libtorch.index_copy.out_of_bounds",outcome="succeeded"} 2.0',
                      text)


class TorchHooksTest(TorchTestCase):
    def setUp(self):
        self.addCleanup(errshim.uninstall)

    def test_logging_an_inference_error_carries_the_diagnosis(self):
        errshim.install(excepthook=False, warnings=False, asyncio=False)
        log = logging.getLogger("errshim.test.server")
        with self.assertLogs(log, "ERROR") as logs:
            try:
                self.run_case("positions_past_the_embedding")
            except IndexError:
                log.exception("request 7 failed")
        record = logs.records[0]
        self.assertEqual(record.errshim.id, "libtorch.index.out_of_range_in_self")
        self.assertTrue(record.errshim.remediation)

    def test_torchs_warning_is_diagnosed_by_showwarning(self):
        errshim.install(excepthook=False, logging=False, asyncio=False, catalog=self.catalog)
        out = io.StringIO()
        with warnings.catch_warnings(), contextlib.redirect_stderr(out):
            warnings.simplefilter("always")
            # catch_warnings saved the hook errshim installed and keeps it in force
            s = torch.zeros(2, 2)
            s.masked_fill(torch.zeros(2, 2, dtype=torch.uint8), 1.0)
        self.assertIn("UserWarning: masked_fill_ received a mask with dtype torch.uint8", out.getvalue())
        self.assertIn("errshim: tinylm.mask.byte_mask_deprecated", out.getvalue())

    def test_asyncio_exception_handler(self):
        errshim.install(excepthook=False, logging=False, warnings=False)

        def failing_callback():
            self.run_case("half_on_cpu")

        async def main():
            asyncio.get_running_loop().call_soon(failing_callback)
            await asyncio.sleep(0.01)

        with self.assertLogs("asyncio", "ERROR") as logs:
            asyncio.run(main())
        self.assertIn("errshim: libtorch.dtype.half_not_implemented", logs.records[0].getMessage())

    def test_an_uncaught_torch_error_ends_with_the_diagnosis(self):
        code = (
            "import errshim, tinylm\n"
            "errshim.install()\n"
            "tinylm.generate(tinylm.config(max_position_embeddings=8))\n"
        )
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.abspath(__file__))] + sys.path))
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        err = r.stderr
        self.assertIn("IndexError: index out of range in self", err)
        self.assertIn("errshim: libtorch.index.out_of_range_in_self", err)
        self.assertLess(err.index("IndexError: index out of range in self"),
                        err.index("errshim: libtorch.index.out_of_range_in_self"))  # after the traceback


if __name__ == "__main__":
    unittest.main()
