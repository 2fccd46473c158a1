"""Zero-copy boundary and caller-owned outputs: torch tensors read through the DLPack C exchange API (no capsule,
no copy, strided views as they are), the capsule and numpy paths giving the same bits, and out= variants writing
into the caller's tensors instead of allocating."""
import numpy as np
import pytest

import txops
from txops import _txops

torch = pytest.importorskip("torch")

FAST = _txops._has_exchange_api(torch.Tensor)


def _rope_inputs(shape=(2, 4, 3, 64), dtype=torch.float32):
    gen = torch.Generator().manual_seed(7)
    x = torch.rand(shape, generator=gen).to(dtype)
    theta = torch.rand(shape[0], 1, shape[2], shape[3], generator=gen) * 6.28
    return x, theta.cos().to(dtype), theta.sin().to(dtype)


def test_exchange_api_detected_on_torch_2_10_and_later():
    version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    assert FAST == hasattr(torch.Tensor, "__dlpack_c_exchange_api__")
    if version >= (2, 10):
        assert FAST
    assert not _txops._has_exchange_api(np.ndarray)
    assert not _txops._has_exchange_api(int)
    assert not _txops._has_exchange_api(3)  # not a type


@pytest.mark.skipif(not FAST, reason="torch without __dlpack_c_exchange_api__")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_tensors_passed_as_they_are_match_capsules(dtype):
    from torch.utils.dlpack import to_dlpack
    x, cos, sin = _rope_inputs(dtype=dtype)
    direct, capsule = torch.empty_like(x), torch.empty_like(x)
    _txops.interleave_rope(x, cos, sin, direct)
    _txops.interleave_rope(to_dlpack(x), to_dlpack(cos), to_dlpack(sin), to_dlpack(capsule))
    assert torch.equal(direct, capsule)
    numpy_out = np.empty(x.shape, np.float32)
    if dtype == torch.float32:
        _txops.interleave_rope(x.numpy(), cos.numpy(), sin.numpy(), numpy_out)
        assert np.array_equal(numpy_out, direct.numpy())


@pytest.mark.skipif(not FAST, reason="torch without __dlpack_c_exchange_api__")
def test_direct_path_strided_views_and_requires_grad():
    x, cos, sin = _rope_inputs()
    # a transposed view of a larger buffer, written in place through the view: no copy anywhere
    base = torch.zeros(2, 3, 4, 64)
    view = base.transpose(1, 2)  # (2, 4, 3, 64), not contiguous
    view.copy_(x)
    expected = torch.empty_like(x)
    _txops.interleave_rope(x, cos, sin, expected)
    _txops.interleave_rope(view, cos, sin, view)  # in place on the strided view
    assert torch.equal(base.transpose(1, 2), expected)
    # an input that requires grad is read (the autograd layer above decides what is recorded)
    leaf = x.clone().requires_grad_()
    out = torch.empty_like(x)
    _txops.interleave_rope(leaf, cos, sin, out)
    assert torch.equal(out, expected)
    # a broadcast (stride 0) cos/sin
    c1, s1 = cos[:1].expand_as(cos), sin[:1].expand_as(sin)
    a, b = torch.empty_like(x), torch.empty_like(x)
    _txops.interleave_rope(x, c1, s1, a)
    _txops.interleave_rope(x, c1.contiguous(), s1.contiguous(), b)
    assert torch.equal(a, b)


@pytest.mark.skipif(not FAST, reason="torch without __dlpack_c_exchange_api__")
def test_direct_path_errors_name_the_parameter():
    x, cos, sin = _rope_inputs()
    with pytest.raises(TypeError, match="cos"):
        _txops.interleave_rope(x, cos.to(torch.complex64), sin, torch.empty_like(x))
    with pytest.raises(ValueError, match="None"):
        _txops.interleave_rope(x, None, sin, torch.empty_like(x))


@pytest.mark.parametrize("with_qk", [False, True])
def test_apply_rotary_pos_emb_grad_out_writes_the_given_tensors(with_qk):
    gen = torch.Generator().manual_seed(3)
    gq, gk = torch.rand(1, 16, 4, 64, generator=gen), torch.rand(1, 16, 2, 64, generator=gen)
    q, k = torch.rand(gq.shape, generator=gen), torch.rand(gk.shape, generator=gen)
    theta = torch.rand(1, 16, 1, 64, generator=gen)
    cos, sin = theta.cos(), theta.sin()
    extra = dict(query=q, key=k) if with_qk else {}
    fresh = txops.apply_rotary_pos_emb_grad(gq, gk, cos, sin, **extra)
    out = (torch.full_like(gq, 7.0), torch.full_like(gk, 7.0))
    if with_qk:
        out += (torch.full_like(cos, 7.0), torch.full_like(sin, 7.0))
    got = txops.apply_rotary_pos_emb_grad(gq, gk, cos, sin, out=out, **extra)
    for given, returned, reference in zip(out, got, fresh):
        assert returned is given
        assert torch.equal(returned, reference)
    if not with_qk:
        assert got[2] is None and got[3] is None
    with pytest.raises(ValueError, match="out must be"):
        txops.apply_rotary_pos_emb_grad(gq, gk, cos, sin, out=out[:1], **extra)


def test_public_calls_pass_torch_tensors_without_capsules():
    from txops import _arrays
    x, cos, sin = _rope_inputs()
    txops.interleave_rope(x, cos, sin)  # attaches torch
    assert (_arrays.export(x) is x) == FAST
