"""Rust front end of the errshim extractor: finds the places a Rust source file
raises an error with a fixed text, and the thiserror enums that give variants
their Display text.

It works on tokens, not on a full parse: comments, strings (raw, byte,
escaped), char literals and lifetimes are told apart by a lexer, then a
single pass keeps a stack of the blocks the current token is in (fn, impl,
if, else, cfg-gated items) so each raise site knows its enclosing function
and the `if` that guards it. Only the facts are kept (the message, the
argument expressions, path, line, function, condition); the source itself is
never copied anywhere.
"""

import re

IDENT_RE = re.compile(r"r#[A-Za-z_][A-Za-z0-9_]*|[A-Za-z_][A-Za-z0-9_]*")
NUMBER_RE = re.compile(r"[0-9][0-9A-Za-z_]*(?:\.[0-9][0-9A-Za-z_]*)?(?:[eE][+-]?[0-9]+)?")


class Token:
    __slots__ = ("kind", "text", "value", "line", "start", "end")

    def __init__(self, kind, text, value, line, start, end):
        self.kind = kind  # ident, str, char, lifetime, num, punct
        self.text = text
        self.value = value  # unescaped content of a string literal
        self.line = line
        self.start = start
        self.end = end

    def __repr__(self):
        return "Token(%s %r @%d)" % (self.kind, self.text, self.line)


class LexError(ValueError):
    pass


def unescape(body, line):
    """The value of a non-raw Rust string literal's body."""
    out = []
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= n:
            raise LexError("line %d: string ends with a lone backslash" % line)
        e = body[i + 1]
        i += 2
        if e == "\n":  # line continuation: the newline and leading blanks go
            while i < n and body[i] in " \t\n\r":
                i += 1
        elif e == "n":
            out.append("\n")
        elif e == "t":
            out.append("\t")
        elif e == "r":
            out.append("\r")
        elif e == "0":
            out.append("\0")
        elif e in "\\\"'":
            out.append(e)
        elif e == "x":
            out.append(chr(int(body[i:i + 2], 16)))
            i += 2
        elif e == "u":
            close = body.index("}", i)
            out.append(chr(int(body[i + 1:close], 16)))
            i = close + 1
        else:
            raise LexError("line %d: unknown escape \\%s" % (line, e))
    return "".join(out)


def tokenize(src):
    toks = []
    i = 0
    n = len(src)
    line = 1
    while i < n:
        c = src[i]
        if c == "\n":
            line += 1
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if src.startswith("/*", i):
            depth = 0
            j = i
            while j < n:
                if src.startswith("/*", j):
                    depth += 1
                    j += 2
                elif src.startswith("*/", j):
                    depth -= 1
                    j += 2
                    if depth == 0:
                        break
                else:
                    j += 1
            line += src.count("\n", i, j)
            i = j
            continue
        # raw strings: r"..", r#".."#, br"..", cr".."
        m = re.match(r'(?:b|c)?r(#*)"', src[i:i + 300])
        if m and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            hashes = m.group(1)
            close = '"' + hashes
            body_start = i + m.end()
            j = src.find(close, body_start)
            if j < 0:
                raise LexError("line %d: unterminated raw string" % line)
            body = src[body_start:j]
            toks.append(Token("str", src[i:j + len(close)], body, line, i, j + len(close)))
            line += body.count("\n")
            i = j + len(close)
            continue
        if c == '"' or (c in "bc" and i + 1 < n and src[i + 1] == '"'):
            q = i if c == '"' else i + 1
            j = q + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            if j >= n:
                raise LexError("line %d: unterminated string" % line)
            body = src[q + 1:j]
            toks.append(Token("str", src[i:j + 1], unescape(body, line), line, i, j + 1))
            line += body.count("\n")
            i = j + 1
            continue
        if c == "'" or (c == "b" and i + 1 < n and src[i + 1] == "'"):
            q = i if c == "'" else i + 1
            # a char literal 'x', '\n', '\u{..}' or a lifetime 'a
            m = re.match(r"'(?:\\u\{[0-9a-fA-F]+\}|\\x[0-9a-fA-F]{2}|\\.|[^\\'\n])'", src[q:q + 12])
            if m:
                toks.append(Token("char", src[i:q + m.end()], None, line, i, q + m.end()))
                i = q + m.end()
                continue
            m = IDENT_RE.match(src, q + 1)
            if m:
                toks.append(Token("lifetime", src[i:m.end()], None, line, i, m.end()))
                i = m.end()
                continue
            toks.append(Token("punct", "'", None, line, i, i + 1))
            i += 1
            continue
        m = IDENT_RE.match(src, i)
        if m:
            toks.append(Token("ident", m.group(0), None, line, i, m.end()))
            i = m.end()
            continue
        if c.isdigit():
            m = NUMBER_RE.match(src, i)
            toks.append(Token("num", m.group(0), None, line, i, m.end()))
            i = m.end()
            continue
        if src.startswith("=>", i) or src.startswith("::", i) or src.startswith("->", i):
            toks.append(Token("punct", src[i:i + 2], None, line, i, i + 2))
            i += 2
            continue
        toks.append(Token("punct", c, None, line, i, i + 1))
        i += 1
    return toks


OPEN = {"(": ")", "[": "]", "{": "}"}


def match_close(toks, i):
    """Index of the token closing the bracket at toks[i]."""
    stack = [OPEN[toks[i].text]]
    j = i + 1
    while j < len(toks):
        t = toks[j].text
        if toks[j].kind == "punct":
            if t in OPEN:
                stack.append(OPEN[t])
            elif t in (")", "]", "}"):
                if stack and stack[-1] == t:
                    stack.pop()
                    if not stack:
                        return j
                else:
                    return j  # unbalanced: stop here rather than run away
        j += 1
    return len(toks) - 1


def split_args(toks, lo, hi):
    """Top-level comma-separated groups of toks[lo:hi], as (lo, hi) pairs."""
    groups = []
    depth = 0
    start = lo
    j = lo
    while j < hi:
        t = toks[j]
        if t.kind == "punct":
            if t.text in OPEN:
                depth += 1
            elif t.text in (")", "]", "}"):
                depth -= 1
            elif t.text == "," and depth == 0:
                groups.append((start, j))
                start = j + 1
            elif t.text == "<" and depth == 0:
                pass
        j += 1
    if start < hi:
        groups.append((start, hi))
    return groups


def text_of(src, toks, lo, hi):
    """The source text of toks[lo:hi], whitespace collapsed."""
    if lo >= hi:
        return ""
    return " ".join(src[toks[lo].start:toks[hi - 1].end].split())


def literal_value(toks, lo, hi):
    """The text of a string-literal expression (a literal, or concat! of
    literals), or None when it is anything else."""
    if hi - lo == 1 and toks[lo].kind == "str":
        return toks[lo].value
    if (hi - lo >= 4 and toks[lo].text == "concat" and toks[lo + 1].text == "!"
            and toks[lo + 2].text in OPEN):
        close = match_close(toks, lo + 2)
        if close != hi - 1:
            return None
        parts = []
        for a, b in split_args(toks, lo + 3, close):
            if b - a != 1:
                return None
            t = toks[a]
            if t.kind == "str":
                parts.append(t.value)
            elif t.kind == "num":
                parts.append(t.text)
            elif t.kind == "char":
                parts.append(unescape(t.text[1:-1], t.line))
            elif t.kind == "ident" and t.text in ("true", "false"):
                parts.append(t.text)
            else:
                return None
        return "".join(parts)
    return None


MACRO_PREFIXES = {"candle", "candle_core", "crate", "$crate", "anyhow", "std", "core"}
RAISE_MACROS = {"bail": "bail", "panic": "panic", "unimplemented": "unimplemented",
                "todo": "todo", "unreachable": "unreachable"}
FORMAT_MACROS = {"format", "format_args"}


class Frame:
    __slots__ = ("kind", "name", "cond", "cfg", "else_chain")

    def __init__(self, kind, name=None, cond=None, cfg=None):
        self.kind = kind
        self.name = name
        self.cond = cond
        self.cfg = cfg
        self.else_chain = None


def cfgs_in(src, toks, lo, hi):
    """The `#[cfg(...)]` predicates among toks[lo:hi]."""
    out = []
    j = lo
    while j < hi - 3:
        if (toks[j].text == "#" and toks[j + 1].text == "[" and toks[j + 2].text == "cfg"
                and toks[j + 3].text == "("):
            close = match_close(toks, j + 3)
            out.append(text_of(src, toks, j + 4, close))
            j = close
        j += 1
    return out


def skip_attributes(toks, j, hi):
    while j + 1 < hi and toks[j].text == "#" and toks[j + 1].text == "[":
        j = match_close(toks, j + 1) + 1
    return j


def classify_block(src, toks, lo, brace, prev_chain):
    """The frame a `{` at toks[brace] opens, from the header toks[lo:brace]."""
    cfg = cfgs_in(src, toks, lo, brace) or None
    j = skip_attributes(toks, lo, brace)
    words = [t.text for t in toks[j:brace]]
    # Items: fn / impl / trait / mod / enum / struct.
    depth = 0
    for k in range(j, brace):
        t = toks[k]
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
        elif depth == 0 and t.kind == "ident":
            if t.text == "fn" and k + 1 < brace:
                return Frame("fn", toks[k + 1].text, cfg=cfg)
            if t.text in ("mod", "trait") and k + 1 < brace:
                return Frame(t.text, toks[k + 1].text, cfg=cfg)
            if t.text == "impl":
                return Frame("impl", impl_name(toks, k + 1, brace), cfg=cfg)
    if words[:1] == ["else"] and words[1:2] == ["if"]:
        cond = text_of(src, toks, j + 2, brace)
        f = Frame("if", cond=cond, cfg=cfg)
        f.else_chain = (prev_chain or []) + [cond]
        f.cond = joined_condition(prev_chain or [], cond)
        return f
    if words == ["else"]:
        f = Frame("else", cond=joined_condition(prev_chain or [], None), cfg=cfg)
        return f
    if words[:1] == ["if"]:
        cond = text_of(src, toks, j + 1, brace)
        f = Frame("if", cond=cond, cfg=cfg)
        f.else_chain = [cond]
        return f
    # `let x = if c {` and `return if c {`: the `if` is later in the header.
    for k in range(brace - 1, j - 1, -1):
        if toks[k].text == "if" and toks[k].kind == "ident" and (k == j or toks[k - 1].text in ("=", "return", "(", ",", "=>")):
            cond = text_of(src, toks, k + 1, brace)
            f = Frame("if", cond=cond, cfg=cfg)
            f.else_chain = [cond]
            return f
    if len(words) >= 1 and words[-1] == "=>":
        # a match arm `Pat => {`; the pattern is a fact about when it runs
        arm = arm_pattern(src, toks, j, brace - 1)
        return Frame("arm", cond=("matches " + arm) if arm else None, cfg=cfg)
    return Frame("block", cfg=cfg)


def top_level(toks, lo, hi):
    """(index, text) of the tokens of toks[lo:hi] outside any bracket."""
    depth = 0
    for k in range(lo, hi):
        t = toks[k].text
        if t in OPEN:
            depth += 1
        elif t in (")", "]", "}"):
            depth -= 1
        elif depth == 0:
            yield k, t


def arm_pattern(src, toks, lo, arrow):
    """The pattern of the match arm whose `=>` is toks[arrow]: the tokens
    after the last top-level `,` before it."""
    start = lo
    for k, t in top_level(toks, lo, arrow):
        if t == ",":
            start = k + 1
    return text_of(src, toks, start, arrow) or None


def last_arrow(toks, lo, hi):
    """Index of the last top-level `=>` in toks[lo:hi] not followed by a
    top-level `,` (the arm that holds toks[hi]), or None."""
    found = None
    for k, t in top_level(toks, lo, hi):
        if t == "=>":
            found = k
        elif t == ",":
            found = None
    return found


def joined_condition(previous, cond):
    parts = ["not (%s)" % p for p in previous]
    if cond:
        parts.append(cond)
    return " and ".join(parts) if parts else None


def impl_name(toks, j, hi):
    if j < hi and toks[j].text == "<":
        depth = 0
        while j < hi:
            if toks[j].text == "<":
                depth += 1
            elif toks[j].text == ">":
                depth -= 1
                if depth == 0:
                    j += 1
                    break
            j += 1
    for k in range(j, hi):
        if toks[k].text == "for":
            j = k + 1
            break
        if toks[k].text == "where":
            break
    name = None
    depth = 0
    for k in range(j, hi):
        t = toks[k]
        if t.text == "<":
            depth += 1
        elif t.text == ">":
            depth -= 1
        elif t.text == "where" and depth == 0:
            break
        elif t.kind == "ident" and depth == 0 and t.text not in ("dyn", "mut", "const"):
            name = t.text
    return name


class Site:
    """One raise site: a message (a Rust format string, or a plain text when
    `is_format` is false) and the facts around it."""

    def __init__(self, form, line, message, is_format, args, named, symbol, condition, cfg):
        self.form = form          # bail, msg, msg_fn, context, expect, panic, unimplemented, todo,
        #                           unreachable, variant
        self.line = line
        self.message = message
        self.is_format = is_format
        self.args = args          # positional argument expressions (text)
        self.named = named        # name -> expression text
        self.symbol = symbol
        self.condition = condition
        self.cfg = cfg
        self.enum = None          # for form == variant: enum and variant name
        self.variant = None
        self.path = None

    def as_dict(self):
        d = {k: getattr(self, k) for k in ("form", "path", "line", "message", "is_format", "args", "named",
                                             "symbol", "condition", "cfg", "enum", "variant")}
        return d


class Variant:
    def __init__(self, enum, name, line, display, display_args, fields, tuple_like, cfg):
        self.enum = enum
        self.name = name
        self.line = line
        self.display = display    # the #[error("...")] format string, None when transparent / absent
        self.display_args = display_args
        self.fields = fields      # list of (name or None, type text)
        self.tuple_like = tuple_like
        self.cfg = cfg
        self.path = None
        self.derived_debug = False

    def as_dict(self):
        return {"enum": self.enum, "name": self.name, "path": self.path, "line": self.line,
                "display": self.display, "display_args": self.display_args,
                "fields": [list(f) for f in self.fields], "tuple_like": self.tuple_like,
                "cfg": self.cfg, "derived_debug": self.derived_debug}


def parse_format_call(src, toks, lo, hi):
    """(message, args, named) of format-like arguments toks[lo:hi]
    (`"fmt", a, b = c`), or None when the first is not a literal."""
    groups = split_args(toks, lo, hi)
    if not groups:
        return None
    msg = literal_value(toks, *groups[0])
    if msg is None:
        return None
    args, named = [], {}
    for a, b in groups[1:]:
        if b - a >= 3 and toks[a].kind == "ident" and toks[a + 1].text == "=" and toks[a + 2].text != "=":
            named[toks[a].text] = text_of(src, toks, a + 2, b)
        else:
            args.append(text_of(src, toks, a, b))
    return msg, args, named


def message_expression(src, toks, lo, hi):
    """A message given as an expression: `format!(..)`, `"lit"`,
    `"lit".to_string()`, `String::from("lit")`, `"lit".into()`. Returns
    (message, is_format, args, named) or None."""
    if hi - lo >= 3 and toks[lo].text in FORMAT_MACROS and toks[lo + 1].text == "!" and toks[lo + 2].text in OPEN:
        close = match_close(toks, lo + 2)
        r = parse_format_call(src, toks, lo + 3, close)
        if r is None:
            return None
        return r[0], True, r[1], r[2]
    if toks[lo].kind == "str":
        rest = [t.text for t in toks[lo + 1:hi]]
        if rest in ([], [".", "to_string", "(", ")"], [".", "into", "(", ")"], [".", "to_owned", "(", ")"]):
            return toks[lo].value, False, [], {}
        return None
    words = [t.text for t in toks[lo:hi]]
    if words[:4] == ["String", "::", "from", "("] and hi - lo == 6 and toks[lo + 4].kind == "str":
        return toks[lo + 4].value, False, [], {}
    return None


ERROR_PATH_PREFIXES = ("Error", "candle", "candle_core", "crate", "Self", "$crate")


def scan(src, path="<src>"):
    """Sites and thiserror variants of one Rust source file.

    Returns (sites, variants, constructions, structs): `constructions` are
    (enum_or_None, variant, Site) for every `X::Variant {..}` / `X::Variant(..)`
    whose path ends in an error-like type, resolved later against the
    variants of all files; `structs` are the structs deriving Debug, whose
    form a `{:?}` of them prints."""
    toks = tokenize(src)
    sites, variants, constructions, structs = [], [], [], []
    stack = []
    header_lo = 0
    prev_chain = None  # else-chain of the if block that just closed at this level
    skip_until = -1

    def context():
        sym_parts = []
        cond = None
        cfg = []
        for f in stack:
            if f.kind in ("impl", "trait", "mod") and f.name:
                sym_parts.append(f.name)
            elif f.kind == "fn" and f.name:
                sym_parts.append(f.name)
            if f.kind in ("if", "else", "arm") and f.cond:
                cond = f.cond
            if f.kind == "fn":
                cond = None  # a condition outside the function does not guard the call
            if f.cfg:
                cfg.extend(f.cfg)
        # keep only the module/impl path down to the innermost fn
        return "::".join(sym_parts) or None, cond, cfg

    def add_site(form, line, msg, is_format, args, named, lo):
        sym, cond, cfg = context()
        arrow = last_arrow(toks, header_lo, lo)
        if arrow is not None:
            # `Pat => bail!(..),` : the arm's pattern guards it
            pat = arm_pattern(src, toks, header_lo, arrow)
            if pat:
                cond = ("%s and matches %s" % (cond, pat)) if cond else "matches " + pat
        cfg = cfg + cfgs_in(src, toks, header_lo, lo)
        s = Site(form, line, msg, is_format, args, named, sym, cond, cfg or None)
        s.path = path
        sites.append(s)
        return s

    i = 0
    n = len(toks)
    while i < n:
        t = toks[i]
        if t.kind == "punct":
            if t.text == "{":
                frame = classify_block(src, toks, header_lo, i, prev_chain)
                # thiserror enums and Debug structs are read whole, then skipped
                debug_struct = is_debug_struct(toks, header_lo, i)
                if debug_struct or is_error_enum(toks, header_lo, i):
                    close = match_close(toks, i)
                    if debug_struct:
                        structs.append(parse_struct(src, toks, header_lo, i, close, path))
                    else:
                        variants.extend(parse_enum(src, toks, header_lo, i, close, path))
                    i = close + 1
                    header_lo = i
                    prev_chain = None
                    continue
                stack.append(frame)
                header_lo = i + 1
                prev_chain = None
                i += 1
                continue
            if t.text == "}":
                closed = stack.pop() if stack else None
                prev_chain = closed.else_chain if closed is not None and closed.kind == "if" else None
                header_lo = i + 1
                i += 1
                continue
            if t.text == ";":
                header_lo = i + 1
                prev_chain = None
                i += 1
                continue
        if t.kind == "ident" and i > skip_until:
            # macros: bail!(..), candle::bail!(..), panic!(..), ...
            if (t.text in RAISE_MACROS and i + 2 < n and toks[i + 1].text == "!"
                    and toks[i + 2].text in OPEN
                    and (i == 0 or toks[i - 1].text != "::" or (i >= 2 and toks[i - 2].text in MACRO_PREFIXES))):
                close = match_close(toks, i + 2)
                r = parse_format_call(src, toks, i + 3, close)
                if r is not None:
                    add_site(RAISE_MACROS[t.text], t.line, r[0], True, r[1], r[2], i)
                elif t.text == "bail":
                    # bail!(expr): the message is the expression's text at run time;
                    # a format! / literal inside is still a fixed text
                    me = message_expression(src, toks, i + 3, close)
                    if me is not None:
                        add_site("bail", t.line, me[0], me[1], me[2], me[3], i)
                i += 3
                continue
            # Error::Msg(..) and Error::msg(..)
            if (t.text in ("Msg", "msg") and i >= 2 and toks[i - 1].text == "::"
                    and toks[i - 2].text == "Error" and i + 1 < n and toks[i + 1].text == "("):
                close = match_close(toks, i + 1)
                me = message_expression(src, toks, i + 2, close)
                if me is not None:
                    add_site("msg" if t.text == "Msg" else "msg_fn", t.line, me[0], me[1], me[2], me[3], i)
                    skip_until = close
                i += 2
                continue
            # .expect("..") on a Result or an Option: a panic whose message starts with the text
            if (t.text == "expect" and i >= 1 and toks[i - 1].text == "." and i + 3 < n
                    and toks[i + 1].text == "(" and toks[i + 2].kind == "str" and toks[i + 3].text == ")"):
                add_site("expect", t.line, toks[i + 2].value, False, [], {}, i)
                i += 4
                continue
            # .context("..") and .with_context(|| ..)
            if (t.text in ("context", "with_context") and i >= 1 and toks[i - 1].text == "."
                    and i + 1 < n and toks[i + 1].text == "("):
                close = match_close(toks, i + 1)
                lo = i + 2
                if t.text == "with_context" and lo < close and toks[lo].text == "|":
                    lo += 1
                    while lo < close and toks[lo].text != "|":
                        lo += 1
                    lo += 1
                    if lo < close and toks[lo].text == "{" and toks[close - 1].text == "}":
                        close_inner = match_close(toks, lo)
                        if close_inner == close - 1:
                            lo, close = lo + 1, close - 1
                if lo < close:
                    me = message_expression(src, toks, lo, close)
                    if me is not None:
                        add_site("context", t.line, me[0], me[1], me[2], me[3], i)
                        skip_until = close
                i += 2
                continue
            # Enum::Variant { .. } / Enum::Variant(..) / Enum::Variant
            if (t.text[:1].isupper() and i >= 2 and toks[i - 1].text == "::"
                    and toks[i - 2].kind == "ident" and toks[i - 2].text.endswith("Error")
                    and t.text not in ("Msg", "msg")):
                enum = toks[i - 2].text
                j = i + 1
                fields = {}
                if j < n and toks[j].text in ("{", "("):
                    close = match_close(toks, j)
                    after = toks[close + 1].text if close + 1 < n else ""
                    if toks[j].text == "{":
                        for a, b in split_args(toks, j + 1, close):
                            if b - a >= 3 and toks[a].kind == "ident" and toks[a + 1].text == ":":
                                fields[toks[a].text] = text_of(src, toks, a + 2, b)
                            elif b - a == 1 and toks[a].kind == "ident":
                                fields[toks[a].text] = toks[a].text
                    else:
                        for k, (a, b) in enumerate(split_args(toks, j + 1, close)):
                            fields[str(k)] = text_of(src, toks, a, b)
                else:
                    close = i
                    after = toks[i + 1].text if i + 1 < n else ""
                # `Error::X { .. } =>` and `if let Error::X(..) =` are patterns, not raises
                is_pattern = after in ("=>", "|", "=", "if") or (i >= 3 and toks[i - 3].text in ("let", "|"))
                if not is_pattern:
                    s = add_site("variant", t.line, None, False, [], fields, i)
                    s.enum = enum
                    s.variant = t.text
                    constructions.append(s)
                    sites.pop()  # kept apart: resolved against the enums later
                if j < n and toks[j].text in ("{", "("):
                    # the fields are expressions; keep scanning inside them
                    stack_depth_skip = None  # noqa: F841 (braces inside are handled as blocks)
                i += 1
                continue
        i += 1
    return sites, variants, constructions, structs


def is_debug_struct(toks, lo, brace):
    """`#[derive(.., Debug, ..)] struct Name {`: its Debug form is derived
    from its fields, which nested error texts print."""
    words = [t.text for t in toks[lo:brace]]
    return "struct" in words and "enum" not in words and derives_debug(toks, lo, brace)


def skip_field_prefix(toks, fa, fb):
    """The first token of a field after its attributes and its visibility (`pub`, `pub(crate)`)."""
    fa = skip_attributes(toks, fa, fb)
    if fa < fb and toks[fa].text == "pub":
        fa += 1
        if fa < fb and toks[fa].text == "(":
            fa = match_close(toks, fa) + 1
    return fa


def parse_struct(src, toks, lo, brace, close, path):
    words = [t.text for t in toks[lo:brace]]
    name = words[words.index("struct") + 1]
    fields = []
    for fa, fb in split_args_generic(toks, brace + 1, close):
        fa = skip_field_prefix(toks, fa, fb)
        if fb - fa >= 3 and toks[fa + 1].text == ":":
            fields.append([toks[fa].text, text_of(src, toks, fa + 2, fb)])
    return {"name": name, "path": path, "line": toks[brace].line, "fields": fields}


def derives(toks, lo, brace, trait):
    """Whether a `#[derive(..)]` among toks[lo:brace] names `trait`
    (`Error` matches `thiserror::Error` too)."""
    j = lo
    while j < brace - 1:
        if toks[j].text == "derive" and toks[j + 1].text == "(":
            close = match_close(toks, j + 1)
            if any(toks[k].text == trait for k in range(j + 2, close)):
                return True
            j = close
        j += 1
    return False


def is_error_enum(toks, lo, brace):
    return "enum" in [t.text for t in toks[lo:brace]] and derives(toks, lo, brace, "Error")


def derives_debug(toks, lo, brace):
    return derives(toks, lo, brace, "Debug")


def parse_enum(src, toks, lo, brace, close, path):
    words = [t.text for t in toks[lo:brace]]
    enum = words[words.index("enum") + 1]
    derived = derives_debug(toks, lo, brace)
    out = []
    for a, b in split_args(toks, brace + 1, close):
        j = a
        display, display_args, cfg = None, [], []
        transparent = False
        while j + 1 < b and toks[j].text == "#" and toks[j + 1].text == "[":
            end = match_close(toks, j + 1)
            if toks[j + 2].text == "error" and toks[j + 3].text == "(":
                inner_close = match_close(toks, j + 3)
                if toks[j + 4].text == "transparent":
                    transparent = True
                else:
                    r = parse_format_call(src, toks, j + 4, inner_close)
                    if r is not None:
                        display = r[0]
                        display_args = r[1] + ["%s = %s" % kv for kv in r[2].items()]
            elif toks[j + 2].text == "cfg":
                cfg.append(text_of(src, toks, j + 4, match_close(toks, j + 3)))
            j = end + 1
        if j >= b or toks[j].kind != "ident":
            continue
        name = toks[j].text
        line = toks[j].line
        fields, tuple_like = [], False
        if j + 1 < b and toks[j + 1].text in ("(", "{"):
            tuple_like = toks[j + 1].text == "("
            fclose = match_close(toks, j + 1)
            for fa, fb in split_args_generic(toks, j + 2, fclose):
                fa = skip_field_prefix(toks, fa, fb)
                if tuple_like:
                    fields.append((None, text_of(src, toks, fa, fb)))
                elif fb - fa >= 3 and toks[fa + 1].text == ":":
                    fields.append((toks[fa].text, text_of(src, toks, fa + 2, fb)))
        v = Variant(enum, name, line, None if transparent else display, display_args, fields, tuple_like,
                    cfg or None)
        v.path = path
        v.derived_debug = derived
        out.append(v)
    return out


def split_args_generic(toks, lo, hi):
    """split_args that also treats <..> as brackets (field types)."""
    groups = []
    depth = 0
    start = lo
    for j in range(lo, hi):
        t = toks[j].text
        if t in OPEN or t == "<":
            depth += 1
        elif t in (")", "]", "}", ">"):
            if not (t == ">" and j > 0 and toks[j - 1].text == "-"):
                depth -= 1
        elif t == "," and depth == 0:
            groups.append((start, j))
            start = j + 1
    if start < hi:
        groups.append((start, hi))
    return groups
