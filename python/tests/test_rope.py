"""RoPE operators through the Python package: results against the pure-PyTorch references (fp64), for torch
(fp32 / fp16 / bf16) and numpy (fp32 / fp16); outputs in the caller's framework; in place where the op is;
strided and broadcast (stride-0, read-only numpy) inputs; the grad operators against autograd of the references."""
import numpy as np
import pytest
import torch

import references as ref
import txops

TOLERANCE = {torch.float32: (1e-5, 1e-5), torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1e-2)}
MODES = ["half", "interleave", "quarter", "interleave-half"]


def assert_matches(actual, expected, dtype):
    if isinstance(actual, np.ndarray):
        actual = torch.from_numpy(actual)
    atol, rtol = TOLERANCE[dtype]
    torch.testing.assert_close(actual.double(), expected.double(), atol=atol, rtol=rtol)


def randn(*shape, dtype=torch.float32, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator).to(dtype)


def cos_sin(*shape, dtype=torch.float32, seed=1):
    angles = randn(*shape, dtype=torch.float32, seed=seed) * 3
    return angles.cos().to(dtype), angles.sin().to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("cos_batch,cos_seq", [(1, 1), (2, 5), (1, 5)])
def test_interleave_rope_torch(dtype, cos_batch, cos_seq):
    x = randn(2, 3, 5, 64, dtype=dtype)
    cos, sin = cos_sin(cos_batch, 1, cos_seq, 64, dtype=dtype)
    out = txops.interleave_rope(x, cos, sin)
    assert isinstance(out, torch.Tensor) and out.dtype == dtype and out.shape == x.shape
    assert_matches(out, ref.interleave_rope(x.double(), cos.double(), sin.double()), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_interleave_rope_numpy(dtype):
    x = randn(2, 4, 3, 32).numpy().astype(dtype)
    cos, sin = (t.numpy().astype(dtype) for t in cos_sin(2, 1, 3, 32))
    out = txops.interleave_rope(x, cos, sin)
    assert isinstance(out, np.ndarray) and out.dtype == dtype
    expected = ref.interleave_rope(*(torch.from_numpy(a).double() for a in (x, cos, sin)))
    assert_matches(out, expected, torch.float16 if dtype == np.float16 else torch.float32)


def test_interleave_rope_in_place_strided_and_broadcast():
    base = randn(2, 6, 4, 64)
    x = base[:, ::2]                                   # strided over N, no copy
    cos, sin = cos_sin(1, 1, 4, 64)
    expected = ref.interleave_rope(x.double(), cos.double(), sin.double())
    before = base.clone()
    out = txops.interleave_rope(x, cos.expand(2, 1, 4, 64), sin.expand(2, 1, 4, 64), out=x)
    assert out is x
    assert_matches(base[:, ::2], expected, torch.float32)
    assert torch.equal(base[:, 1::2], before[:, 1::2])  # rows between the strided ones untouched


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("mode", range(4))
@pytest.mark.parametrize("cos_shape", [(1, 6, 1, 16), (2, 6, 3, 16), (1, 1, 1, 16)])
def test_inplace_partial_rotary_mul(dtype, mode, cos_shape):
    x = randn(2, 6, 3, 48, dtype=dtype)
    cos, sin = cos_sin(*cos_shape, dtype=dtype)
    expected = ref.partial_rotary_mul(x.double(), cos.double(), sin.double(), mode, 24, 40)
    original = x.clone()
    result = txops.inplace_partial_rotary_mul(x, cos, sin, rotary_mode=MODES[mode], partial_slice=[24, 40])
    assert result is x
    assert_matches(x, expected, dtype)
    assert torch.equal(x[..., :24], original[..., :24]) and torch.equal(x[..., 40:], original[..., 40:])


def test_inplace_partial_rotary_mul_numpy_read_only_broadcast_cos():
    x = randn(2, 5, 3, 32).numpy()
    cos, sin = (np.broadcast_to(t.numpy(), (2, 5, 3, 32)) for t in cos_sin(1, 5, 1, 32))
    assert not cos.flags.writeable
    expected = ref.partial_rotary_mul(*(torch.from_numpy(np.ascontiguousarray(a)).double() for a in (x, cos, sin)),
                                      1, 0, 32)
    result = txops.inplace_partial_rotary_mul(x, cos, sin)  # CANN's default: interleave, whole axis
    assert result is x
    assert_matches(x, expected, torch.float32)


@pytest.mark.parametrize("mode", range(4))
def test_inplace_partial_rotary_mul_backward(mode):
    x = randn(2, 4, 3, 32, dtype=torch.float64).requires_grad_()
    cos, sin = cos_sin(1, 4, 1, 16)
    dy = randn(2, 4, 3, 32, seed=5)
    forward = ref.partial_rotary_mul(x, cos.double(), sin.double(), mode, 8, 24)
    (expected,) = torch.autograd.grad(forward, x, dy.double())
    grad = dy.clone()
    result = txops.inplace_partial_rotary_mul_backward(grad, cos, sin, rotary_mode=mode, partial_slice=(8, 24))
    assert result is grad
    assert_matches(grad, expected, torch.float32)


LAYOUT_SHAPES = {  # layout -> (q shape, k shape, cos shape) with B=2, S=5, Nq=4, Nk=2, D=32
    1: ((2, 5, 4, 32), (2, 5, 2, 32), (1, 5, 1, 32)),
    2: ((5, 2, 4, 32), (5, 2, 2, 32), (5, 2, 1, 32)),
    3: ((2, 4, 5, 32), (2, 2, 5, 32), (2, 1, 5, 32)),
    4: ((10, 4, 32), (10, 2, 32), (10, 1, 32)),
}


@pytest.mark.parametrize("layout", [1, 2, 3, 4])
@pytest.mark.parametrize("mode", ["half", "interleave", "quarter"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_apply_rotary_pos_emb(layout, mode, dtype):
    q_shape, k_shape, c_shape = LAYOUT_SHAPES[layout]
    q, k = randn(*q_shape, dtype=dtype), randn(*k_shape, dtype=dtype, seed=3)
    cos, sin = cos_sin(*c_shape, dtype=dtype)
    expected_q, expected_k = ref.apply_rotary_pos_emb(q.double(), k.double(), cos.double(), sin.double(),
                                                      MODES.index(mode))
    q_out, k_out = txops.apply_rotary_pos_emb(q, k, cos, sin, layout=layout, rotary_mode=mode)
    assert q_out is q and k_out is k
    assert_matches(q, expected_q, dtype)
    assert_matches(k, expected_k, dtype)


def test_apply_rotary_pos_emb_partial_width_numpy():
    q, k = randn(2, 5, 4, 64).numpy(), randn(2, 5, 2, 64, seed=3).numpy()
    cos, sin = (t.numpy() for t in cos_sin(2, 5, 1, 32))
    expected_q, expected_k = ref.apply_rotary_pos_emb(*(torch.from_numpy(a).double() for a in (q, k, cos, sin)), 0)
    txops.apply_rotary_pos_emb(q, k, cos, sin, layout="BSND")
    assert_matches(q, expected_q, torch.float32)
    assert_matches(k, expected_k, torch.float32)


@pytest.mark.parametrize("layout", [1, 2, 3, 4])
@pytest.mark.parametrize("mode", ["half", "interleave", "quarter"])
@pytest.mark.parametrize("with_qk", [True, False])
def test_apply_rotary_pos_emb_grad(layout, mode, with_qk):
    q_shape, k_shape, c_shape = LAYOUT_SHAPES[layout]
    q, k = randn(*q_shape), randn(*k_shape, seed=3)
    cos, sin = cos_sin(*c_shape)
    gq_embed, gk_embed = randn(*q_shape, seed=7), randn(*k_shape, seed=8)
    leaves = [t.double().requires_grad_() for t in (q, k, cos, sin)]
    forward_q, forward_k = ref.apply_rotary_pos_emb(*leaves, MODES.index(mode))
    expected = torch.autograd.grad((forward_q, forward_k), leaves, (gq_embed.double(), gk_embed.double()))
    grads = txops.apply_rotary_pos_emb_grad(gq_embed, gk_embed, cos, sin, query=q if with_qk else None,
                                            key=k if with_qk else None, rotary_mode=mode, layout=layout)
    assert_matches(grads[0], expected[0], torch.float32)
    assert_matches(grads[1], expected[1], torch.float32)
    if with_qk:
        torch.testing.assert_close(grads[2].double(), expected[2], atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(grads[3].double(), expected[3], atol=1e-4, rtol=1e-4)
    else:
        assert grads[2] is None and grads[3] is None


def test_thread_count_does_not_change_results():
    x = randn(4, 8, 64, 64, dtype=torch.bfloat16)
    cos, sin = cos_sin(1, 1, 64, 64, dtype=torch.bfloat16)
    threads = txops.num_threads()
    try:
        txops.set_num_threads(1)
        one = txops.interleave_rope(x, cos, sin)
        txops.set_num_threads(2)
        two = txops.interleave_rope(x, cos, sin)
    finally:
        txops.set_num_threads(0)
    assert txops.num_threads() == threads
    assert torch.equal(one.view(torch.int16), two.view(torch.int16))
