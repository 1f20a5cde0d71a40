"""Raise sites of several versions -> one generated catalog layer.

One entry per distinct message (error class + template); `applies_to` gives
the versions whose sources hold that text, `also_at` every other place
raising it. Cause, trigger and the remediation step are written here from
the facts (where, under what condition, what the captures are); no upstream
prose is copied.
"""

import keyword
import re

import rust_frontend
import rustfmt_template as rt

FORM_WORDS = {
    "bail": "a `bail!` (an `Error::Msg` with the formatted text)",
    "msg": "an `Error::Msg` built from this text",
    "msg_fn": "an `Error::msg` built from this text",
    "context": "a context text attached to an inner error (`.context` / `.with_context`)",
    "panic": "a `panic!`",
    "expect": "a panic of `.expect(..)` on a `Result` or `Option` (for a `Result` the inner error's Debug "
              "form follows the text after `: `)",
    "unimplemented": "an `unimplemented!`",
    "todo": "a `todo!`",
    "unreachable": "an `unreachable!`",
    "variant": "the Display text of an error enum variant",
    "variant_site": "an error enum variant built with its text fields written out",
    "debug_text": "the text field of an error enum variant, which its derived Debug form `Variant(\"..\")` "
                  "prints and errshim reads back",
    "debug": "the derived Debug form of an error enum variant (what `{:?}`, `unwrap()` and a `main` "
             "returning `Result` print)",
    # C++ (cpp_frontend.py)
    "torch_check": "a `TORCH_CHECK` (a c10::Error, RuntimeError in Python)",
    "torch_check_value": "a `TORCH_CHECK_VALUE` (ValueError in Python)",
    "torch_check_index": "a `TORCH_CHECK_INDEX` (IndexError in Python)",
    "torch_check_type": "a `TORCH_CHECK_TYPE` (TypeError in Python)",
    "torch_check_not_implemented": "a `TORCH_CHECK_NOT_IMPLEMENTED` (NotImplementedError in Python)",
    "torch_check_linalg": "a `TORCH_CHECK_LINALG` (torch.linalg.LinAlgError in Python)",
    "torch_internal_assert": "a `TORCH_INTERNAL_ASSERT` (an internal invariant of torch)",
    "torch_internal_assert_debug_only": "a `TORCH_INTERNAL_ASSERT_DEBUG_ONLY` (checked in debug builds only)",
    "at_error": "an `AT_ERROR` (a c10::Error, RuntimeError in Python)",
    "c10_throw_error": "a `C10_THROW_ERROR`",
    "torch_warn": "a `TORCH_WARN` (a UserWarning in Python, with torch's `Triggered internally at` location)",
    "torch_warn_once": "a `TORCH_WARN_ONCE` (a UserWarning in Python, given once per process)",
    "caffe_enforce": "a `CAFFE_ENFORCE` (its message starts with `[enforce fail at FILE:LINE]`)",
    "throw": "a plain C++ `throw` of a standard exception (torch prints no `Exception raised from` "
             "location for it)",
    "dispatch": "the default case of an `AT_DISPATCH_*` type switch, reached for a dtype the kernel is not "
                "compiled for",
    # Python (python_frontend.py)
    "raise": "a `raise`",
    "assert": "an `assert` with a message (AssertionError)",
    "warnings_warn": "a `warnings.warn`",
    "logger_warning": "a `logger.warning`",
    "logger_warn": "a `logger.warn`",
    "logger_warning_once": "a `logger.warning_once` (logged once per process)",
    "logger_warning_advice": "a `logger.warning_advice`",
}

# Capture shapes of what torch prints: `torch.Size([2, 3])`, `torch.float16`
# (Python), ScalarType names `Half`, `BFloat16` (C++, under "dtype").
rt.TYPE_PATTERNS.setdefault("torch_size", r"torch\.Size\(\[[0-9, ]*\]\)")
rt.TYPE_PATTERNS.setdefault("torch_dtype", r"torch\.[a-z0-9]+")
rt.SAMPLES.setdefault("torch_size", ["torch.Size([2, 3])", "torch.Size([1, 4, 8])"])
rt.SAMPLES.setdefault("torch_dtype", ["torch.float16", "torch.bfloat16"])
PANIC_PREFIX = {"unimplemented": "not implemented: ", "todo": "not yet implemented: ",
                "unreachable": "internal error: entered unreachable code: ", "panic": "", "expect": ""}

# The fewest letters and digits of literal text a template must have to
# claim a message by itself; typed captures (shapes, dtypes, ...) count for
# a few, as they only match text of their shape.
MIN_LITERAL = 16
TYPED_WEIGHT = 4


def crate_of(path):
    return path.split("/", 1)[0]


def class_prefix(path):
    c = crate_of(path)
    return "candle" if c == "candle-core" else c.replace("-", "_")


# The first pattern found in the text decides the kind.
KIND_RULES = [
    (r"not (been )?(compiled|built) with|feature .* not enabled|enable the .* feature", "missing-dependency"),
    (r"out of memory|cannot allocate|allocation", "resource"),
    (r"unsupported|not supported|not implemented|only .* (is|are) supported|not yet", "unsupported-feature"),
    (r"dtype", "dtype-mismatch"),
    (r"shape|dims?\b|rank|broadcast|dimension", "shape-mismatch"),
    (r"config|invalid value for", "configuration"),
]


def kind_of(text, form):
    t = text.lower()
    if form in ("panic", "unreachable", "expect", "torch_internal_assert", "torch_internal_assert_debug_only") \
            or t.startswith("internal error") or "internal assert failed" in t:
        return "internal"
    if form in ("unimplemented", "todo"):
        return "unsupported-feature"
    return next((kind for rx, kind in KIND_RULES if re.search(rx, t)), "validation")


def specificity(tmpl):
    lit = sum(1 for ch in tmpl.literal_text() if ch.isalnum())
    typed = sum(1 for n in tmpl.names() if tmpl.kinds.get(n) and tmpl.kinds.get(n) != "int")
    return lit + TYPED_WEIGHT * typed


def is_free_standing(tmpl):
    # CamelCase names count by their parts: `BackwardNotSupported { op: .. }`
    words = re.findall(r"[A-Z]?[a-z]{2,}|[A-Z]{3,}", tmpl.literal_text())
    return specificity(tmpl) >= MIN_LITERAL and len(words) >= 2


# --- messages from sites ------------------------------------------------------------------------

class Message:
    """One distinct message of one error class, across versions."""

    def __init__(self, key, text, tmpl, error_class, form):
        self.key = key
        self.text = text
        self.tmpl = tmpl
        self.error_class = error_class
        self.form = form
        self.versions = []      # version labels, in order
        self.sites = {}         # version -> list of site dicts
        self.definition = {}    # version -> definition site (enum variants)
        self.captured_from = {}  # capture name -> expression
        self.also_definition = None  # the variant a specialised text comes from

    def add(self, version, site):
        if version not in self.sites:
            self.versions.append(version)
            self.sites[version] = []
        if site is not None:
            self.sites[version].append(site)


def site_messages(sites):
    """(key, text, Template, error_class, captured_from) for each site."""
    out = []
    for s in sites:
        form = s["form"]
        prefix = PANIC_PREFIX.get(form, "")
        try:
            text, tmpl = rt.build_template(s["message"], s["is_format"], s["args"], s["named"], prefix=prefix)
        except rt.FormatError:
            continue
        message = s["message"]
        if not prefix and message.startswith("Error: "):
            # errshim reads "Error: X" as the Rust rendering of X, so the
            # word is left out of the template
            message = message[len("Error: "):]
            try:
                text, tmpl = rt.build_template(message, s["is_format"], s["args"], s["named"])
            except rt.FormatError:
                continue
        if form in PANIC_PREFIX:
            cls = "panic"
        elif form == "context":
            cls = "candle::Error::Context"
        else:
            cls = "candle::Error::Msg"
        exprs = {}
        if s["is_format"]:
            for name, idx in zip(tmpl.anon_names, rt.positional_order(rt.parse_format(s["message"]))):
                if idx < len(s["args"]):
                    exprs[name] = s["args"][idx]
            for name in tmpl.names():
                if name in s["named"]:
                    exprs[name] = s["named"][name]
        out.append(((form if form in PANIC_PREFIX else "msg", cls, text), text, tmpl, cls, form, exprs))
    return out


def variant_field_names(v):
    """Capture names for a variant's fields: struct fields by name, tuple
    fields from their type."""
    names = []
    for k, (fname, ftype) in enumerate(v["fields"]):
        if fname:
            names.append(fname)
            continue
        base = rt.snake(re.sub(r"[^A-Za-z0-9_].*$", "", ftype.split("::")[-1].strip("&' ")) or "field")
        base = {"d_type": "dtype", "static": "text", "str": "text", "string": "text"}.get(base, base)
        names.append(rt.unique(base, names))
    return names


def variant_kinds(v, names):
    kinds = {}
    for k, (fname, ftype) in enumerate(v["fields"]):
        entry = {True: rt.field_type(ftype, True), False: rt.field_type(ftype, False)}
        kinds[names[k]] = entry
        kinds[k] = entry
    return kinds


def struct_name(type_text, structs):
    """The struct a field type names (`Box<crate::X>` -> X) when its Debug
    form is known, else None."""
    t = type_text.replace(" ", "")
    m = re.fullmatch(r"(?:Box<)?&?(?:[A-Za-z_]+::)*([A-Z][A-Za-z0-9_]*)>?", t)
    if m and m.group(1) in (structs or {}) and rt.field_type(type_text, True) is None:
        return m.group(1)
    return None


def expand_structs(fmt, v, names, kinds, structs, depth=2):
    """`fmt` with every `{f:?}` of a field whose type is a struct deriving
    Debug replaced by that struct's Debug form, its fields as captures
    (`MatMulUnexpectedStriding {{ lhs_l: {lhs_l:?}, .. }}`); kinds gains
    their types."""
    if not structs or depth == 0:
        return fmt
    field_of = {}
    for k, (fname, ftype) in enumerate(v["fields"]):
        field_of[k] = ftype
        field_of[names[k]] = ftype
        if fname:
            field_of[fname] = ftype
    out = []
    for p in rt.parse_format(fmt):
        if isinstance(p, str):
            out.append(rt.escape_literal(p).replace("%%", "%"))
            continue
        arg = p["arg"]
        ftype = field_of.get(arg)
        sname = struct_name(ftype, structs) if ftype and p["debug"] and not p["pretty"] else None
        if sname is None:
            out.append(p["raw"])
            continue
        fields = structs[sname]
        parts = []
        for fname, ft in fields:
            cap = rt.unique(fname, kinds)
            kinds[cap] = {True: rt.field_type(ft, True), False: rt.field_type(ft, False)}
            inner = {"fields": [(cap, ft)]}
            parts.append("%s: %s" % (fname, expand_structs("{%s:?}" % cap, inner, [cap], kinds, structs,
                                                           depth - 1)))
        out.append("%s {{ %s }}" % (sname, ", ".join(parts)) if parts else sname)
    return "".join(out)


def variant_display(v, structs=None):
    """(text, Template) of a variant's #[error(..)] Display, or None."""
    if v["display"] is None:
        return None
    names = variant_field_names(v)
    kinds = variant_kinds(v, names)
    try:
        fmt = expand_structs(v["display"], v, names, kinds, structs)
        return rt.build_template(fmt, True, [], {}, arg_kinds=kinds,
                                 arg_names=names if v["tuple_like"] else None)
    except rt.FormatError:
        return None


def variant_debug(v, structs=None):
    """(text, Template) of a variant's derived Debug form."""
    names = variant_field_names(v)
    kinds = variant_kinds(v, names)
    if not v["fields"]:
        return v["name"], rt.Template([v["name"]], [], {})
    parts = []
    for k, (fname, _) in enumerate(v["fields"]):
        parts.append(("%s: {%s:?}" % (fname, names[k])) if fname else "{%s:?}" % names[k])
    if v["tuple_like"]:
        fmt = "%s(%s)" % (v["name"], ", ".join(parts))
    else:
        fmt = "%s {{ %s }}" % (v["name"], ", ".join(parts))
    fmt = expand_structs(fmt, v, names, kinds, structs)
    return rt.build_template(fmt, True, [], {}, arg_kinds=kinds)


LITERAL_EXPR = re.compile(r'^(?:String::from\()?"((?:[^"\\]|\\.)*)"\)?(?:\.(?:to_string|into|to_owned)\(\))?$')


def field_payload(expr):
    """(message, is_format, args, named) of a field given as a string
    literal or a `format!(..)`, else None."""
    if expr is None:
        return None
    m = LITERAL_EXPR.match(expr)
    try:
        if m:
            return rust_frontend.unescape(m.group(1), 0), False, [], {}
        if expr.startswith("format!"):
            toks = rust_frontend.tokenize(expr)
            return rust_frontend.message_expression(expr, toks, 0, len(toks))
    except (ValueError, IndexError):
        return None
    return None


def field_index(v, arg):
    if isinstance(arg, int):
        return arg
    return next((j for j, (fname, _) in enumerate(v["fields"]) if fname == arg), None)


def payloads(v, c):
    out = {}
    for k, (fname, _) in enumerate(v["fields"]):
        p = field_payload(c["named"].get(fname if fname else str(k)))
        if p is not None:
            out[k] = p
    return out


def specialise(v, c):
    """The Display text of variant `v` as built at construction `c`, with the
    text fields `c` gives (a literal, or the `format!` of a variant whose
    text is that one field) written in; None when it gives none."""
    given = payloads(v, c) if v["display"] is not None else None
    if not given:
        return None
    pieces = rt.parse_format(v["display"])
    holes = [p for p in pieces if not isinstance(p, str)]
    fmt_fields = [k for k, p in given.items() if p[1]]
    if fmt_fields:
        # `Message(format!("..", a))` under `#[error("{0}")]` / `"Metal error {0}"`
        k = fmt_fields[0]
        if len(holes) != 1 or field_index(v, holes[0]["arg"]) != k or "?" in holes[0]["spec"]:
            return None
        msg, _, args, named = given[k]
        brace = lambda t: t.replace("{", "{{").replace("}", "}}")  # noqa: E731
        text = "".join(brace(p) if isinstance(p, str) else msg for p in pieces)
        try:
            return rt.build_template(text, True, args, named)
        except rt.FormatError:
            return None
    out = []
    used = False
    for p in pieces:
        if isinstance(p, str):
            out.append(rt.escape_literal(p).replace("%%", "%"))
            continue
        k = field_index(v, p["arg"])
        if k is not None and k in given and "?" not in p["spec"]:
            out.append(rt.escape_literal(given[k][0]).replace("%%", "%"))
            used = True
        else:
            out.append(p["raw"])
    if not used:
        return None
    names = variant_field_names(v)
    try:
        return rt.build_template("".join(out), True, [], {}, arg_kinds=variant_kinds(v, names),
                                 arg_names=names if v["tuple_like"] else None)
    except rt.FormatError:
        return None


def debug_text(v, c):
    """What errshim reads from the derived Debug form `Variant("text")` of a
    one-string tuple variant built at `c`: the text itself (its normaliser
    unwraps such a value), when `c` gives it as a literal or `format!`."""
    if not (v["derived_debug"] and v["tuple_like"] and len(v["fields"]) == 1):
        return None
    if v["fields"][0][1].replace(" ", "") not in ("String", "&'staticstr", "&str"):
        return None
    p = payloads(v, c).get(0)
    if p is None:
        return None
    try:
        return rt.build_template(*p)
    except rt.FormatError:
        return None


def is_wrapper(v):
    """A variant that carries another error (`inner: Box<Self>`, `Box<dyn
    Error>`, a backtrace) rather than a text of its own."""
    return any(re.search(r"\bSelf\b|\bdyn\b|Backtrace|Box<Error>", ftype) for _, ftype in v["fields"])


def collect(versions):
    """versions: list of (label, commit, facts) in release order, facts as
    written by the front end. Returns the Messages, in a stable order."""
    messages = {}

    def get(key, text, tmpl, cls, form):
        m = messages.get(key)
        if m is None:
            m = messages[key] = Message(key, text, tmpl, cls, form)
        return m

    for label, commit, facts in versions:
        for s, (key, text, tmpl, cls, form, exprs) in zip(facts["sites"], site_messages_aligned(facts["sites"])):
            if key is None:
                continue
            key = ("display", tmpl.signature())
            m = get(key, text, tmpl, cls, form)
            m.add(label, dict(s, commit=commit))
            for k, e in exprs.items():
                m.captured_from.setdefault(k, e)
        structs = {st["name"]: st["fields"] for st in facts.get("structs", [])}
        by_variant = {}
        for v in facts["variants"]:
            by_variant.setdefault((v["enum"], v["name"]), []).append(v)
        uses = {}
        for c in facts["constructions"]:
            uses.setdefault((c["enum"], c["variant"]), []).append(c)
        for (enum, name), defs in sorted(by_variant.items()):
            # the real backend's enum before a stand-in one with the same name
            defs = sorted(defs, key=lambda d: ("dummy" in d["path"], d["path"]))
            v = defs[0]
            cls = "%s::%s::%s" % (class_prefix(v["path"]), enum, name)
            forms = []
            if is_wrapper(v):
                # WithBacktrace { inner, .. }, Context { inner, context }: their
                # text is another error's; the inner one's entry matches inside
                continue
            disp = variant_display(v, structs)
            if disp is not None:
                forms.append(("variant",) + disp)
            if v["derived_debug"] and v["fields"]:
                forms.append(("debug",) + variant_debug(v, structs))
            for form, text, tmpl in forms:
                m = get(("debug" if form == "debug" else "display", tmpl.signature()), text, tmpl, cls, form)
                m.add(label, None)
                m.definition[label] = dict(path=v["path"], line=v["line"], symbol="%s::%s" % (enum, name),
                                           commit=commit, cfg=v["cfg"])
                for c in uses.get((enum, name), []):
                    m.sites[label].append(dict(c, commit=commit))
            # a construction giving the text fields as literals raises a text
            # of its own: `InternalError("conv1d does not support u32")`
            if disp is None:
                continue
            for c in uses.get((enum, name), []):
                for form, spec in (("variant_site", specialise(v, c)), ("debug_text", debug_text(v, c))):
                    if spec is None:
                        continue
                    text, tmpl = spec
                    m = get(("display", tmpl.signature()), text, tmpl, cls, form)
                    m.add(label, dict(c, commit=commit))
                    m.definition.setdefault(label, None)
                    m.also_definition = dict(path=v["path"], line=v["line"], symbol="%s::%s" % (enum, name),
                                             commit=commit)
    return [messages[k] for k in sorted(messages, key=lambda k: (messages[k].text, k[0]))]


def pieces_template(pieces):
    """(template text, Template) of a front end's message pieces: literal
    text, and {"name", "kind"} placeholders (C++ and Python sites)."""
    tp, kinds, text = [], {}, []
    for p in pieces:
        if isinstance(p, str):
            tp.append(p)
            text.append(rt.escape_literal(p))
        else:
            # errshim reads `{from}` as an expression whose keywords name nothing
            name = p["name"] + "_value" if keyword.iskeyword(p["name"]) else p["name"]
            tp.append({"name": name, "debug": False, "pretty": False})
            kinds[name] = p.get("kind")
            text.append("{%s}" % name)
    return "".join(text), rt.Template(tp, [], kinds)


def collect_pieces(versions):
    """collect() for front ends whose sites carry message pieces (C++,
    Python): one Message per distinct (severity, template)."""
    messages = {}
    for label, commit, facts in versions:
        for s in facts["sites"]:
            pieces = list(s["pieces"])
            # errshim reads a message without its surrounding blanks
            if pieces and isinstance(pieces[-1], str):
                pieces[-1] = pieces[-1].rstrip()
            if pieces and isinstance(pieces[0], str):
                pieces[0] = pieces[0].lstrip()
            pieces = [p for p in pieces if p != ""]
            if not pieces:
                continue
            text, tmpl = pieces_template(pieces)
            # one message per literal skeleton: two sites that print the same
            # text around their values are one error, whatever the values' types
            skeleton = tuple(p if isinstance(p, str) else None for p in pieces)
            key = (s.get("severity", "error"), skeleton)
            m = messages.get(key)
            if m is None:
                m = messages[key] = Message(key, text, tmpl, s["error_class"], s["form"])
                m.severity = s.get("severity", "error")
            else:
                for mine, theirs in zip(m.tmpl.names(), tmpl.names()):
                    if m.tmpl.kinds.get(mine) != tmpl.kinds.get(theirs):
                        m.tmpl.kinds[mine] = None
            site = {k: v for k, v in s.items() if k != "pieces"}
            m.add(label, dict(site, commit=commit))
            for p in s["pieces"]:
                if not isinstance(p, str):
                    m.captured_from.setdefault(p["name"], p.get("expr"))
    return [messages[k] for k in sorted(messages, key=lambda k: (messages[k].text, k[0]))]


def site_messages_aligned(sites):
    """site_messages with a None placeholder for sites that give no message."""
    out = []
    for s in sites:
        r = site_messages([s])
        out.append(r[0] if r else (None,) * 6)
    return out


# --- entries ---------------------------------------------------------------------------------

def version_range(present, order):
    """applies_to range over `order` (release labels, the last may be HEAD
    given as '>X') for the labels in `present`; gaps are bridged."""
    idx = [order.index(p) for p in present]
    lo, hi = min(idx), max(idx)
    parts = []
    first = order[lo]
    if lo > 0:
        parts.append(first if first.startswith(">") else ">=" + first)
    if hi < len(order) - 1:
        nxt = order[hi + 1]
        parts.append("<=" + nxt[1:] if nxt.startswith(">") else "<" + nxt)
    gaps = (hi - lo + 1) != len(set(idx))
    return ",".join(parts) or None, gaps


def slug(text, limit=8):
    words = re.findall(r"[a-z0-9]+", re.sub(r"\{[^{}]*\}", " ", text.replace("{{", " ").replace("}}", " ")).lower())
    words = [w for w in words if len(w) > 1 or w.isdigit()][:limit]
    return "-".join(words) or "message"


def mutate(tmpl, values):
    """A near neighbour of the rendered message: one letter of the longest
    literal word changed, so that literal no longer appears anywhere."""
    lits = [(len(w.group(0)), pi, w.start(), w.group(0))
            for pi, p in enumerate(tmpl.pieces) if isinstance(p, str)
            for w in re.finditer(r"[A-Za-z]{4,}", p)]
    for _, pi, start, word in sorted(lits, reverse=True):
        mid = len(word) // 2
        ch = word[mid]
        repl = "x" if ch.lower() != "x" else "q"
        if ch.isupper():
            repl = repl.upper()
        pieces = list(tmpl.pieces)
        p = pieces[pi]
        pieces[pi] = p[:start + mid] + repl + p[start + mid + 1:]
        msg = "".join(q if isinstance(q, str) else values[q["name"]] for q in pieces)
        if not re.search(tmpl.regex(), msg):
            return msg
    return None


def example_for(tmpl):
    """(match example dict, no_match text) or None when none can be made."""
    for variant in range(3):
        values = rt.sample_values(tmpl, variant)
        msg = tmpl.render(values)
        m = re.search(tmpl.regex(), msg)
        if not m:
            continue
        ex = {"text": msg}
        caps = {k: v for k, v in m.groupdict().items()}
        if caps == {k: values[k] for k in caps} and caps:
            ex["captures"] = caps
        near = mutate(tmpl, values)
        if near is None:
            return None
        return ex, near
    return None


def words_for_capture(name, expr):
    if expr:
        return "`%s` is the value of `%s`" % (name, expr)
    return "`%s` is the field of that name" % name


def build_entries(messages, order, repo, head_commit, curated=None, library="candle", style=None):
    """Entries (dicts ready for YAML) and statistics. `style` overrides
    what is candle's by default: "area" (path -> id part), "wrap" (message,
    Message, primary site -> the message as a user meets it) and "version_key"
    (the applies_to key)."""
    style = style or {}
    curated = curated or {"templates": set(), "pins": set()}
    entries = []
    stats = {"messages": len(messages), "free_standing": 0, "generic": 0, "curated": 0, "by_form": {},
             "no_example": 0, "gaps": 0, "no_site": 0}
    used_ids = set()
    id_prefix = library + ".gen"
    for m in messages:
        newest = m.versions[-1]
        sites = sorted(m.sites[newest], key=lambda s: (s["path"], s["line"]))
        definition = m.definition.get(newest)
        if not sites and not definition:
            stats["no_site"] += 1
            continue
        if m.text in curated["templates"] or any(
                (s["path"], s["line"]) in curated["pins"] for s in sites):
            stats["curated"] += 1
            continue
        if not is_free_standing(m.tmpl):
            stats["generic"] += 1
            stats.setdefault("generic_by_form", {}).setdefault(m.form, 0)
            stats["generic_by_form"][m.form] += 1
            continue
        ex = example_for(m.tmpl)
        if ex is None:
            stats["no_example"] += 1
            continue
        stats["free_standing"] += 1
        stats["by_form"][m.form] = stats["by_form"].get(m.form, 0) + 1
        primary = definition if definition else sites[0]
        rest = sites if definition else sites[1:]
        extra = getattr(m, "also_definition", None)
        if extra and not definition:
            rest = rest + [extra]
        path = primary["path"]
        area = style["area"](path) if "area" in style else crate_of(path).replace("candle-", "") or "core"
        base = "%s.%s.%s%s" % (id_prefix, re.sub(r"[^a-z0-9_-]", "-", area), slug(m.text),
                               "-debug" if m.form == "debug" else "")
        eid = rt.unique(base, used_ids, sep="-")
        used_ids.add(eid)
        also = []
        seen = {(primary["path"], primary["line"])}
        for s in rest:
            if (s["path"], s["line"]) not in seen:
                seen.add((s["path"], s["line"]))
                also.append(pin(s, head_commit, with_commit=s["commit"] != primary["commit"]))
        # older versions: sites at paths/functions the newest version no longer has
        have = {(s["path"], s.get("symbol")) for s in sites}
        for v in reversed(m.versions[:-1]):
            for s in m.sites[v]:
                if (s["path"], s.get("symbol")) not in have:
                    have.add((s["path"], s.get("symbol")))
                    also.append(pin(s, head_commit, with_commit=True))
        rng, gaps = version_range(m.versions, order)
        stats["gaps"] += gaps
        e = {"id": eid, "template": m.text}
        if m.tmpl.anon_names:
            e["captures"] = list(m.tmpl.anon_names)
        if m.tmpl.capture_patterns:
            e["capture_patterns"] = dict(sorted(m.tmpl.capture_patterns.items()))
        e["source"] = pin(primary, head_commit, with_commit=primary["commit"] != head_commit)
        if also:
            e["also_at"] = also
        e["error_class"] = m.error_class
        e["kind"] = kind_of(m.tmpl.literal_text(), m.form if m.form != "variant" else "bail")
        if getattr(m, "severity", "error") != "error":
            e["severity"] = m.severity
        e["priority"] = -1
        e["cause"] = cause_text(m, primary, sites, definition)
        e["trigger"] = trigger_text(m, sites, definition)
        e["remediation"] = [{"text": remediation_text(m, primary, sites, definition)}]
        e["tags"] = ["generated", m.form]
        if rng:
            e["applies_to"] = {style.get("version_key", library): rng}
        if "wrap" in style:
            wrapped = style["wrap"](ex[0]["text"], m, primary)
        else:
            # the same message as a user meets it: the cause in an anyhow chain
            wrapped = "Error: failed to run the model\n\nCaused by:\n    " + ex[0]["text"].replace("\n", "\n    ")
        e["examples"] = {"match": [ex[0], wrapped], "no_match": [ex[1]]}
        e["generated"] = True
        entries.append(e)
    return entries, stats


def pin(s, head_commit, with_commit):
    d = {"path": s["path"], "line": s["line"]}
    if s.get("symbol"):
        d["symbol"] = s["symbol"]
    if with_commit:
        d["commit"] = s["commit"]
    return d


def where(s):
    return "`%s` (%s:%d)" % (s["symbol"], s["path"], s["line"]) if s.get("symbol") else "%s:%d" % (
        s["path"], s["line"])


def cause_text(m, primary, sites, definition):
    lines = []
    if definition:
        lines.append("Generated from the source: %s `%s` (%s:%d)." % (
            FORM_WORDS[m.form], definition["symbol"], definition["path"], definition["line"]))
        if sites:
            lines.append("The newest version checked builds this error at %d place%s; the first is %s." % (
                len(sites), "" if len(sites) == 1 else "s", where(sites[0])))
        else:
            lines.append("No place in the scanned crates builds this variant directly; it may come "
                         "through a conversion (`?` on another error type).")
    else:
        lines.append("Generated from the source: %s in %s%s." % (
            FORM_WORDS[m.form], where(primary),
            "" if len(sites) == 1 else ", and at %d other place%s with the same text" % (
                len(sites) - 1, "" if len(sites) == 2 else "s")))
    caps = m.tmpl.names()
    if caps:
        parts = [words_for_capture(c, m.captured_from.get(c)) for c in caps]
        lines.append("Captured: " + "; ".join(parts) + ".")
    return "\n".join(lines)


def trigger_text(m, sites, definition):
    conds = []
    for s in sites:
        c = s.get("condition")
        if c and c not in conds:
            conds.append(c)
    cfgs = []
    for s in sites + ([definition] if definition else []):
        for c in s.get("cfg") or []:
            if c not in cfgs:
                cfgs.append(c)
    lines = []
    if len(conds) == 1 and len(sites) == 1:
        lines.append("Raised when the enclosing condition `%s` holds." % conds[0])
    elif conds:
        lines.append("Raised under one of the conditions read from the enclosing code: %s." % "; ".join(
            "`%s`" % c for c in conds[:4]) + (" (and %d more)" % (len(conds) - 4) if len(conds) > 4 else ""))
    elif sites:
        lines.append("Raised whenever the code reaches the raising statement; no enclosing `if` guards it "
                     "(the check may be a `match` arm or an earlier early return).")
    else:
        lines.append("Raised wherever this variant is built or converted into.")
    if cfgs:
        lines.append("Only compiled with %s." % ", ".join("`cfg(%s)`" % c for c in cfgs[:3]))
    return "\n".join(lines)


def remediation_text(m, primary, sites, definition):
    at = where(sites[0]) if sites else where(primary)
    if m.tmpl.names():
        return ("Compare the captured values with what %s accepts; this entry was generated from the "
                "source and has no hand-written fix yet." % at)
    return ("Read the check at %s to see which input or setting leads there; this entry was generated "
            "from the source and has no hand-written fix yet." % at)
