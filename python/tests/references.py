"""Pure-PyTorch versions of the txops operators (docs/rope.md, docs/gated_delta_rule.md), written for reading:
fp64 references for the forward results, and differentiable fp32 forwards for checking autograd."""
import torch


def rotation(x, mode):
    """rot(x) of the forward y = x*cos + rot(x)*sin for modes 0 half, 1 interleave, 2 quarter."""
    if mode == 0:
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)
    if mode == 1:
        return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
    if mode == 2:
        x1, x2, x3, x4 = x.chunk(4, dim=-1)
        return torch.cat((-x2, x1, -x4, x3), dim=-1)
    raise ValueError(mode)


def rotate(x, cos, sin, mode):
    """The RoPE forward of `mode` (0..3) on the last axis, in x's dtype (broadcasting cos/sin)."""
    if mode == 3:  # interleave-half: de-interleave, then half mode
        even, odd = x[..., 0::2], x[..., 1::2]
        return torch.cat((even, odd), dim=-1) * cos + torch.cat((-odd, even), dim=-1) * sin
    return x * cos + rotation(x, mode) * sin


def interleave_rope(x, cos, sin):
    return rotate(x, cos, sin, 3)


def partial_rotary_mul(x, cos, sin, mode, start, end):
    """Out of place: x with [..., start:end] rotated."""
    head, middle, tail = x[..., :start], x[..., start:end], x[..., end:]
    return torch.cat((head, rotate(middle, cos, sin, mode), tail), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, mode):
    """Out of place: (q, k) with their first cos-D channels rotated (every layout broadcasts cos directly)."""
    rotated = cos.shape[-1]

    def one(x):
        return torch.cat((rotate(x[..., :rotated], cos, sin, mode), x[..., rotated:]), dim=-1)
    return one(q), one(k)


def as64(t):
    return t.to(torch.float64)


def chunk_gated_delta_rule(q, k, v, beta, initial_state, lengths, g, scale):
    """The token loop in fp64 -> (out (T, Nv, Dv), final_state (B, Nv, Dv, Dk))."""
    q, k, v, beta = as64(q), as64(k), as64(v), as64(beta)
    tokens, value_heads, value_dim = v.shape
    group = value_heads // q.shape[1]
    g = torch.zeros(tokens, value_heads, dtype=torch.float64) if g is None else as64(g)
    out = torch.zeros(tokens, value_heads, value_dim, dtype=torch.float64)
    final = as64(initial_state).clone()
    start = 0
    for b, length in enumerate(int(n) for n in lengths):
        state = final[b].clone()                       # (Nv, Dv, Dk)
        for t in range(start, start + length):
            kt = k[t].repeat_interleave(group, dim=0)  # (Nv, Dk)
            qt = q[t].repeat_interleave(group, dim=0)
            state = torch.exp(g[t])[:, None, None] * state
            error = v[t] - torch.einsum("hvk,hk->hv", state, kt)
            state = state + beta[t][:, None, None] * torch.einsum("hv,hk->hvk", error, kt)
            out[t] = torch.einsum("hvk,hk->hv", state, qt * scale)
        final[b] = state
        start += length
    return out, final


def recurrent_gated_delta_rule(q, k, v, beta, state, lengths, indices, g, gk, accepted, scale):
    """The decode recurrence in fp64 -> (out (T, Nv, Dv), the whole state pool after the call)."""
    q, k, v, beta = as64(q), as64(k), as64(v), as64(beta)
    tokens, value_heads, value_dim = v.shape
    key_dim = k.shape[2]
    group = value_heads // q.shape[1]
    g = torch.zeros(tokens, value_heads, dtype=torch.float64) if g is None else as64(g)
    gk = torch.zeros(tokens, value_heads, key_dim, dtype=torch.float64) if gk is None else as64(gk)
    pool = as64(state).clone()
    out = torch.zeros(tokens, value_heads, value_dim, dtype=torch.float64)
    start = 0
    for i, length in enumerate(int(n) for n in lengths):
        first = 1 if accepted is None else int(accepted[i])
        s = pool[int(indices[start + first - 1])].clone()
        for t in range(start, start + length):
            kt = k[t].repeat_interleave(group, dim=0)
            qt = q[t].repeat_interleave(group, dim=0)
            s = torch.exp(g[t])[:, None, None] * s * torch.exp(gk[t])[:, None, :]
            error = v[t] - torch.einsum("hvk,hk->hv", s, kt)
            s = s + beta[t][:, None, None] * torch.einsum("hv,hk->hvk", error, kt)
            pool[int(indices[t])] = s
            out[t] = torch.einsum("hvk,hk->hv", s, qt * scale)
        start += length
    return out, pool
