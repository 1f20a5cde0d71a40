"""Finding and loading errshim's shared library (errshim_c) with ctypes.

Kept apart from the public API so that the places searched, and the C
signatures, are in one spot. Nothing here is public.
"""

import ctypes
import glob
import mmap
import os
import struct
import sys

# Names the library has on the platforms CMake builds it for, most specific
# first: a versioned file still works when the development symlink is absent.
if sys.platform == "darwin":
    _PATTERNS = ("liberrshim_c.dylib", "liberrshim_c.*.dylib")
elif sys.platform == "win32":
    _PATTERNS = ("errshim_c.dll", "liberrshim_c.dll")
else:
    _PATTERNS = ("liberrshim_c.so", "liberrshim_c.so.*")

_HERE = os.path.dirname(os.path.abspath(__file__))

BUNDLED = "bundled with the package"
ENVIRONMENT = "ERRSHIM_LIBRARY"
PREFIX = "install prefix"


class LibraryNotFound(ImportError):
    """errshim_c was not found, or what was found is not errshim_c (or is a
    sanitizer build); the message lists every place errshim looked and what
    it found there. `import errshim` raises it."""


LibraryNotFound.__module__ = "errshim"  # how tracebacks name it: the public name

# A library built with a sanitizer references its runtime's entry point.
# Loaded into an interpreter that was not started with that runtime, an
# AddressSanitizer build aborts the whole process (the runtime must come
# first), so such a file is refused unless its runtime is already loaded
# (LD_PRELOAD, as the sanitizer test configuration does).
_SANITIZERS = (
    (b"__asan_init", "__asan_init", "AddressSanitizer", "libasan.so"),
    (b"__tsan_init", "__tsan_init", "ThreadSanitizer", "libtsan.so"),
    (b"__ubsan_handle_", "__ubsan_handle_add_overflow", "UndefinedBehaviorSanitizer", "libubsan.so"),
)


def _dynamic_strings(m):
    """(start, end) of the string table of an ELF file's dynamic symbols,
    where the names of the functions it imports are; None when `m` is not
    ELF. Only that table is searched: the library's data (its embedded
    catalog) may well quote a sanitizer's symbol in an error message."""
    if m[:4] != b"\x7fELF" or m[4] not in (1, 2) or m[5] not in (1, 2):
        return None
    wide, order = m[4] == 2, "<" if m[5] == 1 else ">"
    if wide:
        shoff, = struct.unpack_from(order + "Q", m, 0x28)
        shentsize, shnum = struct.unpack_from(order + "HH", m, 0x3A)
        layout = order + "IIQQQQI"  # name, type, flags, addr, offset, size, link
    else:
        shoff, = struct.unpack_from(order + "I", m, 0x20)
        shentsize, shnum = struct.unpack_from(order + "HH", m, 0x2E)
        layout = order + "IIIIIII"
    headers = [struct.unpack_from(layout, m, shoff + i * shentsize) for i in range(shnum)]
    for _, kind, _, _, _, _, link in headers:
        if kind == 11 and link < shnum:  # SHT_DYNSYM, linked to its string table
            offset, size = headers[link][4], headers[link][5]
            return offset, offset + size
    return 0, 0  # an ELF file without dynamic symbols imports nothing


def sanitizers_in(path):
    """The sanitizers the library at `path` was built with, as
    (marker, runtime symbol, name, runtime library) rows, read from the
    names it imports; [] for none, or when the file cannot be read or parsed
    (dlopen will then say why)."""
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            span = _dynamic_strings(m) or (0, len(m))  # not ELF (a Mach-O, a DLL): the whole file
            return [s for s in _SANITIZERS if m.find(s[0], *span) >= 0]
    except (OSError, ValueError, struct.error):
        return []


def sanitizer_refusal(path):
    """Why the library at `path` must not be loaded into this process (it
    needs a sanitizer runtime the process does not have), or None."""
    found = sanitizers_in(path)
    if not found:
        return None
    process = ctypes.CDLL(None)
    missing = [s for s in found if not hasattr(process, s[1])]
    if not missing:
        return None
    return "built with %s, whose runtime this process has not loaded; loading it would abort the interpreter " \
        "(use a build without ERRSHIM_SANITIZE, or start python with LD_PRELOAD=%s)" % (
            " and ".join(s[2] for s in missing), ":".join("$(gcc -print-file-name=%s)" % s[3] for s in missing))


def _in_dir(directory):
    for pattern in _PATTERNS:
        hits = sorted(glob.glob(os.path.join(glob.escape(directory), pattern)))
        if hits:
            return hits[0]
    return None


def _prefix_dirs():
    # Written by `cmake --install` (cmake/install.cmake) as paths relative to
    # the installed package, so a moved prefix still finds its library. A
    # source checkout has no such module.
    try:
        from . import _install_prefix
    except ImportError:
        return []
    return [os.path.normpath(os.path.join(_HERE, d)) for d in _install_prefix.LIBRARY_DIRS]


def candidates():
    """Where the library is looked for, in order, as (kind, place): the
    package's own folder (a wheel bundles the library there), then
    ERRSHIM_LIBRARY when set (a file or a folder), then the library folder of
    the prefix the package was installed into. Nowhere else: not the folders
    above the package, not the system's search path, so a library planted in
    a writable folder nearby is never loaded."""
    places = [(BUNDLED, _HERE)]
    explicit = os.environ.get("ERRSHIM_LIBRARY")
    if explicit:
        places.append((ENVIRONMENT, explicit))
    places.extend((PREFIX, d) for d in _prefix_dirs())
    return places


def open_library():
    """(the loaded errshim_c, its path), from the first place in candidates()
    that holds a library that loads and is errshim_c. A wrong ERRSHIM_LIBRARY
    ends the search: it was asked for by name. Raises LibraryNotFound naming
    every place searched and why each did not do."""
    looked = []
    for kind, place in candidates():
        if os.path.isdir(place):
            path = _in_dir(place)
        else:
            path = place if kind == ENVIRONMENT and os.path.exists(place) else None
        if path is None:
            looked.append("%s: %s (no errshim_c library there)" % (kind, place))
        else:
            path = os.path.abspath(path)  # a bare name would make dlopen search the system's path
            refusal = sanitizer_refusal(path)
            if refusal:
                looked.append("%s: %s (refused: %s)" % (kind, path, refusal))
            else:
                try:
                    return load(path), path
                except (OSError, AttributeError) as e:
                    looked.append("%s: %s (not a loadable errshim_c: %s)" % (kind, path, e))
        if kind == ENVIRONMENT:
            break
    raise LibraryNotFound(
        "errshim: the shared library errshim_c was not found. Install the wheel (pip install --no-build-isolation "
        "./python, see python/README.md) or errshim itself (cmake --install), or build the target errshim_c and set "
        "ERRSHIM_LIBRARY to its path. Looked in:\n  " + "\n  ".join(looked)
    )


# -- the C signatures (include/errshim/c_api.h)

_P = ctypes.c_void_p  # handles, and strings errshim gives away (freed with errshim_string_free)
_S = ctypes.c_char_p  # strings errshim lends, and strings passed in
_Z = ctypes.c_size_t
_I = ctypes.c_int
_PP = ctypes.POINTER(ctypes.c_void_p)

class Lookup(ctypes.Structure):
    """errshim_lookup: one catalog lookup, as errshim_observe's callback gets it."""

    _fields_ = [
        ("message", ctypes.c_void_p),  # not NUL-terminated: read message_length bytes
        ("message_length", _Z),
        ("entry_id", _S),
        ("fingerprint", _S),
        ("fingerprint_text", _S),
        ("site", _I),
        ("elapsed_ns", ctypes.c_longlong),
    ]


LOOKUP_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.POINTER(Lookup), ctypes.c_void_p)

# errshim_lookup_site, by value.
SITES = ("guard", "rethrow_translated", "remediate", "diagnose", "c_api_diagnose", "c_api_fix_config")

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
    "errshim_fix_config_skipping": (_I, [_P, _S, _Z, _S, _S, _Z, _S, _S, _S, _PP, _PP]),
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
    "errshim_observe": (_I, [LOOKUP_CALLBACK, _P, _PP, _PP]),
    "errshim_observer_free": (None, [_P]),
}

# errshim_status (stable values).
OK, NO_MATCH, NO_FIX, INVALID_ARGUMENT, CATALOG_ERROR, CONFIG_ERROR, OUT_OF_MEMORY, INTERNAL_ERROR = range(8)


def load(path):
    """errshim_c at `path`, its signatures set; OSError when it does not
    load, AttributeError when it lacks a function of errshim_c."""
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
