"""How long errshim.diagnose() takes from Python, and whether memory stays
flat over many calls. Run by hand (not a test):

    python3 python/bench_diagnose.py                    # per-call time, short messages
    python3 python/bench_diagnose.py --leak 1000000     # RSS before and after a million calls

With the package from a wheel, or PYTHONPATH=python ERRSHIM_LIBRARY=build/liberrshim_c.so.
"""

import argparse
import ctypes
import statistics
import time

import errshim

MESSAGES = {
    "matched": "ValueError: This model does not support the quantized cache. If you want your model to support "
               "quantized cache, please open an issue and tag @zucchini-nlp.",
    "matched-captures": "RuntimeError: index_copy_(): index 8 is out of bounds for dimension 2 with size 8",
    "unmatched": "ValueError: the weather is bad today",
}


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def per_call(fn, calls, repeats):
    fn()  # warm: the embedded catalog is built on first use
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        runs.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(runs), min(runs)


def c_only(message):
    # The C call alone through ctypes (diagnose and free, no JSON): what the
    # Python layer adds is the rest.
    lib = errshim._library()
    data = message.encode()
    handle = ctypes.c_void_p()

    def call():
        lib.errshim_diagnose(None, data, len(data), None, ctypes.byref(handle), None)
        lib.errshim_diagnosis_free(handle)

    return call


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--leak", type=int, metavar="N", help="call diagnose() N times and report RSS")
    args = ap.parse_args()
    print("errshim %s, %s" % (errshim.version(), errshim.library_path()))
    if args.leak:
        message = MESSAGES["matched-captures"]
        for _ in range(10000):  # warm-up: caches, allocator pools
            errshim.diagnose(message)
        before = rss_kib()
        t = time.perf_counter()
        for i in range(args.leak):
            if i % 2:
                errshim.diagnose(MESSAGES["unmatched"])
            elif i % 4:
                errshim.diagnose(message)  # the result is freed unread
            else:
                errshim.diagnose(message).remediation  # read: copied out and freed at once
        seconds = time.perf_counter() - t
        after = rss_kib()
        print("%d calls in %.1f s: RSS %d KiB before, %d KiB after (%+d KiB)"
              % (args.leak, seconds, before, after, after - before))
        return
    for name, message in MESSAGES.items():
        median, best = per_call(lambda: errshim.diagnose(message), args.calls, args.repeats)
        c_median, c_best = per_call(c_only(message), args.calls, args.repeats)
        print("%-17s diagnose(): %6.2f us/call (best %.2f); the C call alone: %6.2f us (best %.2f); %d chars"
              % (name, median, best, c_median, c_best, len(message)))


if __name__ == "__main__":
    main()
