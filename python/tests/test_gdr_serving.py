"""txops.chunk_gated_delta_rule's serving options (aclnnChunkGatedDeltaRuleEx): a state pool read and written by
index (in place and pool to pool), zero starts, prefix-cache snapshots (FlashInfer's argument names), torch and
numpy alike. Oracles: the plain call on the gathered states (bit for bit) and float64 token-loop references
(references.py); restarts from a snapshot reproduce the whole run bit for bit; the serving path under
torch.compile equals eager; bad arguments raise with the parameter's name."""
import numpy as np
import pytest
import torch

import references as ref
import txops

C = 64


def inputs(lengths, nk=2, nv=4, dk=32, dv=24, dtype=torch.bfloat16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    t = sum(lengths)
    q = torch.nn.functional.normalize(torch.randn(t, nk, dk, generator=gen), dim=-1).to(dtype)
    k = torch.nn.functional.normalize(torch.randn(t, nk, dk, generator=gen), dim=-1).to(dtype)
    v = torch.randn(t, nv, dv, generator=gen).to(dtype)
    beta = (torch.rand(t, nv, generator=gen) * 0.9 + 0.05).to(dtype)
    g = -torch.nn.functional.softplus(torch.randn(t, nv, generator=gen)) * 0.5
    return q, k, v, beta, g


@pytest.mark.parametrize("state_dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("in_place", [True, False])
def test_pool_equals_gather_plain_scatter(state_dtype, in_place):
    lengths, idx, has = [70, 0, 5, 130], [7, 2, 0, 5], [True, True, False, True]
    q, k, v, beta, g = inputs(lengths)
    pool = (torch.randn(9, 4, 24, 32, generator=torch.Generator().manual_seed(1)) * 0.3).to(state_dtype)
    before = pool.clone()
    gathered = torch.stack([pool[i] if h else torch.zeros_like(pool[i]) for i, h in zip(idx, has)])
    out_ref, final_ref = txops.chunk_gated_delta_rule(q, k, v, beta, gathered, lengths, g=g)
    second = torch.full_like(pool, 7.0)
    out, written = txops.chunk_gated_delta_rule(q, k, v, beta, pool, lengths, g=g, state_indices=idx,
                                                has_initial_state=has,
                                                final_state=None if in_place else second)
    assert torch.equal(out, out_ref)
    target = pool if in_place else second
    assert written is target
    for b, i in enumerate(idx):
        assert torch.equal(target[i], final_ref[b])
    untouched = [s for s in range(9) if s not in idx]
    assert torch.equal(target[untouched], (before if in_place else torch.full_like(pool, 7.0))[untouched])
    if not in_place:
        assert torch.equal(pool, before)
    # Against the float64 token loop too.
    o64, s64 = ref.chunk_gated_delta_rule(q.double(), k.double(), v.double(), beta.double(), gathered.double(),
                                          lengths, g.double(), 32 ** -0.5)
    assert torch.allclose(out.double(), o64, atol=3e-2, rtol=3e-2)


def test_numpy_pool_matches_torch():
    lengths, idx = [65, 3], [1, 0]
    q, k, v, beta, g = inputs(lengths, dtype=torch.float32)
    pool = torch.randn(3, 4, 24, 32) * 0.3
    pool_np = pool.numpy().copy()
    out_t, _ = txops.chunk_gated_delta_rule(q, k, v, beta, pool, lengths, g=g, state_indices=idx)
    out_n, _ = txops.chunk_gated_delta_rule(q.numpy(), k.numpy(), v.numpy(), beta.numpy(), pool_np, lengths,
                                            g=g.numpy(), state_indices=np.array(idx))
    assert np.array_equal(out_n, out_t.numpy()) and np.array_equal(pool_np, pool.numpy())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_snapshots_are_prefix_states_and_restarts_are_exact(dtype):
    lengths, every = [200, 64, 30, 0, 129], 64
    q, k, v, beta, g = inputs(lengths, dtype=dtype, seed=3)
    s0 = torch.randn(len(lengths), 4, 24, 32) * 0.3
    out, final, cps = txops.chunk_gated_delta_rule(q, k, v, beta, s0, lengths, g=g, checkpoint_every_n_tokens=every)
    assert cps.shape == (sum(n // every for n in lengths), 4, 24, 32) and cps.dtype == torch.float32
    row, start = 0, 0
    for b, n in enumerate(lengths):
        for j in range(1, n // every + 1):
            cut = start + j * every
            # the plain chunked call on the prefix
            _, prefix_state = txops.chunk_gated_delta_rule(q[start:cut], k[start:cut], v[start:cut],
                                                           beta[start:cut], s0[b:b + 1], [j * every], g=g[start:cut],
                                                           kernel="chunked")
            assert torch.equal(cps[row], prefix_state[0])
            _, s64 = ref.chunk_gated_delta_rule(q[start:cut].double(), k[start:cut].double(), v[start:cut].double(),
                                                beta[start:cut].double(), s0[b:b + 1].double(), [j * every],
                                                g[start:cut].double(), 32 ** -0.5)
            assert torch.allclose(cps[row].double(), s64[0], atol=2e-2, rtol=2e-2)
            rest = n - j * every
            if rest:
                o2, f2 = txops.chunk_gated_delta_rule(q[cut:start + n], k[cut:start + n], v[cut:start + n],
                                                      beta[cut:start + n], cps[row:row + 1].clone(), [rest],
                                                      g=g[cut:start + n], kernel="chunked")
                assert torch.equal(o2, out[cut:start + n]), (b, j)
                assert torch.equal(f2[0], final[b]), (b, j)
            row += 1
        start += n


def test_snapshot_offsets_bf16_rows_and_pool_together():
    lengths, idx = [130, 64], [2, 0]
    q, k, v, beta, g = inputs(lengths, seed=5)
    pool = torch.randn(3, 4, 24, 32) * 0.3
    pool2 = pool.clone()
    cps = torch.full((6, 4, 24, 32), 9.0, dtype=torch.bfloat16)
    cu = torch.tensor([3, 5, 6])
    out, _, got = txops.chunk_gated_delta_rule(q, k, v, beta, pool, lengths, g=g, state_indices=idx,
                                               checkpoint_every_n_tokens=64, state_checkpoints=cps,
                                               checkpoint_cu_starts=cu)
    assert got is cps and torch.equal(cps[:3], torch.full((3, 4, 24, 32), 9.0, dtype=torch.bfloat16))
    _, _, fp32 = txops.chunk_gated_delta_rule(q, k, v, beta, pool2, lengths, g=g, state_indices=idx,
                                              checkpoint_every_n_tokens=64)
    assert torch.equal(cps[3:], fp32.to(torch.bfloat16))
    assert torch.equal(pool, pool2)


def test_serving_path_under_torch_compile_equals_eager():
    lengths, idx = [70, 9], [1, 0]
    q, k, v, beta, g = inputs(lengths, seed=7)
    pool_a, pool_b = torch.randn(2, 4, 24, 32), None
    pool_b = pool_a.clone()

    def step(q, k, v, beta, g, pool):
        out, _ = txops.chunk_gated_delta_rule(q, k, v, beta, pool, lengths, g=g, state_indices=idx)
        return out * 2

    compiled = torch.compile(step, backend="eager")
    assert torch.equal(compiled(q, k, v, beta, g, pool_a), step(q, k, v, beta, g, pool_b))
    assert torch.equal(pool_a, pool_b)


@pytest.mark.parametrize("kwargs, param", [
    (dict(state_indices=[0, 3]), "stateIndicesOptional"),
    (dict(state_indices=[1, 1]), "stateIndicesOptional"),
    (dict(checkpoint_every_n_tokens=32), "checkpointEvery"),
    (dict(checkpoint_every_n_tokens=64, kernel="recurrent"), "kernel"),
])
def test_bad_arguments_name_the_parameter(kwargs, param):
    q, k, v, beta, g = inputs([70, 6])
    pool = torch.zeros(3, 4, 24, 32)
    if "state_indices" not in kwargs:
        pool = torch.zeros(2, 4, 24, 32)
    with pytest.raises(Exception, match=param):
        txops.chunk_gated_delta_rule(q, k, v, beta, pool, [70, 6], g=g, **kwargs)


def test_python_side_rules():
    q, k, v, beta, g = inputs([8])
    with pytest.raises(ValueError, match="kernel"):
        txops.chunk_gated_delta_rule(q, k, v, beta, None, [8], kernel="fast")
    with pytest.raises(ValueError, match="initial_state"):
        txops.chunk_gated_delta_rule(q, k, v, beta, None, [8], state_indices=[0])
    with pytest.raises(RuntimeError, match="requires grad"):
        txops.chunk_gated_delta_rule(q, k, v.clone().requires_grad_(), beta, torch.zeros(1, 4, 24, 32), [8],
                                     state_indices=[0])
