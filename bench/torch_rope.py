#!/usr/bin/python3
"""torch_rope.py — the RoPE cases of `txops bench` run in PyTorch, eager and under torch.compile, beside txops.

Reads the records of `txops bench --json FILE` (--compare FILE), rebuilds each RoPE case's tensors from its
shape string, times the same operation written as a PyTorch user would (forward formulas with torch.cat /
slicing; backward ops as autograd of that forward, timing the backward pass only) on the record's thread
count, eager and with the same formulas under torch.compile (inductor: C++/OpenMP code for the CPU, compiled
once per case and thread count, warmed up, then timed; eager and compiled runs alternate), and prints txops
time, each peer's time and the ratio peer / txops, then a summary per suite (geometric mean, worst case).
Run with the project venv's python (torch 2.13); the script re-executes itself with the allocator settings of
torch_common.TUNED_ENV (PyTorch's best configuration here).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_common as tc  # noqa: E402

tc.ensure_tuned_env()
try:
    import torch  # noqa: E402
except ImportError:
    print("torch_rope.py: PyTorch is not installed for this interpreter (python3-torch); nothing to compare")
    sys.exit(0)

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


# ---- the four rotation modes, forward, as a user writes them (y = x*cos + rot(x)*sin) ----
def rope_half(x, c, s):
    x1, x2 = x.chunk(2, dim=-1)
    return x * c + torch.cat((-x2, x1), dim=-1) * s


def rope_interleave(x, c, s):
    xe, xo = x[..., 0::2], x[..., 1::2]
    return x * c + torch.stack((-xo, xe), dim=-1).flatten(-2) * s


def rope_quarter(x, c, s):
    xa, xb = x.chunk(2, dim=-1)
    ca, cb = c.chunk(2, dim=-1)
    sa, sb = s.chunk(2, dim=-1)
    return torch.cat((rope_half(xa, ca, sa), rope_half(xb, cb, sb)), dim=-1)


def rope_interleave_half(x, c, s):
    # de-interleave (x[0::2] then x[1::2]), then half mode; the output stays in half layout
    d = x.shape[-1]
    x = x.unflatten(-1, (d // 2, 2)).transpose(-1, -2).flatten(-2)
    return rope_half(x, c, s)


MODES = {"half": rope_half, "interleave": rope_interleave, "quarter": rope_quarter,
         "interleave-half": rope_interleave_half}


def cos_sin(shape, dtype, gen, mode="half"):
    """One angle per row and pair of channels the mode rotates together, as in real rotary tables: each pair turns
    by an exact rotation, so the in-place timing loops keep the values' magnitude (independent angles per channel
    shrink or grow them geometrically, through fp32 subnormals that cost Intel cores ~40x per operation)."""
    d = shape[-1]
    j = torch.arange(d)
    pair = {"interleave": j // 2, "quarter": (j // (d // 2)) * (d // 4) + j % (d // 4)}.get(mode, j % (d // 2))
    theta = (torch.rand(shape, generator=gen) * 6.2831853)[..., pair]
    return torch.cos(theta).to(dtype), torch.sin(theta).to(dtype)


def cos_sin_cache(positions, d, dtype, gen):
    """vLLM's cache layout: cos(theta_k) for k < d/2, then sin(theta_k)."""
    theta = torch.rand((positions, d // 2), generator=gen) * 6.2831853
    return torch.cat((torch.cos(theta), torch.sin(theta)), dim=-1).to(dtype)


def randu(shape, dtype, gen):
    return (torch.rand(shape, generator=gen) * 2 - 1).to(dtype)


def build(op, dims, tags, dtype, compiled=False):
    """Returns a no-argument function doing one call of `op` in PyTorch: eager, or (compiled=True) the same
    formulas under torch.compile (the forward formula compiled; backward ops run the compiled backward graph that
    AOTAutograd and inductor derive from it, through the same torch.autograd.grad call)."""
    gen = torch.Generator().manual_seed(1)
    wrap = (lambda f: tc.Compiled(f, dynamic=False)) if compiled else (lambda f: f)
    if op == "apply_rotary_pos_emb_grad":
        B, S, Nq, Nk, D = (dims[k] for k in ("B", "S", "Nq", "Nk", "D"))
        with_qk = "with_qk" in tags
        q = randu((B, S, Nq, D), dtype, gen).requires_grad_()
        k = randu((B, S, Nk, D), dtype, gen).requires_grad_()
        c, s = cos_sin((1, S, 1, D), dtype, gen)
        c.requires_grad_(with_qk)
        s.requires_grad_(with_qk)
        forward = wrap(lambda q, k, c, s: (rope_half(q, c, s), rope_half(k, c, s)))
        yq, yk = forward(q, k, c, s)
        gq, gk = randu(yq.shape, dtype, gen), randu(yk.shape, dtype, gen)
        inputs = (q, k, c, s) if with_qk else (q, k)
        return lambda: torch.autograd.grad((yq, yk), inputs, (gq, gk), retain_graph=True), forward
    if op == "apply_rotary_pos_emb":
        B, S, Nq, Nk, D = (dims[k] for k in ("B", "S", "Nq", "Nk", "D"))
        q, k = randu((B, S, Nq, D), dtype, gen), randu((B, S, Nk, D), dtype, gen)
        c, s = cos_sin((B, S, 1, D), dtype, gen)

        def v2(q, k, c, s):
            q.copy_(rope_half(q, c, s))
            k.copy_(rope_half(k, c, s))
        f = wrap(v2)
        return lambda: f(q, k, c, s), f
    if op == "interleave_rope":
        B, N, S, D = (dims[k] for k in ("B", "N", "S", "D"))
        x = randu((B, N, S, D), dtype, gen)
        c, s = cos_sin((B if S == 1 else 1, 1, S, D), dtype, gen)
        f = wrap(rope_interleave_half)
        return lambda: f(x, c, s), f
    if op in ("inplace_partial_rotary_mul", "inplace_partial_rotary_mul_grad"):
        B, S, N, D, lo, hi = (dims[k] for k in ("B", "S", "N", "D", "lo", "hi"))
        mode = next(t.split("=", 1)[1] for t in tags if t.startswith("mode="))
        formula = MODES[mode]
        x = randu((B, S, N, D), dtype, gen)
        c, s = cos_sin((1, S, 1, hi - lo), dtype, gen, mode)
        if op == "inplace_partial_rotary_mul":
            def forward(x, c, s):
                xs = x[..., lo:hi]
                xs.copy_(formula(xs, c, s))
            f = wrap(forward)
            return lambda: f(x, c, s), f
        x_slice = x[..., lo:hi].clone().requires_grad_()
        f = wrap(formula)
        y = f(x_slice, c, s)

        def backward():
            dys = x[..., lo:hi]
            dys.copy_(torch.autograd.grad(y, x_slice, dys, retain_graph=True)[0])
        return backward, f
    if op == "rotary_position_embedding":  # torch_npu.npu_rotary_mul as its docs write it
        B, S, N, D = (dims[k] for k in ("B", "S", "N", "D"))
        x = randu((B, S, N, D), dtype, gen)
        c, s = cos_sin((B if S == 1 else 1, S, 1, D), dtype, gen)
        f = wrap(rope_half)
        return lambda: f(x, c, s), f
    if op == "rotary_position_embedding_grad":  # autograd of that forward, the backward pass only
        B, S, N, D = (dims[k] for k in ("B", "S", "N", "D"))
        with_x = "with_x" in tags
        x = randu((B, S, N, D), dtype, gen).requires_grad_()
        c, s = cos_sin((B if S == 1 else 1, S, 1, D), dtype, gen)
        c.requires_grad_(with_x)
        s.requires_grad_(with_x)
        forward = wrap(rope_half)
        y = forward(x, c, s)
        dy = randu(y.shape, dtype, gen)
        inputs = (x, c, s) if with_x else (x,)
        return lambda: torch.autograd.grad(y, inputs, dy, retain_graph=True), forward
    if op == "rope_with_sin_cos_cache":  # vLLM's RotaryEmbedding.forward_native (MRotaryEmbedding for mrope)
        T, Nq, Nk, D, P = (dims[k] for k in ("T", "Nq", "Nk", "D", "P"))
        mrope = "mrope" in tags
        positions = torch.randint(0, P, (3, T) if mrope else (T,), generator=gen)
        q, k = randu((T, Nq * D), dtype, gen), randu((T, Nk * D), dtype, gen)
        cache = cos_sin_cache(P, D, dtype, gen)
        f = wrap(lambda positions, q, k, cache: vllm_rope_native(positions, q, k, cache, D, mrope))
        return lambda: f(positions, q, k, cache), f
    raise ValueError(f"unknown RoPE op {op}")


def vllm_rope_native(positions, query, key, cache, head_size, mrope):
    """vLLM's native (PyTorch) rotary embedding, in place on query and key: neox style, rotary_dim = head_size."""
    cos_sin = cache[positions]
    cos, sin = cos_sin.chunk(2, dim=-1)
    if mrope:  # Qwen2-VL sections [16, 24, 24]: each section's channels from its own position row
        cos = torch.cat([m[i] for i, m in enumerate(cos.split([16, 24, 24], dim=-1))], dim=-1)
        sin = torch.cat([m[i] for i, m in enumerate(sin.split([16, 24, 24], dim=-1))], dim=-1)
    cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)
    for x in (query, key):
        x3 = x.view(x.shape[0], -1, head_size)
        x1, x2 = x3.chunk(2, dim=-1)
        x3.copy_(torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1))


def set_txops_threads(n):
    try:
        import txops
        txops.set_num_threads(n)
    except ImportError:
        pass


def build_txops(op, dims, tags, dtype):
    """The same case through the txops package (the call a Python user makes; outputs preallocated with out=,
    in-place ops in place), or None when txops is not importable."""
    try:
        import txops
    except ImportError:
        return None
    gen = torch.Generator().manual_seed(1)
    if op == "apply_rotary_pos_emb_grad":
        B, S, Nq, Nk, D = (dims[k] for k in ("B", "S", "Nq", "Nk", "D"))
        q, k = randu((B, S, Nq, D), dtype, gen), randu((B, S, Nk, D), dtype, gen)
        c, s = cos_sin((1, S, 1, D), dtype, gen)
        gq, gk = randu(q.shape, dtype, gen), randu(k.shape, dtype, gen)
        extra = dict(query=q, key=k) if "with_qk" in tags else {}
        out = tuple(torch.empty_like(t) for t in ((gq, gk, c, s) if extra else (gq, gk)))
        return lambda: txops.apply_rotary_pos_emb_grad(gq, gk, c, s, out=out, **extra)
    if op == "apply_rotary_pos_emb":
        B, S, Nq, Nk, D = (dims[k] for k in ("B", "S", "Nq", "Nk", "D"))
        q, k = randu((B, S, Nq, D), dtype, gen), randu((B, S, Nk, D), dtype, gen)
        c, s = cos_sin((B, S, 1, D), dtype, gen)
        return lambda: txops.apply_rotary_pos_emb(q, k, c, s)
    if op == "interleave_rope":
        B, N, S, D = (dims[k] for k in ("B", "N", "S", "D"))
        x = randu((B, N, S, D), dtype, gen)
        c, s = cos_sin((B if S == 1 else 1, 1, S, D), dtype, gen)
        out = torch.empty_like(x)
        return lambda: txops.interleave_rope(x, c, s, out=out)
    if op in ("rotary_position_embedding", "rotary_position_embedding_grad"):
        B, S, N, D = (dims[k] for k in ("B", "S", "N", "D"))
        x = randu((B, S, N, D), dtype, gen)
        c, s = cos_sin((B if S == 1 else 1, S, 1, D), dtype, gen)
        if op == "rotary_position_embedding":
            out = torch.empty_like(x)
            return lambda: txops.rotary_position_embedding(x, c, s, out=out)
        dy = randu(x.shape, dtype, gen)
        with_x = x if "with_x" in tags else None
        return lambda: txops.rotary_position_embedding_grad(dy, c, s, with_x)
    if op == "rope_with_sin_cos_cache":
        T, Nq, Nk, D, P = (dims[k] for k in ("T", "Nq", "Nk", "D", "P"))
        mrope = "mrope" in tags
        positions = torch.randint(0, P, (3, T) if mrope else (T,), generator=gen)
        q, k = randu((T, Nq * D), dtype, gen), randu((T, Nk * D), dtype, gen)
        cache = cos_sin_cache(P, D, dtype, gen)
        section = [16, 24, 24] if mrope else None
        return lambda: txops.rope_with_sin_cos_cache(positions, q, k, cache, D, mrope_section=section, query_out=q,
                                                     key_out=k)
    B, S, N, D, lo, hi = (dims[k] for k in ("B", "S", "N", "D", "lo", "hi"))
    mode = next(t.split("=", 1)[1] for t in tags if t.startswith("mode="))
    x = randu((B, S, N, D), dtype, gen)
    c, s = cos_sin((1, S, 1, hi - lo), dtype, gen, mode)
    f = txops.inplace_partial_rotary_mul if op == "inplace_partial_rotary_mul" else \
        txops.inplace_partial_rotary_mul_backward
    return lambda: f(x, c, s, rotary_mode=mode, partial_slice=(lo, hi))


def main():
    args = tc.parse_args(__doc__.splitlines()[1])
    peers = tc.peers_wanted(args)
    compile_dtypes = set(args.compile_dtypes.split(","))
    if "compile" in peers:
        tc.setup_compile()
    records = tc.load_records(args.compare, {"rope"}, args)
    cmp = tc.Comparison("RoPE, txops vs PyTorch", peers)
    cmp.header()
    by_threads = {}
    for r in records:
        by_threads.setdefault(r["threads"], []).append(r)
    for threads in sorted(by_threads):
        torch.set_num_threads(threads)
        set_txops_threads(threads)
        if "compile" in peers:
            tc.reset_compile()
        for r in by_threads[threads]:
            dims, tags = tc.parse_shape(r["shape"])
            fns, notes = {}, []
            for peer in peers:
                if peer == "compile" and r["dtype"] not in compile_dtypes:
                    fns[peer] = None
                    continue
                try:
                    t0 = time.perf_counter()
                    fns[peer], _ = build(r["op"], dims, tags, DTYPES[r["dtype"]], compiled=peer == "compile")
                    if peer == "compile":
                        fns[peer]()  # compiles the forward graph, or for backward ops the backward graph
                        compile_s = time.perf_counter() - t0
                        cmp.compile_s += compile_s
                        notes.append(f"compiled in {compile_s:.1f} s")
                except Exception as e:  # noqa: BLE001 - a peer that cannot run this case is reported, not fatal
                    fns[peer] = None
                    notes.append(f"{peer}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            try:
                fns["txops"] = build_txops(r["op"], dims, tags, DTYPES[r["dtype"]]) if r.get("passed") else None
            except Exception as e:  # noqa: BLE001 - the record's own time still stands
                fns["txops"] = None
                notes.append(f"txops from Python: {type(e).__name__}: {str(e).splitlines()[0][:100]}")
            times = tc.time_alternating(fns, args.target_s, args.max_reps)
            cmp.add(r, times, "; ".join(notes), txops_py_s=times.pop("txops"))
            del fns
    cmp.summary()


if __name__ == "__main__":
    main()
