#!/usr/bin/env python3
"""py_bench.py — txops from Python against PyTorch eager, per shape suite case (docs/measurement.md), and the
per-call overhead of the Python binding.

For each case both sides get the same tensors (shapes, dtype, thread count): txops through the txops package
(DLPack, no copies), PyTorch as a user writes it — the RoPE formulas and the chunked gated delta rule of
bench/torch_rope.py and bench/torch_gdr.py (imported, not repeated here), autograd for the backward ops. The
table gives minimum times and the ratio torch/txops (> 1: txops faster).

Overhead: for decode-sized calls, the time of one call from Python (torch and numpy) minus the time of the same
C++ API call (txops::xxx, timed in a C++ loop inside the extension module), i.e. what the binding adds.

Large call: llama3-8b-train apply_rotary_pos_emb_grad from Python (out=, and fresh outputs) against the same
C++ API call looped inside the extension, alternating, same process, with page faults per call.

Run: .venv/bin/python bench/py_bench.py [--quick] [--threads N] [--dtype bf16] [--suite S] [--no-overhead]
(the installed txops; PYTHONPATH=python for the source tree's. The script re-executes itself with
torch_common.TUNED_ENV: MALLOC_MMAP_MAX_=0, MALLOC_TRIM_THRESHOLD_ huge, OPENBLAS_NUM_THREADS=1).
"""
import argparse
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:  # the installed package (make bench: .venv), else the source tree's (PYTHONPATH=python or in place)
    import txops as _probe  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
import torch_common as tc  # noqa: E402

tc.ensure_tuned_env()
import torch  # noqa: E402
import torch_gdr  # noqa: E402
import torch_rope  # noqa: E402

import txops  # noqa: E402
from txops import _txops  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
MODES = ["half", "interleave", "quarter", "interleave-half"]


def rope_table(batch, seq, heads, dim, dtype, mode="half"):
    """Real RoPE tables: angle = position * 10000^(-2i/dim), laid out so that the channels the mode rotates together
    share an angle: halves repeated (half, interleave-half), pairs (interleave), quarters repeated (quarter)."""
    freqs = dim // 4 if mode == "quarter" else dim // 2
    inv_freq = 10000.0 ** (-torch.arange(0, 2 * freqs, 2, dtype=torch.float64) / dim)
    angles = torch.arange(seq, dtype=torch.float64)[:, None] * inv_freq[None, :]
    if mode == "interleave":
        angles = angles.repeat_interleave(2, -1)
    else:
        angles = torch.cat((angles,) * (dim // freqs), -1)
    shape = (batch, seq, heads, dim)
    angles = angles.reshape(1, seq, 1, dim).expand(shape)
    return angles.cos().to(dtype).contiguous(), angles.sin().to(dtype).contiguous()


def uniform(shape, dtype, seed):
    return (torch.rand(shape, generator=torch.Generator().manual_seed(seed)) * 2 - 1).to(dtype)


# ---- the cases: each returns (txops call, torch call) on the same tensors ------------------------------------
def llama_train(dtype, scale, with_qk):
    S = 8192 // scale
    q, k = uniform((1, S, 32, 128), dtype, 1), uniform((1, S, 8, 128), dtype, 2)
    cos, sin = rope_table(1, S, 1, 128, dtype)
    gq, gk = uniform(q.shape, dtype, 3), uniform(k.shape, dtype, 4)
    tq, tk = q.clone().requires_grad_(), k.clone().requires_grad_()
    tc_, ts = cos.clone().requires_grad_(with_qk), sin.clone().requires_grad_(with_qk)
    yq, yk = torch_rope.rope_half(tq, tc_, ts), torch_rope.rope_half(tk, tc_, ts)
    inputs = (tq, tk, tc_, ts) if with_qk else (tq, tk)
    extra = dict(query=q, key=k) if with_qk else {}
    return (lambda: txops.apply_rotary_pos_emb_grad(gq, gk, cos, sin, **extra),
            lambda: torch.autograd.grad((yq, yk), inputs, (gq, gk), retain_graph=True))


def llama_decode(dtype, scale):
    q, k = uniform((64, 1, 32, 128), dtype, 1), uniform((64, 1, 8, 128), dtype, 2)
    cos, sin = rope_table(64, 1, 1, 128, dtype)
    tq, tk = q.clone(), k.clone()

    def torch_call():
        tq.copy_(torch_rope.rope_half(tq, cos, sin))
        tk.copy_(torch_rope.rope_half(tk, cos, sin))
    return lambda: txops.apply_rotary_pos_emb(q, k, cos, sin), torch_call


def mla(dtype, scale, decode):
    B, S = (32, 1) if decode else (1, 4096 // scale)
    x = uniform((B, 128, S, 64), dtype, 1)
    cos, sin = rope_table(B if decode else 1, S, 1, 64, dtype)
    cos, sin = cos.transpose(1, 2), sin.transpose(1, 2)  # (Bc, 1, S, D)
    out = torch.empty_like(x)
    return (lambda: txops.interleave_rope(x, cos, sin, out=out),
            lambda: torch_rope.rope_interleave_half(x, cos, sin))


def partial(dtype, scale, mode, backward):
    S = 4096 // scale
    x = uniform((4, S, 16, 192), dtype, 1)
    cos, sin = rope_table(1, S, 1, 64, dtype, MODES[mode])
    formula = torch_rope.MODES[MODES[mode]]
    tx = x.clone()
    if backward:
        x_slice = tx[..., 128:].clone().requires_grad_()
        y = formula(x_slice, cos, sin)

        def torch_call():
            dys = tx[..., 128:]
            dys.copy_(torch.autograd.grad(y, x_slice, dys, retain_graph=True)[0])
        return (lambda: txops.inplace_partial_rotary_mul_backward(x, cos, sin, rotary_mode=mode,
                                                                   partial_slice=(128, 192)), torch_call)

    def torch_call():
        xs = tx[..., 128:]
        xs.copy_(formula(xs, cos, sin))
    return (lambda: txops.inplace_partial_rotary_mul(x, cos, sin, rotary_mode=mode, partial_slice=(128, 192)),
            torch_call)


def gdr_inputs(T, dtype):
    gen = torch.Generator().manual_seed(2)
    q = torch_gdr.unit_rows((T, 16, 128), dtype, gen)
    k = torch_gdr.unit_rows((T, 16, 128), dtype, gen)
    v = (torch.rand(T, 32, 128, generator=gen) * 2 - 1).to(dtype)
    beta = (torch.rand(T, 32, generator=gen) * 0.9 + 0.05).to(dtype)
    g = -torch.rand(T, 32, generator=gen) * 0.2
    return q, k, v, beta, g


def qwen_prefill(dtype, scale, batch, variant):
    T = 8192 // scale
    lengths = torch_gdr.sequence_lengths(T, batch, variant)
    q, k, v, beta, g = gdr_inputs(T, dtype)
    init = uniform((batch, 32, 128, 128), torch.float32, 5) * 0.1
    lengths_i32 = torch.tensor(lengths, dtype=torch.int32)
    s = 128 ** -0.5
    peer = torch_gdr.Peers(compiled=False)
    return (lambda: txops.chunk_gated_delta_rule(q, k, v, beta, init, lengths_i32, g=g, scale=s),
            lambda: torch_gdr.prefill(peer, q, k, v, beta, g, init, lengths, s))


def qwen_decode(dtype, scale):
    B, pool_size = 64, 256
    q, k, v, beta, g = gdr_inputs(B, dtype)
    pool = uniform((pool_size, 32, 128, 128), dtype, 6) * 0.1
    slots = torch.tensor([(t * 97 + 5) % pool_size for t in range(B)])
    slots_i32 = slots.to(torch.int32)
    ones = torch.ones(B, dtype=torch.int32)
    torch_pool = pool.transpose(-1, -2).contiguous()  # the peer's states are (Dk, Dv), as transformers keeps them
    peer = torch_gdr.Peers(compiled=False)
    s = 128 ** -0.5
    return (lambda: txops.recurrent_gated_delta_rule(q, k, v, beta, pool, ones, slots_i32, g=g, scale=s),
            lambda: peer.decode_call(torch_pool, slots, q, k, v, beta, g, s))


def cases(scale):
    yield "llama3-8b-train", "apply_rotary_pos_emb_grad with_qk", lambda d: llama_train(d, scale, True)
    yield "llama3-8b-train", "apply_rotary_pos_emb_grad", lambda d: llama_train(d, scale, False)
    yield "llama3-8b-decode", "apply_rotary_pos_emb", lambda d: llama_decode(d, scale)
    yield "deepseek-v3-mla", "interleave_rope decode", lambda d: mla(d, scale, True)
    yield "deepseek-v3-mla", "interleave_rope prefill", lambda d: mla(d, scale, False)
    for mode in range(4):
        yield "deepseek-v3-partial", f"inplace_partial_rotary_mul {MODES[mode]}", \
            lambda d, m=mode: partial(d, scale, m, False)
        yield "deepseek-v3-partial", f"inplace_partial_rotary_mul_backward {MODES[mode]}", \
            lambda d, m=mode: partial(d, scale, m, True)
    yield "qwen3-next-prefill", "chunk_gated_delta_rule 1x8192", lambda d: qwen_prefill(d, scale, 1, "equal")
    yield "qwen3-next-prefill", "chunk_gated_delta_rule 8x1024", lambda d: qwen_prefill(d, scale, 8, "equal")
    yield "qwen3-next-prefill", "chunk_gated_delta_rule ragged", lambda d: qwen_prefill(d, scale, 8, "ragged")
    yield "qwen3-next-decode", "recurrent_gated_delta_rule", lambda d: qwen_decode(d, scale)


def min_time(fn, budget_s, max_reps):
    """Minimum of timed calls: a warm-up, then at least 3 more, as many as fit in budget_s (at most max_reps for
    calls over 10 ms, 2000 otherwise; one for calls over 1 s) — on a shared machine the minimum needs tries."""
    start = time.perf_counter()
    fn()
    first = time.perf_counter() - start
    limit = max_reps if first > 0.01 else 2000
    reps = 1 if first > 1.0 else int(max(3, min(limit, budget_s / max(first, 1e-9))))
    best = first  # slow calls (PyTorch's chunked prefill: seconds) get the warm-up and one more run
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


# ---- per-call overhead of the binding -------------------------------------------------------------------------
def overhead_pair(fn, runs=300):
    """(C++ seconds, Python seconds) per call, each the minimum over `runs` alternating runs of N calls (N: a run
    of about 1 ms, 5..300 calls): the C++ run is one binding call looping over the C++ API N times (GIL
    released), the Python run N calls of fn. Alternating, and minima of short runs (shorter than a scheduler
    time slice), keep a shared machine's noise out."""
    start = time.perf_counter()
    fn()
    calls = int(max(5, min(300, 1e-3 / max(time.perf_counter() - start, 1e-9))))
    cpp = py = math.inf
    for _ in range(runs):
        _txops._set_repeat(calls)
        try:
            fn()
            cpp = min(cpp, _txops._last_cpp_seconds())
        finally:
            _txops._set_repeat(1)
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        py = min(py, (time.perf_counter() - start) / calls)
    return cpp, py


# ---- a large call: Python against C++ in the same process ------------------------------------------------------
def _faults():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def large_call_report(dtype, threads, rounds):
    """llama3-8b-train apply_rotary_pos_emb_grad without q/k (64 + 16 MiB of bf16 outputs): the C++ API call
    (looped inside the extension, outputs preallocated as `txops bench` has them), the Python call with out=,
    and the Python call allocating its outputs (whether those are new memory to fault in depends on the
    allocator's state: up to ~16k minor page faults per call). Alternating, best of `rounds`; the most minor
    page faults of one call beside each."""
    S = 8192
    gq, gk = uniform((1, S, 32, 128), dtype, 3), uniform((1, S, 8, 128), dtype, 4)
    cos, sin = rope_table(1, S, 1, 128, dtype)
    out = (torch.empty_like(gq), torch.empty_like(gk))
    for t in out:
        t.zero_()
    has_out = "out" in txops.apply_rotary_pos_emb_grad.__code__.co_varnames

    def cpp():
        _txops._set_repeat(3)
        try:
            _txops.apply_rotary_pos_emb_grad(gq, gk, cos, sin, None, None, 0, 1, out[0], out[1], None, None)
        finally:
            _txops._set_repeat(1)
        return _txops._last_cpp_seconds()

    def py_out():
        if has_out:
            txops.apply_rotary_pos_emb_grad(gq, gk, cos, sin, out=out)
        else:
            _txops.apply_rotary_pos_emb_grad(gq, gk, cos, sin, None, None, 0, 1, out[0], out[1], None, None)

    def py_fresh():
        txops.apply_rotary_pos_emb_grad(gq, gk, cos, sin)

    best = {k: math.inf for k in ("cpp", "out", "fresh")}
    faults = dict.fromkeys(best, 0)

    def timed(name, fn):
        f0 = _faults()
        t0 = time.perf_counter()
        fn()
        best[name] = min(best[name], time.perf_counter() - t0)
        faults[name] = max(faults[name], _faults() - f0)

    py_fresh()
    py_out()
    for _ in range(rounds):
        best["cpp"] = min(best["cpp"], cpp())
        timed("out", py_out)
        timed("fresh", py_fresh)
    print(f"# a large call from Python vs the same C++ API call, same process ({threads} txops thread(s), "
          f"{str(dtype).replace('torch.', '')}, best of {rounds} alternating rounds; faults = the most minor page "
          "faults of one call)")
    print(f"{'llama3-8b-train apply_rotary_pos_emb_grad no_qk':<50} {'ms':>9} {'vs C++':>8} {'faults':>8}")
    rows = [("C++ API call (outputs preallocated)", "cpp", "cpp"),
            ("Python, out= (outputs preallocated)" + ("" if has_out else " [extension]"), "out", "cpp"),
            ("Python, fresh outputs (torch.empty per call)", "fresh", "cpp")]
    for label, key, ref in rows:
        extra = "" if key == ref else f"{(best[key] / best[ref] - 1) * 100:+7.1f}%"
        shown = "" if key.startswith("cpp") else faults[key]
        print(f"{label:<50} {best[key] * 1e3:9.3f} {extra:>8} {shown:>8}")
    sys.stdout.flush()


def overhead_report(dtype):
    """On one txops thread: the binding's cost does not depend on it, and a second thread only adds noise."""
    threads = txops.num_threads()
    txops.set_num_threads(1)
    try:
        overhead_table(dtype)
    finally:
        txops.set_num_threads(threads)


def overhead_table(dtype):
    print("# per-call overhead from Python (1 txops thread): one Python call minus the same C++ API call, "
          "minima over 60 alternating runs of ~1 ms")
    print(f"{'call':<58} {'C++ us':>8} {'py torch us':>12} {'+us':>6} {'C++ fp32 us':>12} {'py numpy us':>12} "
          f"{'+us':>6}")
    shapes = [("interleave_rope x (1,1,1,64)", (1, 1, 1, 64)), ("interleave_rope x (32,128,1,64) decode", (32, 128, 1, 64))]
    for name, shape in shapes:
        row = []
        for framework in ("torch", "numpy"):
            x = uniform(shape, dtype if framework == "torch" else torch.float32, 1)  # numpy: no bf16
            cos, sin = (t.transpose(1, 2) for t in rope_table(shape[0], 1, 1, shape[3], x.dtype))
            out = torch.empty_like(x)
            if framework == "numpy":
                x, cos, sin, out = (t.contiguous().numpy() for t in (x, cos, sin, out))
            fn = lambda: txops.interleave_rope(x, cos, sin, out=out)  # noqa: E731
            row.append(overhead_pair(fn))
        print(f"{name + ' (' + str(dtype).replace('torch.', '') + ' / fp32)':<58} {row[0][0] * 1e6:8.2f} "
              f"{row[0][1] * 1e6:12.2f} {(row[0][1] - row[0][0]) * 1e6:6.2f} {row[1][0] * 1e6:12.2f} {row[1][1] * 1e6:12.2f} "
              f"{(row[1][1] - row[1][0]) * 1e6:6.2f}")
    q, k = uniform((64, 1, 32, 128), dtype, 1), uniform((64, 1, 8, 128), dtype, 2)
    cos, sin = rope_table(64, 1, 1, 128, dtype)
    fn = lambda: txops.apply_rotary_pos_emb(q, k, cos, sin)  # noqa: E731
    cpp, py = overhead_pair(fn)
    print(f"{'apply_rotary_pos_emb llama3-8b-decode (torch)':<58} {cpp * 1e6:8.2f} {py * 1e6:12.2f} "
          f"{(py - cpp) * 1e6:6.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--quick", action="store_true", help="sequence lengths / 8 (a smoke run)")
    parser.add_argument("--threads", type=int, default=0, help="threads for both sides (default: txops' default)")
    parser.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    parser.add_argument("--suite", default="", help="only cases of this suite")
    parser.add_argument("--budget-s", type=float, default=0.5, help="time budget per case and side")
    parser.add_argument("--max-reps", type=int, default=10)
    parser.add_argument("--no-overhead", action="store_true", help="skip the Python-vs-C++ tables")
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds of the large-call table")
    args = parser.parse_args()
    dtype = DTYPES[args.dtype]
    threads = args.threads or txops.num_threads()
    txops.set_num_threads(threads)
    torch.set_num_threads(threads)
    scale = 8 if args.quick else 1
    print(f"# txops from Python vs PyTorch {torch.__version__} eager; {args.dtype}, {threads} thread(s), "
          f"ISA {txops.active_isa()}; env " + " ".join(f"{k}={v}" for k, v in tc.TUNED_ENV.items())
          + ("; --quick: sequence lengths / 8" if args.quick else ""))
    print(f"{'suite':<20} {'case':<48} {'txops_ms':>10} {'torch_ms':>10} {'torch/txops':>11}")
    ratios = []
    for suite, name, build in cases(scale):
        if args.suite and suite != args.suite:
            continue
        txops_call, torch_call = build(dtype)
        try:
            txops_s = min_time(txops_call, args.budget_s, args.max_reps)
        except (NotImplementedError, ValueError, TypeError, RuntimeError) as error:
            print(f"{suite:<20} {name:<48} {'failed':>10}  {str(error).splitlines()[0]}")
            continue
        torch_s = min_time(torch_call, args.budget_s, args.max_reps)
        ratios.append(torch_s / txops_s)
        print(f"{suite:<20} {name:<48} {txops_s * 1e3:10.3f} {torch_s * 1e3:10.3f} {torch_s / txops_s:10.2f}x")
        sys.stdout.flush()
        del txops_call, torch_call
    if ratios:
        print(f"# geometric mean torch/txops over {len(ratios)} case(s): {tc.geomean(ratios):.2f}x")
    if not args.no_overhead:
        try:
            large_call_report(dtype, threads, args.rounds)
            overhead_report(dtype)
        except (NotImplementedError, ValueError, TypeError, RuntimeError) as error:
            print(f"# overhead: not measured ({str(error).splitlines()[0]})")


if __name__ == "__main__":
    main()
