"""C++ front end of the extractor: torch's raise sites (ATen, c10, torch/csrc).

Reads the error macros of torch 1.13's c10/util/Exception.h and its
neighbours: TORCH_CHECK and its _VALUE/_INDEX/_TYPE/_NOT_IMPLEMENTED/_LINALG
forms, AT_ERROR, TORCH_INTERNAL_ASSERT(_DEBUG_ONLY), C10_THROW_ERROR,
TORCH_WARN(_ONCE), CAFFE_ENFORCE, and the AT_DISPATCH_* switches (whose
default case raises `"NAME" not implemented for 'TYPE'` from the file that
dispatches). A message is the macro's stream-style arguments: literals are
kept, every other expression becomes a placeholder; `c10::str(..)` and `<<`
chains are read the same way. Only facts reach the output: the message
pieces, path, line, the function as `__func__` prints it, the condition.
"""

import re

from pieces import capture_name, merge

# What each macro raises: (error class, Python class, severity, first message argument).
MACROS = {
    "TORCH_CHECK": ("c10::Error", "RuntimeError", "error", 1),
    "TORCH_CHECK_VALUE": ("c10::ValueError", "ValueError", "error", 1),
    "TORCH_CHECK_INDEX": ("c10::IndexError", "IndexError", "error", 1),
    "TORCH_CHECK_TYPE": ("c10::TypeError", "TypeError", "error", 1),
    "TORCH_CHECK_NOT_IMPLEMENTED": ("c10::NotImplementedError", "NotImplementedError", "error", 1),
    "TORCH_CHECK_LINALG": ("c10::LinAlgError", "torch.linalg.LinAlgError", "error", 1),
    "TORCH_INTERNAL_ASSERT": ("c10::Error", "RuntimeError", "error", 1),
    "TORCH_INTERNAL_ASSERT_DEBUG_ONLY": ("c10::Error", "RuntimeError", "error", 1),
    "AT_ERROR": ("c10::Error", "RuntimeError", "error", 0),
    "C10_THROW_ERROR": (None, None, "error", 1),
    "TORCH_WARN": ("c10::Warning", "UserWarning", "warning", 0),
    "TORCH_WARN_ONCE": ("c10::Warning", "UserWarning", "warning", 0),
    "CAFFE_ENFORCE": ("c10::EnforceNotMet", "RuntimeError", "error", 1),
}
PY_CLASS = {"Error": "RuntimeError", "ValueError": "ValueError", "IndexError": "IndexError",
            "TypeError": "TypeError", "NotImplementedError": "NotImplementedError",
            "LinAlgError": "torch.linalg.LinAlgError", "OutOfMemoryError": "torch.cuda.OutOfMemoryError"}
SITE = re.compile(r"\b(" + "|".join(sorted(MACROS, key=len, reverse=True)) + r"|AT_DISPATCH_[A-Z0-9_]+"
                  r"|throw\s+(?:::)?std::(?:runtime_error|invalid_argument|out_of_range|logic_error|domain_error|"
                  r"length_error))\s*\(")
# A plain `throw std::runtime_error(..)` (InferSize.h): no c10 location is printed.
STD_THROW = re.compile(r"throw\s+(?:::)?std::(\w+)")

# torch's default text for a TORCH_CHECK without a message (c10/util/Exception.h, TORCH_CHECK_MSG)
DEFAULT_CHECK = ("Expected ", " to be true, but got false.  (Could this error message be improved?  If so, "
                 "please report an enhancement request to PyTorch.)")
ASSERT_MID = " INTERNAL ASSERT FAILED at "
ASSERT_TAIL = ", please report a bug to PyTorch. "

# Capture kinds from the expression's last call: what operator<< prints for it.
EXPR_KINDS = [
    (re.compile(r"\.(sizes|strides)\(\)$|\bIntArrayRef\b"), "shape"),
    (re.compile(r"\.(dim|ndimension|numel|size|stride|storage_offset|nbytes|itemsize)\([^()]*\)$"), "int"),
    (re.compile(r"\.scalar_type\(\)$|\bscalarTypeToTypeMeta\b|^toString\(.*\)$"), "dtype"),
]
KEYWORDS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "static_cast",
            "reinterpret_cast", "const_cast", "dynamic_cast", "defined", "alignof"}
CONTROL = {"if", "for", "while", "switch", "catch"}
SPEC_WORDS = {"const", "override", "noexcept", "final", "mutable", "volatile"}


class LexError(ValueError):
    pass


def mask(src):
    """(blank, literals): `src` with comments and the insides of string and
    char literals replaced by spaces (newlines kept, so offsets and lines stay
    the same), and the string literals as {start: (end, value)}."""
    out = list(src)
    lits = {}
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == "/" and i + 1 < n and src[i + 1] == "/":
            j = src.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif c == "/" and i + 1 < n and src[i + 1] == "*":
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif c == '"' or (c == "R" and src.startswith('R"', i)) or (
                c in "uUL8" and re.match(r'(?:u8|u|U|L)R?"', src[i:i + 4]) and (i == 0 or not (
                    src[i - 1].isalnum() or src[i - 1] == "_"))):
            m = re.match(r'(u8|u|U|L)?(R?)"', src[i:i + 4])
            if c == '"':
                m = re.match(r'()()"', '"')
            start = i
            q = i + len(m.group(0)) - 1
            if m.group(2):
                close = src.find("(", q)
                delim = src[q + 1:close]
                end = src.find(")" + delim + '"', close)
                if end < 0:
                    raise LexError("unterminated raw string at offset %d" % i)
                value = src[close + 1:end]
                j = end + len(delim) + 2
            else:
                j = q + 1
                while j < n and src[j] != '"':
                    if src[j] == "\\":
                        j += 1
                    elif src[j] == "\n":
                        raise LexError("newline in string literal at line %d" % (src.count("\n", 0, i) + 1))
                    j += 1
                value = unescape(src[q + 1:j])
                j += 1
            for k in range(q + 1, j - 1):
                if out[k] != "\n":
                    out[k] = " "
            lits[start] = (j, value)
            i = j
        elif c == "'" and not (i > 0 and (src[i - 1].isalnum())):
            j = i + 1
            while j < n and src[j] != "'" and src[j] != "\n":
                if src[j] == "\\":
                    j += 1
                j += 1
            lits[i] = (j + 1, unescape(src[i + 1:j]))
            for k in range(i + 1, j):
                out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out), lits


ESC = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "?": "?", "a": "\a", "0": "\0",
       "b": "\b", "f": "\f", "v": "\v"}


def unescape(body):
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 >= len(body):
            out.append(c)
            i += 1
            continue
        d = body[i + 1]
        if d == "x":
            m = re.match(r"[0-9a-fA-F]+", body[i + 2:])
            out.append(chr(int(m.group(0), 16)) if m else "x")
            i += 2 + (len(m.group(0)) if m else 0)
        elif d in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            out.append(chr(int(m.group(0), 8)))
            i += 1 + len(m.group(0))
        elif d == "\n":
            i += 2
        else:
            out.append(ESC.get(d, d))
            i += 2
    return "".join(out)


PAIRS = {"(": ")", "[": "]", "{": "}"}


def match_close(blank, i):
    """Offset of the bracket closing the one at `i`."""
    stack = []
    for j in range(i, len(blank)):
        c = blank[j]
        if c in PAIRS:
            stack.append(PAIRS[c])
        elif c in ")]}":
            if not stack or stack.pop() != c:
                raise LexError("unbalanced '%s' at line %d" % (c, blank.count("\n", 0, j) + 1))
            if not stack:
                return j
    raise LexError("unclosed '%s' at line %d" % (blank[i], blank.count("\n", 0, i) + 1))


def match_open(blank, j):
    """Offset of the bracket opening the one that closes at `j`."""
    close = {")": "(", "]": "[", "}": "{"}
    depth = 0
    want = blank[j]
    for i in range(j, -1, -1):
        c = blank[i]
        if c == want:
            depth += 1
        elif c == close[want]:
            depth -= 1
            if depth == 0:
                return i
    return -1


def split_top(blank, lo, hi, sep=","):
    """(start, end) spans of `blank[lo:hi]` split at top-level `sep`."""
    spans = []
    depth = 0
    start = lo
    i = lo
    while i < hi:
        c = blank[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and blank.startswith(sep, i) and not (sep == "<<" and blank.startswith("<<=", i)):
            spans.append((start, i))
            i += len(sep)
            start = i
            continue
        i += 1
    spans.append((start, hi))
    return spans


def squash(text):
    """An expression as the preprocessor stringizes it: whitespace runs
    become one space, none at the ends."""
    return re.sub(r"\s+", " ", text).strip()


def placeholder_name(expr, taken):
    e = re.sub(r'"(?:[^"\\]|\\.)*"', " ", expr)
    e = re.sub(r"<[^<>]*>", " ", e)
    words = [w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", e)
             if w not in KEYWORDS and w not in ("c10", "at", "std", "str", "toString", "c_str", "this",
                                                "static_cast", "int64_t", "size_t", "detail")]
    return capture_name(words, ("sizes", "size", "dim", "numel", "scalar_type", "dtype", "device", "strides",
                                "stride", "name", "layout", "options"), taken)


def kind_of_expr(expr):
    e = squash(expr)
    for rx, kind in EXPR_KINDS:
        if rx.search(e):
            return kind
    if re.fullmatch(r"-?[0-9]+[uUlL]*", e):
        return "int"
    return None


def message_pieces(src, blank, lits, spans, taken):
    """The message of stream-style arguments: a list of str and
    {"name", "kind", "expr"} placeholders."""
    pieces = []
    for lo, hi in spans:
        append_expr(src, blank, lits, lo, hi, pieces, taken)
    return merge(pieces)


def literal_run(blank, lits, lo, hi):
    """The value of `blank[lo:hi]` when it is only adjacent string (or char)
    literals, else None."""
    i = lo
    out = []
    while i < hi:
        if blank[i].isspace():
            i += 1
            continue
        if i in lits:
            end, value = lits[i]
            out.append(value)
            i = end
            continue
        m = re.match(r"(u8|u|U|L)", blank[i:i + 2])
        if m and i + len(m.group(0)) in lits:
            i += len(m.group(0))
            continue
        return None
    return "".join(out) if out else None


def append_expr(src, blank, lits, lo, hi, pieces, taken):
    while lo < hi and blank[lo].isspace():
        lo += 1
    while hi > lo and blank[hi - 1].isspace():
        hi -= 1
    if lo >= hi:
        return
    text = literal_run(blank, lits, lo, hi)
    if text is not None:
        pieces.append(text)
        return
    # c10::str(a, b, ...) is its arguments concatenated
    m = re.match(r"(?:::)?(?:c10::)?str\s*\(", blank[lo:hi])
    if m and match_close(blank, lo + m.end() - 1) == hi - 1:
        for a, b in split_top(blank, lo + m.end(), hi - 1):
            append_expr(src, blank, lits, a, b, pieces, taken)
        return
    # std::string("x") / std::string(x)
    m = re.match(r"std::string\s*\(", blank[lo:hi])
    if m and match_close(blank, lo + m.end() - 1) == hi - 1:
        append_expr(src, blank, lits, lo + m.end(), hi - 1, pieces, taken)
        return
    parts = split_top(blank, lo, hi, "<<")
    if len(parts) > 1:
        first = squash(blank[parts[0][0]:parts[0][1]])
        # `ss << a << b`: the stream itself is no text
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", first) and literal_run(blank, lits, *parts[0]) is None:
            parts = parts[1:]
        for a, b in parts:
            append_expr(src, blank, lits, a, b, pieces, taken)
        return
    plus = split_top(blank, lo, hi, "+")
    if len(plus) > 1 and any(literal_run(blank, lits, a, b) is not None or
                             re.match(r"\s*std::string\s*\(", blank[a:b]) for a, b in plus):
        for a, b in plus:
            append_expr(src, blank, lits, a, b, pieces, taken)
        return
    m = re.fullmatch(r"\(\s*(.*)\s*\)", blank[lo:hi], re.S)
    if m and match_close(blank, lo) == hi - 1:
        append_expr(src, blank, lits, lo + 1, hi - 1, pieces, taken)
        return
    expr = squash(src[lo:hi])
    pieces.append({"name": placeholder_name(expr, taken), "kind": kind_of_expr(expr), "expr": expr})


class Frames:
    """Brace blocks of a file: for an offset, the enclosing function (as
    `__func__` prints it), its qualified name, and the enclosing `if`
    conditions."""

    def __init__(self, src, blank):
        self.src = src
        self.blank = blank
        self.events = []  # (open, close, kind, name, qualified, cond)
        stack = []
        for i, c in enumerate(blank):
            if c == "{":
                stack.append((i,) + self.classify(i))
            elif c == "}" and stack:
                o = stack.pop()
                self.events.append((o[0], i) + o[1:])
        self.events.sort()

    def classify(self, brace):
        b = self.blank
        j = brace - 1
        while j >= 0:
            while j >= 0 and b[j].isspace():
                j -= 1
            m = re.search(r"([A-Za-z_]+)$", b[max(0, j - 20):j + 1])
            if m and m.group(1) in SPEC_WORDS:
                j -= len(m.group(1))
                continue
            break
        if j < 0:
            return ("other", None, None, None)
        if b[j] == "]":
            return ("function", "operator()", None, None)
        m = re.search(r"\belse$", b[max(0, j - 5):j + 1])
        if m:
            return ("else", None, None, None)
        if b[j] != ")":
            # `-> Type {`: a lambda's or function's trailing return type
            head = b[max(0, j - 200):j + 1]
            m = re.search(r"\)\s*(?:mutable\s*)?->\s*[\w:<>, *&]+$", head)
            if m:
                return self.classify_paren(max(0, j - 200) + m.start())
            return ("other", None, None, None)
        return self.classify_paren(j)

    def classify_paren(self, j):
        b = self.blank
        o = match_open(b, j)
        if o < 0:
            return ("other", None, None, None)
        k = o - 1
        while k >= 0 and b[k].isspace():
            k -= 1
        if k >= 0 and b[k] == "]":
            return ("function", "operator()", None, None)
        if k >= 0 and b[k] == ")":
            # TORCH_IMPL_FUNC(name)(args) { / TORCH_META_FUNC(name)(args) {
            o2 = match_open(b, k)
            m = re.search(r"(TORCH_(?:PRECOMPUTE_)?(META|IMPL)_FUNC2?)\s*$", b[max(0, o2 - 40):o2])
            if m:
                op = squash(b[o2 + 1:k])
                fn = "meta" if m.group(2) == "META" else "impl"
                return ("function", fn, "structured_%s::%s" % (op.replace(", ", "_"), fn), None)
            return ("other", None, None, None)
        m = re.search(r"((?:[A-Za-z_][A-Za-z0-9_]*(?:<[^<>;{}()]*>)?\s*::\s*)*)(~?[A-Za-z_][A-Za-z0-9_]*)\s*$",
                      b[max(0, k - 300):k + 1])
        if not m:
            return ("other", None, None, None)
        name = m.group(2)
        if name in CONTROL:
            cond = squash(self.src[o + 1:j]) if name == "if" else None
            return ("control", name, None, cond)
        if name in KEYWORDS or name.isupper():
            return ("other", None, None, None)
        qual = re.sub(r"\s+", "", m.group(1) + name)
        return ("function", name, qual, None)

    def at(self, pos):
        """(function, qualified, [conditions]) around offset `pos`."""
        fn, qual, conds = None, None, []
        for o, c, kind, name, q, cond in self.events:
            if o > pos:
                break
            if c < pos:
                continue
            if kind == "function":
                fn, qual, conds = name, q or name, []
            elif kind == "control" and cond:
                conds.append(cond)
        return fn, qual, conds


class Site:
    def __init__(self, **kw):
        self.__dict__.update(kw)

    def as_dict(self):
        return dict(self.__dict__)


def in_define(src, pos):
    """Whether offset `pos` lies in a #define (its body continues with `\\`)."""
    start = src.rfind("\n", 0, pos) + 1
    while True:
        if src[start:].lstrip(" \t").startswith("#"):
            return True
        if start == 0:
            return False
        prev = src.rfind("\n", 0, start - 1) + 1
        if src[prev:start - 1].rstrip().endswith("\\"):
            start = prev
            continue
        return False


def unbraced_if(src, blank, pos):
    """The condition of an `if (c)` written right before `pos`, if any."""
    j = pos - 1
    while j >= 0 and blank[j].isspace():
        j -= 1
    if j < 0 or blank[j] != ")":
        return None
    o = match_open(blank, j)
    if o > 1 and re.search(r"\bif\s*$", blank[max(0, o - 8):o]):
        return squash(src[o + 1:j])
    return None


def scan(src, path="<src>", file_prefix="./"):
    """Sites of one C++ file; `file_prefix` is what torch's build puts
    before a path in __FILE__ (Debian's: `./aten/src/...`)."""
    blank, lits = mask(src)
    frames = Frames(src, blank)
    sites = []
    for m in SITE.finditer(blank):
        macro = m.group(1)
        start = m.start(1)
        if start > 0 and (blank[start - 1].isalnum() or blank[start - 1] == "_"):
            continue
        if in_define(src, start):
            continue
        paren = m.end() - 1
        try:
            close = match_close(blank, paren)
        except LexError:
            continue
        spans = split_top(blank, paren + 1, close)
        line = src.count("\n", 0, start) + 1
        fn, qual, conds = frames.at(start)
        outer = unbraced_if(src, blank, start)
        if outer:
            conds = conds + [outer]
        taken = set()
        site = dict(line=line, symbol=qual, function=fn, macro=macro, path=path)
        if macro.startswith("AT_DISPATCH_"):
            name = next((literal_run(blank, lits, a, b) for a, b in spans
                         if literal_run(blank, lits, a, b) is not None), None)
            if name is None or macro in ("AT_DISPATCH_CASE", "AT_DISPATCH_SWITCH") or "CASE" in macro:
                continue
            # the switch's default case: AT_ERROR('"', NAME, "\" not implemented for '", toString(_st), "'")
            pieces = ['"%s" not implemented for \'' % name, {"name": "dtype", "kind": "dtype",
                                                               "expr": "toString(_st)"}, "'"]
            sites.append(Site(form="dispatch", pieces=pieces, error_class="c10::Error",
                              python_class="RuntimeError", severity="error", condition=None,
                              kernel=name, function="operator()", **{k: v for k, v in site.items()
                                                                     if k != "function"}))
            continue
        std = STD_THROW.match(macro)
        if std:
            macro = "throw"
            err, pycls, severity, first = "std::" + std.group(1), "RuntimeError", "error", 0
        else:
            err, pycls, severity, first = MACROS[macro]
        cond = None
        if macro == "C10_THROW_ERROR":
            if len(spans) < 2:
                continue
            et = squash(src[spans[0][0]:spans[0][1]])
            err, pycls = "c10::" + et, PY_CLASS.get(et, "RuntimeError")
        elif first == 1:
            cond = squash(src[spans[0][0]:spans[0][1]])
        msg_spans = [s for s in spans[first:] if blank[s[0]:s[1]].strip()]
        pieces = message_pieces(src, blank, lits, msg_spans, taken)
        if macro.startswith("TORCH_CHECK") and not pieces:
            pieces = [DEFAULT_CHECK[0] + cond + DEFAULT_CHECK[1]]
        elif macro.startswith("TORCH_CHECK") and len(msg_spans) == 1 and pieces == [] :
            pass
        if macro.startswith("TORCH_INTERNAL_ASSERT"):
            where = '"%s%s":%d' % (file_prefix, path, line)
            pieces = merge([cond + ASSERT_MID + where + ASSERT_TAIL] + pieces)
        elif macro == "CAFFE_ENFORCE":
            base = path.rsplit("/", 1)[-1]
            pieces = merge(["[enforce fail at %s:%d] %s. " % (base, line, cond)] + pieces)
        if not pieces:
            continue
        form = macro.lower()
        conditions = conds + ([cond] if cond and not macro.startswith("TORCH_INTERNAL_ASSERT") else [])
        if cond and (macro.startswith("TORCH_CHECK") or macro.startswith("TORCH_INTERNAL_ASSERT")
                     or macro == "CAFFE_ENFORCE"):
            # the raise happens when the checked condition fails
            conditions = conds + ["!(%s)" % cond]
        sites.append(Site(form=form, pieces=pieces, error_class=err, python_class=pycls, severity=severity,
                          condition=" && ".join("(%s)" % c if len(conditions) > 1 else c for c in conditions)
                          if conditions else None, checked=cond, **site))
    return sites
