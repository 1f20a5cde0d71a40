"""Builds the errshim wheel: the package plus the errshim_c library CMake
built, in the package's own folder (the first place errshim looks).

    pip install --no-build-isolation ./python                  # configures and builds errshim_c itself
    ERRSHIM_BUILD_DIR=build pip install --no-build-isolation ./python   # or takes it from a CMake build

Nothing is downloaded: setuptools and wheel come from the interpreter
(Debian: python3-setuptools, python3-wheel), hence --no-build-isolation.
The version is the C++ version (include/errshim/version.hpp).
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # building without wheel (sdist, setup.py build) needs no wheel command
    bdist_wheel = None

HERE = os.path.dirname(os.path.abspath(__file__))
# The checkout the package belongs to: python/ sits at its top.
SOURCE = os.path.abspath(os.environ.get("ERRSHIM_SOURCE_DIR") or os.path.join(HERE, ".."))
VERSION_HEADER = os.path.join(SOURCE, "include", "errshim", "version.hpp")


def fail(message):
    sys.stderr.write("errshim setup.py: %s\n" % message)
    raise SystemExit(1)


def version():
    try:
        with open(VERSION_HEADER) as f:
            text = f.read()
    except OSError as e:
        fail("cannot read %s (%s): the package is built from an errshim checkout, with python/ at its top "
             "(or set ERRSHIM_SOURCE_DIR to the checkout)" % (VERSION_HEADER, e.strerror))
    m = re.search(r'#define ERRSHIM_VERSION_STRING "([^"]+)"', text)
    if not m:
        fail("%s has no ERRSHIM_VERSION_STRING" % VERSION_HEADER)
    return m.group(1)


def _native():
    # The loader's own sanitizer check, without importing the package (its
    # __init__ would look for a library).
    spec = importlib.util.spec_from_file_location("_errshim_native_for_setup", os.path.join(HERE, "errshim", "_native.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cmake_build():
    """Configures (once) and builds errshim_c alone in <checkout>/build-python,
    Release, without tests, samples, tools or benchmarks; returns that folder."""
    build = os.path.join(SOURCE, "build-python")
    cmake = shutil.which("cmake")
    if cmake is None:
        fail("cmake not found: install it (scripts/setup.sh), or build errshim_c yourself and set "
             "ERRSHIM_BUILD_DIR to that CMake build folder")
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        subprocess.check_call([cmake, "-S", SOURCE, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                               "-DERRSHIM_BUILD_TESTS=OFF", "-DERRSHIM_BUILD_SAMPLES=OFF",
                               "-DERRSHIM_BUILD_TOOLS=OFF", "-DERRSHIM_BUILD_BENCH=OFF",
                               "-DERRSHIM_BUILD_C_API=ON", "-DERRSHIM_SANITIZE="])
    subprocess.check_call([cmake, "--build", build, "--target", "errshim_c", "-j", os.environ.get("ERRSHIM_JOBS", "2")])
    return build


def library(expected_version):
    """The path of the liberrshim_c.so to bundle: from ERRSHIM_BUILD_DIR when
    set, else from a build of our own."""
    build = os.environ.get("ERRSHIM_BUILD_DIR")
    where = "ERRSHIM_BUILD_DIR=%s" % build if build else None
    if not build:
        build = _cmake_build()
        where = build
    build = os.path.abspath(build)
    # The real file, not the symlinks: a wheel holds files. Named after the
    # version, so a build of another version is not bundled by mistake.
    path = os.path.join(build, "liberrshim_c.so.%s" % expected_version)
    if not os.path.isfile(path):
        fail("%s holds no liberrshim_c.so.%s: build the target errshim_c there (cmake --build %s --target "
             "errshim_c), from this checkout" % (where, expected_version, build))
    sanitizers = _native().sanitizers_in(path)
    if sanitizers:
        fail("%s was built with %s (ERRSHIM_SANITIZE); a wheel holding it would abort every interpreter that "
             "imports errshim. Use a build without sanitizers." % (path, " and ".join(s[2] for s in sanitizers)))
    return path


VERSION = version()


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "errshim", "liberrshim_c.so")
        source = library(VERSION)
        self.announce("errshim: bundling %s as %s" % (source, target), 2)
        shutil.copyfile(source, target)
        shutil.copymode(source, target)


cmdclass = {"build_py": BuildPyWithLibrary}

if bdist_wheel is not None:

    class PlatformWheel(bdist_wheel):
        # The wheel holds a Linux shared library, so it is tied to the
        # platform, but not to a Python version or ABI: ctypes loads it.
        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            _, _, platform = super().get_tag()
            return "py3", "none", platform

    cmdclass["bdist_wheel"] = PlatformWheel

setup(version=VERSION, cmdclass=cmdclass)
