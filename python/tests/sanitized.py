"""A real sanitizer build of a small shared library, for the tests that
check that errshim never loads (nor bundles) one. Not a test module."""

import os
import shutil
import subprocess

SOURCE = "int errshim_sanitized_probe(const int* p) { return p[1]; }\n"


def build(path, sanitizers="address,undefined"):
    """Compiles a shared library with -fsanitize=`sanitizers` at `path`.
    Returns None when there is no C compiler with that sanitizer's runtime
    (the message), else the path."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    os.makedirs(os.path.dirname(path), exist_ok=True)
    source = path + ".c"
    with open(source, "w") as f:
        f.write(SOURCE)
    r = subprocess.run([cc, "-shared", "-fPIC", "-fsanitize=" + sanitizers, "-o", path, source],
                       capture_output=True, text=True)
    return path if r.returncode == 0 else None
