"""errshim.install() hooks, remediate() and the metrics, without torch (any
interpreter); test_torch.py drives the same through real torch errors."""

import asyncio
import contextlib
import io
import json
import logging
import os
import subprocess
import sys
import threading
import unittest
import warnings

import errshim
from errshim.metrics import Metrics

# From patterns/transformers.yaml: transformers logs it with logger.warning.
TOKEN_WARNING = (
    "Token indices sequence length is longer than the specified maximum sequence length for this model "
    "(1024 > 512). Running this sequence through the model will result in indexing errors"
)
TOKEN_ID = "transformers.positions.tokenizer_sequence_too_long"
QUANTIZED_CACHE = (
    "This model does not support the quantized cache. If you want your model to support quantized cache, "
    "please open an issue and tag @zucchini-nlp."
)
QUANTIZED_ID = "transformers.generation.quantized_cache_unsupported"


def _python(code):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


class InstallTest(unittest.TestCase):
    def setUp(self):
        self.addCleanup(errshim.uninstall)

    def test_uninstall_puts_every_hook_back(self):
        before = (sys.excepthook, threading.excepthook, logging.getLogRecordFactory(), warnings.showwarning,
                  asyncio.BaseEventLoop.default_exception_handler)
        errshim.install()
        self.assertTrue(errshim.installed())
        after = (sys.excepthook, threading.excepthook, logging.getLogRecordFactory(), warnings.showwarning,
                 asyncio.BaseEventLoop.default_exception_handler)
        self.assertTrue(all(a is not b for a, b in zip(before, after)))
        errshim.install()  # a second install replaces the first, it does not stack
        errshim.uninstall()
        self.assertFalse(errshim.installed())
        now = (sys.excepthook, threading.excepthook, logging.getLogRecordFactory(), warnings.showwarning,
               asyncio.BaseEventLoop.default_exception_handler)
        self.assertTrue(all(a is b for a, b in zip(before, now)))

    def test_a_hook_wrapped_by_someone_else_is_switched_off_not_unwrapped(self):
        original = warnings.showwarning
        errshim.install(excepthook=False, logging=False, asyncio=False)
        ours = warnings.showwarning
        seen = []

        def theirs(message, *args, **kwargs):
            seen.append(str(message))
            return ours(message, *args, **kwargs)

        warnings.showwarning = theirs
        try:
            errshim.uninstall()
            self.assertIs(warnings.showwarning, theirs)  # theirs kept
            out = io.StringIO()
            with contextlib.redirect_stderr(out):
                warnings.showwarning(TOKEN_WARNING, UserWarning, "x.py", 1)
            self.assertEqual(seen, [TOKEN_WARNING])
            self.assertIn(TOKEN_WARNING, out.getvalue())
            self.assertNotIn("errshim:", out.getvalue())  # ours passed it on, adding nothing
        finally:
            warnings.showwarning = original

    def test_logging_records_with_an_error_text_or_an_exception(self):
        errshim.install(excepthook=False, warnings=False, asyncio=False)
        log = logging.getLogger("errshim.test.hooks")
        with self.assertLogs(log, "INFO") as logs:
            log.warning(TOKEN_WARNING)
            try:
                raise ValueError(QUANTIZED_CACHE)
            except ValueError:
                log.error("generate failed", exc_info=True)
            log.info(TOKEN_WARNING)  # below WARNING and no exception: not read
            log.warning("disk almost full")
        a, b, c, d = logs.records
        self.assertEqual(a.errshim.id, TOKEN_ID)
        self.assertEqual(b.errshim.id, QUANTIZED_ID)
        self.assertEqual(b.errshim.remediation, [r.text for r in errshim.diagnose(QUANTIZED_CACHE).remediation])
        self.assertIn(QUANTIZED_ID, str(b.errshim))
        self.assertIsNone(c.errshim)
        self.assertIsNone(d.errshim)
        errshim.uninstall()
        with self.assertLogs(log, "WARNING") as logs:
            log.warning(TOKEN_WARNING)
        self.assertFalse(hasattr(logs.records[0], "errshim"))

    def test_log_filter_on_a_handler(self):
        stream = io.StringIO()
        handler = logging.StreamHandler(stream)
        handler.addFilter(errshim.LogFilter())
        handler.setFormatter(logging.Formatter("%(message)s [%(errshim)s]"))
        log = logging.getLogger("errshim.test.filter")
        log.addHandler(handler)
        log.propagate = False
        self.addCleanup(log.removeHandler, handler)
        log.warning(TOKEN_WARNING)
        self.assertIn("[%s: %s" % (TOKEN_ID, TOKEN_WARNING[:30]), stream.getvalue())

    def test_warnings_get_the_diagnosis_under_them(self):
        errshim.install(excepthook=False, logging=False, asyncio=False)
        out = io.StringIO()
        with warnings.catch_warnings(), contextlib.redirect_stderr(out):
            warnings.simplefilter("always")
            warnings.warn(TOKEN_WARNING)
            warnings.warn("nothing errshim knows")
        text = out.getvalue()
        self.assertIn("UserWarning: " + TOKEN_WARNING, text)
        self.assertIn("errshim: " + TOKEN_ID, text)
        self.assertEqual(text.count("errshim:"), 1)

    def test_disable_turns_the_hooks_off(self):
        errshim.install(excepthook=False, warnings=False, asyncio=False)
        errshim.disable()
        self.addCleanup(errshim.enable)
        log = logging.getLogger("errshim.test.disabled")
        with self.assertLogs(log, "WARNING") as logs:
            log.warning(TOKEN_WARNING)
        self.assertIsNone(logs.records[0].errshim)

    def test_asyncio_default_handler_and_explicit_handler(self):
        def failing():
            raise ValueError(QUANTIZED_CACHE)

        async def main(explicit):
            loop = asyncio.get_running_loop()
            if explicit:
                loop.set_exception_handler(errshim.asyncio_exception_handler)
            loop.call_soon(failing)
            await asyncio.sleep(0.01)

        errshim.install(excepthook=False, logging=False, warnings=False)
        with self.assertLogs("asyncio", "ERROR") as logs:
            asyncio.run(main(False))
        self.assertIn("errshim: " + QUANTIZED_ID, logs.records[0].getMessage())
        errshim.uninstall()
        with self.assertLogs("asyncio", "ERROR") as logs:
            asyncio.run(main(True))
        self.assertEqual(logs.records[0].getMessage().count("errshim: " + QUANTIZED_ID), 1)

    def test_uncaught_exceptions_in_the_main_thread_and_in_threads(self):
        r = _python(
            "import threading, errshim\n"
            "errshim.install()\n"
            "def work():\n"
            "    raise ValueError(%r)\n"
            "t = threading.Thread(target=work); t.start(); t.join()\n"
            "work()\n" % QUANTIZED_CACHE
        )
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.count("errshim: " + QUANTIZED_ID), 2, r.stderr)
        last_traceback = r.stderr.rindex("ValueError: This model does not support")
        self.assertGreater(r.stderr.rindex("errshim: " + QUANTIZED_ID), last_traceback)
        if sys.version_info >= (3, 11):  # a PEP 678 note, printed by Python itself
            self.assertIn("  cause: ", r.stderr)

    def test_before_python_3_11_the_text_follows_the_traceback(self):
        from unittest import mock

        errshim.install(logging=False, warnings=False, asyncio=False)
        try:
            raise ValueError(QUANTIZED_CACHE)
        except ValueError as e:
            exc = e
        out = io.StringIO()
        with mock.patch.object(sys, "version_info", (3, 10, 0)), contextlib.redirect_stderr(out):
            sys.excepthook(type(exc), exc, exc.__traceback__)
        text = out.getvalue()
        self.assertGreater(text.index("errshim: " + QUANTIZED_ID), text.index("ValueError: This model"))
        self.assertFalse(getattr(exc, "__notes__", None))  # written, not added as a note

    def test_uncaught_unknown_exception_is_printed_as_before(self):
        code = "import errshim\n%sraise KeyError('x')\n"
        plain, hooked = _python(code % ""), _python(code % "errshim.install()\n")
        self.assertEqual(plain.stderr.replace("line 2", "line 3"), hooked.stderr)


class RemediateTest(unittest.TestCase):
    def build(self, calls):
        def build(cfg):
            calls.append(dict(cfg) if isinstance(cfg, dict) else cfg)
            if (cfg.get("cache_implementation") if isinstance(cfg, dict) else None) == "quantized" or (
                    isinstance(cfg, str) and "quantized" in cfg):
                raise ValueError(QUANTIZED_CACHE)
            return "ok"
        return build

    def test_dict_config_fixed_and_the_callers_left_alone(self):
        calls = []
        cfg = {"cache_implementation": "quantized", "max_new_tokens": 8}
        decisions = []
        r = errshim.remediate(self.build(calls), cfg, on_decision=decisions.append)
        self.assertEqual(r.value, "ok")
        self.assertEqual(r.config, {"cache_implementation": "dynamic", "max_new_tokens": 8})
        self.assertEqual(cfg["cache_implementation"], "quantized")
        self.assertEqual(len(calls), 2)
        self.assertEqual([d["outcome"] for d in decisions], ["applied", "succeeded"])
        self.assertEqual(json.loads(r.report.to_json())["calls"], 2)
        self.assertTrue(decisions[0]["time"].endswith("Z") and decisions[0]["attempt"] == 1)

    def test_yaml_text_config(self):
        calls = []
        r = errshim.remediate(self.build(calls), "cache_implementation: quantized\nmax_new_tokens: 8\n")
        self.assertIn("cache_implementation: dynamic", r.config)
        self.assertIsInstance(calls[1], str)

    def test_pinned_key(self):
        with self.assertRaises(errshim.RemediationError) as caught:
            errshim.remediate(self.build([]), {"cache_implementation": "quantized"}, pinned=["cache_implementation"])
        self.assertIsInstance(caught.exception.original, ValueError)

    def test_unknown_error_is_the_same_object(self):
        original = KeyError("x")

        def build(cfg):
            raise original

        with self.assertRaises(KeyError) as caught:
            errshim.remediate(build, {})
        self.assertIs(caught.exception, original)

    def test_unknown_error_after_a_fix_is_reported_with_the_history(self):
        def build(cfg):
            if cfg["cache_implementation"] == "quantized":
                raise ValueError(QUANTIZED_CACHE)
            raise KeyError("something else")

        with self.assertRaises(errshim.RemediationError) as caught:
            errshim.remediate(build, {"cache_implementation": "quantized"})
        self.assertIn("errshim does not recognise", str(caught.exception))
        self.assertIsInstance(caught.exception.__cause__, KeyError)

    def test_same_error_after_the_fix_gives_up(self):
        def build(cfg):
            raise ValueError(QUANTIZED_CACHE)

        with self.assertRaises(errshim.RemediationError) as caught:
            errshim.remediate(build, {"cache_implementation": "quantized"})
        self.assertIn("the same error came back", str(caught.exception))
        self.assertEqual(caught.exception.report.calls, 2)

    def test_bad_arguments(self):
        with self.assertRaises(ValueError):
            errshim.remediate(self.build([]), {}, mode="sometimes")
        with self.assertRaises(ValueError):
            errshim.remediate(self.build([]), {}, max_retries=-1)
        with self.assertRaises(TypeError):
            errshim.remediate(self.build([]), ["not", "a", "config"])

    def test_metrics_text_is_the_cpp_format(self):
        m = Metrics()
        errshim.remediate(self.build([]), {"cache_implementation": "quantized"}, metrics=m)
        self.assertEqual(m.value(QUANTIZED_ID, "applied"), 1)
        self.assertEqual(m.total(), 2)
        self.assertIn('errshim_decisions_total{entry="%s",outcome="succeeded"} 1\n' % QUANTIZED_ID, m.prometheus())
        self.assertTrue(m.prometheus().startswith("# HELP errshim_decisions_total "))


FLASH_ATTENTION_2_MISSING = (
    "FlashAttention2 has been toggled on, but it cannot be used due to the following error: the package flash_attn "
    "seems to be not installed. Please refer to the documentation of "
    "https://huggingface.co/docs/transformers/perf_infer_gpu_one#flashattention-2 to install Flash Attention 2.")
INDEX_COPY_HALF = ("index_copy_(): self and source expected to have the same dtype, but got (self) Float and "
                   "(source) Half")


# Two entries of a host catalog: A has two steps; B's fix undoes A's first.
TWO_STEP_CATALOG = """\
schema: 1
library: host
defaults: {repo: example/host, commit: 0123456789abcdef0123456789abcdef01234567}
entries:
  - id: host.a
    template: 'host error alpha'
    source: {path: host/a.py, line: 1}
    error_class: RuntimeError
    kind: configuration
    cause: c
    trigger: t
    remediation:
      - text: turn x off
        fix: {set: {x: 0}, safety: safe, reason: same output}
      - text: turn y off
        fix: {set: {y: 0}, safety: safe, reason: same output}
    examples: {match: ['host error alpha']}
  - id: host.b
    template: 'host error beta'
    source: {path: host/b.py, line: 1}
    error_class: RuntimeError
    kind: configuration
    cause: c
    trigger: t
    remediation:
      - text: x back on, z off
        fix: {set: {x: 1, z: 0}, safety: safe, reason: same output}
    examples: {match: ['host error beta']}
"""


class RemediateStepsTest(unittest.TestCase):
    def test_an_error_back_after_another_fix_gets_its_next_step_not_a_give_up(self):
        # A (step 0: x off), then B (its fix turns x on again), then A again:
        # step 0 was applied before, so step 1 is the one applied, as in C++.
        catalog = errshim.Catalog(embedded=False).add_yaml(TWO_STEP_CATALOG, "host.yaml")

        def build(cfg):
            if cfg["y"] == 0:
                return "ok"
            if cfg["x"] == 1:
                raise RuntimeError("host error alpha")
            if cfg["z"] == 1:
                raise RuntimeError("host error beta")
            raise RuntimeError("host error alpha")

        r = errshim.remediate(build, {"x": 1, "y": 1, "z": 1}, catalog=catalog)
        self.assertEqual(r.value, "ok")
        self.assertEqual(r.config, {"x": 1, "y": 0, "z": 0})
        applied = [(d["entry"], d["step"]) for d in r.report.decisions if d["outcome"] == "applied"]
        self.assertEqual(applied, [("host.a", 0), ("host.b", 0), ("host.a", 1)])

    def test_fix_config_skips_the_steps_it_is_told(self):
        catalog = errshim.Catalog(embedded=False).add_yaml(TWO_STEP_CATALOG, "host.yaml")
        self.assertEqual(errshim.fix_config('{"x": 1, "y": 1}', "host error alpha", catalog=catalog).step, 0)
        r = errshim.fix_config('{"x": 1, "y": 1}', "host error alpha", catalog=catalog, skip=[0])
        self.assertEqual(r.step, 1)
        self.assertEqual(json.loads(r.config), {"x": 1, "y": 0})
        with self.assertRaises(TypeError):
            errshim.fix_config('{"x": 1}', "host error alpha", catalog=catalog, skip=[-1])


class RemediateKindsTest(unittest.TestCase):
    """remediate() on generate() and from_pretrained() kwargs and on config
    text, with the kinds, created keys and value spellings of the C++ one."""

    @staticmethod
    def failing_while(key, bad, message, calls=None):
        def build(cfg):
            if calls is not None:
                calls.append(cfg)
            if cfg.get(key) == bad:
                raise RuntimeError(message) if "index_copy_" in message else ImportError(message)
            return "ok"
        return build

    def test_from_pretrained_kwargs_get_sdpa(self):
        kwargs = {"attn_implementation": "flash_attention_2", "low_cpu_mem_usage": True}
        r = errshim.remediate(self.failing_while("attn_implementation", "flash_attention_2", FLASH_ATTENTION_2_MISSING),
                              kwargs, kind="from_pretrained")
        self.assertEqual(r.config, {"attn_implementation": "sdpa", "low_cpu_mem_usage": True})
        self.assertEqual(kwargs["attn_implementation"], "flash_attention_2")  # the caller's dict is left alone
        change = r.report.applied_changes()[0]
        self.assertEqual((change["path"], change["after"], change["created"]), ("attn_implementation", "sdpa", False))

    def test_generate_kwargs_never_get_an_attention_implementation(self):
        # The error names a from_pretrained() setting: generate() does not
        # read attn_implementation, so no step may add it to its kwargs.
        def build(cfg):
            raise ImportError(FLASH_ATTENTION_2_MISSING)

        with self.assertRaises(errshim.RemediationError) as caught:
            errshim.remediate(build, {"max_new_tokens": 8}, kind="generate")
        refused = [d for d in caught.exception.report.decisions if d["outcome"] == "refused"]
        self.assertTrue(refused)
        self.assertIn("this is a generate-kwargs config", refused[0]["reason"])
        self.assertEqual(caught.exception.report.calls, 1)

    def test_a_created_key_is_reported_as_created(self):
        r = errshim.remediate(self.failing_while("attn_implementation", None, FLASH_ATTENTION_2_MISSING), {},
                              kind="from_pretrained")
        self.assertEqual(r.config, {"attn_implementation": "sdpa"})
        self.assertTrue(r.report.applied_changes()[0]["created"])

    def test_captured_libtorch_dtype_is_written_in_the_configs_spelling(self):
        cfg = {"dtype": "float16", "cache_dtype": "float32"}
        r = errshim.remediate(self.failing_while("cache_dtype", "float32", INDEX_COPY_HALF), cfg)
        self.assertEqual(r.config["cache_dtype"], "float16")  # not libtorch's "Half"

    def test_yaml_text_keeps_its_comments(self):
        text = "# reviewed\ncache_implementation: quantized   # saves memory\nmax_new_tokens: 8\n"
        r = errshim.remediate(lambda cfg: (_ for _ in ()).throw(ValueError(QUANTIZED_CACHE)) if "quantized" in cfg
                              else "ok", text, kind="generation-config")
        self.assertEqual(r.config, text.replace("quantized", "dynamic"))

    def test_unknown_kind_is_refused(self):
        with self.assertRaises(ValueError):
            errshim.remediate(lambda cfg: 1, {}, kind="kwargs")

    def test_torch_dtype_objects_stay_torch_dtypes(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed")
        kwargs = {"torch_dtype": torch.float32, "cache_dtype": torch.float32}
        r = errshim.remediate(self.failing_while("cache_dtype", torch.float32, INDEX_COPY_HALF), kwargs)
        self.assertIs(r.config["cache_dtype"], torch.float16)
        self.assertIs(r.config["torch_dtype"], torch.float32)


if __name__ == "__main__":
    unittest.main()
