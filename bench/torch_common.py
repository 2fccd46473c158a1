"""torch_common.py — shared plumbing of bench/torch_rope.py and bench/torch_gdr.py: the tuned environment
PyTorch gets (MALLOC_MMAP_MAX_=0, OPENBLAS_NUM_THREADS=1; the process re-executes itself to set them before
torch loads), reading `txops bench --json` records, timing (warm-up, then min and median), and the
comparison table with its summary (geometric-mean speed-up of txops over PyTorch)."""
import argparse
import json
import math
import os
import sys
import time

TUNED_ENV = {"MALLOC_MMAP_MAX_": "0", "OPENBLAS_NUM_THREADS": "1"}


def ensure_tuned_env():
    """Re-executes this script once with the tuned environment (glibc reads MALLOC_* at start-up)."""
    if all(os.environ.get(k) == v for k, v in TUNED_ENV.items()):
        return
    env = dict(os.environ, **TUNED_ENV)
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def parse_args(description, extra=()):
    p = argparse.ArgumentParser(description=description)
    for flag, kwargs in extra:
        p.add_argument(flag, **kwargs)
    p.add_argument("--compare", required=True, help="records written by `txops bench --json FILE`")
    p.add_argument("--max-reps", type=int, default=10, help="at most this many timed runs per case (default 10)")
    p.add_argument("--target-s", type=float, default=0.3, help="time budget per case and thread count (default 0.3)")
    p.add_argument("--suite", default="", help="only records of this suite")
    return p.parse_args()


def load_records(path, kinds, suite=""):
    try:
        with open(path) as f:
            records = json.load(f)
    except (OSError, ValueError) as e:
        print(f"cannot read {path}: {e}")
        sys.exit(1)
    return [r for r in records if r.get("kind") in kinds and (not suite or r.get("suite") == suite)]


def parse_shape(shape):
    """'B=1,S=8192,D=128,with_qk' -> ({'B': 1, 'S': 8192, 'D': 128}, ['with_qk'])."""
    dims, tags = {}, []
    for item in shape.split(","):
        if "=" in item and item.split("=", 1)[1].lstrip("-").isdigit():
            k, v = item.split("=", 1)
            dims[k] = int(v)
        elif item:
            tags.append(item)
    return dims, tags


def time_fn(fn, target_s, max_reps, min_reps=2):
    """One warm-up call, then adaptive repetitions; returns (min_s, median_s, reps). A call slower than the
    whole budget is timed once: that first call is the sample (its warm-up effects are negligible)."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    if first > target_s:
        return first, first, 1
    reps = int(max(min_reps, min(max_reps, target_s / max(first, 1e-9))))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    median = times[reps // 2] if reps % 2 else 0.5 * (times[reps // 2 - 1] + times[reps // 2])
    return times[0], median, reps


class Comparison:
    """Rows of (case, threads, txops time, torch time) and the summary."""

    def __init__(self, title):
        self.title = title
        self.rows = []

    def header(self):
        print(f"# {self.title}: PyTorch {self.torch_version()} eager, env "
              + " ".join(f"{k}={v}" for k, v in TUNED_ENV.items()) + "; times are minima")
        print(f"{'suite':<20} {'op':<32} {'dtype':<5} {'thr':>3} {'shape':<50} {'txops_ms':>10} {'torch_ms':>10} "
              f"{'speed-up':>9}")
        sys.stdout.flush()

    @staticmethod
    def torch_version():
        import torch
        return torch.__version__

    def add(self, rec, torch_s, note=""):
        txops_s = rec.get("time_min_s") or 0.0
        ok = rec.get("passed") and txops_s > 0 and torch_s and torch_s > 0
        speedup = torch_s / txops_s if ok else float("nan")
        self.rows.append((rec, torch_s, speedup))
        tx = f"{txops_s * 1e3:10.4f}" if txops_s > 0 else f"{'failed':>10}"
        tt = f"{torch_s * 1e3:10.4f}" if torch_s else f"{'error':>10}"
        sp = f"{speedup:8.2f}x" if ok else f"{'-':>9}"
        print(f"{rec['suite']:<20} {rec['op']:<32} {rec['dtype']:<5} {rec['threads']:>3} {rec['shape']:<50} {tx} {tt} "
              f"{sp}{'  ' + note if note else ''}")
        sys.stdout.flush()

    def summary(self):
        by_suite = {}
        for rec, _, s in self.rows:
            if not math.isnan(s):
                by_suite.setdefault((rec["suite"], rec["threads"]), []).append(s)
        print(f"# summary ({self.title}): geometric-mean speed-up of txops over PyTorch")
        all_s = []
        for (suite, threads), values in sorted(by_suite.items()):
            all_s += values
            print(f"#   {suite:<20} threads={threads}: {geomean(values):7.2f}x over {len(values)} case(s)")
        compared = sum(1 for _, _, s in self.rows if not math.isnan(s))
        print(f"#   overall: {geomean(all_s):.2f}x over {compared} compared case(s); "
              f"{len(self.rows) - compared} not compared (txops failed or PyTorch error)")


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")
