"""errshim.observe: every lookup in the process reaches the callback, and
errshim.metrics counts unrecognised errors from any diagnose.

Run from python/:  ERRSHIM_LIBRARY=../build/liberrshim_c.so python3 -m unittest discover -s tests -v
"""

import threading
import unittest

import errshim

# Copied from patterns/transformers.yaml (the upstream message, exactly).
QUANTIZED_CACHE = (
    "This model does not support the quantized cache. If you want your model to support quantized cache, "
    "please open an issue and tag @zucchini-nlp."
)
QUANTIZED_ID = "transformers.generation.quantized_cache_unsupported"

# Two workers' copies of one error errshim does not know.
UNKNOWN_RANK0 = "[rank0]: RuntimeError: shard 2 of the router table went missing"
UNKNOWN_RANK3 = "[rank3]: RuntimeError: shard 17 of the router table went missing"


class Recorder:
    def __init__(self):
        self.lock = threading.Lock()
        self.seen = []

    def __call__(self, lookup):
        with self.lock:
            self.seen.append(lookup)


class ObserveTest(unittest.TestCase):
    def test_diagnose_reports_the_entry_of_a_match(self):
        r = Recorder()
        with errshim.observe(r):
            errshim.diagnose("ValueError: " + QUANTIZED_CACHE)
        self.assertEqual(len(r.seen), 1)
        self.assertEqual(r.seen[0].entry_id, QUANTIZED_ID)
        self.assertIsNone(r.seen[0].fingerprint)
        self.assertEqual(r.seen[0].site, "c_api_diagnose")
        self.assertEqual(r.seen[0].message, "ValueError: " + QUANTIZED_CACHE)
        self.assertGreaterEqual(r.seen[0].elapsed, 0)

    def test_two_workers_copies_of_an_unknown_error_have_one_fingerprint(self):
        r = Recorder()
        with errshim.observe(r):
            self.assertIsNone(errshim.diagnose(UNKNOWN_RANK0))
            self.assertIsNone(errshim.diagnose(UNKNOWN_RANK3))
            self.assertIsNone(errshim.diagnose("[rank0]: RuntimeError: the router table is read-only"))
        self.assertEqual([l.entry_id for l in r.seen], [None, None, None])
        self.assertRegex(r.seen[0].fingerprint, "^[0-9a-f]{16}$")
        self.assertEqual(r.seen[0].fingerprint, r.seen[1].fingerprint)
        self.assertNotEqual(r.seen[0].fingerprint, r.seen[2].fingerprint)
        self.assertIn("<num>", r.seen[0].fingerprint_text)

    def test_translate_and_fix_config_are_observed_with_their_site(self):
        r = Recorder()
        with errshim.observe(r):
            with self.assertRaises(KeyError):
                with errshim.translate():
                    raise KeyError("lm_head.weight")
            errshim.fix_config("{}", UNKNOWN_RANK0)
        self.assertEqual([l.site for l in r.seen], ["c_api_diagnose", "c_api_fix_config"])
        self.assertIn("lm_head.weight", r.seen[0].message)

    def test_closing_the_observer_stops_the_calls(self):
        r = Recorder()
        o = errshim.observe(r)
        errshim.diagnose(UNKNOWN_RANK0)
        o.close()
        self.assertTrue(o.closed)
        errshim.diagnose(UNKNOWN_RANK0)
        o.close()  # twice is fine
        self.assertEqual(len(r.seen), 1)

    def test_a_callback_that_raises_does_not_change_the_result(self):
        def broken(lookup):
            raise RuntimeError("observer bug")

        with errshim.observe(broken):
            d = errshim.diagnose("ValueError: " + QUANTIZED_CACHE)
            with self.assertRaises(errshim.TranslatedError) as caught:
                with errshim.translate():
                    raise ValueError(QUANTIZED_CACHE)
        self.assertEqual(d.id, QUANTIZED_ID)
        self.assertEqual(caught.exception.diagnosis.id, QUANTIZED_ID)

    def test_lookups_from_several_threads_are_each_seen_once(self):
        r = Recorder()
        per_thread = 25

        def work():
            for _ in range(per_thread):
                errshim.diagnose(UNKNOWN_RANK3)

        with errshim.observe(r):
            threads = [threading.Thread(target=work) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        self.assertEqual(len(r.seen), 4 * per_thread)

    def test_a_callback_is_required(self):
        with self.assertRaises(TypeError):
            errshim.observe(None)


class PrometheusUnrecognisedTest(unittest.TestCase):
    def setUp(self):
        try:
            import prometheus_client
        except ImportError:
            self.skipTest("prometheus_client is not installed (Debian: python3-prometheus-client)")
        from errshim.metrics import PrometheusMetrics

        self.prometheus_client = prometheus_client
        self.registry = prometheus_client.CollectorRegistry()
        self.metrics = PrometheusMetrics(self.registry, fingerprint_buckets=1)

    def test_unrecognised_errors_from_any_diagnose_are_counted_by_fingerprint(self):
        with self.metrics.attach():
            errshim.diagnose(UNKNOWN_RANK0)
            errshim.explain(KeyError("lm_head.weight"))  # another error: its own fingerprint
            errshim.diagnose(UNKNOWN_RANK3)
            errshim.diagnose("ValueError: " + QUANTIZED_CACHE)
        errshim.diagnose(UNKNOWN_RANK0)  # after close: not counted
        fingerprint = self.seen_fingerprint(UNKNOWN_RANK0)
        self.assertEqual(self.metrics.unrecognised_value(fingerprint), 2)
        # fingerprint_buckets=1: the KeyError's fingerprint is the second one seen.
        self.assertEqual(self.metrics.unrecognised_value("other"), 1)
        sample = self.registry.get_sample_value
        self.assertEqual(sample("errshim_match_duration_seconds_count", {"result": "unrecognised"}), 3)
        self.assertEqual(sample("errshim_match_duration_seconds_count", {"result": "recognised"}), 1)
        text = self.prometheus_client.generate_latest(self.registry).decode()
        self.assertIn('errshim_unrecognised_errors_total{fingerprint="%s"} 2.0' % fingerprint, text)

    def seen_fingerprint(self, message):
        r = Recorder()
        with errshim.observe(r):
            errshim.diagnose(message)
        return r.seen[0].fingerprint


if __name__ == "__main__":
    unittest.main()
