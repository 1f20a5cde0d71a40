"""Message pieces shared by the C++ and Python front ends: a message is a
list of literal text (str) and placeholders {"name", "kind", "expr"}."""

import re


def capture_name(words, accessors, taken):
    """A capture name from the identifiers of an expression (its last one,
    with the one before for an accessor: `q.size()` -> q_size), unique
    among `taken`, which gains it."""
    if not words:
        base = "value"
    elif len(words) >= 2 and words[-1] in accessors:
        base = words[-2] + "_" + words[-1]
    else:
        base = words[-1]
    base = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", base).lower().strip("_") or "value"
    if base[0].isdigit():
        base = "v_" + base
    name, k = base, 2
    while name in taken:
        name = "%s_%d" % (base, k)
        k += 1
    taken.add(name)
    return name


def merge(pieces):
    """Adjacent literals joined; adjacent placeholders become one (nothing
    tells where one value ends and the next begins)."""
    out = []
    for p in pieces:
        if isinstance(p, str):
            if not p:
                continue
            if out and isinstance(out[-1], str):
                out[-1] += p
            else:
                out.append(p)
        elif out and not isinstance(out[-1], str):
            out[-1] = {"name": out[-1]["name"], "kind": None, "expr": out[-1]["expr"] + ", " + p["expr"]}
        else:
            out.append(p)
    return out
