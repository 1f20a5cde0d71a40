"""Finding and loading errshim's shared library (errshim_c) with ctypes.

Kept apart from the public API so that the places searched, and the C
signatures, are in one spot. Nothing here is public.
"""

import ctypes
import ctypes.util
import glob
import os
import sys

# Names the library has on the platforms CMake builds it for, most specific
# first: a versioned file still works when the development symlink is absent.
if sys.platform == "darwin":
    _PATTERNS = ("liberrshim_c.dylib", "liberrshim_c.*.dylib")
elif sys.platform == "win32":
    _PATTERNS = ("errshim_c.dll", "liberrshim_c.dll")
else:
    _PATTERNS = ("liberrshim_c.so", "liberrshim_c.so.*")

# How far up from the package to look for a build tree or an install prefix:
# <repo>/python/errshim is two levels below the repository, and
# <prefix>/share/errshim/python/errshim four below the prefix.
_MAX_LEVELS = 6


class LibraryNotFound(ImportError):
    """errshim_c was not found; the message lists where errshim looked."""


def _in_dir(directory):
    for pattern in _PATTERNS:
        hits = sorted(glob.glob(os.path.join(directory, pattern)))
        if hits:
            return hits[0]
    return None


def _newest(paths):
    # Several build trees (build, build-debug, ...): the one built last is the
    # one the developer is working on.
    paths = [p for p in paths if p]
    return max(paths, key=os.path.getmtime) if paths else None


def candidates():
    """Where the library is looked for, in order (for messages and tests)."""
    here = os.path.dirname(os.path.abspath(__file__))
    places = [("next to the package", here)]
    level = here
    for _ in range(_MAX_LEVELS):
        parent = os.path.dirname(level)
        if parent == level:
            break
        level = parent
        places.append(("install prefix", os.path.join(level, "lib")))
        places.append(("install prefix", os.path.join(level, "lib64")))
        places.append(("install prefix", level))
        places.append(("build tree", os.path.join(level, "build*")))
    places.append(("Python prefix", os.path.join(sys.prefix, "lib")))
    return places


def find_library():
    """The path of errshim_c: ERRSHIM_LIBRARY, else next to the package, a
    build tree or an install prefix above it, else the system's search path."""
    explicit = os.environ.get("ERRSHIM_LIBRARY")
    if explicit:
        path = _in_dir(explicit) if os.path.isdir(explicit) else explicit
        if not path or not os.path.exists(path):
            raise LibraryNotFound("ERRSHIM_LIBRARY=%s: no errshim_c library there" % explicit)
        return path
    for kind, place in candidates():
        if kind == "build tree":
            found = _newest(_in_dir(d) for d in glob.glob(place) if os.path.isdir(d))
        else:
            found = _in_dir(place) if os.path.isdir(place) else None
        if found:
            return found
    found = ctypes.util.find_library("errshim_c")
    if found:
        return found
    looked = "\n  ".join("%s: %s" % kp for kp in candidates())
    raise LibraryNotFound(
        "errshim: the shared library errshim_c was not found. Build it (target errshim_c), "
        "install it, or set ERRSHIM_LIBRARY to its path. Looked in:\n  " + looked
    )


# -- the C signatures (include/errshim/c_api.h)

_P = ctypes.c_void_p  # handles, and strings errshim gives away (freed with errshim_string_free)
_S = ctypes.c_char_p  # strings errshim lends, and strings passed in
_Z = ctypes.c_size_t
_I = ctypes.c_int
_PP = ctypes.POINTER(ctypes.c_void_p)

_SIGNATURES = {
    "errshim_status_name": (_S, [_I]),
    "errshim_version": (_S, []),
    "errshim_string_free": (None, [_P]),
    "errshim_catalog_new": (_I, [_I, _PP, _PP]),
    "errshim_catalog_add_path": (_I, [_P, _S, _PP]),
    "errshim_catalog_add_yaml": (_I, [_P, _S, _Z, _S, _PP]),
    "errshim_catalog_size": (_Z, [_P]),
    "errshim_catalog_free": (None, [_P]),
    "errshim_diagnose": (_I, [_P, _S, _Z, _S, _PP, _PP]),
    "errshim_diagnosis_free": (None, [_P]),
    "errshim_diagnosis_matched": (_I, [_P]),
    "errshim_diagnosis_json": (_P, [_P]),
    "errshim_diagnosis_id": (_S, [_P]),
    "errshim_diagnosis_cause": (_S, [_P]),
    "errshim_diagnosis_trigger": (_S, [_P]),
    "errshim_diagnosis_library": (_S, [_P]),
    "errshim_diagnosis_kind": (_S, [_P]),
    "errshim_diagnosis_severity": (_S, [_P]),
    "errshim_diagnosis_message": (_S, [_P]),
    "errshim_diagnosis_exception_class": (_S, [_P]),
    "errshim_diagnosis_source_repo": (_S, [_P]),
    "errshim_diagnosis_source_path": (_S, [_P]),
    "errshim_diagnosis_source_line": (_I, [_P]),
    "errshim_diagnosis_source_commit": (_S, [_P]),
    "errshim_diagnosis_source_symbol": (_S, [_P]),
    "errshim_diagnosis_remediation_count": (_Z, [_P]),
    "errshim_diagnosis_remediation": (_S, [_P, _Z]),
    "errshim_diagnosis_remediation_safety": (_S, [_P, _Z]),
    "errshim_diagnosis_capture_count": (_Z, [_P]),
    "errshim_diagnosis_capture_name": (_S, [_P, _Z]),
    "errshim_diagnosis_capture_value": (_S, [_P, _Z]),
    "errshim_diagnosis_capture": (_S, [_P, _S]),
    "errshim_diagnosis_problem_count": (_Z, [_P]),
    "errshim_diagnosis_problem": (_S, [_P, _Z]),
    "errshim_fix_config": (_I, [_P, _S, _Z, _S, _S, _Z, _S, _S, _PP, _PP]),
    "errshim_fix_free": (None, [_P]),
    "errshim_fix_applied": (_I, [_P]),
    "errshim_fix_config_text": (_S, [_P]),
    "errshim_fix_format": (_S, [_P]),
    "errshim_fix_entry_id": (_S, [_P]),
    "errshim_fix_step": (_I, [_P]),
    "errshim_fix_step_text": (_S, [_P]),
    "errshim_fix_safety": (_S, [_P]),
    "errshim_fix_diagnosis": (_P, [_P]),
    "errshim_fix_json": (_P, [_P]),
}

# errshim_status (stable values).
OK, NO_MATCH, NO_FIX, INVALID_ARGUMENT, CATALOG_ERROR, CONFIG_ERROR, OUT_OF_MEMORY, INTERNAL_ERROR = range(8)


def load(path):
    lib = ctypes.CDLL(path)
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


def take_string(lib, pointer):
    """Copies a string errshim gave away and frees it."""
    if not pointer:
        return None
    try:
        return ctypes.string_at(pointer).decode("utf-8", "replace")
    finally:
        lib.errshim_string_free(pointer)


def lent(value):
    """A string errshim lends (ctypes already copied it to bytes)."""
    return None if value is None else value.decode("utf-8", "replace")
