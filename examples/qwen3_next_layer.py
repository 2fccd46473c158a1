#!/usr/bin/python3
"""qwen3_next_layer.py — a Qwen3-Next-style layer pair in PyTorch running on txops, checked against the same
blocks written in pure PyTorch.

* Linear attention (Gated DeltaNet): fused q/k/v/z and beta/a projections, L2-normalised q and k, gates
  beta = sigmoid(b) and g = -exp(A_log) * softplus(a + dt_bias), the gated delta rule (txops.chunk_gated_delta_rule
  for prefill of several ragged sequences, txops.recurrent_gated_delta_rule for decode on a state pool whose slots
  the prefill's final states were written to), a gated RMSNorm (norm(o) * silu(z)) and the output projection.
  (Qwen3-Next also runs a short causal conv1d over q/k/v; it is left out: it does not touch txops.)
* Full attention with partial RoPE (rotary_dim < head_dim, as Qwen3-Next) through txops.apply_rotary_pos_emb
  (TND layout, in place, differentiable), causal GQA softmax attention with a KV cache for decode; one training
  step checks the projection gradients, whose path runs txops.apply_rotary_pos_emb_grad.

Run: PYTHONPATH=python /usr/bin/python3 examples/qwen3_next_layer.py [--dtype bf16] [--threads N]
Prints the max abs difference of every output against the pure-PyTorch blocks and exits 1 if one is too large.
"""
import argparse
import math
import os
import sys

import torch
import torch.nn.functional as F

try:
    import txops  # installed (pip install .)
except ImportError:  # else the source tree's package (module built in place by `make build`)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
    import txops  # noqa: E402


# ---- the gated delta rule: txops and a pure-PyTorch token loop (fp32) -------------------------------------------
def gdr_prefill_torch(q, k, v, beta, g, lengths, scale):
    """q, k (T, Nk, Dk); v (T, Nv, Dv); beta, g (T, Nv) -> out (T, Nv, Dv), final states (B, Nv, Dv, Dk)."""
    group = v.shape[1] // q.shape[1]
    q, k = q.float().repeat_interleave(group, 1), k.float().repeat_interleave(group, 1)
    v, beta = v.float(), beta.float()
    out = torch.empty(v.shape)
    finals, start = [], 0
    for length in lengths:
        state = torch.zeros(v.shape[1], v.shape[2], k.shape[2])
        for t in range(start, start + length):
            state = state * g[t].exp()[:, None, None]
            error = v[t] - torch.einsum("hvk,hk->hv", state, k[t])
            state = state + beta[t][:, None, None] * error[:, :, None] * k[t][:, None, :]
            out[t] = torch.einsum("hvk,hk->hv", state, q[t] * scale)
        finals.append(state)
        start += length
    return out.to(v.dtype), torch.stack(finals)


def gdr_decode_torch(q, k, v, beta, g, pool, slots, scale):
    """One token per sequence: read pool[slots], update, write back; -> out (B, Nv, Dv)."""
    group = v.shape[1] // q.shape[1]
    q, k = q.float().repeat_interleave(group, 1), k.float().repeat_interleave(group, 1)
    state = pool[slots.long()].float() * g.exp()[:, :, None, None]
    error = v.float() - torch.einsum("bhvk,bhk->bhv", state, k)
    state = state + beta.float()[:, :, None, None] * error[..., None] * k[:, :, None, :]
    pool[slots.long()] = state.to(pool.dtype)
    return torch.einsum("bhvk,bhk->bhv", state, q * scale)


class GatedDeltaNet(torch.nn.Module):
    def __init__(self, hidden, key_heads, value_heads, key_dim, value_dim):
        super().__init__()
        self.shape = (key_heads, value_heads, key_dim, value_dim)
        self.in_proj_qkvz = torch.nn.Linear(hidden, 2 * key_heads * key_dim + 2 * value_heads * value_dim, bias=False)
        self.in_proj_ba = torch.nn.Linear(hidden, 2 * value_heads, bias=False)
        self.A_log = torch.nn.Parameter(torch.empty(value_heads).uniform_(0, 16).add_(1).log())
        self.dt_bias = torch.nn.Parameter(torch.ones(value_heads))
        self.norm_weight = torch.nn.Parameter(torch.ones(value_dim))
        self.out_proj = torch.nn.Linear(value_heads * value_dim, hidden, bias=False)

    def project(self, x):
        nk, nv, dk, dv = self.shape
        q, k, v, z = self.in_proj_qkvz(x).split([nk * dk, nk * dk, nv * dv, nv * dv], dim=-1)
        b, a = self.in_proj_ba(x).chunk(2, dim=-1)
        q = F.normalize(q.unflatten(-1, (nk, dk)).float(), dim=-1).to(x.dtype)
        k = F.normalize(k.unflatten(-1, (nk, dk)).float(), dim=-1).to(x.dtype)
        beta = torch.sigmoid(b)
        g = -self.A_log.exp() * F.softplus(a.float() + self.dt_bias)  # fp32, <= 0
        return q, k, v.unflatten(-1, (nv, dv)), z.unflatten(-1, (nv, dv)), beta, g

    def finish(self, o, z):
        o = o.float()
        o = o * torch.rsqrt(o.square().mean(-1, keepdim=True) + 1e-6) * self.norm_weight * F.silu(z.float())
        return self.out_proj(o.to(z.dtype).flatten(-2))

    def prefill(self, x, lengths, use_txops):
        """x (T, hidden), sequences concatenated -> (y (T, hidden), final states (B, Nv, Dv, Dk) fp32)."""
        q, k, v, z, beta, g = self.project(x)
        scale = q.shape[-1] ** -0.5
        if use_txops:
            o, final = txops.chunk_gated_delta_rule(q, k, v, beta, actual_seq_lengths=lengths, g=g, scale=scale)
        else:
            o, final = gdr_prefill_torch(q, k, v, beta, g, lengths, scale)
        return self.finish(o, z), final

    def decode(self, x, pool, slots, use_txops):
        """x (B, hidden): one new token per sequence; sequence b's state lives in pool[slots[b]] (updated)."""
        q, k, v, z, beta, g = self.project(x)
        scale = q.shape[-1] ** -0.5
        if use_txops:
            o = txops.recurrent_gated_delta_rule(q, k, v, beta, pool, [1] * x.shape[0], slots, g=g, scale=scale)
        else:
            o = gdr_decode_torch(q, k, v, beta, g, pool, slots, scale)
        return self.finish(o, z)


# ---- full attention with partial RoPE ---------------------------------------------------------------------------
def rope_torch(q, k, cos, sin):
    """Half-mode RoPE on the first cos-D channels, out of place (the pure-PyTorch path)."""
    def rotate(x):
        r = cos.shape[-1]
        x1, x2 = x[..., :r // 2], x[..., r // 2:r]
        return torch.cat((x[..., :r] * cos + torch.cat((-x2, x1), -1) * sin, x[..., r:]), dim=-1)
    return rotate(q), rotate(k)


class RopeAttention(torch.nn.Module):
    def __init__(self, hidden, query_heads, kv_heads, head_dim, rotary_dim, theta=10000.0):
        super().__init__()
        self.heads, self.head_dim, self.rotary_dim, self.theta = (query_heads, kv_heads), head_dim, rotary_dim, theta
        self.q_proj = torch.nn.Linear(hidden, query_heads * head_dim, bias=False)
        self.k_proj = torch.nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.v_proj = torch.nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.o_proj = torch.nn.Linear(query_heads * head_dim, hidden, bias=False)

    def tables(self, positions, dtype):
        """cos, sin (T, 1, rotary_dim) for the tokens' positions (TND layout)."""
        inv_freq = self.theta ** (-torch.arange(0, self.rotary_dim, 2, dtype=torch.float32) / self.rotary_dim)
        angles = positions.float()[:, None] * inv_freq[None, :]
        angles = torch.cat((angles, angles), dim=-1)[:, None, :]
        return angles.cos().to(dtype), angles.sin().to(dtype)

    def forward(self, x, positions, lengths, cache, use_txops):
        """x (T, hidden): new tokens of each sequence (lengths), at `positions`; cache: per sequence (K, V) so far,
        extended here. Causal GQA attention over cached + new keys."""
        nq, nkv = self.heads
        q = self.q_proj(x).unflatten(-1, (nq, self.head_dim))
        k = self.k_proj(x).unflatten(-1, (nkv, self.head_dim))
        v = self.v_proj(x).unflatten(-1, (nkv, self.head_dim))
        cos, sin = self.tables(positions, x.dtype)
        if use_txops:
            q, k = txops.apply_rotary_pos_emb(q, k, cos, sin, layout="TND", rotary_mode="half")
        else:
            q, k = rope_torch(q, k, cos, sin)
        outputs, start = [], 0
        for b, length in enumerate(lengths):
            rows = slice(start, start + length)
            past_k, past_v = cache.get(b, (k[:0], v[:0]))
            keys, values = torch.cat((past_k, k[rows])), torch.cat((past_v, v[rows]))
            cache[b] = (keys.detach(), values.detach())
            keys = keys.repeat_interleave(nq // nkv, dim=1)
            values = values.repeat_interleave(nq // nkv, dim=1)
            scores = torch.einsum("qhd,khd->hqk", q[rows].float(), keys.float()) / math.sqrt(self.head_dim)
            past = keys.shape[0] - length
            causal = torch.ones(length, keys.shape[0], dtype=torch.bool).tril(past)
            probs = scores.masked_fill(~causal, -math.inf).softmax(-1)
            outputs.append(torch.einsum("hqk,khd->qhd", probs, values.float()).to(x.dtype))
            start += length
        return self.o_proj(torch.cat(outputs).flatten(-2))


# ---- the run ---------------------------------------------------------------------------------------------------
def max_diff(a, b):
    return (a.float() - b.float()).abs().max().item()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--decode-steps", type=int, default=6)
    args = parser.parse_args()
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    if args.threads:
        txops.set_num_threads(args.threads)
    torch.manual_seed(0)
    hidden, lengths = 256, [150, 97, 53]
    tokens = sum(lengths)
    tolerance = 2e-3 if dtype == torch.float32 else 6e-2
    failures = []

    def report(name, diff):
        print(f"  {name:<52} max |txops - torch| = {diff:.2e}")
        if not diff <= tolerance:
            failures.append(name)

    print(f"Qwen3-Next-style layer pair, {tokens} prefill tokens in {len(lengths)} sequences, "
          f"{args.decode_steps} decode steps, {args.dtype}, txops {txops.num_threads()} threads ({txops.active_isa()})")

    # Linear attention: prefill, then decode from a state pool.
    gdn = GatedDeltaNet(hidden, key_heads=4, value_heads=8, key_dim=64, value_dim=64).to(dtype)
    x = torch.randn(tokens, hidden).to(dtype)
    slots = torch.tensor([5, 0, 9], dtype=torch.int32)  # each sequence's slot in a pool of 12
    with torch.no_grad():
        y_txops, final_txops = gdn.prefill(x, lengths, use_txops=True)
        y_torch, final_torch = gdn.prefill(x, lengths, use_txops=False)
        report("GatedDeltaNet prefill output", max_diff(y_txops, y_torch))
        report("GatedDeltaNet prefill final states", max_diff(final_txops, final_torch))
        pool_txops = torch.zeros(12, 8, 64, 64)
        pool_txops[slots.long()] = final_txops
        pool_torch = pool_txops.clone()
        for step in range(args.decode_steps):
            x_new = torch.randn(len(lengths), hidden).to(dtype)
            d_txops = gdn.decode(x_new, pool_txops, slots, use_txops=True)
            d_torch = gdn.decode(x_new, pool_torch, slots, use_txops=False)
            report(f"GatedDeltaNet decode step {step} output", max_diff(d_txops, d_torch))
        report("GatedDeltaNet state pool after decode", max_diff(pool_txops, pool_torch))

    # Full attention with partial RoPE: prefill and decode with a KV cache, then one training step.
    attn = RopeAttention(hidden, query_heads=8, kv_heads=2, head_dim=64, rotary_dim=32).to(dtype)
    positions = torch.cat([torch.arange(n) for n in lengths])
    with torch.no_grad():
        cache_txops, cache_torch = {}, {}
        a_txops = attn(x, positions, lengths, cache_txops, use_txops=True)
        a_torch = attn(x, positions, lengths, cache_torch, use_txops=False)
        report("RoPE attention prefill output", max_diff(a_txops, a_torch))
        for step in range(args.decode_steps):
            x_new = torch.randn(len(lengths), hidden).to(dtype)
            position = torch.tensor([n + step for n in lengths])
            d_txops = attn(x_new, position, [1] * len(lengths), cache_txops, use_txops=True)
            d_torch = attn(x_new, position, [1] * len(lengths), cache_torch, use_txops=False)
            report(f"RoPE attention decode step {step} output", max_diff(d_txops, d_torch))

    target = torch.randn(tokens, hidden).to(dtype)
    grads = []
    for use_txops in (True, False):
        attn.zero_grad()
        loss = F.mse_loss(attn(x, positions, lengths, {}, use_txops).float(), target.float())
        loss.backward()
        grads.append([p.grad.clone() for p in (attn.q_proj.weight, attn.k_proj.weight)])
    scale = max(g.abs().max().item() for g in grads[1])
    report("RoPE attention training step: q/k proj grads (relative)",
           max(max_diff(a, b) for a, b in zip(*grads)) / scale)

    print("all outputs match the pure-PyTorch blocks" if not failures else f"MISMATCH: {', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
