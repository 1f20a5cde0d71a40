"""Tests of the Python binding, on real Python exceptions.

Run from python/:  ERRSHIM_LIBRARY=../build/liberrshim_c.so python3 -m unittest discover -s tests -v
(ctest runs them as python.unittest, with the library of its build).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback
import unittest

import errshim

# Copied from patterns/transformers.yaml (the upstream message, exactly).
QUANTIZED_CACHE = (
    "This model does not support the quantized cache. If you want your model to support quantized cache, "
    "please open an issue and tag @zucchini-nlp."
)
QUANTIZED_ID = "transformers.generation.quantized_cache_unsupported"

# A candle error as candle's Python bindings or a Rust log show it.
SDPA = (
    "Meta SDPA does not support q head dim 48: q dims [1, 32, 7, 48], k dims [1, 8, 7, 48], v dims [1, 8, 7, 48]."
)
SDPA_ID = "candle.sdpa.unsupported_head_dim"


# -- a small stand-in for a transformers call stack: the error is raised
# -- three frames down, the way generate() raises it.


def _prepare_cache_for_generation(generation_config):
    if generation_config.get("cache_implementation") == "quantized":
        raise ValueError(QUANTIZED_CACHE)


def generate(**generation_config):
    _prepare_cache_for_generation(generation_config)
    return [1, 2, 3]


def serve_request(cache_implementation):
    return generate(cache_implementation=cache_implementation, max_new_tokens=8)


class CustomError(Exception):
    """An exception type with a required constructor argument and an attribute."""

    def __init__(self, message, request_id):
        super().__init__(message)
        self.request_id = request_id


MY_CATALOG = """\
schema: 1
library: myapp
defaults: {repo: example/myapp, commit: 0123456789abcdef0123456789abcdef01234567}
entries:
  - id: myapp.tokenizer.missing
    template: 'tokenizer file {path} not found'
    source: {path: app/tokenizer.py, line: 12}
    error_class: FileNotFoundError
    kind: configuration
    cause: the tokenizer file is missing
    trigger: a model folder without tokenizer.json
    remediation:
      - text: download the tokenizer
    examples:
      match: [{text: 'tokenizer file /models/x/tokenizer.json not found', captures: {path: /models/x/tokenizer.json}}]
"""


SCOPED_CATALOG = """\
schema: 1
library: lib
defaults: {repo: example/lib, commit: 0123456789abcdef0123456789abcdef01234567}
entries:
""" + "".join(
    """\
  - id: lib.cache.%s
    template: 'quantized cache unsupported'
    applies_to: {transformers: '%s'}
    source: {path: lib/cache.py, line: 1}
    error_class: ValueError
    kind: unsupported-feature
    cause: c
    trigger: t
    remediation:
      - text: r
    examples:
      match: [{text: 'quantized cache unsupported', context: {transformers: '%s'}}]
"""
    % args
    for args in (("old", "<4.54", "4.50"), ("new", ">=4.54", "4.57"))
)


class DiagnoseTest(unittest.TestCase):
    def test_version_matches_the_header(self):
        header = os.path.join(os.path.dirname(__file__), "..", "..", "include", "errshim", "version.hpp")
        with open(header) as f:
            self.assertIn('ERRSHIM_VERSION_STRING "%s"' % errshim.version(), f.read())

    def test_known_message(self):
        d = errshim.diagnose("ValueError: " + QUANTIZED_CACHE)
        self.assertIsInstance(d, errshim.Diagnosis)
        self.assertEqual(d.id, QUANTIZED_ID)
        self.assertEqual(d.exception_class, "ValueError")
        self.assertEqual(d.source["repo"], "huggingface/transformers")
        self.assertEqual(d.source["path"], "src/transformers/generation/utils.py")
        self.assertGreater(d.source["line"], 0)
        self.assertTrue(d.cause)
        self.assertTrue(d.trigger)
        self.assertGreaterEqual(len(d.remediation), 2)
        self.assertIn("dynamic", d.remediation[0].text)
        self.assertEqual(d.remediation[0].safety, "safe")
        self.assertEqual(d.remediation[0].fix["set"], {"cache_implementation": "dynamic"})

    def test_fields_read_on_first_use_match_the_full_result(self):
        lazy = errshim.diagnose("Error: " + SDPA)
        self.assertEqual(lazy.id, SDPA_ID)
        import copy, pickle

        twin = copy.deepcopy(lazy)  # its own plain copy, not a second owner of the result
        full = errshim.Diagnosis(lazy.to_dict())
        self.assertEqual(lazy, full)
        self.assertEqual(twin, full)
        self.assertEqual(pickle.loads(pickle.dumps(errshim.diagnose("Error: " + SDPA))), full)
        self.assertEqual((lazy.cause, lazy.captures, lazy.remediation), (full.cause, full.captures, full.remediation))
        with self.assertRaises(AttributeError):
            lazy.no_such_field

    def test_unknown_message_is_none(self):
        self.assertIsNone(errshim.diagnose("ValueError: the weather is bad today"))
        self.assertIsNone(errshim.diagnose(""))

    def test_captures_in_order(self):
        d = errshim.diagnose("Error: " + SDPA)
        self.assertEqual(d.id, SDPA_ID)
        self.assertEqual(d.captures["q_head"], "48")
        self.assertEqual(list(d.captures)[0], "q_head")
        self.assertEqual(d.captures["q_dims"], "[1, 32, 7, 48]")

    def test_to_dict_is_explain_json(self):
        d = errshim.diagnose("Error: " + SDPA)
        data = d.to_dict()
        self.assertTrue(data["matched"])
        for key in ("id", "source", "library", "error_class", "kind", "severity", "cause", "trigger",
                    "remediation", "captures", "message", "exception_class"):
            self.assertIn(key, data)
        self.assertEqual(data["id"], d.id)
        data["id"] = "changed"
        self.assertEqual(d.to_dict()["id"], SDPA_ID, "to_dict returns a copy")

    def test_bytes_and_invalid_utf8(self):
        d = errshim.diagnose(("ValueError: " + QUANTIZED_CACHE).encode() + b"\xff\xfe")
        self.assertEqual(d.id, QUANTIZED_ID)
        with self.assertRaises(TypeError):
            errshim.diagnose(42)

    def test_context_string_and_dict(self):
        # Two entries for one message, scoped to transformers versions: the context picks.
        catalog = errshim.Catalog(embedded=False).add_yaml(SCOPED_CATALOG, "scoped.yaml")
        for context in ("transformers=4.57,device=metal", {"transformers": "4.57", "device": "metal"}):
            self.assertEqual(catalog.diagnose("quantized cache unsupported", context=context).id, "lib.cache.new")
        self.assertEqual(catalog.diagnose("quantized cache unsupported", context={"transformers": "4.50"}).id,
                         "lib.cache.old")

    def test_bad_context_raises(self):
        with self.assertRaises(errshim.ErrshimError) as cm:
            errshim.diagnose("x", context="no-equals-sign")
        self.assertEqual(cm.exception.status, "invalid-argument")

    def test_from_threads(self):
        results = []

        def work():
            for _ in range(20):
                results.append(errshim.diagnose("Error: " + SDPA).id)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(results, [SDPA_ID] * 80)


class ExplainTest(unittest.TestCase):
    def test_explain_reads_the_whole_traceback(self):
        try:
            serve_request("quantized")
        except ValueError as exc:
            text = errshim.exception_text(exc)
            self.assertIn("Traceback (most recent call last):", text)
            self.assertIn("_prepare_cache_for_generation", text)
            d = errshim.explain(exc)
        self.assertEqual(d.id, QUANTIZED_ID)
        self.assertEqual(d.exception_class, "ValueError")

    def test_explain_defaults_to_the_exception_being_handled(self):
        try:
            serve_request("quantized")
        except ValueError:
            d = errshim.explain()
        self.assertEqual(d.id, QUANTIZED_ID)

    def test_explain_outside_except_block(self):
        with self.assertRaises(ValueError):
            errshim.explain()

    def test_explain_finds_the_root_cause_of_a_chain(self):
        # The application wraps the library error; errshim reads both.
        try:
            try:
                serve_request("quantized")
            except ValueError as inner:
                raise RuntimeError("request 17 failed") from inner
        except RuntimeError as exc:
            d = errshim.explain(exc)
        self.assertEqual(d.id, QUANTIZED_ID)

    def test_explain_unknown(self):
        try:
            {}["missing"]
        except KeyError as exc:
            self.assertIsNone(errshim.explain(exc))


class TranslateTest(unittest.TestCase):
    def test_translated_error_is_raised_from_the_original(self):
        # try/except rather than assertRaises, which drops the traceback.
        try:
            with errshim.translate():
                serve_request("quantized")
        except errshim.TranslatedError as caught:
            err = caught
        else:
            self.fail("nothing raised")
        self.assertEqual(err.diagnosis.id, QUANTIZED_ID)
        self.assertIsInstance(err.original, ValueError)
        self.assertIs(err.__cause__, err.original)
        self.assertIn(QUANTIZED_ID, str(err))
        self.assertIn("try:", str(err))
        # The traceback still leads to where the error was raised.
        names = [f.name for f in traceback.extract_tb(err.__traceback__)]
        self.assertIn("_prepare_cache_for_generation", names)

    def test_existing_except_clauses_keep_working(self):
        try:
            with errshim.translate():
                serve_request("quantized")
        except ValueError as exc:  # the handler written before errshim came along
            self.assertIsInstance(exc, errshim.TranslatedError)
            self.assertEqual(type(exc).__name__, "TranslatedValueError")
            self.assertEqual(exc.diagnosis.id, QUANTIZED_ID)
        else:
            self.fail("nothing raised")

    def test_unknown_errors_pass_through_untouched(self):
        original = KeyError("missing")
        with self.assertRaises(KeyError) as cm:
            with errshim.translate():
                raise original
        self.assertIs(cm.exception, original)
        self.assertNotIsInstance(cm.exception, errshim.TranslatedError)

    def test_no_error_no_change(self):
        with errshim.translate():
            self.assertEqual(serve_request("dynamic"), [1, 2, 3])

    def test_custom_exception_type_with_required_arguments(self):
        with self.assertRaises(CustomError) as cm:
            with errshim.translate():
                raise CustomError("Error: " + SDPA, request_id=17)
        err = cm.exception
        self.assertIsInstance(err, errshim.TranslatedError)
        self.assertEqual(err.diagnosis.id, SDPA_ID)
        self.assertEqual(err.request_id, 17, "the original's attributes are kept")

    def test_os_error_subclass(self):
        with self.assertRaises(FileNotFoundError) as cm:
            with errshim.translate():
                raise FileNotFoundError(QUANTIZED_CACHE)
        self.assertEqual(cm.exception.diagnosis.id, QUANTIZED_ID)

    def test_as_decorator_with_context_and_catalog(self):
        catalog = errshim.Catalog().add_yaml(MY_CATALOG, "myapp.yaml")

        @errshim.translate(context={"transformers": "4.57"}, catalog=catalog)
        def load():
            raise FileNotFoundError("tokenizer file /models/a/tokenizer.json not found")

        with self.assertRaises(errshim.TranslatedError) as cm:
            load()
        self.assertEqual(cm.exception.diagnosis.id, "myapp.tokenizer.missing")
        self.assertEqual(cm.exception.diagnosis.captures, {"path": "/models/a/tokenizer.json"})

    def test_base_exceptions_are_never_translated(self):
        with self.assertRaises(KeyboardInterrupt) as cm:
            with errshim.translate():
                raise KeyboardInterrupt(QUANTIZED_CACHE)
        self.assertNotIsInstance(cm.exception, errshim.TranslatedError)

    def test_a_type_that_refuses_subclasses_passes_through_unchanged(self):
        # Making the Translated subclass runs the type's __init_subclass__ and
        # metaclass; whatever they raise, the user's exception goes on as it was.
        class Sealed(ValueError):
            def __init_subclass__(cls, **kwargs):
                raise RuntimeError("Sealed may not be subclassed")

        class Refusing(type):
            def __new__(mcs, name, bases, ns):
                if name.startswith("Translated"):
                    raise KeyError(name)
                return super().__new__(mcs, name, bases, ns)

        class Guarded(ValueError, metaclass=Refusing):
            pass

        class Fussy(type):
            def __init__(cls, name, bases, ns):
                if name.startswith("Translated"):
                    raise LookupError(name)
                super().__init__(name, bases, ns)

        class Watched(ValueError, metaclass=Fussy):
            pass

        for cls in (Sealed, Guarded, Watched):
            with self.subTest(cls=cls.__name__):
                original = cls(QUANTIZED_CACHE)
                with self.assertRaises(cls) as cm:
                    with errshim.translate():
                        raise original
                self.assertIs(cm.exception, original)
                self.assertIs(type(cm.exception), cls)
                self.assertIsNone(cm.exception.__cause__)
                # errshim.explain still reads it.
                self.assertEqual(errshim.explain(original).id, QUANTIZED_ID)

    def test_translating_twice_keeps_the_first(self):
        with self.assertRaises(errshim.TranslatedError) as cm:
            with errshim.translate():
                with errshim.translate():
                    serve_request("quantized")
        self.assertIsInstance(cm.exception.original, ValueError)
        self.assertIs(errshim.explain(cm.exception), cm.exception.diagnosis)


class CatalogTest(unittest.TestCase):
    def test_embedded_and_layers(self):
        with errshim.Catalog() as catalog:
            embedded = len(catalog)
            self.assertGreater(embedded, 0)
            catalog.add_yaml(MY_CATALOG, "myapp.yaml")
            self.assertEqual(len(catalog), embedded + 1)
            self.assertEqual(catalog.diagnose("tokenizer file /x not found").id, "myapp.tokenizer.missing")
            self.assertEqual(catalog.diagnose("Error: " + SDPA).id, SDPA_ID)

    def test_empty_catalog(self):
        catalog = errshim.Catalog(embedded=False)
        self.assertEqual(len(catalog), 0)
        self.assertIsNone(catalog.diagnose("Error: " + SDPA))

    def test_a_broken_layer_is_refused_and_the_catalog_kept(self):
        catalog = errshim.Catalog(embedded=False).add_yaml(MY_CATALOG)
        with self.assertRaises(errshim.ErrshimError) as cm:
            catalog.add_yaml(MY_CATALOG.replace("cause:", "cuase:"), "broken.yaml")
        self.assertEqual(cm.exception.status, "catalog-error")
        self.assertIn("broken.yaml", str(cm.exception))
        self.assertEqual(len(catalog), 1)

    def test_add_path(self):
        patterns = os.path.join(os.path.dirname(__file__), "..", "..", "patterns")
        catalog = errshim.Catalog(patterns, embedded=False)
        self.assertGreater(len(catalog), 0)
        with self.assertRaises(errshim.ErrshimError):
            catalog.add_path("/nonexistent/errshim-patterns")

    def test_closed_catalog(self):
        catalog = errshim.Catalog()
        catalog.close()
        catalog.close()  # twice is fine
        with self.assertRaises(ValueError):
            len(catalog)


class FixConfigTest(unittest.TestCase):
    MESSAGE = "ValueError: " + QUANTIZED_CACHE

    def test_json(self):
        config = '{\n  "max_new_tokens": 64,\n  "cache_implementation": "quantized"\n}\n'
        r = errshim.fix_config(config, self.MESSAGE)
        self.assertTrue(r)
        self.assertEqual(r.format, "json")
        self.assertEqual(r.entry_id, QUANTIZED_ID)
        self.assertEqual(r.step, 0)
        self.assertEqual(r.safety, "safe")
        fixed = json.loads(r.config)
        self.assertEqual(fixed, {"max_new_tokens": 64, "cache_implementation": "dynamic"})
        self.assertEqual(list(fixed), ["max_new_tokens", "cache_implementation"], "key order kept")
        self.assertEqual(r.changes, [{"path": "cache_implementation", "before": "quantized", "after": "dynamic",
                                      "created": False}])
        self.assertEqual(r.diagnosis.id, QUANTIZED_ID)

    def test_yaml(self):
        r = errshim.fix_config("cache_implementation: quantized\nmax_new_tokens: 64\n", self.MESSAGE)
        self.assertEqual(r.format, "yaml")
        self.assertIn("cache_implementation: dynamic", r.config)
        self.assertIn("max_new_tokens: 64", r.config)

    def test_pinned_key_is_never_changed(self):
        config = '{"cache_implementation": "quantized"}'
        r = errshim.fix_config(config, self.MESSAGE, pinned=["cache_implementation"])
        self.assertFalse(r)
        self.assertIsNone(r.step)
        self.assertEqual(r.config, config, "unchanged when nothing is applied")
        self.assertTrue(any(d["outcome"] == "refused" for d in r.decisions))

    def test_allowed_classes(self):
        config = '{"cache_implementation": "quantized"}'
        r = errshim.fix_config(config, self.MESSAGE, allowed="slower")
        self.assertEqual((r.step, r.safety), (1, "slower"))
        self.assertEqual(json.loads(r.config)["cache_implementation"], "offloaded")
        with self.assertRaises(errshim.ErrshimError) as cm:
            errshim.fix_config(config, self.MESSAGE, allowed="manual")
        self.assertEqual(cm.exception.status, "invalid-argument")

    def test_unknown_message(self):
        r = errshim.fix_config('{"a": 1}', "ValueError: the weather is bad today")
        self.assertFalse(r)
        self.assertIsNone(r.entry_id)
        self.assertIsNone(r.diagnosis)

    def test_broken_config(self):
        with self.assertRaises(errshim.ErrshimError) as cm:
            errshim.fix_config('{"cache_implementation": ', self.MESSAGE)
        self.assertEqual(cm.exception.status, "config-error")


PACKAGE_DIR = os.path.dirname(os.path.abspath(errshim.__file__))


class LibraryLookupTest(unittest.TestCase):
    """Where errshim_c is looked for: the package's folder, ERRSHIM_LIBRARY,
    the prefix the package was installed into; nowhere else."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="errshim-lookup-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.real = os.path.realpath(errshim.library_path())
        # The package without a library beside it: what the subprocesses
        # import unless a test says otherwise (the package under test may be
        # an installed wheel, which bundles one).
        self.bare = self._package_copy(os.path.join(self.tmp, "bare"))

    def _python(self, env, code, pythonpath=None):
        full = dict(os.environ)
        full.pop("ERRSHIM_LIBRARY", None)
        full.update(env)
        full["PYTHONPATH"] = pythonpath or self.bare
        # Run from the temporary folder: `python -c` puts the working folder
        # first on sys.path, and the package must come from PYTHONPATH.
        return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, cwd=self.tmp)

    def _package_copy(self, where):
        """A copy of the package at <where>/errshim; returns <where>."""
        os.makedirs(where, exist_ok=True)
        shutil.copytree(PACKAGE_DIR, os.path.join(where, "errshim"),
                        ignore=shutil.ignore_patterns("__pycache__", "_install_prefix.py", "*.so*"))
        return where

    # `import errshim` itself raises when the library is not found.
    PRINT_PATH = (
        "try:\n"
        "    import errshim\n"
        "    print('loaded:', errshim.library_path())\n"
        "except ImportError as e:\n"
        "    assert '%s.%s' % (type(e).__module__, type(e).__name__) == 'errshim.LibraryNotFound', repr(e)\n"
        "    print('not found:', e)\n"
    )

    def test_env_var_naming_a_file_or_a_directory(self):
        for value in (self.real, os.path.dirname(self.real)):
            r = self._python({"ERRSHIM_LIBRARY": value}, "import errshim; print(errshim.diagnose('Error: %s').id)" % SDPA)
            self.assertEqual(r.stdout.strip(), SDPA_ID, r.stderr)

    def test_env_var_naming_nothing_lists_every_place_searched(self):
        r = self._python({"ERRSHIM_LIBRARY": "/nonexistent/liberrshim_c.so"}, self.PRINT_PATH)
        self.assertIn("not found: errshim: the shared library errshim_c was not found", r.stdout, r.stderr)
        self.assertIn("bundled with the package: %s (no errshim_c library there)" % os.path.join(self.bare, "errshim"),
                      r.stdout)
        self.assertIn("ERRSHIM_LIBRARY: /nonexistent/liberrshim_c.so (no errshim_c library there)", r.stdout)

    def test_env_var_naming_a_file_that_is_not_errshim_c(self):
        text_file = os.path.join(self.tmp, "liberrshim_c.so")
        with open(text_file, "w") as f:
            f.write("not a library\n")
        import _ctypes  # a shared library that is not errshim_c

        cases = [text_file]
        if getattr(_ctypes, "__file__", None):
            cases.append(_ctypes.__file__)
        for wrong in cases:
            r = self._python({"ERRSHIM_LIBRARY": wrong}, self.PRINT_PATH)
            self.assertEqual(r.returncode, 0, r.stderr)  # LibraryNotFound, not OSError or AttributeError
            self.assertIn("not found: ", r.stdout, r.stderr)
            self.assertIn("ERRSHIM_LIBRARY: %s (not a loadable errshim_c: " % wrong, r.stdout)

    def test_a_library_in_a_folder_above_the_package_is_never_loaded(self):
        # <tmp>/lib, <tmp>/build/ and <tmp>/ hold a library; the package is
        # three folders below <tmp>, as a checkout or prefix would put it.
        for d in ("lib", "lib64", "build", "build-asan", ""):
            os.makedirs(os.path.join(self.tmp, d), exist_ok=True)
            os.symlink(self.real, os.path.join(self.tmp, d, "liberrshim_c.so"))
        where = self._package_copy(os.path.join(self.tmp, "share", "errshim", "python"))
        r = self._python({}, self.PRINT_PATH, pythonpath=where)
        self.assertIn("not found: ", r.stdout, r.stderr)
        self.assertNotIn("loaded:", r.stdout)

    def test_the_library_bundled_in_the_package_comes_first(self):
        where = self._package_copy(os.path.join(self.tmp, "site-packages"))
        bundled = os.path.join(where, "errshim", "liberrshim_c.so.0")
        os.symlink(self.real, bundled)
        r = self._python({"ERRSHIM_LIBRARY": "/nonexistent/liberrshim_c.so"}, self.PRINT_PATH, pythonpath=where)
        self.assertEqual(r.stdout.strip(), "loaded: " + bundled, r.stderr)

    def test_the_install_prefix_recorded_at_install_time_is_searched_and_may_be_moved(self):
        prefix = os.path.join(self.tmp, "prefix")
        where = self._package_copy(os.path.join(prefix, "share", "errshim", "python"))
        # What cmake --install writes (cmake/install.cmake): the prefix's
        # library folder, relative to the installed package.
        with open(os.path.join(where, "errshim", "_install_prefix.py"), "w") as f:
            f.write('LIBRARY_DIRS = ["../../../../lib"]\n')
        os.makedirs(os.path.join(prefix, "lib"))
        os.symlink(self.real, os.path.join(prefix, "lib", "liberrshim_c.so"))
        r = self._python({}, self.PRINT_PATH, pythonpath=where)
        self.assertEqual(r.stdout.strip(), "loaded: " + os.path.join(prefix, "lib", "liberrshim_c.so"), r.stderr)

        moved = os.path.join(self.tmp, "moved")
        os.rename(prefix, moved)
        r = self._python({}, self.PRINT_PATH, pythonpath=os.path.join(moved, "share", "errshim", "python"))
        self.assertEqual(r.stdout.strip(), "loaded: " + os.path.join(moved, "lib", "liberrshim_c.so"), r.stderr)

    def test_import_raises_library_not_found_and_nothing_is_left_half_loaded(self):
        # Before: import succeeded and translate() let every error through
        # in silence when the library was missing.
        missing = os.path.join(self.tmp, "liberrshim_c.so")
        code = (
            "import sys\n"
            "try:\n"
            "    import errshim\n"
            "except ImportError as e:\n"
            "    print(type(e).__name__, 'errshim' in sys.modules)\n"
            "    print(e)\n"
        )
        r = self._python({"ERRSHIM_LIBRARY": missing}, code)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("LibraryNotFound False\n"), r.stdout + r.stderr)
        self.assertIn("ERRSHIM_LIBRARY: %s (no errshim_c library there)" % missing, r.stdout)

    def test_a_sanitizer_build_is_refused_unless_its_runtime_is_loaded(self):
        # Refused by name, never dlopen'ed: an AddressSanitizer build loaded
        # into a plain interpreter aborts it.
        import sanitized

        fake = sanitized.build(os.path.join(self.tmp, "asan", "liberrshim_c.so"))
        if fake is None:
            self.skipTest("no C compiler with AddressSanitizer's runtime")
        r = self._python({"ERRSHIM_LIBRARY": fake}, self.PRINT_PATH)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ERRSHIM_LIBRARY: %s (refused: built with AddressSanitizer and UndefinedBehaviorSanitizer"
                      % fake, r.stdout, r.stderr)
        self.assertIn("LD_PRELOAD=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)", r.stdout)

        bundled = self._package_copy(os.path.join(self.tmp, "site-packages"))
        os.symlink(fake, os.path.join(bundled, "errshim", "liberrshim_c.so"))
        r = self._python({"ERRSHIM_LIBRARY": self.real}, self.PRINT_PATH, pythonpath=bundled)
        self.assertEqual(r.stdout.strip(), "loaded: " + self.real, r.stderr)  # the search went on past it

    def test_a_plain_build_is_not_taken_for_a_sanitizer_build(self):
        # Only the names the library imports count: its data (the embedded
        # catalog) may quote a sanitizer's symbol in a message.
        from errshim import _native

        self.assertEqual(_native.sanitizers_in(self.real), [])
        quoting = os.path.join(self.tmp, "liberrshim_c.so")
        with open(self.real, "rb") as src, open(quoting, "wb") as dst:
            dst.write(src.read() + b"undefined symbol: __asan_init\0")
        self.assertEqual(_native.sanitizers_in(quoting), [])
        r = self._python({"ERRSHIM_LIBRARY": quoting}, self.PRINT_PATH)
        self.assertEqual(r.stdout.strip(), "loaded: " + quoting, r.stderr)

    def test_disable_is_the_only_way_translate_lets_a_known_error_through(self):
        original = ValueError(QUANTIZED_CACHE)
        errshim.disable()
        try:
            self.assertFalse(errshim.enabled())
            with self.assertRaises(ValueError) as caught:
                with errshim.translate():
                    raise original
            self.assertIs(caught.exception, original)
        finally:
            errshim.enable()
        with self.assertRaises(errshim.TranslatedError):
            with errshim.translate():
                raise ValueError(QUANTIZED_CACHE)

    def test_translate_says_so_when_errshim_itself_fails(self):
        original = ValueError(QUANTIZED_CACHE)
        with self.assertRaises(ValueError) as caught:
            with errshim.translate(context="not a context"):
                raise original
        self.assertIs(caught.exception, original)
        self.assertTrue(any(n.startswith("errshim: could not diagnose this error: invalid-argument")
                            for n in getattr(original, "__notes__", [])), getattr(original, "__notes__", None))

    def test_places_searched(self):
        from errshim import _native

        kinds = [kind for kind, _ in _native.candidates()]
        self.assertEqual(kinds[0], "bundled with the package")
        if os.environ.get("ERRSHIM_LIBRARY"):  # set by ctest's python.unittest, not in the wheel's venv
            self.assertEqual(kinds[1], "ERRSHIM_LIBRARY")
        self.assertTrue(set(kinds) <= {"bundled with the package", "ERRSHIM_LIBRARY", "install prefix"}, kinds)


if __name__ == "__main__":
    unittest.main()
