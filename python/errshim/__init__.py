"""errshim for Python: what an inference error means, and what to do about it.

    import errshim

    d = errshim.diagnose(message)            # a Diagnosis, or None if unknown
    print(d.id, d.cause, d.remediation[0].text)

    try:
        model.generate(**inputs, cache_implementation="quantized")
    except Exception as exc:
        d = errshim.explain(exc)              # reads the whole traceback

    with errshim.translate():                 # recognised errors come out enriched
        model.generate(...)                   # -> errshim.TranslatedError (still a ValueError, ...)

    r = errshim.fix_config(open("generation_config.json").read(), message)
    if r.applied: print(r.config)

    errshim.install()                         # uncaught exceptions, logging, warnings, asyncio

    with errshim.observe(lambda l: print(l.site, l.entry_id or l.fingerprint)):
        ...                                   # every lookup in the process, on any thread

    r = errshim.remediate(build, {"dtype": "float16"})   # apply fixes and retry

A thin layer (ctypes, standard library only) over errshim's C interface in
the shared library errshim_c, which a wheel bundles; see _native.candidates()
for where it is looked for, or set ERRSHIM_LIBRARY to its path. Without it,
`import errshim` raises errshim.LibraryNotFound (an ImportError).
"""

import contextlib
import ctypes
import json
import sys
import threading
import traceback
import weakref

from . import _native
from ._native import LibraryNotFound

__all__ = [
    "Catalog",
    "Diagnosis",
    "ErrshimError",
    "FixResult",
    "LibraryNotFound",
    "LogDiagnosis",
    "LogFilter",
    "Lookup",
    "Observer",
    "Remediated",
    "Remediation",
    "RemediationError",
    "RemediationReport",
    "TranslatedError",
    "diagnose",
    "disable",
    "enable",
    "enabled",
    "exception_text",
    "explain",
    "fix_config",
    "install",
    "installed",
    "library_path",
    "observe",
    "remediate",
    "translate",
    "diagnosis_text",
    "translated",
    "uninstall",
    "version",
]

# Loaded at import: without its library errshim can do nothing, and a
# translate() that quietly let every error through would hide that. The
# error names every place searched.
_lib, _lib_path = _native.open_library()

_enabled = True  # errshim.disable() turns translate() and the hooks off
_fill_lock = threading.Lock()


def _library():
    return _lib


def disable():
    """Turns errshim off for the process: translate() lets every error
    through unchanged and the hooks of install() add nothing, until enable().
    The explicit off switch; errshim is never off by accident."""
    global _enabled
    _enabled = False


def enable():
    """Undoes disable()."""
    global _enabled
    _enabled = True


def enabled():
    """False after disable()."""
    return _enabled


def library_path():
    """The path of the errshim_c library in use."""
    return _lib_path


def version():
    """errshim's version, as the library reports it ("0.1.0")."""
    return _native.lent(_library().errshim_version())


# ---------------------------------------------------------------- errors


class ErrshimError(Exception):
    """errshim could not do what was asked (a catalog that does not load, a
    config that does not parse, a bad argument). `status` names the C status
    ("catalog-error", ...); `code` is its number."""

    def __init__(self, code, message):
        self.code = code
        self.status = _native.lent(_library().errshim_status_name(code))
        super().__init__("%s: %s" % (self.status, message) if message else self.status)


def _check(code, error_pointer, allowed=(_native.OK,)):
    message = _native.take_string(_library(), error_pointer.value)
    if code not in allowed:
        raise ErrshimError(code, message)
    return code


def _bytes(text, what):
    if isinstance(text, bytes):
        return text
    if isinstance(text, str):
        return text.encode("utf-8", "surrogateescape")
    raise TypeError("%s must be str or bytes, not %s" % (what, type(text).__name__))


def _context_bytes(context):
    # "transformers=4.57,device=metal" or {"transformers": "4.57", "device": "metal"}
    if context is None:
        return None
    if isinstance(context, dict):
        context = ",".join("%s=%s" % (k, v) for k, v in context.items())
    return _bytes(context, "context")


def _comma_bytes(items, what):
    if items is None:
        return None
    if not isinstance(items, (str, bytes)):
        items = ",".join(items)
    return _bytes(items, what)


# -------------------------------------------------------------- the results


class Remediation:
    """One remediation step: `text`, and `fix` (a dict: set/remove/action,
    safety, reason) when errshim can make the change itself."""

    __slots__ = ("text", "fix")

    def __init__(self, text, fix=None):
        self.text = text
        self.fix = fix

    @property
    def safety(self):
        """"safe", "slower", "changes-output", "manual", or None without a fix."""
        return self.fix.get("safety") if self.fix else None

    def __str__(self):
        return self.text

    def __repr__(self):
        return "Remediation(%r, fix=%r)" % (self.text, self.fix)

    def __eq__(self, other):
        return isinstance(other, Remediation) and (self.text, self.fix) == (other.text, other.fix)


class Diagnosis:
    """A recognised error: the catalog entry that explains it, and what the
    message said. Plain data, copied out of the library: keep it as long as
    you like, from any thread.

    diagnose() reads only the id at once; the other fields are copied out of
    the library's result the first time one is used (rendering and parsing
    the whole result costs several times the lookup itself, and a server
    that only counts ids never needs it)."""

    _FIELDS = ("_data", "cause", "trigger", "remediation", "captures", "source", "library", "error_class", "kind",
               "severity", "message", "exception_class")

    def __init__(self, data):
        self._fill_from(data)

    def _fill_from(self, data):
        self._data = data
        self.id = data["id"]
        self.cause = data.get("cause", "")
        self.trigger = data.get("trigger", "")
        self.remediation = [Remediation(r.get("text", ""), r.get("fix")) for r in data.get("remediation", [])]
        self.captures = dict(data.get("captures", {}))
        self.source = dict(data.get("source", {}))
        self.library = data.get("library", "")
        self.error_class = data.get("error_class", "")
        self.kind = data.get("kind", "")
        self.severity = data.get("severity", "")
        self.message = data.get("message", "")
        self.exception_class = data.get("exception_class", "")

    @staticmethod
    def _read(handle):
        text = _native.take_string(_library(), _library().errshim_diagnosis_json(handle))
        if text is None:
            raise MemoryError("errshim: out of memory rendering a diagnosis")
        return json.loads(text)

    @classmethod
    def _from_handle(cls, handle):
        """A copy of a result errshim lends (the handle stays the caller's)."""
        data = cls._read(handle)
        return cls(data) if data.get("matched") else None

    @classmethod
    def _owning(cls, handle):
        """A Diagnosis that takes over a matched result handle: the id now,
        the rest on first use; the handle is freed then, or with the object."""
        d = cls.__new__(cls)
        d.id = _native.lent(_library().errshim_diagnosis_id(handle))
        d._handle = handle
        return d

    def __getattr__(self, name):
        # Only reached for a field not read yet.
        if name in Diagnosis._FIELDS and "_handle" in self.__dict__:
            with _fill_lock:
                handle = self.__dict__.pop("_handle", None)
                if handle is not None:
                    try:
                        self._fill_from(self._read(handle))
                    finally:
                        _library().errshim_diagnosis_free(handle)
            return object.__getattribute__(self, name)
        raise AttributeError("%r object has no attribute %r" % (type(self).__name__, name))

    def __getstate__(self):
        # copy, deepcopy, pickle: plain data only, never a second owner of
        # the handle.
        self._data  # noqa: B018 - reads everything, frees the handle
        return dict(self.__dict__)

    def __del__(self):
        handle = self.__dict__.pop("_handle", None)
        if handle is not None and _lib is not None:
            _lib.errshim_diagnosis_free(handle)

    def to_dict(self):
        """The object `errshim explain --json` prints (a fresh copy)."""
        return json.loads(json.dumps(self._data))

    def summary(self):
        """One line: id, the message's first line, the first remediation."""
        first = self.message.splitlines()[0] if self.message else ""
        line = "%s: %s" % (self.id, first)
        if self.remediation:
            line += " -- try: %s" % " ".join(self.remediation[0].text.split())
        return line

    def __str__(self):
        return self.summary()

    def __repr__(self):
        return "<errshim.Diagnosis %s>" % self.id

    def __eq__(self, other):
        return isinstance(other, Diagnosis) and self._data == other._data


class FixResult:
    """What fix_config decided. `applied`; `config` (the new text, in the
    input's format, or the input unchanged); `format` ("json"/"yaml");
    `entry_id`, `step` (0-based) and `safety` of the step applied; `changes`
    ([{"path", "before", "after", "created"}]); `decisions` (the audit record of every
    step considered, with the reason of each refusal); `diagnosis`."""

    def __init__(self, handle):
        lib = _library()
        self.applied = bool(lib.errshim_fix_applied(handle))
        self.config = _native.lent(lib.errshim_fix_config_text(handle))
        self.format = _native.lent(lib.errshim_fix_format(handle))
        self.entry_id = _native.lent(lib.errshim_fix_entry_id(handle)) or None
        step = lib.errshim_fix_step(handle)
        self.step = step if step >= 0 else None
        self.step_text = _native.lent(lib.errshim_fix_step_text(handle)) or None
        self.safety = _native.lent(lib.errshim_fix_safety(handle)) or None
        report = _native.take_string(lib, lib.errshim_fix_json(handle))
        data = json.loads(report) if report else {}
        self.changes = data.get("changes", [])
        self.decisions = data.get("decisions", [])
        d = lib.errshim_fix_diagnosis(handle)
        self.diagnosis = Diagnosis._from_handle(d) if d else None

    def __bool__(self):
        return self.applied

    def __repr__(self):
        return "<errshim.FixResult applied=%s entry=%s step=%s>" % (self.applied, self.entry_id, self.step)


# ------------------------------------------------------------------ catalogs


class Catalog:
    """A catalog of errors. Catalog() holds the entries embedded in the
    library; add_path() and add_yaml() put layers on top (an entry with an
    existing id replaces it). Safe to use from several threads."""

    def __init__(self, *paths, embedded=True):
        lib = _library()
        handle = ctypes.c_void_p()
        error = ctypes.c_void_p()
        _check(lib.errshim_catalog_new(1 if embedded else 0, ctypes.byref(handle), ctypes.byref(error)), error)
        self._handle = handle
        # Freed with the object, even if the user never calls close().
        self._finalizer = weakref.finalize(self, lib.errshim_catalog_free, handle)
        for path in paths:
            self.add_path(path)

    def _h(self):
        if not self._finalizer.alive:
            raise ValueError("errshim: this catalog is closed")
        return self._handle

    def add_path(self, path):
        """Adds a .yaml file, a folder of them (one layer), or a .snapshot
        file written by `errshim snapshot` (loads without parsing YAML).
        Raises ErrshimError listing every problem; the catalog is then
        unchanged."""
        error = ctypes.c_void_p()
        path = path if isinstance(path, (str, bytes)) else str(path)  # os.PathLike
        code = _library().errshim_catalog_add_path(self._h(), _bytes(path, "path"), ctypes.byref(error))
        _check(code, error)
        return self

    def add_yaml(self, text, name=None):
        """Adds a layer from YAML text; `name` appears in problem messages."""
        data = _bytes(text, "text")
        error = ctypes.c_void_p()
        code = _library().errshim_catalog_add_yaml(
            self._h(), data, len(data), None if name is None else _bytes(name, "name"), ctypes.byref(error)
        )
        _check(code, error)
        return self

    def __len__(self):
        return int(_library().errshim_catalog_size(self._h()))

    def diagnose(self, message, context=None):
        return diagnose(message, context=context, catalog=self)

    def close(self):
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _catalog_handle(catalog):
    return None if catalog is None else catalog._h()


# ----------------------------------------------------------------- the calls


def diagnose(message, context=None, catalog=None):
    """The Diagnosis of an error message (a traceback, a log excerpt, one
    line), or None when no catalog entry matches. `context`: what you know of
    where it happened, "transformers=4.57,device=metal" or a dict."""
    lib = _library()
    data = _bytes(message, "message")
    handle = ctypes.c_void_p()
    error = ctypes.c_void_p()
    code = lib.errshim_diagnose(
        _catalog_handle(catalog), data, len(data), _context_bytes(context), ctypes.byref(handle), ctypes.byref(error)
    )
    if code == _native.OK:
        _native.take_string(lib, error.value)
        return Diagnosis._owning(handle.value)
    try:
        _check(code, error, allowed=(_native.NO_MATCH,))
        return None
    finally:
        lib.errshim_diagnosis_free(handle)


def exception_text(exc):
    """The text errshim reads for an exception: Python's own rendering of it,
    traceback and chained exceptions included."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def explain(exc=None, context=None, catalog=None):
    """The Diagnosis of an exception (default: the one being handled), read
    from its full traceback text, or None when it is not recognised."""
    if exc is None:
        exc = sys.exc_info()[1]
        if exc is None:
            raise ValueError("errshim.explain() needs an exception, or to be called inside an except block")
    if isinstance(exc, TranslatedError):
        return exc.diagnosis
    return diagnose(exception_text(exc), context=context, catalog=catalog)


def fix_config(config, message, allowed=None, pinned=(), context=None, catalog=None, skip=()):
    """Applies the first remediation step the policy allows to a JSON or YAML
    config text, for the error in `message`. Returns a FixResult (falsy when
    nothing was applied: unknown error, or no step allowed). `allowed`: safety
    classes that may be applied (default "safe,slower"); `pinned`: keys no fix
    may change; `skip`: 0-based step numbers of the matched entry not to
    apply (those a retry loop applied before). Raises ErrshimError when the
    config does not parse."""
    lib = _library()
    msg = _bytes(message, "message")
    cfg = _bytes(config, "config")
    handle = ctypes.c_void_p()
    error = ctypes.c_void_p()
    steps = []
    for step in skip:
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise TypeError("errshim.fix_config: skip holds 0-based step numbers, not %r" % (step,))
        steps.append(str(step))
    code = lib.errshim_fix_config_skipping(
        _catalog_handle(catalog),
        msg,
        len(msg),
        _context_bytes(context),
        cfg,
        len(cfg),
        _comma_bytes(allowed, "allowed"),
        _comma_bytes(pinned, "pinned") if pinned else None,
        ",".join(steps).encode() if steps else None,
        ctypes.byref(handle),
        ctypes.byref(error),
    )
    try:
        _check(code, error, allowed=(_native.OK, _native.NO_MATCH, _native.NO_FIX))
        return FixResult(handle)
    finally:
        lib.errshim_fix_free(handle)


# --------------------------------------------------------------- translation


class TranslatedError(Exception):
    """A recognised error, explained. `diagnosis` holds the explanation and
    `original` the exception it replaces (also its __cause__).

    What translate() raises is an instance of a subclass that also derives
    from the original's type (TranslatedValueError is a TranslatedError and a
    ValueError), so `except ValueError:` handlers keep working."""

    diagnosis = None
    original = None

    def __str__(self):
        return self.diagnosis.summary() if self.diagnosis is not None else super().__str__()


# Built once per original type; weak keys, so exception classes created at
# run time can still be collected.
_translated_types = weakref.WeakKeyDictionary()
_translated_lock = threading.Lock()


def _translated_type(cls):
    if cls is Exception or issubclass(cls, TranslatedError):
        return TranslatedError
    with _translated_lock:
        t = _translated_types.get(cls)
        if t is None:
            try:
                t = type("Translated" + cls.__name__, (TranslatedError, cls), {"__module__": __name__})
            except Exception:
                # A type that cannot be subclassed, whose C layout cannot be
                # combined with ours, or whose metaclass or __init_subclass__
                # refuses (with any exception): the plain TranslatedError,
                # which translate() does not raise in place of the original.
                t = TranslatedError
            _translated_types[cls] = t
        return t


def translated(exc, diagnosis):
    """The TranslatedError that stands for `exc` (not raised). Its original
    type's __init__ is not called: its arguments are unknown here, and the
    new exception only needs to be an instance of that type."""
    summary = diagnosis.summary()
    t = _translated_type(type(exc))
    try:
        err = t.__new__(t)
        Exception.__init__(err, summary)
    except Exception:
        # A __new__ that insists on its own arguments: the plain type.
        err = TranslatedError(summary)
    try:
        # The original's own attributes, for handlers that read them.
        err.__dict__.update(getattr(exc, "__dict__", {}))
    except Exception:
        pass
    err.diagnosis = diagnosis
    err.original = exc
    return err


class translate(contextlib.ContextDecorator):
    """Re-raises a recognised exception as errshim.TranslatedError, raised
    from the original (which stays reachable as .original and __cause__) and
    carrying its traceback; anything else passes through untouched.

        with errshim.translate(context="transformers=4.57"):
            model.generate(**inputs)

        @errshim.translate()
        def step(): ...

    Only Exception subclasses are translated: KeyboardInterrupt, SystemExit
    and GeneratorExit always pass through, as does an exception whose type
    cannot be subclassed (its metaclass or __init_subclass__ refuses)."""

    def __init__(self, context=None, catalog=None):
        self.context = context
        self.catalog = catalog

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None or not isinstance(exc, Exception) or isinstance(exc, TranslatedError) or not _enabled:
            return False
        try:
            d = explain(exc, context=self.context, catalog=self.catalog)
        except Exception as e:
            # errshim itself failed: the user's error matters more than ours,
            # so it goes on, but saying that errshim could not read it.
            _note(exc, "errshim: could not diagnose this error: %s" % e)
            return False
        if d is None:
            return False
        try:
            err = translated(exc, d)
        except Exception:
            return False
        if not isinstance(err, type(exc)):
            # No subclass of the original's type could be made: a handler
            # written for that type would miss the translation, so the
            # original goes on, with the diagnosis as a note.
            _note(exc, diagnosis_text(d))
            return False
        raise err.with_traceback(tb) from exc


def _note(exc, text):
    # PEP 678 notes (3.11+) are printed after the traceback; before 3.11 the
    # same list is kept, for code that reads it.
    try:
        if hasattr(exc, "add_note"):
            exc.add_note(text)
        else:
            notes = getattr(exc, "__notes__", None)
            if not isinstance(notes, list):
                notes = []
                exc.__notes__ = notes
            notes.append(text)
    except Exception:
        pass  # an exception that refuses attributes keeps its own text


def diagnosis_text(d):
    """The lines errshim adds after a traceback: id, cause, where upstream
    raises it, and the remediation steps."""
    lines = ["errshim: %s (%s)" % (d.id, d.kind) if d.kind else "errshim: %s" % d.id]
    if d.cause:
        lines.append("  cause: " + " ".join(d.cause.split()))
    src = d.source
    if src.get("path"):
        lines.append("  raised at: %s%s:%s" % (src["repo"] + "/" if src.get("repo") else "", src["path"],
                                              src.get("line", 0)))
    for i, r in enumerate(d.remediation, 1):
        lines.append("  %d. %s%s" % (i, " ".join(r.text.split()), " [fix: %s]" % r.safety if r.safety else ""))
    return "\n".join(lines)


# ------------------------------------------------------------ observing lookups


class Lookup:
    """One catalog lookup an observer is told about: `message` (str), the
    `entry_id` that matched or None, for an unrecognised message its
    `fingerprint` (16 hex digits, the same for every worker's copy of one
    error) and `fingerprint_text` (the message with its variable parts
    masked), else None; `site` (where it was made: "c_api_diagnose" for
    errshim.diagnose, explain and translate, "c_api_fix_config" for fix_config,
    "guard", "rethrow_translated", "remediate" or "diagnose" for C++ code
    using the same library) and `elapsed` (seconds, the lookup alone)."""

    __slots__ = ("message", "entry_id", "fingerprint", "fingerprint_text", "site", "elapsed")

    def __init__(self, message, entry_id, fingerprint, fingerprint_text, site, elapsed):
        self.message = message
        self.entry_id = entry_id
        self.fingerprint = fingerprint
        self.fingerprint_text = fingerprint_text
        self.site = site
        self.elapsed = elapsed

    @property
    def recognised(self):
        return self.entry_id is not None

    def __repr__(self):
        return "Lookup(site=%r, entry_id=%r, fingerprint=%r)" % (self.site, self.entry_id, self.fingerprint)


def _lookup_of(raw):
    text = ctypes.string_at(raw.message, raw.message_length) if raw.message_length else b""
    site = _native.SITES[raw.site] if 0 <= raw.site < len(_native.SITES) else str(raw.site)
    return Lookup(text.decode("utf-8", "replace"), _native.lent(raw.entry_id), _native.lent(raw.fingerprint),
                  _native.lent(raw.fingerprint_text), site, raw.elapsed_ns / 1e9)


class Observer:
    """A registered lookup observer (errshim.observe); close() or leaving the
    `with` block unregisters it, and so does dropping the last reference:
    keep it for as long as you observe. Once close() returns, the callback is
    not running on another thread and is not called again."""

    def __init__(self, callback):
        if not callable(callback):
            raise TypeError("errshim.observe() needs a callable, not %s" % type(callback).__name__)

        def trampoline(raw, _user_data):
            # Nothing may unwind into the C library, and an observer must not
            # change what the caller of the lookup gets: its errors stop here.
            try:
                callback(_lookup_of(raw.contents))
            except BaseException:
                pass

        # Kept on the instance: the C library holds only the bare pointer.
        self._trampoline = _native.LOOKUP_CALLBACK(trampoline)
        handle = ctypes.c_void_p()
        error = ctypes.c_void_p()
        _check(_library().errshim_observe(self._trampoline, None, ctypes.byref(handle), ctypes.byref(error)), error)
        self._handle = handle.value

    def close(self):
        handle, self._handle = getattr(self, "_handle", None), None
        if handle is not None and _lib is not None:
            _lib.errshim_observer_free(handle)

    @property
    def closed(self):
        return self._handle is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        self.close()


def observe(callback):
    """Calls `callback(lookup)` for every catalog lookup errshim makes in
    this process, on whichever thread made it (diagnose, explain, translate,
    fix_config, the hooks, remediate, and C++ code sharing the library),
    until the returned Observer is closed. An exception the callback raises
    is swallowed; lookups it makes itself are not reported."""
    return Observer(callback)


# Defined in their own modules; they use the names above.
from ._hooks import LogDiagnosis, LogFilter, annotate_record, asyncio_exception_handler, install, installed, uninstall  # noqa: E402
from ._remediate import Remediated, RemediationError, RemediationReport, remediate  # noqa: E402
