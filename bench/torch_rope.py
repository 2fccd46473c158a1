#!/usr/bin/python3
"""torch_rope.py — the RoPE cases of `txops bench` run in PyTorch eager, side by side with txops.

Reads the records of `txops bench --json FILE` (--compare FILE), rebuilds each RoPE case's tensors from its
shape string, times the same operation written as a PyTorch user would (forward formulas with torch.cat /
slicing; backward ops as autograd of that forward, timing the backward pass only) on the record's thread
count, and prints txops time, PyTorch time and the speed-up (PyTorch min time / txops min time), then a
geometric-mean summary per suite. Run with Debian's /usr/bin/python3 (python3-torch); the script re-executes
itself with MALLOC_MMAP_MAX_=0 and OPENBLAS_NUM_THREADS=1, PyTorch's best configuration on this machine.
"""
import os
import sys

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


def cos_sin(shape, dtype, gen):
    theta = torch.rand(shape, generator=gen) * 6.2831853
    return torch.cos(theta).to(dtype), torch.sin(theta).to(dtype)


def randu(shape, dtype, gen):
    return (torch.rand(shape, generator=gen) * 2 - 1).to(dtype)


def build(op, dims, tags, dtype):
    """Returns a no-argument function doing one call of `op` in PyTorch."""
    gen = torch.Generator().manual_seed(1)
    if op == "apply_rotary_pos_emb_grad":
        B, S, Nq, Nk, D = (dims[k] for k in ("B", "S", "Nq", "Nk", "D"))
        with_qk = "with_qk" in tags
        q = randu((B, S, Nq, D), dtype, gen).requires_grad_()
        k = randu((B, S, Nk, D), dtype, gen).requires_grad_()
        c, s = cos_sin((1, S, 1, D), dtype, gen)
        c.requires_grad_(with_qk)
        s.requires_grad_(with_qk)
        yq, yk = rope_half(q, c, s), rope_half(k, c, s)
        gq, gk = randu(yq.shape, dtype, gen), randu(yk.shape, dtype, gen)
        inputs = (q, k, c, s) if with_qk else (q, k)
        return lambda: torch.autograd.grad((yq, yk), inputs, (gq, gk), retain_graph=True)
    if op == "apply_rotary_pos_emb":
        B, S, Nq, Nk, D = (dims[k] for k in ("B", "S", "Nq", "Nk", "D"))
        q, k = randu((B, S, Nq, D), dtype, gen), randu((B, S, Nk, D), dtype, gen)
        c, s = cos_sin((B, S, 1, D), dtype, gen)

        def v2():
            q.copy_(rope_half(q, c, s))
            k.copy_(rope_half(k, c, s))
        return v2
    if op == "interleave_rope":
        B, N, S, D = (dims[k] for k in ("B", "N", "S", "D"))
        x = randu((B, N, S, D), dtype, gen)
        c, s = cos_sin((B if S == 1 else 1, 1, S, D), dtype, gen)
        return lambda: rope_interleave_half(x, c, s)
    if op in ("inplace_partial_rotary_mul", "inplace_partial_rotary_mul_grad"):
        B, S, N, D, lo, hi = (dims[k] for k in ("B", "S", "N", "D", "lo", "hi"))
        mode = next(t.split("=", 1)[1] for t in tags if t.startswith("mode="))
        f = MODES[mode]
        x = randu((B, S, N, D), dtype, gen)
        c, s = cos_sin((1, S, 1, hi - lo), dtype, gen)
        if op == "inplace_partial_rotary_mul":
            def forward():
                xs = x[..., lo:hi]
                xs.copy_(f(xs, c, s))
            return forward
        x_slice = x[..., lo:hi].clone().requires_grad_()
        y = f(x_slice, c, s)

        def backward():
            dys = x[..., lo:hi]
            dys.copy_(torch.autograd.grad(y, x_slice, dys, retain_graph=True)[0])
        return backward
    raise ValueError(f"unknown RoPE op {op}")


def main():
    args = tc.parse_args(__doc__.splitlines()[1])
    records = tc.load_records(args.compare, {"rope"}, args.suite)
    cmp = tc.Comparison("RoPE, txops vs PyTorch eager")
    cmp.header()
    groups = {}
    for r in records:
        groups.setdefault((r["op"], r["dtype"], r["shape"]), []).append(r)
    for (op, dtype, shape), recs in groups.items():
        dims, tags = tc.parse_shape(shape)
        try:
            fn = build(op, dims, tags, DTYPES[dtype])
        except (RuntimeError, ValueError, KeyError, StopIteration) as e:
            for r in recs:
                cmp.add(r, None, f"PyTorch: {str(e).splitlines()[0]}")
            continue
        for r in recs:
            torch.set_num_threads(r["threads"])
            try:
                t_min, _, _ = tc.time_fn(fn, args.target_s, args.max_reps)
                cmp.add(r, t_min)
            except RuntimeError as e:
                cmp.add(r, None, f"PyTorch: {str(e).splitlines()[0]}")
        del fn
    cmp.summary()


if __name__ == "__main__":
    main()
