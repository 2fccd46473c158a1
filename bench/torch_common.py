"""torch_common.py — shared plumbing of bench/torch_rope.py, bench/torch_gdr.py and bench/py_bench.py: the tuned
environment PyTorch gets (the process re-executes itself to set it before torch loads), reading
`txops bench --json` records, timing (warm-up, then minima), torch.compile with bounded, reported compile time,
and the comparison table of txops against two PyTorch peers — eager and torch.compile (inductor's C++/OpenMP
code) — with each peer's time, the ratio peer/txops and a summary (geometric means, the worst ratio)."""
import argparse
import json
import math
import os
import sys
import time

# MALLOC_MMAP_MAX_=0 + MALLOC_TRIM_THRESHOLD_: glibc serves allocations from its heap and does not trim freed
# memory back to the kernel, so a fresh tensor of a size seen before can reuse pages already mapped instead of
# faulting in new ones (glibc's defaults mmap a 64 MiB block and munmap it on free: ~16k minor faults per fresh
# 64 MiB output, 30-220 ms on this VM). Whether it does still depends on the heap's state (both seen), which is
# why the txops side is timed with preallocated outputs (out=), as `txops bench` and the C++ API have them.
TUNED_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(1 << 40), "OPENBLAS_NUM_THREADS": "1"}


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
    p.add_argument("--max-reps", type=int, default=10, help="at most this many timed runs per case and peer")
    p.add_argument("--target-s", type=float, default=0.3, help="time budget per case, peer and thread count")
    p.add_argument("--suite", default="", help="only records of this suite")
    p.add_argument("--dtype", default="", help="only records of this dtype (bf16 | fp16 | fp32)")
    p.add_argument("--threads", default="", help="only records of these thread counts (comma-separated)")
    p.add_argument("--peers", default="eager,compile",
                   help="comma-separated: eager, compile (default both; compile needs torch >= 2)")
    p.add_argument("--compile-dtypes", default="bf16,fp16,fp32",
                   help="dtypes whose cases also run under torch.compile (default all)")
    return p.parse_args()


def load_records(path, kinds, args):
    try:
        with open(path) as f:
            records = json.load(f)
    except (OSError, ValueError) as e:
        print(f"cannot read {path}: {e}")
        sys.exit(1)
    threads = {int(t) for t in args.threads.split(",") if t} if args.threads else None
    return [r for r in records if r.get("kind") in kinds and (not args.suite or r.get("suite") == args.suite)
            and (not args.dtype or r.get("dtype") == args.dtype) and (threads is None or r["threads"] in threads)]


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


def time_alternating(fns, target_s, max_reps, rounds=2):
    """Minima of several callables timed in turn, `rounds` times (A B A B ...), so that a busy moment of a shared
    machine does not land on one peer only. fns: {name: callable or None}; returns {name: seconds or None}."""
    best = {name: None for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            if fn is None:
                continue
            t = time_fn(fn, target_s / rounds, max_reps)[0]
            best[name] = t if best[name] is None else min(best[name], t)
    return best


def torch_major():
    import torch
    return int(torch.__version__.split(".")[0])


def peers_wanted(args):
    peers = [p for p in args.peers.split(",") if p]
    if "compile" in peers and torch_major() < 2:
        print(f"# torch {torch_version()} has no torch.compile: the compile peer is skipped")
        peers.remove("compile")
    return peers


def setup_compile():
    """torch.compile defaults for the bench: inductor on the CPU, shapes static (each case is compiled for its
    own shapes, as a model with fixed shapes is), compile errors raised (never a silent eager fallback), and a
    cache large enough for every case of a run."""
    import torch
    import torch._dynamo
    torch._dynamo.config.cache_size_limit = 256
    torch._dynamo.config.suppress_errors = False
    if hasattr(torch._dynamo.config, "accumulated_cache_size_limit"):
        torch._dynamo.config.accumulated_cache_size_limit = 4096


def reset_compile():
    """Forgets compiled code: inductor bakes the thread count (torch.get_num_threads()) into its OpenMP loops,
    so every thread count compiles its own (the on-disk FX graph cache keys on it as well)."""
    import torch._dynamo
    torch._dynamo.reset()


class Compiled:
    """torch.compile of fn; first() runs (compiles) once and records the compile time (the first call minus
    nothing: it includes one run, negligible next to compiling)."""

    def __init__(self, fn, **options):
        import torch
        self.fn = torch.compile(fn, **options)
        self.compile_s = None

    def __call__(self, *args, **kwargs):
        if self.compile_s is None:
            t0 = time.perf_counter()
            result = self.fn(*args, **kwargs)
            self.compile_s = time.perf_counter() - t0
            return result
        return self.fn(*args, **kwargs)


def torch_version():
    import torch
    return torch.__version__


def fmt_ms(seconds, width=10):
    return f"{seconds * 1e3:{width}.4f}" if seconds else f"{'-':>{width}}"


def fmt_ratio(peer_s, txops_s, width=8):
    return f"{peer_s / txops_s:{width - 1}.2f}x" if peer_s and txops_s else f"{'-':>{width}}"


class Comparison:
    """Rows of (record, {peer: seconds}) and the summary. The ratio is peer time / txops time (> 1: txops
    faster), both minima."""

    def __init__(self, title, peers):
        self.title = title
        self.peers = peers
        self.rows = []
        self.compile_s = 0.0

    def header(self):
        import torch
        print(f"# {self.title}: PyTorch {torch.__version__} " + " and ".join(
            {"eager": "eager", "compile": "torch.compile (inductor, CPU C++/OpenMP)"}[p] for p in self.peers)
            + "; env " + " ".join(f"{k}={v}" for k, v in TUNED_ENV.items()) + "; times are minima")
        cols = "".join(f" {p + '_ms':>11} {p + '/tx':>10}" for p in self.peers)
        print(f"{'suite':<20} {'op':<32} {'dtype':<5} {'thr':>3} {'shape':<50} {'txops_ms':>10}{cols}")
        sys.stdout.flush()

    def add(self, rec, peer_s, note="", txops_py_s=None):
        """txops_py_s: the same case through the txops package, timed in this run alternating with the peers;
        the txops time is the better of it and the record's (`txops bench`, C++ API, an earlier moment), so
        that a busy moment of a shared machine during either run does not decide a ratio."""
        txops_s = rec.get("time_min_s") or 0.0
        ok = bool(rec.get("passed") and txops_s > 0)
        if ok and txops_py_s and txops_py_s < txops_s:
            rec = dict(rec, time_min_s=txops_py_s, time_cpp_s=txops_s)
            txops_s = txops_py_s
            note = "txops: same-run Python call" + ("; " + note if note else "")
        self.rows.append((rec, dict(peer_s), ok))
        tx = f"{txops_s * 1e3:10.4f}" if txops_s > 0 else f"{'failed':>10}"
        cols = "".join(f" {fmt_ms(peer_s.get(p), 11)} {fmt_ratio(peer_s.get(p), txops_s if ok else 0, 10)}"
                       for p in self.peers)
        print(f"{rec['suite']:<20} {rec['op']:<32} {rec['dtype']:<5} {rec['threads']:>3} {rec['shape']:<50} "
              f"{tx}{cols}{'  ' + note if note else ''}")
        sys.stdout.flush()

    def summary(self):
        print(f"# summary ({self.title}): ratio peer time / txops time (> 1: txops faster)")
        for peer in self.peers:
            by_suite, worst = {}, None
            for rec, peer_s, ok in self.rows:
                if not ok or not peer_s.get(peer):
                    continue
                r = peer_s[peer] / rec["time_min_s"]
                by_suite.setdefault((rec["suite"], rec["threads"]), []).append(r)
                if worst is None or r < worst[0]:
                    worst = (r, rec)
            all_r = [r for values in by_suite.values() for r in values]
            for (suite, threads), values in sorted(by_suite.items()):
                print(f"#   {peer:<8} {suite:<20} threads={threads}: geomean {geomean(values):7.2f}x, "
                      f"min {min(values):6.2f}x over {len(values)} case(s)")
            if all_r:
                r, rec = worst
                print(f"#   {peer:<8} overall: geomean {geomean(all_r):.2f}x over {len(all_r)} case(s); worst {r:.2f}x "
                      f"({rec['suite']} {rec['op']} {rec['dtype']} {rec['shape']}, {rec['threads']} thread(s)); "
                      f"{sum(1 for x in all_r if x < 1)} case(s) where the peer is faster")
        if "compile" in self.peers:
            print(f"#   torch.compile time spent in this script: {self.compile_s:.0f} s")


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")
