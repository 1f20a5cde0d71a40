"""errshim.install(): the diagnosis added where Python servers report errors.

Each hook wraps what was there before and calls it: errshim only adds text
(or a record attribute), never swallows or reorders what the host prints.
uninstall() puts every original back; a hook that someone else wrapped after
us cannot be unwrapped without dropping theirs, so it is switched off
instead (it then only calls what it wrapped).
"""

import asyncio
import logging
import sys
import threading
import warnings

import errshim

_lock = threading.Lock()
_installed = None  # the _Installation in force, or None


class LogDiagnosis:
    """What the logging hook puts in `record.errshim` when a record's
    exception or text is recognised: `id`, `remediation` (the steps' texts),
    `diagnosis` (the errshim.Diagnosis). str() is the one-line summary, so a
    format may say `%(errshim)s`; records not recognised carry None."""

    __slots__ = ("id", "remediation", "diagnosis")

    def __init__(self, diagnosis):
        self.id = diagnosis.id
        self.remediation = [r.text for r in diagnosis.remediation]
        self.diagnosis = diagnosis

    def __str__(self):
        return self.diagnosis.summary()

    def __repr__(self):
        return "<errshim.LogDiagnosis %s>" % self.id


def _safe(fn, *args, **kwargs):
    # A hook runs inside the host's error reporting: errshim failing there
    # must not replace the report it was asked to enrich.
    try:
        return fn(*args, **kwargs)
    except Exception:
        return None


def _explain(exc, context, catalog):
    if not errshim.enabled() or not isinstance(exc, Exception):
        return None
    return _safe(errshim.explain, exc, context=context, catalog=catalog)


def _diagnose_text(text, context, catalog):
    if not errshim.enabled() or not text:
        return None
    return _safe(errshim.diagnose, text, context=context, catalog=catalog)


def annotate_record(record, context=None, catalog=None):
    """Sets record.errshim (a LogDiagnosis, or None) on a logging.LogRecord:
    from its exception when it carries one, else from its text when its
    level is WARNING or above. A record already annotated is left alone."""
    if getattr(record, "errshim", None) is not None:
        return record
    d = None
    exc_info = record.exc_info
    if isinstance(exc_info, tuple) and len(exc_info) == 3 and exc_info[1] is not None:
        d = _explain(exc_info[1], context, catalog)
    if d is None and record.levelno >= logging.WARNING:
        d = _diagnose_text(_safe(record.getMessage), context, catalog)
    record.errshim = LogDiagnosis(d) if d is not None else None
    return record


class LogFilter(logging.Filter):
    """A logging.Filter that annotates records (see annotate_record) and lets
    every record through. For a handler of your own:
    handler.addFilter(errshim.LogFilter()). install(logging=True) covers all
    loggers and handlers instead, through the record factory."""

    def __init__(self, name="", context=None, catalog=None):
        super().__init__(name)
        self.context = context
        self.catalog = catalog

    def filter(self, record):
        annotate_record(record, self.context, self.catalog)
        return True


def _add_note_once(exc, text):
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, list) and text in notes:
        return
    errshim._note(exc, text)


class _Installation:
    def __init__(self, context, catalog):
        self.context = context
        self.catalog = catalog
        self.active = True
        self.undo = []  # (restore callable), last installed first

    # -- uncaught exceptions

    def excepthook(self, previous):
        def errshim_excepthook(exc_type, exc, tb):
            d = _explain(exc, self.context, self.catalog) if self.active else None
            if d is None:
                return previous(exc_type, exc, tb)
            text = errshim.diagnosis_text(d)
            if sys.version_info >= (3, 11):
                _add_note_once(exc, text)  # printed after the traceback by the default hook
                return previous(exc_type, exc, tb)
            previous(exc_type, exc, tb)
            _safe(sys.stderr.write, text + "\n")

        return errshim_excepthook

    def thread_excepthook(self, previous):
        def errshim_thread_excepthook(args):
            d = _explain(args.exc_value, self.context, self.catalog) if self.active else None
            if d is None:
                return previous(args)
            text = errshim.diagnosis_text(d)
            if sys.version_info >= (3, 11):
                _add_note_once(args.exc_value, text)
                return previous(args)
            previous(args)
            _safe(sys.stderr.write, text + "\n")

        return errshim_thread_excepthook

    # -- logging

    def record_factory(self, previous):
        def errshim_record_factory(*args, **kwargs):
            record = previous(*args, **kwargs)
            if self.active:
                annotate_record(record, self.context, self.catalog)
            return record

        return errshim_record_factory

    # -- warnings

    def showwarning(self, previous):
        def errshim_showwarning(message, category, filename, lineno, file=None, line=None):
            d = _diagnose_text(_safe(str, message), self.context, self.catalog) if self.active else None
            if d is not None:
                # A str is what formatwarning and logging.captureWarnings
                # accept too; the category is passed on unchanged.
                message = "%s\n%s" % (message, errshim.diagnosis_text(d))
            return previous(message, category, filename, lineno, file, line)

        return errshim_showwarning

    # -- asyncio

    def asyncio_default_handler(self, previous):
        def default_exception_handler(loop, context):
            if self.active:
                context = annotate_asyncio_context(context, self.context, self.catalog)
            return previous(loop, context)

        return default_exception_handler


def annotate_asyncio_context(context, errshim_context=None, catalog=None):
    """A copy of an asyncio exception-handler context with the diagnosis of
    its exception (or message) as context["errshim"] and appended to
    context["message"]; the context itself when nothing is recognised."""
    exc = context.get("exception")
    d = _explain(exc, errshim_context, catalog) if exc is not None else None
    if d is None:
        d = _diagnose_text(context.get("message"), errshim_context, catalog)
    if d is None:
        return context
    context = dict(context)
    context["errshim"] = d
    message = context.get("message") or "Unhandled exception"
    context["message"] = "%s\n%s" % (message, errshim.diagnosis_text(d))
    return context


def asyncio_exception_handler(loop, context):
    """For loop.set_exception_handler(errshim.asyncio_exception_handler): the
    loop's default handler, given the diagnosis."""
    loop.default_exception_handler(annotate_asyncio_context(context))


def _swap(owner, name, make, inst):
    previous = getattr(owner, name)
    ours = make(previous)
    setattr(owner, name, ours)

    def restore():
        if getattr(owner, name) is ours:
            setattr(owner, name, previous)
        # else wrapped again since: ours stays in that chain, switched off
        # through inst.active.

    inst.undo.append(restore)


def install(excepthook=True, logging=True, warnings=True, asyncio=True, context=None, catalog=None):
    """Adds the diagnosis of recognised errors where Python reports them:

    - excepthook: uncaught exceptions (sys.excepthook and
      threading.excepthook) get it as a PEP 678 note, printed after the
      traceback (before 3.11: written after the traceback);
    - logging: every LogRecord gets `record.errshim` (errshim.LogDiagnosis
      or None), from its exception, or its text at WARNING and above;
    - warnings: warnings.showwarning prints it under the warning;
    - asyncio: the event loops' default exception handler logs it with the
      error (context["errshim"] holds the Diagnosis).

    A second install() replaces the first. Undone by uninstall()."""
    global _installed
    with _lock:
        _uninstall_locked()
        inst = _Installation(context, catalog)
        if excepthook:
            _swap(sys, "excepthook", inst.excepthook, inst)
            _swap(threading, "excepthook", inst.thread_excepthook, inst)
        if logging:
            _swap(_LoggingFactory, "factory", inst.record_factory, inst)
        if warnings:
            _swap(_warnings, "showwarning", inst.showwarning, inst)
        if asyncio:
            _swap(_asyncio.BaseEventLoop, "default_exception_handler", inst.asyncio_default_handler, inst)
        _installed = inst


def uninstall():
    """Undoes install(): the hooks as they were before it."""
    with _lock:
        _uninstall_locked()


def installed():
    """True between install() and uninstall()."""
    return _installed is not None


def _uninstall_locked():
    global _installed
    inst = _installed
    if inst is None:
        return
    inst.active = False
    for restore in reversed(inst.undo):
        restore()
    _installed = None


# The names the parameters of install() shadow.
_warnings = warnings
_asyncio = asyncio


class _LoggingFactoryMeta(type):
    # logging's record factory as a class attribute, so that _swap treats
    # it like the other hooks.
    @property
    def factory(cls):
        return logging.getLogRecordFactory()

    @factory.setter
    def factory(cls, value):
        logging.setLogRecordFactory(value)


_LoggingFactory = _LoggingFactoryMeta("_LoggingFactory", (), {})
