"""Rust format strings -> errshim templates, capture names, capture patterns,
sample values; and a Python port of the template -> regex rule errshim uses
(src/grammar/template.cpp), to check generated examples before lint does.
"""

import re

# Regexes for the Debug (or Display) form of the types candle prints in its
# messages. They must stay valid in both Python `re` and Boost (perl syntax).
TYPE_PATTERNS = {
    "shape": r"\[[0-9, ]*\]",
    "dtype": r"[A-Z][A-Za-z0-9]*",
    "layout": r"Layout \{ shape: \[[0-9, ]*\], stride: \[[0-9, ]*\], start_offset: [0-9]+ \}",
    "location": r"(?:Cpu|Cuda \{ gpu_id: [0-9]+ \}|Metal \{ gpu_id: [0-9]+ \})",
    "int": r"-?[0-9]+",
    "qstr": r'"(?:[^"\\\n]|\\.)*"',
    "tuple_int": r"\([0-9]+(?:, [0-9]+)*\)",
}

SAMPLES = {
    "shape": ["[2, 3]", "[1, 4, 8]", "[5]"],
    "dtype": ["F16", "BF16", "U32"],
    "layout": ["Layout { shape: [2, 3], stride: [3, 1], start_offset: 0 }"],
    "location": ["Cuda { gpu_id: 0 }", "Cpu"],
    "int": ["7", "12", "3"],
    "qstr": ['"conv2d"', '"rhs"'],
    "tuple_int": ["(1, 2, 3, 4)"],
    None: ["Q", "Z", "K"],
}

RUST_KEYWORDS = {"self", "Self", "as", "mut", "ref", "let", "if", "else", "match", "move", "crate", "super",
                 "true", "false", "in", "return", "impl", "dyn", "where", "fn", "for", "loop", "while",
                 "usize", "u32", "u64", "i32", "i64", "f32", "f64", "u8", "isize", "str", "String", "Some",
                 "None", "Ok", "Err", "Box", "new", "vec", "format"}
NOISE_METHODS = {"clone", "to_string", "as_str", "unwrap", "as_ref", "iter", "collect", "into", "to_vec",
                 "borrow", "lock", "get", "display", "to_owned", "as_slice", "copied", "cloned", "expect",
                 "unwrap_or", "as_deref", "deref", "as_path", "to_string_lossy", "map", "join", "ok",
                 "try_into", "from"}
ACCESSORS = {"shape", "dims", "dtype", "device", "layout", "len", "dim", "rank", "elem_count", "stride",
             "location", "name", "size", "dims1", "dims2", "dims3", "dims4", "dims5"}


class FormatError(ValueError):
    pass


def parse_format(fmt):
    """Pieces of a Rust format string: str (literal text, unescaped) or a dict
    {arg: None | int | name, debug: bool, pretty: bool, precision_arg: bool}."""
    pieces = []
    lit = []
    i = 0
    n = len(fmt)
    while i < n:
        c = fmt[i]
        if c == "{":
            if i + 1 < n and fmt[i + 1] == "{":
                lit.append("{")
                i += 2
                continue
            close = fmt.find("}", i)
            if close < 0:
                raise FormatError("unclosed '{' in %r" % fmt)
            body = fmt[i + 1:close]
            arg, _, spec = body.partition(":")
            arg = arg.strip()
            if lit:
                pieces.append("".join(lit))
                lit = []
            ph = {"arg": None, "debug": "?" in spec, "pretty": "#?" in spec,
                  "precision_arg": ".*" in spec, "spec": spec, "raw": fmt[i:close + 1]}
            if arg == "":
                ph["arg"] = None
            elif arg.isdigit():
                ph["arg"] = int(arg)
            else:
                ph["arg"] = arg
            pieces.append(ph)
            i = close + 1
        elif c == "}":
            if i + 1 < n and fmt[i + 1] == "}":
                lit.append("}")
                i += 2
                continue
            raise FormatError("unmatched '}' in %r" % fmt)
        else:
            lit.append(c)
            i += 1
    if lit:
        pieces.append("".join(lit))
    return pieces


def escape_literal(text):
    """A plain text as template text: braces and % doubled."""
    return text.replace("{", "{{").replace("}", "}}").replace("%", "%%")


def unique(base, taken, sep="_"):
    """`base`, or `base_2`, `base_3`, ... whichever `taken` does not hold."""
    name, k = base, 2
    while name in taken:
        name = "%s%s%d" % (base, sep, k)
        k += 1
    return name


def snake(name):
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
    s = re.sub(r"[^a-z0-9_]", "_", s).strip("_")
    s = re.sub(r"_+", "_", s)
    if not s or s[0].isdigit():
        s = "v_" + s
    return s


def expr_name(expr):
    """A capture name from an argument expression (`lhs.shape()` -> lhs_shape)."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', " ", expr)
    e = re.sub(r"::<[^>]*>", " ", e)
    idents = [w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", e)
              if w not in RUST_KEYWORDS and w not in NOISE_METHODS]
    if not idents:
        return None
    last = idents[-1]
    if last in ACCESSORS and len(idents) >= 2:
        return snake(idents[-2] + "_" + last)
    return snake(last)


def expr_type(expr, debug):
    """A known type of an argument expression, from the method it ends in."""
    e = expr.strip().rstrip("?").strip()
    e = re.sub(r"\.(clone|to_vec|unwrap)\(\)$", "", e)
    m = re.search(r"\.([a-z_0-9]+)\([^()]*\)\??$", e)
    method = m.group(1) if m else None
    if debug:
        if method in ("shape", "dims", "stride"):
            return "shape"
        if method == "dtype":
            return "dtype"
        if method == "layout":
            return "layout"
        if method == "location":
            return "location"
    if method in ("rank", "elem_count", "len", "dim") or re.fullmatch(r"[0-9]+", e):
        return "int"
    return None


def name_type(name, debug):
    """A known type of an inline `{name:?}` capture, from its name alone."""
    if not debug:
        return None
    if name in ("shape", "dims") or name.endswith("_shape") or name.endswith("_dims"):
        return "shape"
    if name == "dtype" or name.endswith("_dtype"):
        return "dtype"
    return None


def field_type(type_text, debug):
    """A known type of an enum field from its declared type."""
    t = type_text.replace(" ", "")
    if t in ("Shape", "crate::Shape"):
        return "shape"
    if t in ("Vec<usize>", "&'static[usize]", "[usize]", "Vec<i64>"):
        return "shape" if debug else None
    if t in ("DType", "crate::DType"):
        return "dtype" if debug else None
    if t == "DeviceLocation":
        return "location" if debug else None
    if t == "Layout":
        return "layout" if debug else None
    if t in ("usize", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "isize"):
        return "int"
    if debug and t in ("&'staticstr", "String", "&str"):
        return "qstr"
    if debug and re.fullmatch(r"\(usize(,usize)*\)", t):
        return "tuple_int"
    return None


class Template:
    """A generated template: text (errshim template syntax), the names of its
    anonymous placeholders, capture patterns, and per-capture kinds."""

    def __init__(self, pieces, anon_names, kinds):
        self.pieces = pieces          # str | {"name": .., "debug": .., "pretty": ..}
        self.anon_names = anon_names  # captures: list (for {} / {N}), may be []
        self.kinds = kinds            # capture name -> type key or None

    @property
    def capture_patterns(self):
        return {k: TYPE_PATTERNS[v] for k, v in self.kinds.items() if v}

    def literal_text(self):
        return "".join(p for p in self.pieces if isinstance(p, str))

    def names(self):
        out = []
        for p in self.pieces:
            if not isinstance(p, str) and p["name"] not in out:
                out.append(p["name"])
        return out

    def regex(self):
        out = []
        seen = set()
        for k, p in enumerate(self.pieces):
            if isinstance(p, str):
                out.append(re.escape(p))
                continue
            name = p["name"]
            if name in seen:
                out.append("(?P=%s)" % name)
                continue
            seen.add(name)
            at_end = k + 1 == len(self.pieces)
            pat = TYPE_PATTERNS.get(self.kinds.get(name)) if self.kinds.get(name) else None
            if pat is None:
                if p.get("pretty"):
                    pat = r"[^\n]+" if at_end else r"[\s\S]+?"
                else:
                    pat = r"[^\n]+" if at_end else r"[^\n]+?"
            out.append("(?P<%s>%s)" % (name, pat))
        return "".join(out)

    def signature(self):
        """What the template matches, names aside: two templates with one
        signature claim the same messages."""
        sig = []
        order = []
        for p in self.pieces:
            if isinstance(p, str):
                sig.append(p)
            elif p["name"] in order:
                sig.append(("ref", order.index(p["name"])))
            else:
                order.append(p["name"])
                sig.append(("ph", self.kinds.get(p["name"]), bool(p.get("pretty"))))
        return tuple(sig)

    def render(self, values):
        return "".join(p if isinstance(p, str) else values[p["name"]] for p in self.pieces)


def argument_indices(pieces):
    """For each placeholder of `pieces`, the positional argument it shows,
    or None for a named one; `{:.*}` takes one argument more."""
    implicit = 0
    out = []
    for p in pieces:
        if isinstance(p, str):
            continue
        if p["arg"] is None:
            if p["precision_arg"]:
                implicit += 1
            out.append(implicit)
            implicit += 1
        else:
            out.append(p["arg"] if isinstance(p["arg"], int) else None)
    return out


def positional_order(pieces):
    """The positional arguments of `pieces`, in order of first use."""
    order = []
    for idx in argument_indices(pieces):
        if idx is not None and idx not in order:
            order.append(idx)
    return order


def build_template(message, is_format, args, named, arg_kinds=None, arg_names=None, prefix=""):
    """(template_text, Template) for a message. `args` are the positional
    argument expressions; `arg_kinds`/`arg_names` override what is inferred
    from them (used for enum fields)."""
    if not is_format:
        text = prefix + message
        return escape_literal(prefix) + escape_literal(message), Template([text], [], {})
    pieces = parse_format(message)
    indices = iter(argument_indices(pieces))
    order = positional_order(pieces)
    resolved = []
    for p in pieces:
        if isinstance(p, str):
            resolved.append(p)
            continue
        idx = next(indices)
        if idx is not None:
            resolved.append({"pos": idx, "debug": p["debug"], "pretty": p["pretty"]})
        else:
            resolved.append({"named": p["arg"], "debug": p["debug"], "pretty": p["pretty"]})
    taken = {r["named"] for r in resolved if isinstance(r, dict) and "named" in r}
    pos_name = {}
    kinds = {}
    for idx in order:
        if arg_names and idx < len(arg_names) and arg_names[idx]:
            base = arg_names[idx]
        else:
            base = expr_name(args[idx]) if idx < len(args) else None
            base = base or "arg%d" % (idx + 1)
        name = unique(base, taken)
        taken.add(name)
        pos_name[idx] = name
    out_pieces = []
    for r in resolved:
        if isinstance(r, str):
            out_pieces.append(prefix + r if not out_pieces and prefix else r)
            continue
        if not out_pieces and prefix:
            out_pieces.append(prefix)
        if "pos" in r:
            name = pos_name[r["pos"]]
            if arg_kinds is not None:
                kind = arg_kinds.get(r["pos"], {}).get(r["debug"]) if isinstance(arg_kinds.get(r["pos"]), dict) else None
            else:
                kind = expr_type(args[r["pos"]], r["debug"]) if r["pos"] < len(args) else None
        else:
            name = r["named"]
            if arg_kinds is not None and name in arg_kinds:
                kind = arg_kinds[name].get(r["debug"])
            elif name in named:
                kind = expr_type(named[name], r["debug"])
            else:
                kind = name_type(name, r["debug"])
        # one name, one kind: a name printed twice in two forms gets no pattern
        if name in kinds and kinds[name] != kind:
            kind = None
        kinds[name] = kind
        out_pieces.append({"name": name, "debug": r["debug"], "pretty": r["pretty"]})
    # merge adjacent literals (prefix + first literal)
    merged = []
    for p in out_pieces:
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] += p
        else:
            merged.append(p)
    anon = [pos_name[idx] for idx in order]
    text = escape_literal(prefix) + message.replace("%", "%%")
    return text, Template(merged, anon, {k: v for k, v in kinds.items()})


def sample_values(tmpl, variant=0):
    vals = {}
    for j, name in enumerate(tmpl.names()):
        opts = SAMPLES[tmpl.kinds.get(name)]
        vals[name] = opts[(j + variant) % len(opts)]
        if tmpl.kinds.get(name) is None:
            vals[name] = "%s%d" % (opts[(j + variant) % len(opts)], j + 1)
    return vals
