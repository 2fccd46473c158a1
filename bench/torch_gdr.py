#!/usr/bin/python3
"""torch_gdr.py — the gated delta rule cases of `txops bench` run in PyTorch, side by side with txops.

Prefill: a chunked gated delta rule written in PyTorch (chunk 64, the WY / UT-transform form that CPU users
run as a fallback, as in flash-linear-attention's naive chunk code; written here from the maths of
docs/gated_delta_rule.md): per sequence, every value head at once, inputs widened to fp32.
Decode: the one-token recurrent update on a gathered batch of states from the pool, scattered back.
Reads `txops bench --json FILE` (--compare FILE), rebuilds each case from its shape string, and prints txops
time, PyTorch time and the speed-up (PyTorch min / txops min) with a summary. Before timing, the PyTorch
chunked code is checked against a token-by-token fp64 loop on a small problem. Run with /usr/bin/python3;
the script re-executes itself with MALLOC_MMAP_MAX_=0 and OPENBLAS_NUM_THREADS=1.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_common as tc  # noqa: E402

tc.ensure_tuned_env()
try:
    import torch  # noqa: E402
except ImportError:
    print("torch_gdr.py: PyTorch is not installed for this interpreter (python3-torch); nothing to compare")
    sys.exit(0)

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
CHUNK = 64


def heads_first(x, nv):
    """(L, Nk, D) -> (Nv, L, D): each key head serves Nv/Nk consecutive value heads."""
    return x.repeat_interleave(nv // x.shape[1], dim=1).transpose(0, 1)


def chunk_gdr_sequence(q, k, v, beta, g, state, scale, chunk=CHUNK):
    """One sequence, all heads. q, k (H, L, Dk); v (H, L, Dv); beta, g (H, L); state (H, Dv, Dk), all fp32.
    Returns out (H, L, Dv) and the final state."""
    H, L, Dk = k.shape
    Dv = v.shape[-1]
    pad = (-L) % chunk
    if pad:  # zero k, v, beta and g leave the state and the real outputs unchanged
        q, k, v = (torch.nn.functional.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
        beta, g = (torch.nn.functional.pad(t, (0, pad)) for t in (beta, g))
    n = (L + pad) // chunk
    q = q.reshape(H, n, chunk, Dk) * scale
    k = k.reshape(H, n, chunk, Dk)
    v = v.reshape(H, n, chunk, Dv)
    beta = beta.reshape(H, n, chunk)
    G = g.reshape(H, n, chunk).cumsum(-1)
    lower = torch.ones(chunk, chunk, dtype=torch.bool).tril()
    # Γ_ij = exp(G_i - G_j) on and below the diagonal (difference first: the product of exponentials overflows)
    gamma = (G[..., :, None] - G[..., None, :]).masked_fill(~lower, -math.inf).exp()
    kb = k * beta[..., None]
    A = ((kb @ k.transpose(-1, -2)) * gamma).tril(-1)
    eye = torch.eye(chunk)
    T = torch.linalg.solve_triangular(eye + A, eye.expand_as(A), upper=False, unitriangular=True)
    W = T @ (kb * G.exp()[..., None])
    U = T @ (v * beta[..., None])
    attn = (q @ k.transpose(-1, -2)) * gamma
    qg = q * G.exp()[..., None]
    out = torch.empty(H, n, chunk, Dv)
    S = state
    for c in range(n):
        St = S.transpose(-1, -2)
        v_new = U[:, c] - W[:, c] @ St
        out[:, c] = qg[:, c] @ St + attn[:, c] @ v_new
        g_last = G[:, c, -1]
        S = S * g_last.exp()[:, None, None] + \
            (v_new * (g_last[:, None] - G[:, c]).exp()[..., None]).transpose(-1, -2) @ k[:, c]
    return out.reshape(H, n * chunk, Dv)[:, :L], S


def chunk_gdr(q, k, v, beta, g, init, lens, scale):
    """The op: q, k (T, Nk, Dk); v (T, Nv, Dv); beta (T, Nv); g (T, Nv) fp32; init (B, Nv, Dv, Dk)."""
    nv = v.shape[1]
    out = torch.empty(v.shape, dtype=v.dtype)
    final = torch.empty(init.shape, dtype=init.dtype)
    t0 = 0
    for b, L in enumerate(lens):
        sl = slice(t0, t0 + L)
        o, S = chunk_gdr_sequence(heads_first(q[sl].float(), nv), heads_first(k[sl].float(), nv),
                                  v[sl].float().transpose(0, 1), beta[sl].float().t(), g[sl].t(),
                                  init[b].float(), scale)
        out[sl] = o.transpose(0, 1).to(out.dtype)
        final[b] = S.to(final.dtype)
        t0 += L
    return out, final


def recurrent_decode(pool, slots, q, k, v, beta, g, scale):
    """One token per sequence: gather the states, decay, delta-rule update, output, scatter back."""
    nv = v.shape[1]
    S = pool[slots].float()                                         # (B, Nv, Dv, Dk)
    kh = k.float().repeat_interleave(nv // k.shape[1], dim=1)      # (B, Nv, Dk)
    qh = q.float().repeat_interleave(nv // q.shape[1], dim=1) * scale
    S = S * g.exp()[..., None, None]
    err = v.float() - (S @ kh[..., None]).squeeze(-1)
    S = S + (beta.float()[..., None] * err)[..., None] * kh[..., None, :]
    out = (S @ qh[..., None]).squeeze(-1)
    pool[slots] = S.to(pool.dtype)
    return out.to(v.dtype)


def token_loop_reference(q, k, v, beta, g, S, scale):
    """fp64 recurrence of the spec for one sequence (H, L, ...), used only by the self-check."""
    S = S.double().clone()
    outs = []
    for t in range(k.shape[1]):
        a = math.e ** 0 * g[:, t].double().exp()[:, None, None]
        kt, qt = k[:, t].double(), q[:, t].double()
        S = a * S
        S = S + (beta[:, t].double()[:, None] * (v[:, t].double() - (S @ kt[..., None]).squeeze(-1)))[..., None] \
            * kt[:, None, :]
        outs.append((S @ (qt * scale)[..., None]).squeeze(-1))
    return torch.stack(outs, 1), S


def self_check():
    gen = torch.Generator().manual_seed(3)
    H, L, D = 3, 150, 16
    q = torch.nn.functional.normalize(torch.randn(H, L, D, generator=gen), dim=-1)
    k = torch.nn.functional.normalize(torch.randn(H, L, D, generator=gen), dim=-1)
    v = torch.randn(H, L, D, generator=gen)
    beta = torch.rand(H, L, generator=gen) * 0.9 + 0.05
    g = -torch.rand(H, L, generator=gen) * 0.2
    S0 = torch.randn(H, D, D, generator=gen) * 0.1
    o, S = chunk_gdr_sequence(q, k, v, beta, g, S0, 0.25)
    o_ref, S_ref = token_loop_reference(q, k, v, beta, g, S0, 0.25)
    err = max((o.double() - o_ref).abs().max().item(), (S.double() - S_ref).abs().max().item())
    print(f"# self-check of the PyTorch chunked code against an fp64 token loop: max abs diff {err:.2e}")
    if err > 1e-3:
        print("# self-check FAILED: the PyTorch comparison below is not trustworthy")


def blas_note():
    """Which BLAS PyTorch was built against and what a 512x512 fp32 matmul reaches here (context for the
    prefill figures: Debian's python3-torch calls the system libblas, which may be the netlib reference)."""
    import time
    info = next((w.split("=", 1)[1].rstrip(",") for w in torch.__config__.show().split() if w.startswith("BLAS_INFO=")),
                "unknown")
    a = torch.rand(512, 512)
    a @ a
    t0 = time.perf_counter()
    a @ a
    gflops = 2 * 512 ** 3 / (time.perf_counter() - t0) * 1e-9
    print(f"# PyTorch BLAS_INFO={info}; fp32 512x512 matmul on {torch.get_num_threads()} thread(s): {gflops:.1f} GFLOP/s")


def sequence_lengths(T, B, variant):
    """The same lengths `txops bench` uses (tools/cases_gdr.cpp)."""
    if variant == "ragged":
        weights = [37, 1, 2, 24, 5, 25, 4, 2]
        w = [weights[b % 8] for b in range(B)]
        lens = [T * x // sum(w) for x in w]
        lens[0] += T - sum(lens)
        return lens
    return [T // B + (1 if b < T % B else 0) for b in range(B)]


def unit_rows(shape, dtype, gen):
    return torch.nn.functional.normalize(torch.rand(shape, generator=gen) * 2 - 1, dim=-1).to(dtype)


def build(rec):
    dims, tags = tc.parse_shape(rec["shape"])
    dtype = DTYPES[rec["dtype"]]
    gen = torch.Generator().manual_seed(2)
    Nk, Nv, Dk, Dv = dims["Nk"], dims["Nv"], dims["Dk"], dims["Dv"]
    scale = 1.0 / math.sqrt(Dk)
    T = dims["T"] if rec["op"] == "chunk_gated_delta_rule" else dims["B"]
    q, k = unit_rows((T, Nk, Dk), dtype, gen), unit_rows((T, Nk, Dk), dtype, gen)
    v = (torch.rand(T, Nv, Dv, generator=gen) * 2 - 1).to(dtype)
    beta = (torch.rand(T, Nv, generator=gen) * 0.9 + 0.05).to(dtype)
    g = -torch.rand(T, Nv, generator=gen) * 0.2
    if rec["op"] == "chunk_gated_delta_rule":
        lens = sequence_lengths(T, dims["B"], tags[0] if tags else "equal")
        init = ((torch.rand(len(lens), Nv, Dv, Dk, generator=gen) * 2 - 1) * 0.1).to(dtype)
        group = Nv // Nk

        def on_key_heads(hk):
            """The op restricted to the first hk key heads and their value heads (heads are independent)."""
            hv = hk * group
            return lambda: chunk_gdr(q[:, :hk], k[:, :hk], v[:, :hv], beta[:, :hv], g[:, :hv], init[:, :hv], lens,
                                     scale)
        return on_key_heads
    pool = ((torch.rand(dims["pool"], Nv, Dv, Dk, generator=gen) * 2 - 1) * 0.1).to(dtype)
    slots = torch.tensor([(t * 97 + 5) % dims["pool"] for t in range(T)])
    return lambda: recurrent_decode(pool, slots, q, k, v, beta, g, scale)


def time_prefill(on_key_heads, nk, args):
    """Times the PyTorch prefill on all heads when that is estimated to take at most --full-limit-s per call
    (or with --full); otherwise on 2 key heads, scaled by nk / 2 (heads are independent and the code is batched
    over heads, so its cost is linear in them). Returns (seconds, note)."""
    sub = min(2, nk)
    t_sub = tc.time_fn(on_key_heads(sub), args.target_s, args.max_reps)[0]
    estimate = t_sub * nk / sub
    if sub == nk or args.full or estimate <= args.full_limit_s:
        return (t_sub if sub == nk else tc.time_fn(on_key_heads(nk), args.target_s, args.max_reps)[0]), ""
    return estimate, f"(PyTorch time extrapolated from {sub} of {nk} key heads)"


def main():
    args = tc.parse_args(__doc__.splitlines()[1], extra=[
        ("--full", dict(action="store_true", help="always time PyTorch prefill on all heads (slow)")),
        ("--full-limit-s", dict(type=float, default=15.0,
                                help="time all heads when the estimate per call is at most this (default 15)"))])
    records = tc.load_records(args.compare, {"gdr_prefill", "gdr_decode"}, args.suite)
    self_check()
    torch.set_num_threads(1)
    blas_note()
    cmp = tc.Comparison("gated delta rule, txops vs PyTorch (chunked prefill, recurrent decode)")
    cmp.header()
    groups = {}
    for r in records:
        groups.setdefault((r["op"], r["dtype"], r["shape"]), []).append(r)
    for recs in groups.values():
        fn = build(recs[0])
        for r in recs:
            torch.set_num_threads(r["threads"])
            try:
                if r["op"] == "chunk_gated_delta_rule":
                    t_min, note = time_prefill(fn, tc.parse_shape(r["shape"])[0]["Nk"], args)
                else:
                    t_min, note = tc.time_fn(fn, args.target_s, args.max_reps)[0], ""
                cmp.add(r, t_min, note)
            except RuntimeError as e:
                cmp.add(r, None, f"PyTorch: {str(e).splitlines()[0]}")
        del fn
    cmp.summary()


if __name__ == "__main__":
    main()
