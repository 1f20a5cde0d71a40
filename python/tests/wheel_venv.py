"""The wheel in a fresh virtualenv (ctest: python.wheel), no network.

    python3 python/tests/wheel_venv.py --build-dir build --work build/python-wheel-test [--require-torch]

1. a wheel is refused when the library it would bundle is a sanitizer build;
2. `pip install --no-build-isolation --no-index ./python` (ERRSHIM_BUILD_DIR
   naming the CMake build) into `python3 -m venv --system-site-packages`;
3. `import errshim` there, with no ERRSHIM_LIBRARY and no PYTHONPATH, loads
   the library bundled in site-packages, of the C++ version; the wheel is
   tagged py3-none-<platform>;
4. the whole unittest suite (python/tests, torch's included) passes there.

The package is copied first (python/ and the version header, as in the
checkout), so the build leaves nothing in the source tree.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
SOURCE = os.path.dirname(PYTHON_DIR)


def run(cmd, env, cwd, expect_ok=True):
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(r.stdout, flush=True)
    if expect_ok and r.returncode != 0:
        sys.exit("wheel_venv: failed (exit %d): %s" % (r.returncode, " ".join(cmd)))
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True, help="the CMake build holding liberrshim_c.so")
    ap.add_argument("--work", required=True, help="a folder for the copy and the venv (emptied first)")
    ap.add_argument("--require-torch", action="store_true", help="fail, rather than skip, without torch")
    args = ap.parse_args()
    build = os.path.abspath(args.build_dir)
    work = os.path.abspath(args.work)

    shutil.rmtree(work, ignore_errors=True)
    src = os.path.join(work, "src")
    shutil.copytree(PYTHON_DIR, os.path.join(src, "python"),
                    ignore=shutil.ignore_patterns("__pycache__", "build", "dist", "*.egg-info", "*.so*",
                                                  "_install_prefix.py"))
    os.makedirs(os.path.join(src, "include", "errshim"))
    header = os.path.join(SOURCE, "include", "errshim", "version.hpp")
    shutil.copy(header, os.path.join(src, "include", "errshim"))
    with open(header) as f:
        version = re.search(r'ERRSHIM_VERSION_STRING "([^"]+)"', f.read()).group(1)

    env = {k: v for k, v in os.environ.items() if k not in ("ERRSHIM_LIBRARY", "PYTHONPATH", "ERRSHIM_BUILD_DIR")}
    env.update(PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONDONTWRITEBYTECODE="1")
    empty = os.path.join(work, "cwd")  # `python -c` puts the working folder on sys.path
    os.makedirs(empty)

    venv = os.path.join(work, "venv")
    run([sys.executable, "-m", "venv", "--system-site-packages", venv], env, empty)
    py = os.path.join(venv, "bin", "python")
    pip = [py, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps"]

    # 1. A sanitizer build is never bundled.
    fake = os.path.join(work, "asan-build")
    sys.path.insert(0, HERE)
    import sanitized

    if sanitized.build(os.path.join(fake, "liberrshim_c.so.%s" % version)) is None:
        sys.exit("wheel_venv: cannot compile a library with -fsanitize=address,undefined (a C compiler is needed)")
    r = run(pip + [os.path.join(src, "python")], dict(env, ERRSHIM_BUILD_DIR=fake), empty, expect_ok=False)
    if r.returncode == 0 or "was built with AddressSanitizer" not in r.stdout:
        sys.exit("wheel_venv: a wheel was built from a sanitizer build, or not refused by name")
    shutil.rmtree(os.path.join(src, "python", "build"), ignore_errors=True)

    # 2. The install, the documented command.
    run(pip + [os.path.join(src, "python")], dict(env, ERRSHIM_BUILD_DIR=build), empty)

    # 3. Import with nothing set.
    r = run([py, "-c", "import errshim; print(errshim.library_path()); print(errshim.version())"], env, empty)
    lines = r.stdout.split()
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"], env=env,
                          cwd=empty, stdout=subprocess.PIPE, text=True).stdout.strip()
    if len(lines) != 2 or lines[0] != os.path.join(site, "errshim", "liberrshim_c.so") or lines[1] != version:
        sys.exit("wheel_venv: the installed package did not load its bundled library of version %s: %r"
                 % (version, r.stdout))

    # A platform wheel (it holds a .so), for any Python 3 (ctypes, no ABI).
    with open(os.path.join(site, "errshim-%s.dist-info" % version, "WHEEL")) as f:
        wheel = f.read()
    if "Root-Is-Purelib: false" not in wheel or not re.search(r"^Tag: py3-none-linux_\w+$", wheel, re.M):
        sys.exit("wheel_venv: the wheel is not tagged py3-none-<platform>:\n" + wheel)

    # 4. The suite, against the installed package.
    suite_env = dict(env)
    if args.require_torch:
        suite_env["ERRSHIM_REQUIRE_TORCH"] = "1"
    run([py, "-m", "unittest", "discover", "-s", HERE, "-v"], suite_env, empty)
    print("wheel_venv: OK errshim %s from %s" % (version, lines[0]))


if __name__ == "__main__":
    main()
