#!/usr/bin/python3
"""torch_gdr.py — the gated delta rule cases of `txops bench` run in PyTorch, eager and under torch.compile.

Eager prefill: the chunked gated delta rule people run on the CPU — transformers' own fallback,
`torch_chunk_gated_delta_rule` of transformers.models.qwen3_next (imported at bench time from the installed
package; GQA heads repeated first, as the model does; equal-length sequences as one batch, ragged ones one
call each). Without transformers, the chunked formula below (chunk_gdr) stands in and the header says so.
Compiled prefill: torch.compile of the same chunked formulas, written here from docs/gated_delta_rule.md in
two phases — the intra-chunk phase (decays, UT transform by triangular solve, W and U) as one compiled graph,
and one compiled chunk step of the state scan called per chunk — because dynamo unrolls a Python loop over
chunks: compiling transformers' whole function took 194 s for 16 chunks (one 8x1024 call, 2 cores) and grows
with the chunk count. Decode: gather the slots' states from the pool, transformers'
`torch_recurrent_gated_delta_rule` for the token (eager) or the same update compiled, scatter back.
Backward (qwen3-next-train): PyTorch autograd through the same eager prefill (transformers' function), the
backward alone timed (torch.autograd.grad on the recorded graph, retained); no compiled peer for it.
Reads `txops bench --json FILE` (--compare FILE), rebuilds each case from its shape string and prints txops
time, each peer's time and the ratio peer / txops with a summary. Before timing, the chunked formulas (and
transformers' function) are checked against a token-by-token fp64 loop on a small problem. Run with the project
venv's python; the script re-executes itself with torch_common.TUNED_ENV.
"""
import math
import os
import sys
import time

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


def transformers_functions():
    """(chunk, recurrent) torch functions of transformers' Qwen3-Next, undecorated (the hub-kernel wrapper would
    pick flash-linear-attention's Triton kernels when that package is installed), or (None, None)."""
    try:
        import inspect
        import transformers.models.qwen3_next.modeling_qwen3_next as m
    except Exception:  # noqa: BLE001 - not installed, or an incompatible version
        return None, None
    chunk = inspect.unwrap(m.torch_chunk_gated_delta_rule)
    recurrent = inspect.unwrap(m.torch_recurrent_gated_delta_rule)
    if not all(f.__module__ == m.__name__ for f in (chunk, recurrent)):
        return None, None  # replaced (txops.integrations.transformers.enable()): not the PyTorch peer any more
    return chunk, recurrent


TF_CHUNK, TF_RECURRENT = transformers_functions()


# ---- the chunked formulas, written from docs/gated_delta_rule.md: (B, L, H, D) in, states (B, H, Dk, Dv) ----
def chunk_phase(q, k, v, beta, g, scale, nv):
    """Everything before the state scan, for a batch of equal-length sequences. q, k (B, L, Nk, Dk); v (B, L, Nv,
    Dv); beta, g (B, L, Nv). Returns the per-chunk tensors of the scan, each (B, Nv, n, C, ...), in fp32."""
    group = nv // k.shape[2]
    q = q.repeat_interleave(group, dim=2).transpose(1, 2).float() * scale   # (B, H, L, Dk)
    k = k.repeat_interleave(group, dim=2).transpose(1, 2).float()
    v = v.transpose(1, 2).float()
    beta = beta.transpose(1, 2).float()
    g = g.transpose(1, 2).float()
    L = k.shape[2]
    pad = (-L) % CHUNK
    if pad:  # zero k, v, beta and g leave the state and the real outputs unchanged
        q, k, v = (torch.nn.functional.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
        beta, g = (torch.nn.functional.pad(t, (0, pad)) for t in (beta, g))
    B, H = k.shape[0], k.shape[1]
    n = (L + pad) // CHUNK
    q = q.reshape(B, H, n, CHUNK, -1)
    k = k.reshape(B, H, n, CHUNK, -1)
    v = v.reshape(B, H, n, CHUNK, -1)
    beta = beta.reshape(B, H, n, CHUNK)
    G = g.reshape(B, H, n, CHUNK).cumsum(-1)
    lower = torch.ones(CHUNK, CHUNK, dtype=torch.bool, device=k.device).tril()
    # Γ_ij = exp(G_i - G_j) on and below the diagonal (difference first: the product of exponentials overflows)
    gamma = (G[..., :, None] - G[..., None, :]).masked_fill(~lower, -math.inf).exp()
    kb = k * beta[..., None]
    A = ((kb @ k.transpose(-1, -2)) * gamma).tril(-1)
    eye = torch.eye(CHUNK, device=k.device)
    T = torch.linalg.solve_triangular(eye + A, eye.expand_as(A), upper=False, unitriangular=True)
    W = T @ (kb * G.exp()[..., None])                                     # reads the old state
    U = T @ (v * beta[..., None])
    attn = (q @ k.transpose(-1, -2)) * gamma
    qg = q * G.exp()[..., None]
    kd = k * (G[..., -1:] - G).exp()[..., None]                           # decayed to the chunk's end
    decay = G[..., -1].exp()                                              # (B, H, n)
    return qg, kd, U, W, attn, decay


def chunk_step(S, qg, kd, U, W, attn, decay):
    """One chunk of the state scan: S (B, H, Dk, Dv) -> (out (B, H, C, Dv), next S)."""
    v_new = U - W @ S
    out = qg @ S + attn @ v_new
    return out, S * decay[..., None, None] + kd.transpose(-1, -2) @ v_new


def chunk_gdr(q, k, v, beta, g, S, scale, phase=chunk_phase, step=chunk_step):
    """Equal-length sequences as a batch: q, k (B, L, Nk, Dk) ... S (B, Nv, Dk, Dv) fp32 -> (out (B, L, Nv, Dv)
    fp32, final S)."""
    L = k.shape[1]
    qg, kd, U, W, attn, decay = phase(q, k, v, beta, g, scale, v.shape[2])
    outs = []
    for c in range(kd.shape[2]):
        o, S = step(S, qg[:, :, c], kd[:, :, c], U[:, :, c], W[:, :, c], attn[:, :, c], decay[:, :, c])
        outs.append(o)
    out = torch.stack(outs, 2).flatten(2, 3)[:, :, :L]                    # (B, H, L, Dv)
    return out.transpose(1, 2), S


def transformers_chunk(q, k, v, beta, g, S, scale):
    """transformers' fallback as the model calls it (GQA heads repeated first); scale is its own Dk^-0.5."""
    group = v.shape[2] // k.shape[2]
    q, k = q.repeat_interleave(group, dim=2), k.repeat_interleave(group, dim=2)
    return TF_CHUNK(q, k, v, g, beta, initial_state=S, output_final_state=True)


def chunk_gdr_packed(q, k, v, beta, g, S0, lens, scale, phase=chunk_phase, step=chunk_step):
    """Ragged sequences (q, k (T, Nk, Dk) ...; S0 (B, Nv, Dk, Dv) fp32): each padded to whole chunks and all packed
    into one sequence for the intra-chunk phase (chunks are independent there: one call, one compiled shape per
    case), then each sequence's own state scan over its chunks. Returns (out (T, Nv, Dv) fp32, final S)."""
    starts = [sum(lens[:b]) for b in range(len(lens))]
    padded = []
    for t in (q, k, v, beta, g):
        parts = []
        for t0, L in zip(starts, lens):
            piece = t[t0:t0 + L]
            pad = (-L) % CHUNK
            parts.append(torch.nn.functional.pad(piece, (0, 0) * (piece.dim() - 1) + (0, pad)) if pad else piece)
        padded.append(torch.cat(parts).unsqueeze(0))
    qg, kd, U, W, attn, decay = phase(*padded, scale, v.shape[1])
    out = torch.empty(v.shape, dtype=torch.float32)
    finals = []
    c0 = 0
    for b, (t0, L) in enumerate(zip(starts, lens)):
        S = S0[b:b + 1]
        outs = []
        for c in range(c0, c0 + (L + CHUNK - 1) // CHUNK):
            o, S = step(S, qg[:, :, c], kd[:, :, c], U[:, :, c], W[:, :, c], attn[:, :, c], decay[:, :, c])
            outs.append(o)
        if outs:
            out[t0:t0 + L] = torch.cat(outs, 2)[0, :, :L].transpose(0, 1)
        c0 += (L + CHUNK - 1) // CHUNK
        finals.append(S)
    return out, torch.cat(finals)


def prefill(peer, q, k, v, beta, g, init, lens, scale):
    """The op on txops' layouts: q, k (T, Nk, Dk); v (T, Nv, Dv); beta (T, Nv); g (T, Nv) fp32; init (B, Nv, Dv,
    Dk). Equal lengths run as one batch; ragged ones packed (compiled peer) or one call per sequence (eager:
    transformers' function takes a batch of equal lengths). Returns (out, final)."""
    out = torch.empty(v.shape, dtype=v.dtype)
    final = torch.empty(init.shape, dtype=init.dtype)
    S0 = init.float().transpose(-1, -2)                                   # (B, Nv, Dk, Dv)
    impl = peer.prefill_impl()
    if len(set(lens)) == 1:
        L, B = lens[0], len(lens)
        o, S = impl(*(t.reshape(B, L, *t.shape[1:]) for t in (q, k, v, beta, g)), S0, scale)
        out.copy_(o.reshape(v.shape))
        final.copy_(S.transpose(-1, -2))
        return out, final
    if peer.compiled:
        o, S = chunk_gdr_packed(q, k, v, beta, g, S0, lens, scale, phase=peer.phase, step=peer.step)
        out.copy_(o)
        final.copy_(S.transpose(-1, -2))
        return out, final
    t0 = 0
    for b, L in enumerate(lens):
        sl = slice(t0, t0 + L)
        if L:
            o, S = impl(*(t[sl].unsqueeze(0) for t in (q, k, v, beta, g)), S0[b:b + 1], scale)
            out[sl] = o[0]
            final[b] = S[0].transpose(-1, -2)
        else:
            final[b] = init[b]
        t0 += L
    return out, final


def recurrent_decode(pool, slots, q, k, v, beta, g, scale, token=None):
    """One token per sequence: gather the states (pool (P, Nv, Dk, Dv)), decay, delta-rule update, output,
    scatter back. token: transformers' recurrent function, or None for the formula written here."""
    nv = v.shape[1]
    S = pool[slots].float()                                          # (B, Nv, Dk, Dv)
    kh = k.repeat_interleave(nv // k.shape[1], dim=1)                # (B, Nv, Dk)
    qh = q.repeat_interleave(nv // q.shape[1], dim=1)
    if token is not None:
        o, S = token(qh[:, None], kh[:, None], v[:, None], g[:, None], beta[:, None], initial_state=S,
                     output_final_state=True)
        out = o[:, 0]
    else:
        kh, qh = kh.float(), qh.float() * scale
        S = S * g.exp()[..., None, None]
        err = v.float() - (S * kh[..., None]).sum(-2)
        S = S + kh[..., None] * (beta.float()[..., None] * err)[..., None, :]
        out = (S * qh[..., None]).sum(-2)
    pool[slots] = S.to(pool.dtype)
    return out.to(v.dtype)


def token_loop_reference(q, k, v, beta, g, S, scale):
    """fp64 recurrence of the spec for one sequence: q, k (L, H, Dk), v (L, H, Dv), beta, g (L, H), S (H, Dk, Dv);
    used only by the self-check."""
    S = S.double().clone()
    outs = []
    for t in range(k.shape[0]):
        kt, qt = k[t].double(), q[t].double() * scale
        S = S * g[t].double().exp()[:, None, None]
        err = v[t].double() - (S * kt[..., None]).sum(-2)
        S = S + kt[..., None] * (beta[t].double()[:, None] * err)[:, None, :]
        outs.append((S * qt[..., None]).sum(-2))
    return torch.stack(outs, 0), S


def self_check():
    gen = torch.Generator().manual_seed(3)
    L, H, D = 150, 4, 16
    q = torch.nn.functional.normalize(torch.randn(L, H, D, generator=gen), dim=-1)
    k = torch.nn.functional.normalize(torch.randn(L, H, D, generator=gen), dim=-1)
    v = torch.randn(L, H, D, generator=gen)
    beta = torch.rand(L, H, generator=gen) * 0.9 + 0.05
    g = -torch.rand(L, H, generator=gen) * 0.2
    S0 = torch.randn(H, D, D, generator=gen) * 0.1
    scale = D ** -0.5
    o_ref, S_ref = token_loop_reference(q, k, v, beta, g, S0, scale)
    impls = [("chunked formulas", chunk_gdr)] + ([("transformers' torch_chunk_gated_delta_rule", transformers_chunk)]
                                                 if TF_CHUNK else [])
    for name, impl in impls:
        o, S = impl(*(t[None] for t in (q, k, v, beta, g)), S0[None], scale)
        err = max((o[0].double() - o_ref).abs().max().item(), (S[0].double() - S_ref).abs().max().item())
        print(f"# self-check, {name} against an fp64 token loop: max abs diff {err:.2e}"
              + ("  FAILED: its figures below are not trustworthy" if err > 1e-3 else ""))
    # the packed ragged path: two sequences (150 and 37 tokens) against the loop on each
    split = 113
    o, S = chunk_gdr_packed(q, k, v, beta, g, torch.stack((S0, S0)), [split, L - split], scale)
    ref = [token_loop_reference(*(t[a:b] for t in (q, k, v, beta, g)), S0, scale) for a, b in ((0, split), (split, L))]
    err = max(max((o[a:b].double() - r[0]).abs().max().item(), (S[i].double() - r[1]).abs().max().item())
              for i, ((a, b), r) in enumerate(zip(((0, split), (split, L)), ref)))
    print(f"# self-check, packed ragged chunked formulas against an fp64 token loop: max abs diff {err:.2e}"
          + ("  FAILED: its figures below are not trustworthy" if err > 1e-3 else ""))


def blas_note():
    """Which BLAS PyTorch was built against and what a 512x512 fp32 matmul reaches here."""
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


class Peers:
    """The PyTorch implementations of one peer: eager (transformers where installed) or compiled."""

    def __init__(self, compiled):
        self.compiled = compiled
        if compiled:
            # static shapes: one intra-chunk phase per case (ragged sequences are packed), one chunk step per
            # batch shape; dynamic shapes compiled far slower here and ran no faster
            self.phase = torch.compile(chunk_phase, dynamic=False)
            self.step = torch.compile(chunk_step, dynamic=False)
            self.decode = torch.compile(recurrent_decode, dynamic=False)

    def prefill_impl(self):
        if self.compiled:
            return lambda *a: chunk_gdr(*a, phase=self.phase, step=self.step)
        return transformers_chunk if TF_CHUNK else chunk_gdr

    def decode_call(self, *a):
        if self.compiled:
            return self.decode(*a)
        return recurrent_decode(*a, token=TF_RECURRENT)


class CaseInputs:
    """The inputs of one record, the same for every peer and for txops (one seeded generator, drawn in one order):
    dims, dtype, scale, T, q, k, v, beta, g; then `gen` draws the state (pool) and nothing else."""

    def __init__(self, rec):
        dims, tags = tc.parse_shape(rec["shape"])
        self.dims, self.tags, self.dtype = dims, tags, DTYPES[rec["dtype"]]
        self.gen = torch.Generator().manual_seed(2)
        Dk = dims["Dk"]
        self.scale = 1.0 / math.sqrt(Dk)
        T = self.T = dims["T"] if rec["op"].startswith("chunk_gated_delta_rule") else dims["B"]
        self.q = unit_rows((T, dims["Nk"], Dk), self.dtype, self.gen)
        self.k = unit_rows((T, dims["Nk"], Dk), self.dtype, self.gen)
        self.v = (torch.rand(T, dims["Nv"], dims["Dv"], generator=self.gen) * 2 - 1).to(self.dtype)
        self.beta = (torch.rand(T, dims["Nv"], generator=self.gen) * 0.9 + 0.05).to(self.dtype)
        self.g = -torch.rand(T, dims["Nv"], generator=self.gen) * 0.2


def build(rec, peers):
    c = CaseInputs(rec)
    dims, tags, dtype, gen, scale, T = c.dims, c.tags, c.dtype, c.gen, c.scale, c.T
    Nk, Nv, Dk, Dv = dims["Nk"], dims["Nv"], dims["Dk"], dims["Dv"]
    q, k, v, beta, g = c.q, c.k, c.v, c.beta, c.g
    if rec["op"] == "chunk_gated_delta_rule_grad":
        return build_grad(c, peers)
    if rec["op"] == "chunk_gated_delta_rule":
        lens = sequence_lengths(T, dims["B"], tags[0] if tags else "equal")
        init = ((torch.rand(len(lens), Nv, Dv, Dk, generator=gen) * 2 - 1) * 0.1).to(dtype)
        group = Nv // Nk
        def on_key_heads(hk):
            """The op restricted to the first hk key heads and their value heads (heads are independent)."""
            hv = hk * group
            args = (q[:, :hk], k[:, :hk], v[:, :hv], beta[:, :hv], g[:, :hv], init[:, :hv])
            return lambda: prefill(peers, *args, lens, scale)
        return on_key_heads
    pool = ((torch.rand(dims["pool"], Nv, Dk, Dv, generator=gen) * 2 - 1) * 0.1).to(dtype)
    slots = torch.tensor([(t * 97 + 5) % dims["pool"] for t in range(T)])
    return lambda: peers.decode_call(pool, slots, q, k, v, beta, g, scale)


def backward_inputs(c):
    """lens, init, grad_out, grad_final of a backward record (drawn after CaseInputs' tensors, same order for the
    peer and for txops)."""
    dims, tags, gen = c.dims, c.tags, c.gen
    lens = sequence_lengths(c.T, dims["B"], tags[0] if tags else "equal")
    init = ((torch.rand(len(lens), dims["Nv"], dims["Dv"], dims["Dk"], generator=gen) * 2 - 1) * 0.1).to(c.dtype)
    d_out = (torch.rand(c.T, dims["Nv"], dims["Dv"], generator=gen) * 2 - 1).to(c.dtype)
    d_final = ((torch.rand(init.shape, generator=gen) * 2 - 1) * 0.1).to(c.dtype)
    return lens, init, d_out, d_final


def build_grad(c, peers):
    """The backward peer: autograd through the eager prefill; per key-head count hk, a function that runs the
    recorded graph's backward (the forward runs once, when the function is built)."""
    if peers.compiled:
        raise NotImplementedError("no compiled backward peer (autograd through the compiled chunk phases)")
    lens, init, d_out, d_final = backward_inputs(c)
    group = c.dims["Nv"] // c.dims["Nk"]

    def on_key_heads(hk):
        hv = hk * group
        leaves = [t.detach().clone().requires_grad_(True) for t in
                  (c.q[:, :hk], c.k[:, :hk], c.v[:, :hv], c.beta[:, :hv], c.g[:, :hv], init[:, :hv])]
        with torch.enable_grad():
            out, final = prefill(peers, *leaves, lens, c.scale)
        grads = (d_out[:, :hv], d_final[:, :hv])

        def backward():
            with torch.enable_grad():
                torch.autograd.grad((out, final), leaves, grads, retain_graph=True)
        return backward
    return on_key_heads


def build_txops(rec):
    """The same case through the txops package (outputs preallocated with out=), or None without txops."""
    try:
        import txops
    except ImportError:
        return None
    c = CaseInputs(rec)
    dims, tags, dtype, gen, scale, T = c.dims, c.tags, c.dtype, c.gen, c.scale, c.T
    Nk, Nv, Dk, Dv = dims["Nk"], dims["Nv"], dims["Dk"], dims["Dv"]
    q, k, v, beta, g = c.q, c.k, c.v, c.beta, c.g
    out = torch.empty(v.shape, dtype=dtype)
    # qwen3-next-train with snapshots=1: the forward writes its fp32 states every 64 tokens (key-major) and its
    # corrected values, the backward reads them
    snapshots = (torch.empty(max(T // 64, 1), Nv, Dk, Dv).transpose(2, 3) if dims.get("snapshots") else None)
    corrected = torch.empty(T, Nv, Dv) if dims.get("snapshots") else None
    if rec["op"] == "chunk_gated_delta_rule_grad":
        lens, init, d_out, d_final = backward_inputs(c)
        lens_i32 = torch.tensor(lens, dtype=torch.int32)
        if snapshots is not None:
            txops.chunk_gated_delta_rule(q, k, v, beta, init, lens_i32, g=g, scale=scale,
                                         checkpoint_every_n_tokens=64, state_checkpoints=snapshots,
                                         corrected_values=corrected)
        return lambda: txops.chunk_gated_delta_rule_grad(q, k, v, beta, init, lens_i32, d_out, d_final, g=g,
                                                         scale=scale, forward_checkpoints=snapshots,
                                                         forward_corrected_values=corrected)
    if rec["op"] == "chunk_gated_delta_rule":
        lens = sequence_lengths(T, dims["B"], tags[0] if tags else "equal")
        init = ((torch.rand(len(lens), Nv, Dv, Dk, generator=gen) * 2 - 1) * 0.1).to(dtype)
        final = torch.empty_like(init)
        lens_i32 = torch.tensor(lens, dtype=torch.int32)
        if snapshots is not None:
            return lambda: txops.chunk_gated_delta_rule(q, k, v, beta, init, lens_i32, g=g, scale=scale, out=out,
                                                        final_state=final, checkpoint_every_n_tokens=64,
                                                        state_checkpoints=snapshots, corrected_values=corrected)
        return lambda: txops.chunk_gated_delta_rule(q, k, v, beta, init, lens_i32, g=g, scale=scale, out=out,
                                                    final_state=final)
    pool = ((torch.rand(dims["pool"], Nv, Dv, Dk, generator=gen) * 2 - 1) * 0.1).to(dtype)
    slots = torch.tensor([(t * 97 + 5) % dims["pool"] for t in range(T)], dtype=torch.int32)
    ones = torch.ones(T, dtype=torch.int32)
    return lambda: txops.recurrent_gated_delta_rule(q, k, v, beta, pool, ones, slots, g=g, scale=scale, out=out)


def timed_case(rec, peers, args):
    """(seconds, note, compile seconds) of one peer on one record: the prefill on all heads when that is estimated
    to take at most --full-limit-s per call (or with --full), else on 2 key heads scaled by Nk / 2 (heads are
    independent and the code is batched over heads: its cost is linear in them). A compiled peer is called once
    first (compiles; the first call's time is reported as the compile time)."""
    fn = build(rec, peers)
    note, compile_s = "", 0.0

    def warm(call):
        nonlocal note, compile_s
        if peers.compiled:
            t0 = time.perf_counter()
            call()
            compile_s += time.perf_counter() - t0
            note = f"compiled in {compile_s:.1f} s"

    if not rec["op"].startswith("chunk_gated_delta_rule"):
        warm(fn)
        return tc.time_fn(fn, args.target_s, args.max_reps)[0], note, compile_s
    nk = tc.parse_shape(rec["shape"])[0]["Nk"]
    sub = min(2, nk)
    call = fn(sub)
    warm(call)
    t_sub = tc.time_fn(call, args.target_s, args.max_reps)[0]
    estimate = t_sub * nk / sub
    if sub == nk or args.full or estimate <= args.full_limit_s:
        if sub != nk:
            call = fn(nk)
            warm(call)
            t_sub = tc.time_fn(call, args.target_s, args.max_reps)[0]
        return t_sub, note, compile_s
    return estimate, (note + "; " if note else "") + f"extrapolated from {sub} of {nk} key heads", compile_s


def main():
    args = tc.parse_args(__doc__.splitlines()[1], extra=[
        ("--full", dict(action="store_true", help="always time PyTorch prefill on all heads (slow)")),
        ("--full-limit-s", dict(type=float, default=2.0,
                                help="time all heads when the estimate per call is at most this (default 2)"))])
    peers = tc.peers_wanted(args)
    compile_dtypes = set(args.compile_dtypes.split(","))
    if "compile" in peers:
        tc.setup_compile()
    records = tc.load_records(args.compare, {"gdr_prefill", "gdr_decode"}, args)
    records = [r for r in records if r["op"] in ("chunk_gated_delta_rule", "recurrent_gated_delta_rule",
                                                 "chunk_gated_delta_rule_grad")]
    print("# eager prefill peer: " + ("transformers' torch_chunk_gated_delta_rule (transformers "
                                      + __import__("transformers").__version__ + ")" if TF_CHUNK else
                                      "the chunked formulas of this script (transformers is not installed)"))
    self_check()
    torch.set_num_threads(1)
    blas_note()
    cmp = tc.Comparison("gated delta rule, txops vs PyTorch (chunked prefill, recurrent decode)", peers)
    cmp.header()
    by_threads = {}
    for r in records:
        by_threads.setdefault(r["threads"], []).append(r)
    for threads in sorted(by_threads):
        torch.set_num_threads(threads)
        try:
            import txops
            txops.set_num_threads(threads)
        except ImportError:
            pass
        if "compile" in peers:
            tc.reset_compile()
        impls = {p: Peers(compiled=p == "compile") for p in peers}
        for r in by_threads[threads]:
            times, notes = {}, []
            for peer in peers:
                if peer == "compile" and r["dtype"] not in compile_dtypes:
                    continue
                try:
                    with torch.no_grad():
                        times[peer], note, spent = timed_case(r, impls[peer], args)
                    cmp.compile_s += spent
                    if note:
                        notes.append(f"{peer}: {note}")
                except Exception as e:  # noqa: BLE001 - a peer that cannot run a case is reported, not fatal
                    notes.append(f"{peer}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            txops_py = None
            try:
                fn = build_txops(r) if r.get("passed") else None
                if fn is not None:
                    txops_py = tc.time_fn(fn, args.target_s, args.max_reps)[0]
            except Exception as e:  # noqa: BLE001 - the record's own time still stands
                notes.append(f"txops from Python: {type(e).__name__}: {str(e).splitlines()[0][:100]}")
            cmp.add(r, times, "; ".join(notes), txops_py_s=txops_py)
    cmp.summary()


if __name__ == "__main__":
    main()
