"""Python front end of the extractor (stdlib `ast`): torch's and
transformers' own .py files.

Reads `raise X(msg)` (plain, concatenated, f-string, `%` and `.format`
messages, over several lines too, and a message assigned to a local name
first), `assert cond, msg`, and warnings: `warnings.warn(msg, Category)`,
`logger.warning(..)` / `logger.warn(..)` / `logger.warning_once(..)` /
`warning_once(..)`, as `severity: warning`. The exception (or warning)
class is the site's `error_class`. Only facts reach the output: message
pieces, path, line, the enclosing `Class.function`, the guard condition
(the enclosing `if` tests, negated in an `else`).
"""

import ast
import re

from pieces import capture_name, merge

WARN_METHODS = {"warning", "warn", "warning_once", "warning_advice"}
LOGGER_NAMES = re.compile(r"^(?:logger|logging|log|_logger|LOGGER|self\.logger|warnings)$")

# capture kinds from how the expression reads: what str() of it prints
EXPR_KINDS = [
    (re.compile(r"\.(shape|size\(\))$"), "torch_size"),
    (re.compile(r"\.dtype$"), "torch_dtype"),
    (re.compile(r"^len\(.*\)$|\.(dim|ndim|numel)\(?\)?$|\.size\([^()]+\)$"), "int"),
]


def _name(expr, taken):
    words = [w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", expr)
             if w not in ("self", "str", "repr", "len", "type", "format", "join", "f", "cls", "__name__",
                          "__class__", "keys", "items", "values", "list", "tuple", "int", "float")]
    return capture_name(words, ("shape", "dtype", "device", "size", "ndim", "dim", "numel"), taken)


def _kind(expr):
    for rx, kind in EXPR_KINDS:
        if rx.search(expr):
            return kind
    return None


def placeholder(node, taken, conversion=-1):
    expr = ast.unparse(node) if not isinstance(node, str) else node
    kind = _kind(expr) if conversion in (-1, ord("s")) else None
    return {"name": _name(expr, taken), "kind": kind, "expr": expr}


PERCENT = re.compile(r"%(?:\((?P<key>[^)]*)\))?[-#0 +]*(?:\*|[0-9]+)?(?:\.(?:\*|[0-9]+))?[hlL]?(?P<conv>[diouxXeEfFgGcrsa%])")
FORMAT_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


def percent_pieces(fmt, args, taken):
    """`fmt % args` -> pieces; args: list of nodes, or a dict of key -> node."""
    out = []
    pos = 0
    k = 0
    for m in PERCENT.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        if m.group("conv") == "%":
            out.append("%")
            continue
        if m.group("key") is not None and isinstance(args, dict):
            node = args.get(m.group("key"))
            out.append(placeholder(node if node is not None else m.group("key"), taken))
        elif isinstance(args, list) and k < len(args):
            out.append(placeholder(args[k], taken))
            k += 1
        else:
            out.append(placeholder("arg%d" % (k + 1), taken))
            k += 1
    out.append(fmt[pos:])
    return out


def format_pieces(fmt, args, kwargs, taken):
    """`fmt.format(*args, **kwargs)` -> pieces."""
    out = []
    pos = 0
    auto = 0
    for m in FORMAT_FIELD.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        if m.group(0) in ("{{", "}}"):
            out.append(m.group(0)[0])
            continue
        field = re.split(r"[!:]", m.group(1), 1)[0]
        head = re.split(r"[.\[]", field, 1)[0]
        if head == "":
            node = args[auto] if auto < len(args) else None
            auto += 1
        elif head.isdigit():
            node = args[int(head)] if int(head) < len(args) else None
        else:
            node = kwargs.get(head)
        if node is None:
            out.append(placeholder(field or "arg", taken))
        elif field != head:
            out.append(placeholder(ast.unparse(node) + field[len(head):], taken))
        else:
            out.append(placeholder(node, taken))
    out.append(fmt[pos:])
    return out


class Messages:
    """Message pieces of an expression, with the string assignments of the
    enclosing function to resolve `raise X(msg)`."""

    def __init__(self, assigns):
        self.assigns = assigns  # name -> list of (line, node)

    def pieces(self, node, line, taken, depth=0):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.JoinedStr):
            out = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    out.append(v.value)
                elif isinstance(v, ast.FormattedValue):
                    out.append(placeholder(v.value, taken, v.conversion))
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left = self.pieces(node.left, line, taken, depth + 1)
            right = self.pieces(node.right, line, taken, depth + 1)
            return left + right
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and self.is_text(node.left):
            fmt = self.text_of(node.left)
            if fmt is not None:
                r = node.right
                if isinstance(r, ast.Tuple):
                    args = list(r.elts)
                elif isinstance(r, ast.Dict) and all(isinstance(k, ast.Constant) for k in r.keys):
                    args = {k.value: v for k, v in zip(r.keys, r.values)}
                else:
                    args = [r]
                return percent_pieces(fmt, args, taken)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
                and self.is_text(node.func.value) and not any(isinstance(a, ast.Starred) for a in node.args)):
            fmt = self.text_of(node.func.value)
            if fmt is not None:
                kw = {k.arg: k.value for k in node.keywords if k.arg}
                return format_pieces(fmt, node.args, kw, taken)
        if isinstance(node, ast.Name) and depth < 3:
            prior = [n for l, n in self.assigns.get(node.id, []) if l < line]
            if prior:
                return self.pieces(prior[-1], line, taken, depth + 1)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str"
                and len(node.args) == 1):
            return [placeholder(node.args[0], taken)]
        return [placeholder(node, taken)]

    @staticmethod
    def is_text(node):
        return (isinstance(node, ast.Constant) and isinstance(node.value, str)) or (
            isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add))

    def text_of(self, node):
        """A literal-only string expression's value, else None."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = self.text_of(node.left), self.text_of(node.right)
            return a + b if a is not None and b is not None else None
        return None


def local_assigns(fn):
    """name -> [(line, value node)] of simple `name = <str expr>` (and `+=`)
    in a function body, not descending into nested functions."""
    out = {}
    stack = list(fn.body) if hasattr(fn, "body") else []
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            out.setdefault(n.targets[0].id, []).append((n.lineno, n.value))
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and isinstance(n.op, ast.Add):
            prev = out.get(n.target.id)
            if prev:
                out[n.target.id].append((n.lineno, ast.BinOp(left=prev[-1][1], op=ast.Add(), right=n.value)))
        stack.extend(ast.iter_child_nodes(n))
    for v in out.values():
        v.sort(key=lambda x: x[0])
    return out


class Site:
    def __init__(self, **kw):
        self.__dict__.update(kw)

    def as_dict(self):
        return dict(self.__dict__)


def class_name(node):
    if node is None:
        return None
    if isinstance(node, ast.Call):
        node = node.func
    return ast.unparse(node)


def warning_call(call):
    """(form, class node name, message node, args) of a warning call, else None."""
    f = call.func
    if isinstance(f, ast.Attribute) and f.attr == "warn" and ast.unparse(f.value) == "warnings":
        cat = call.args[1] if len(call.args) > 1 else next(
            (k.value for k in call.keywords if k.arg == "category"), None)
        msg = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "message"), None)
        return "warnings_warn", (ast.unparse(cat) if cat is not None else "UserWarning"), msg, []
    if isinstance(f, ast.Name) and f.id == "warn" and call.args:
        cat = call.args[1] if len(call.args) > 1 else None
        return "warnings_warn", (ast.unparse(cat) if cat is not None else "UserWarning"), call.args[0], []
    if isinstance(f, ast.Attribute) and f.attr in WARN_METHODS and call.args and LOGGER_NAMES.match(
            ast.unparse(f.value)) and ast.unparse(f.value) != "warnings":
        return "logger_" + f.attr, "logging.WARNING", call.args[0], list(call.args[1:])
    if isinstance(f, ast.Name) and f.id == "warning_once" and call.args:
        return "logger_warning_once", "logging.WARNING", call.args[0], list(call.args[1:])
    return None


def scan(src, path="<src>"):
    tree = ast.parse(src)
    sites = []

    def visit(node, scope, conds, msgs):
        for field, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            for child in children:
                if not isinstance(child, ast.AST):
                    continue
                c_scope, c_conds, c_msgs = scope, conds, msgs
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    c_scope = scope + [child.name]
                    c_conds = []
                    c_msgs = Messages(local_assigns(child))
                elif isinstance(child, ast.ClassDef):
                    c_scope = scope + [child.name]
                    c_conds = []
                if isinstance(node, ast.If) and field == "body":
                    c_conds = conds + [ast.unparse(node.test)]
                elif isinstance(node, ast.If) and field == "orelse":
                    c_conds = conds + ["not (%s)" % ast.unparse(node.test)]
                handle(child, c_scope, c_conds, c_msgs)
                visit(child, c_scope, c_conds, c_msgs)

    def add(form, node, cls, msg_node, extra_args, scope, conds, msgs, severity, cond=None):
        taken = set()
        pieces = msgs.pieces(msg_node, node.lineno, taken)
        if extra_args and form.startswith("logger_"):
            # logger.warning("fmt %s", a): logging formats with %
            lit = "".join(p for p in pieces if isinstance(p, str)) if all(isinstance(p, str) for p in pieces) else None
            if lit is not None:
                pieces = percent_pieces(lit, extra_args, taken)
        pieces = merge(pieces)
        if not any(isinstance(p, str) for p in pieces):
            return
        if cls == "KeyError":
            # str(KeyError(text)) is the text's repr: double quotes when the
            # text holds a single quote and no double one
            lit = "".join(p for p in pieces if isinstance(p, str))
            if "'" in lit and '"' not in lit:
                q, esc = '"', lambda t: t.replace("\\", "\\\\")
            else:
                q, esc = "'", lambda t: t.replace("\\", "\\\\").replace("'", "\\'")
            pieces = merge([q] + [esc(p) if isinstance(p, str) else p for p in pieces] + [q])
        allc = conds + ([cond] if cond else [])
        sites.append(Site(form=form, line=node.lineno, symbol=".".join(scope) or None, path=path,
                          pieces=pieces, error_class=cls, python_class=cls, severity=severity,
                          condition=" and ".join("(%s)" % c if len(allc) > 1 else c for c in allc) or None))

    def handle(node, scope, conds, msgs):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            if len(node.exc.args) != 1 or isinstance(node.exc.args[0], ast.Starred):
                return
            add("raise", node, class_name(node.exc), node.exc.args[0], [], scope, conds, msgs, "error")
        elif isinstance(node, ast.Assert) and node.msg is not None:
            add("assert", node, "AssertionError", node.msg, [], scope, conds, msgs, "error",
                cond="not (%s)" % ast.unparse(node.test))
        elif isinstance(node, ast.Call):
            w = warning_call(node)
            if w and w[2] is not None:
                form, cls, msg, extra = w
                add(form, node, cls, msg, extra, scope, conds, msgs, "warning")

    visit(tree, [], [], Messages({}))
    sites.sort(key=lambda s: s.line)
    return sites
