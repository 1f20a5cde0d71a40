"""errshim.remediate(): call, and on a recognised error apply a catalog fix
to a copy of the config and call again, as the C++ remediate() does.

The fix is chosen and applied by the library (errshim_fix_config: the same
policy checks, pinned keys and safety classes as in C++); this module only
runs the loop and keeps the audit record.
"""

import copy
import datetime
import json

import errshim

MODES = ("off", "explain", "suggest", "automatic")

# The kinds of config a fix can be for (the C++ ConfigKind); short names for
# the two dicts Python code passes most.
KINDS = ("model-config", "generation-config", "from-pretrained-kwargs", "generate-kwargs", "candle-config",
         "host-config")
_KIND_ALIASES = {"generate": "generate-kwargs", "from_pretrained": "from-pretrained-kwargs",
                 "generation_config": "generation-config", "config": "model-config"}


def _kind_name(kind):
    if kind is None:
        return None
    name = _KIND_ALIASES.get(kind, kind)
    if name not in KINDS:
        raise ValueError("errshim.remediate: kind must be one of %s (or generate, from_pretrained), not %r"
                         % (", ".join(KINDS), kind))
    return name


def _with_kind(context, kind):
    # The library reads the config's kind from the context key `config`.
    if kind is None:
        return context
    if context is None:
        return {"config": kind}
    if isinstance(context, dict):
        return dict(context, config=kind)
    text = context.decode() if isinstance(context, bytes) else context
    return (text + "," if text else "") + "config=" + kind


def _is_torch_dtype(value):
    t = type(value)
    return t.__module__ == "torch" and t.__name__ == "dtype"


def _to_json(config):
    """The dict as JSON text for the library. A torch.dtype (from_pretrained's
    torch_dtype=torch.float16) goes as its name, "torch.float16", so the fix
    sees the spelling in use; `_from_json` turns such names back."""
    dtype_paths = []

    def plain(value, path):
        if isinstance(value, dict):
            return {k: plain(v, path + (k,)) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v, path + (i,)) for i, v in enumerate(value)]
        if _is_torch_dtype(value):
            dtype_paths.append(path)
            return str(value)
        return value

    return json.dumps(plain(config, ())), dtype_paths


def _from_json(text, dtype_paths):
    out = json.loads(text)
    for path in dtype_paths:
        parent = out
        for part in path[:-1]:
            parent = parent[part] if isinstance(parent, (dict, list)) else None
        if not isinstance(parent, (dict, list)):
            continue
        value = parent[path[-1]] if isinstance(parent, list) or path[-1] in parent else None
        if isinstance(value, str) and value.startswith("torch."):
            import torch  # a torch.dtype came in, so torch is there

            parent[path[-1]] = getattr(torch, value[len("torch."):])
    return out


class RemediationReport:
    """Every attempt of one remediate() call: `calls` (times `build` ran),
    `decisions` (audit records, dicts as the C++ Decision::to_json writes
    them: time, attempt, entry, step, fix, safety, mode, outcome, reason,
    changes), `errors` (the exception of each failed call, the original
    first)."""

    def __init__(self):
        self.calls = 0
        self.decisions = []
        self.errors = []

    def applied_changes(self):
        """Every change made, in order ({"path", "before", "after"})."""
        return [c for d in self.decisions if d.get("outcome") == "applied" for c in d.get("changes", [])]

    def to_json(self):
        return json.dumps({"calls": self.calls, "decisions": self.decisions})

    def __repr__(self):
        return "<errshim.RemediationReport calls=%d decisions=%d>" % (self.calls, len(self.decisions))


class Remediated:
    """What remediate() returns: `value` (what build returned), `config` (the
    config that worked: equal to the input when no fix was needed) and
    `report`."""

    __slots__ = ("value", "config", "report")

    def __init__(self, value, config, report):
        self.value = value
        self.config = config
        self.report = report


class RemediationError(errshim.TranslatedError):
    """Remediation ended without success on a recognised error: the diagnosis
    of the last recognised failure, the whole `report`, and the last error as
    `original` and __cause__."""

    report = None

    def __str__(self):
        # The summary with what errshim did ("[errshim: the retry bound ...]").
        return Exception.__str__(self)


def _remediation_error(exc, diagnosis, report, summary):
    err = RemediationError(summary)
    err.diagnosis = diagnosis
    err.original = exc
    err.report = report
    return err


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _same(a, b):
    return a.id == b.id and a.captures == b.captures


def remediate(build, config, allowed=None, pinned=(), max_retries=3, mode="automatic", entry_modes=None,
              context=None, catalog=None, on_decision=None, metrics=None, kind=None):
    """Calls build(copy of config); when that raises an error the catalog
    knows, applies the first remediation step the policy allows to a copy of
    the config and calls again: at most `max_retries` fixes, never the same
    step twice, giving up when a fix brings the same error back.

    `config`: a dict (JSON-like values) or a JSON/YAML text; build receives
    the same kind, and the caller's object is never changed. `allowed`: the
    safety classes that may be applied ("safe,slower" by default;
    "changes-output" must be asked for; "manual" never is). `pinned`: keys
    the user chose, which no fix may change. `mode`: "automatic", "suggest"
    (report the fix, change nothing), "explain" or "off"; `entry_modes`
    overrides it per entry id. `on_decision(record)` sees every audit record
    as it is made; `metrics` (errshim.metrics.PrometheusMetrics) counts them.

    Returns a Remediated. An error errshim does not recognise goes on
    unchanged (the same object), unless a fix was applied before it: then,
    as on every other way of giving up, RemediationError is raised from the
    last error, with the report.

    `kind`: what `config` is, so a fix meant for another kind is refused and
    a key is never created where it is not read: "generate" (generate()
    kwargs), "from_pretrained" (from_pretrained() kwargs), or one of KINDS
    ("generation-config", "model-config", ...). Without it a text config's
    kind is read from its keys (`model_type`, `_from_model_config`). Values
    are written in the config's own spelling: a libtorch `Half` becomes
    "float16" next to "float32", torch.float16 next to a torch.dtype. Each
    change records whether it `created` the key."""
    if mode not in MODES:
        raise ValueError("errshim.remediate: mode must be one of %s, not %r" % (", ".join(MODES), mode))
    if not isinstance(max_retries, int) or max_retries < 0:
        raise ValueError("errshim.remediate: max_retries must be an int >= 0, not %r" % (max_retries,))
    as_text = isinstance(config, (str, bytes))
    if not as_text and not isinstance(config, dict):
        raise TypeError("errshim.remediate: config must be a dict or a JSON/YAML text, not %s"
                        % type(config).__name__)
    context = _with_kind(context, _kind_name(kind))
    entry_modes = dict(entry_modes or {})
    report = RemediationReport()
    current = config if as_text else copy.deepcopy(config)
    tried = set()
    applied = 0
    last = None           # the last recognised failure's Diagnosis
    last_was_fixed = False

    def record(entry, outcome, step=None, reason="", changes=(), fix=None, safety=None, entry_mode=None):
        x = {"time": _now(), "attempt": report.calls, "entry": entry, "step": step, "fix": fix, "safety": safety,
             "mode": entry_mode or mode, "outcome": outcome, "reason": reason, "changes": list(changes)}
        report.decisions.append(x)
        if metrics is not None:
            metrics.count(x)
        if on_decision is not None:
            on_decision(x)

    def give_up(exc, d, reason):
        record(d.id, "gave-up", reason=reason, entry_mode=entry_modes.get(d.id, mode))
        return _remediation_error(exc, d, report, "%s [errshim: %s]" % (d.summary(), reason))

    while True:
        report.calls += 1
        try:
            value = build(current if as_text else copy.deepcopy(current))
        except Exception as exc:
            report.errors.append(exc)
            d = errshim.explain(exc, context=context, catalog=catalog) if errshim.enabled() else None
            entry_mode = entry_modes.get(d.id, mode) if d is not None else mode
            if d is None or entry_mode == "off":
                if d is not None:
                    record(d.id, "passed-through", entry_mode="off")
                if last is not None and applied > 0:
                    raise give_up(exc, last, "after the fix the call failed with an error errshim does not "
                                  "recognise: " + errshim.exception_text(exc)[:300]) from exc
                raise
            if last is not None and last_was_fixed and _same(d, last):
                raise give_up(exc, d, "the fix did not help: the same error came back") from exc
            last, last_was_fixed = d, False
            if entry_mode == "explain":
                record(d.id, "explained", entry_mode=entry_mode)
                raise _remediation_error(exc, d, report, d.summary()) from exc
            if applied >= max_retries:
                raise give_up(exc, d, "the retry bound (%d) is reached" % max_retries) from exc

            text, dtype_paths = (current, []) if as_text else _to_json(current)
            try:
                # A step applied before is not chosen again: the next allowed one is.
                r = errshim.fix_config(text, errshim.exception_text(exc), allowed=allowed, pinned=pinned,
                                       context=context, catalog=catalog,
                                       skip=sorted(step for eid, step in tried if eid == d.id))
            except errshim.ErrshimError as e:
                raise give_up(exc, d, "choosing a fix failed: %s" % e) from exc
            changes = r.changes
            for x in r.decisions:
                if x.get("outcome") == "applied":
                    changes = x.get("changes", changes)  # the library's record, `created` included
                else:  # the application is recorded below, with this loop's mode
                    x = dict(x, attempt=report.calls, mode=entry_mode)
                    report.decisions.append(x)
                    if metrics is not None:
                        metrics.count(x)
                    if on_decision is not None:
                        on_decision(x)
            if not r.applied:
                raise give_up(exc, d, "no remediation step is allowed by the policy and usable on this "
                              "config") from exc
            if (r.entry_id, r.step) in tried:
                # Another entry won in the library (the root cause of the
                # text): its step applied before is not applied again.
                raise give_up(exc, d, "step %d was applied before and did not prevent this error"
                              % (r.step + 1)) from exc
            fix = d.remediation[r.step].fix if r.step < len(d.remediation) else None
            if entry_mode == "suggest":
                record(d.id, "suggested", step=r.step, changes=changes, fix=fix, safety=r.safety,
                       entry_mode=entry_mode)
                raise _remediation_error(exc, d, report, "%s [errshim suggests step %d; mode suggest changes "
                                         "nothing]" % (d.summary(), r.step + 1)) from exc
            record(d.id, "applied", step=r.step, changes=changes, fix=fix, safety=r.safety, entry_mode=entry_mode)
            tried.add((r.entry_id, r.step))
            applied += 1
            last_was_fixed = True
            current = r.config if as_text else _from_json(r.config, dtype_paths)
            continue
        if last is not None:
            record(last.id, "succeeded", entry_mode=entry_modes.get(last.id, mode))
        return Remediated(value, current, report)
