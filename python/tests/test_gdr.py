"""Gated-delta-rule operators through the Python package, against the fp64 token loop: prefill (several and
zero-length sequences, g optional, default scale / state) and decode on a state pool (slots, accepted tokens,
gk), torch (fp32, bf16) and numpy."""
import numpy as np
import pytest
import torch

import references as ref
import txops


def inputs(tokens, key_heads, value_heads, key_dim, value_dim, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.nn.functional.normalize(torch.randn(tokens, key_heads, key_dim, generator=gen), dim=-1)
    k = torch.nn.functional.normalize(torch.randn(tokens, key_heads, key_dim, generator=gen), dim=-1)
    v = torch.randn(tokens, value_heads, value_dim, generator=gen)
    beta = torch.rand(tokens, value_heads, generator=gen) * 0.9 + 0.05
    g = -torch.nn.functional.softplus(torch.randn(tokens, value_heads, generator=gen))
    return q.to(dtype), k.to(dtype), v.to(dtype), beta.to(dtype), g


TOLERANCE = {torch.float32: dict(atol=2e-4, rtol=2e-4), torch.float16: dict(atol=4e-3, rtol=4e-3),
             torch.bfloat16: dict(atol=3e-2, rtol=2e-2)}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("with_g", [True, False])
def test_chunk_gated_delta_rule(dtype, with_g):
    lengths = [5, 0, 70, 1]
    q, k, v, beta, g = inputs(sum(lengths), 2, 4, 32, 16, dtype)
    g = g if with_g else None
    state0 = torch.randn(len(lengths), 4, 16, 32, generator=torch.Generator().manual_seed(9)) * 0.1
    out, final = txops.chunk_gated_delta_rule(q, k, v, beta, state0, torch.tensor(lengths, dtype=torch.int32),
                                              g=g, scale=0.5)
    expected_out, expected_final = ref.chunk_gated_delta_rule(q, k, v, beta, state0, lengths, g, 0.5)
    assert out.dtype == dtype and final.dtype == torch.float32
    torch.testing.assert_close(out.double(), expected_out, **TOLERANCE[dtype])
    torch.testing.assert_close(final.double(), expected_final, **TOLERANCE[torch.float32])
    assert torch.equal(final[1], state0[1])  # zero-length sequence keeps its state


def test_chunk_gated_delta_rule_defaults_numpy():
    q, k, v, beta, g = inputs(20, 1, 2, 16, 8)
    out, final = txops.chunk_gated_delta_rule(q.numpy(), k.numpy(), v.numpy(), beta.numpy(), g=g.numpy())
    assert isinstance(out, np.ndarray) and isinstance(final, np.ndarray) and final.shape == (1, 2, 8, 16)
    expected_out, expected_final = ref.chunk_gated_delta_rule(q, k, v, beta, torch.zeros(1, 2, 8, 16), [20], g,
                                                              16 ** -0.5)
    torch.testing.assert_close(torch.from_numpy(out).double(), expected_out, **TOLERANCE[torch.float32])
    torch.testing.assert_close(torch.from_numpy(final).double(), expected_final, **TOLERANCE[torch.float32])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("speculative", [False, True])
def test_recurrent_gated_delta_rule(dtype, speculative):
    lengths = [2, 3, 1] if speculative else [1, 1, 1]
    tokens = sum(lengths)
    q, k, v, beta, g = inputs(tokens, 2, 4, 16, 8, dtype)
    gk = -torch.rand(tokens, 4, 16, generator=torch.Generator().manual_seed(3)) * 0.1 if speculative else None
    pool = torch.randn(10, 4, 8, 16, generator=torch.Generator().manual_seed(4)) * 0.1
    indices = torch.tensor([7, 2, 5, 0, 9, 3][:tokens], dtype=torch.int32)
    accepted = torch.tensor([2, 1, 1], dtype=torch.int32) if speculative else None
    expected_out, expected_pool = ref.recurrent_gated_delta_rule(q, k, v, beta, pool, lengths, indices, g, gk,
                                                                 accepted, 0.25)
    out = txops.recurrent_gated_delta_rule(q, k, v, beta, pool, lengths, indices, g=g, gk=gk,
                                           num_accepted_tokens=accepted, scale=0.25)
    assert out.dtype == dtype
    torch.testing.assert_close(out.double(), expected_out, **TOLERANCE[dtype])
    torch.testing.assert_close(pool.double(), expected_pool, **TOLERANCE[torch.float32])  # updated in place


def test_prefill_then_decode_numpy():
    """The state a prefill leaves is the state decode continues from: same as one prefill over all tokens."""
    q, k, v, beta, g = (t.numpy() for t in inputs(9, 1, 2, 16, 8))
    _, state = txops.chunk_gated_delta_rule(q[:8], k[:8], v[:8], beta[:8], g=g[:8])
    pool = np.zeros((4, 2, 8, 16), dtype=np.float32)
    pool[3] = state[0]
    out = txops.recurrent_gated_delta_rule(q[8:], k[8:], v[8:], beta[8:], pool, [1], [3], g=g[8:])
    full, _ = txops.chunk_gated_delta_rule(q, k, v, beta, g=g)
    np.testing.assert_allclose(out, full[8:], atol=1e-5, rtol=1e-5)


def test_gdr_on_views_of_a_fused_projection():
    """q, k, v, beta as strided views of one projection output (as model code produces them), no copies."""
    tokens, nk, nv, dk, dv = 40, 2, 4, 16, 16
    fused = torch.randn(tokens, nk * dk + nv * dv + nv, generator=torch.Generator().manual_seed(1))
    fused[:, :nk * dk] = torch.nn.functional.normalize(fused[:, :nk * dk].unflatten(-1, (nk, dk)), dim=-1).flatten(1)
    fused[:, -nv:] = fused[:, -nv:].sigmoid()
    qk, v_view, beta = fused.split([nk * dk, nv * dv, nv], dim=-1)
    q = k = qk.unflatten(-1, (nk, dk))
    v_view = v_view.unflatten(-1, (nv, dv))
    assert not (q.is_contiguous() or v_view.is_contiguous() or beta.is_contiguous())
    g = -torch.rand(tokens, nv, generator=torch.Generator().manual_seed(3))
    out, final = txops.chunk_gated_delta_rule(q, k, v_view, beta, actual_seq_lengths=[25, 15], g=g)
    expected_out, expected_final = ref.chunk_gated_delta_rule(q, k, v_view, beta, torch.zeros(2, nv, dv, dk),
                                                              [25, 15], g, dk ** -0.5)
    torch.testing.assert_close(out.double(), expected_out, **TOLERANCE[torch.float32])
    torch.testing.assert_close(final.double(), expected_final, **TOLERANCE[torch.float32])
