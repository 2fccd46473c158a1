"""txops.rotary_position_embedding (+ its grad, npu_rotary_mul) and txops.rope_with_sin_cos_cache / rotary_embedding
(vLLM) against references written here from CANN's formulas in float64: every mode, broadcast patterns, the rotate
matrix, autograd of the float64 forward as the oracle of the backward (x, cos, sin), numpy and torch, mrope in both
cache modes, in place, torch.compile fullgraph."""
import numpy as np
import pytest
import torch

import txops
import txops.npu as torch_npu

MODES = ("half", "interleave", "quarter", "interleave-half")


def rot_parts(x, mode):
    """(p1, p2) with y = p1 * cos + p2 * sin (docs/rope.md)."""
    if mode == "half":
        x1, x2 = x.chunk(2, dim=-1)
        return x, torch.cat((-x2, x1), dim=-1)
    if mode == "interleave":
        return x, torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
    if mode == "quarter":
        x1, x2, x3, x4 = x.chunk(4, dim=-1)
        return x, torch.cat((-x2, x1, -x4, x3), dim=-1)
    xe, xo = x[..., 0::2], x[..., 1::2]
    return torch.cat((xe, xo), dim=-1), torch.cat((-xo, xe), dim=-1)


def rope_ref(x, cos, sin, mode, rotate=None):
    p1, p2 = rot_parts(x, mode)
    if rotate is not None:
        p1, p2 = x, x @ rotate
    return p1 * cos + p2 * sin


def tol(dtype):
    return {torch.float32: 2e-6, torch.bfloat16: 1e-2, torch.float16: 2e-3}[dtype]


def close(got, want, dtype):
    err = ((got.double() - want).abs() / (1 + want.abs())).max().item() if want.numel() else 0.0
    assert err <= tol(dtype), err


def inputs(x_shape, c_shape, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(*x_shape, generator=gen).to(dtype)
    angles = torch.randn(*c_shape, generator=gen) * 3
    return x, angles.cos().to(dtype), angles.sin().to(dtype)


SHAPES = [((2, 3, 4, 16), (1, 3, 1, 16)), ((2, 3, 4, 16), (2, 3, 4, 16)), ((2, 3, 4, 16), (4, 16)),
          ((2, 3, 4, 16), (16,)), ((5, 3, 32), (5, 1, 32)), ((1, 2, 1, 8), (1, 1, 1, 8))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_forward(mode, shapes, dtype):
    x, cos, sin = inputs(*shapes, dtype)
    close(txops.rotary_position_embedding(x, cos, sin, rotary_mode=mode), rope_ref(x.double(), cos.double(),
                                                                                   sin.double(), mode), dtype)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shapes", SHAPES)
def test_autograd_matches_float64_autograd(mode, shapes):
    x, cos, sin = inputs(*shapes, torch.float32, seed=1)
    leaves = [t.clone().requires_grad_() for t in (x, cos, sin)]
    y = txops.rotary_position_embedding(*leaves, rotary_mode=mode)
    dy = torch.randn(y.shape, generator=torch.Generator().manual_seed(2))
    y.backward(dy)
    ref_leaves = [t.double().requires_grad_() for t in (x, cos, sin)]
    rope_ref(*ref_leaves, mode).backward(dy.double())
    for got, want in zip(leaves, ref_leaves):
        close(got.grad, want.grad, torch.float32)


def test_rotate_matrix_forward_and_backward():
    d = 16
    gen = torch.Generator().manual_seed(3)
    rotate = torch.zeros(d, d)
    perm = torch.randperm(d, generator=gen)
    rotate[perm, torch.arange(d)] = torch.where(torch.rand(d, generator=gen) < 0.5, -1.0, 1.0)
    x, cos, sin = inputs((2, 3, 4, d), (1, 3, 1, d), torch.float32)
    leaves = [t.clone().requires_grad_() for t in (x, cos, sin)]
    y = txops.rotary_position_embedding(*leaves, rotate=rotate)
    ref_leaves = [t.double().requires_grad_() for t in (x, cos, sin)]
    ref = rope_ref(*ref_leaves, "half", rotate=rotate.double())
    close(y.detach(), ref.detach(), torch.float32)
    dy = torch.randn(y.shape, generator=gen)
    y.backward(dy)
    ref.backward(dy.double())
    for got, want in zip(leaves, ref_leaves):
        close(got.grad, want.grad, torch.float32)


def test_grad_function_numpy_and_in_place_forward():
    x, cos, sin = inputs((2, 3, 4, 16), (1, 3, 1, 16), torch.float32)
    dy = torch.randn(2, 3, 4, 16)
    dx, dcos, dsin = txops.rotary_position_embedding_grad(dy.numpy(), cos.numpy(), sin.numpy(), x.numpy(),
                                                          rotary_mode="interleave")
    leaves = [t.double().requires_grad_() for t in (x, cos, sin)]
    rope_ref(*leaves, "interleave").backward(dy.double())
    for got, want in zip((dx, dcos, dsin), leaves):
        close(torch.from_numpy(got), want.grad, torch.float32)
    assert txops.rotary_position_embedding_grad(dy, cos, sin)[1:] == (None, None)
    want = rope_ref(x.double(), cos.double(), sin.double(), "quarter")
    same = x.clone()
    assert txops.rotary_position_embedding(same, cos, sin, rotary_mode="quarter", out=same) is same
    close(same, want, torch.float32)


def test_npu_rotary_mul_and_backward():
    x, cos, sin = inputs((2, 4, 3, 32), (1, 4, 1, 32), torch.bfloat16)
    for mode in ("half", "interleave"):
        y = torch_npu.npu_rotary_mul(x, cos, sin, rotary_mode=mode)
        close(y, rope_ref(x.double(), cos.double(), sin.double(), mode), torch.bfloat16)
        dy = torch.randn(y.shape).to(torch.bfloat16)
        dx, dr1, dr2 = torch_npu.npu_rotary_mul_backward(dy, x, cos, sin, rotary_mode=mode)
        leaves = [t.double().requires_grad_() for t in (x, cos, sin)]
        rope_ref(*leaves, mode).backward(dy.double())
        close(dx, leaves[0].grad, torch.bfloat16)
        for got, want in ((dr1, leaves[1].grad), (dr2, leaves[2].grad)):  # sums over 2 x 3 rows of bf16 products
            assert ((got.double() - want).abs() / (1 + want.abs())).max().item() < 5e-2
    assert torch_npu.npu_rotary_mul(x, cos, sin).shape == x.shape  # default 'half'


def test_compile_fullgraph_is_bit_identical():
    x, cos, sin = inputs((2, 3, 4, 16), (1, 3, 1, 16), torch.bfloat16)

    def f(x, cos, sin):
        return txops.rotary_position_embedding(x * 2, cos, sin, rotary_mode="interleave-half") + 1

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(x, cos, sin), f(x, cos, sin))


# ---- RopeWithSinCosCache / vLLM rotary_embedding ------------------------------------------------------------

def cache_ref(positions, query, key, cache, head_size, neox, section=None, cache_mode=0):
    """vLLM's forward: cos/sin halves gathered per position (per mrope section), rotary_dim channels rotated."""
    rd = cache.shape[1]
    half = rd // 2
    if section is None:
        cos_sin = cache[positions]                                          # (T, rd)
    else:
        rows = cache[positions]                                            # (m, T, rd)
        pick = torch.zeros(half, dtype=torch.long)
        if cache_mode == 0:
            pick = torch.repeat_interleave(torch.arange(len(section)), torch.tensor(section))
        else:
            for r in (1, 2):
                idx = torch.arange(r, min(3 * section[r], half), 3)
                pick[idx] = r
        cos = rows[pick, torch.arange(rows.shape[1])[:, None], torch.arange(half)]
        sin = rows[pick, torch.arange(rows.shape[1])[:, None], half + torch.arange(half)]
        cos_sin = torch.cat((cos, sin), dim=-1)
    cos, sin = cos_sin[:, :half, None].transpose(1, 2), cos_sin[:, half:, None].transpose(1, 2)  # (T, 1, half)
    out = []
    for x in (query, key):
        x = x.reshape(x.shape[0], -1, head_size).double()
        rot, rest = x[..., :rd], x[..., rd:]
        if neox:
            x1, x2 = rot[..., :half], rot[..., half:]
            rot = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
        else:
            x1, x2 = rot[..., 0::2], rot[..., 1::2]
            rot = torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).flatten(-2)
        out.append(torch.cat((rot, rest), dim=-1).reshape(x.shape[0], -1))
    return out


@pytest.mark.parametrize("neox", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("head_size,rotary_dim", [(64, 64), (64, 32), (128, 64)])
def test_rope_with_sin_cos_cache(neox, dtype, head_size, rotary_dim):
    gen = torch.Generator().manual_seed(4)
    positions = torch.randint(0, 50, (7,), generator=gen)
    q = torch.randn(7, 4 * head_size, generator=gen).to(dtype)
    k = torch.randn(7, 2 * head_size, generator=gen).to(dtype)
    cache = torch.randn(50, rotary_dim, generator=gen).to(dtype)
    q_out, k_out = txops.rope_with_sin_cos_cache(positions, q, k, cache, head_size, is_neox_style=neox)
    want_q, want_k = cache_ref(positions, q, k, cache.double(), head_size, neox)
    close(q_out, want_q, dtype)
    close(k_out, want_k, dtype)


@pytest.mark.parametrize("section,cache_mode", [([16, 24, 24], 0), ([24, 20, 20], 1), ([16, 16, 16, 16], 0),
                                                ([3, 2, 3], 1)])
@pytest.mark.parametrize("neox", [True, False])
def test_mrope(section, cache_mode, neox):
    gen = torch.Generator().manual_seed(5)
    rd = 2 * sum(section)
    positions = torch.randint(0, 30, (len(section), 6), generator=gen)
    q, k = torch.randn(6, 2 * rd, generator=gen), torch.randn(6, rd, generator=gen)
    cache = torch.randn(30, rd, generator=gen)
    q_out, k_out = txops.rope_with_sin_cos_cache(positions, q, k, cache, rd, mrope_section=section,
                                                 cache_mode=cache_mode, is_neox_style=neox)
    want_q, want_k = cache_ref(positions, q, k, cache.double(), rd, neox, section, cache_mode)
    close(q_out, want_q, torch.float32)
    close(k_out, want_k, torch.float32)


def test_vllm_rotary_embedding_in_place():
    gen = torch.Generator().manual_seed(6)
    positions = torch.randint(0, 20, (2, 3), generator=gen)                  # (batch, seq)
    query = torch.randn(2, 3, 4 * 64, generator=gen)
    key = torch.randn(6, 2, 64, generator=gen)                                # (T, Nk, head_size)
    cache = torch.randn(20, 32, generator=gen)
    want_q, want_k = cache_ref(positions.reshape(-1), query.reshape(6, -1), key.reshape(6, -1), cache.double(), 64,
                               True)
    version = query._version
    assert txops.rotary_embedding(positions, query, key, 64, cache, True) is None
    close(query.reshape(6, -1), want_q, torch.float32)
    close(key.reshape(6, -1), want_k, torch.float32)
    assert query._version > version
    only_q = torch.randn(6, 64, generator=gen)
    want_q, _ = cache_ref(positions.reshape(-1), only_q, torch.zeros(6, 0), cache.double(), 64, False)
    txops.rotary_embedding(positions, only_q, None, 64, cache, False)
    close(only_q, want_q, torch.float32)
    with pytest.raises(ValueError, match="viewable"):
        txops.rotary_embedding(positions.reshape(-1), torch.randn(2, 64, 3).permute(0, 2, 1), None, 64, cache, True)


def test_cache_errors_and_compile():
    q, k, cache = torch.randn(3, 64), torch.randn(3, 64), torch.randn(4, 64)
    with pytest.raises(ValueError, match=r"positions values must be in \[0, 4\)"):
        txops.rope_with_sin_cos_cache(torch.tensor([0, 4, 1]), q, k, cache, 64)
    with pytest.raises(RuntimeError, match="has no backward"):
        txops.rope_with_sin_cos_cache(torch.tensor([0, 1, 1]), q.requires_grad_(), k, cache, 64)
    q = q.detach()
    positions = torch.tensor([0, 3, 1])

    def f(q, k):
        return txops.rope_with_sin_cos_cache(positions, q * 1, k, cache, 64)

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    for got, want in zip(compiled(q, k), f(q, k)):
        assert torch.equal(got, want)


def test_numpy_cache_op():
    q, k = np.ones((2, 8), np.float32), np.ones((2, 4), np.float32)
    cache = np.array([[1, 1, 0, 0], [0, 0, 1, 1]], np.float32)
    q_out, k_out = txops.rope_with_sin_cos_cache(np.array([1, 0]), q, k, cache, 4, is_neox_style=False)
    assert isinstance(q_out, np.ndarray)
    np.testing.assert_array_equal(k_out, [[-1, 1, -1, 1], [1, 1, 1, 1]])
