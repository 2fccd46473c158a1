"""The plain-eager fast path (the extension's _eager_* entries, eager_gate.h): the call is decided in C for
plain torch tensors with nothing for autograd to record and no dispatch mode, and must then give the bits and the
version-counter bumps of the general path; every other call must be sent back to it (False, nothing written)."""
import sys

import numpy as np
import pytest

import txops
from txops import _txops

torch = pytest.importorskip("torch")
if not _txops._has_exchange_api(torch.Tensor):
    pytest.skip("torch without __dlpack_c_exchange_api__: no fast path", allow_module_level=True)

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402


def rand(*shape, seed=0, dtype=torch.float32):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def rope_case(dtype=torch.float32):
    x = rand(2, 3, 5, 64, seed=1, dtype=dtype)
    theta = rand(2, 1, 5, 64, seed=2) * 6.28
    return x, theta.cos().to(dtype), theta.sin().to(dtype)


def apply_case(dtype=torch.float32):
    q, k = rand(2, 5, 4, 64, seed=3, dtype=dtype), rand(2, 5, 2, 64, seed=4, dtype=dtype)
    theta = rand(2, 5, 1, 64, seed=5) * 6.28
    return q, k, theta.cos().to(dtype), theta.sin().to(dtype)


def decode_case():
    T, Nk, Nv, Dk, Dv = 3, 1, 2, 16, 8
    q, k = rand(T, Nk, Dk, seed=6) * 0.3, rand(T, Nk, Dk, seed=7) * 0.3
    v, beta = rand(T, Nv, Dv, seed=8), rand(T, Nv, seed=9) * 0.5
    pool = rand(5, Nv, Dv, Dk, seed=10) * 0.1
    lengths, slots = torch.tensor([1, 2], dtype=torch.int32), torch.tensor([4, 0, 0], dtype=torch.int32)
    g = -rand(T, Nv, seed=11)
    return q, k, v, beta, pool, lengths, slots, g


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_entries_match_the_general_path_and_bump_versions_once(dtype):
    x, cos, sin = rope_case(dtype)
    fast, general = torch.empty_like(x), torch.empty_like(x)
    v0 = fast._version
    assert _txops._eager_interleave_rope(x, cos, sin, fast) is True
    _txops.interleave_rope(x, cos, sin, general)
    assert torch.equal(fast, general) and fast._version == v0 + 1

    q, k, cos, sin = apply_case(dtype)
    qf, kf, qg, kg = q.clone(), k.clone(), q.clone(), k.clone()
    vq, vk = qf._version, kf._version
    assert _txops._eager_apply_rotary_pos_emb(qf, kf, cos, sin, 1, 0) is True
    _txops.apply_rotary_pos_emb(qg, kg, cos, sin, 1, 0)
    assert torch.equal(qf, qg) and torch.equal(kf, kg)
    assert (qf._version, kf._version) == (vq + 1, vk + 1)

    outs = [torch.full_like(t, 7.0) for t in (q, k, cos, sin)]
    refs = [torch.empty_like(t) for t in (q, k, cos, sin)]
    versions = [t._version for t in outs]
    assert _txops._eager_apply_rotary_pos_emb_grad(q, k, cos, sin, q, k, 0, 1, *outs) is True
    _txops.apply_rotary_pos_emb_grad(q, k, cos, sin, q, k, 0, 1, *refs)
    assert all(torch.equal(a, b) for a, b in zip(outs, refs))
    assert [t._version for t in outs] == [v + 1 for v in versions]
    two = [torch.full_like(t, 7.0) for t in (q, k)]
    assert _txops._eager_apply_rotary_pos_emb_grad(q, k, cos, sin, None, None, 0, 1, *two, None, None) is True

    x, cos, sin = rope_case(dtype)
    xf, xg = x.clone(), x.clone()
    c, s = cos[..., :16].transpose(1, 2), sin[..., :16].transpose(1, 2)  # (2, 5, 1, 16) for (2, 5, 3, 64) BSND
    xf, xg = xf.transpose(1, 2), xg.transpose(1, 2)
    assert _txops._eager_inplace_partial_rotary_mul(xf, c, s, 3, 32, 48) is True
    _txops.inplace_partial_rotary_mul(xg, c, s, 3, 32, 48)
    assert torch.equal(xf, xg)
    assert _txops._eager_inplace_partial_rotary_mul_grad(xf, c, s, 2, 32, 48) is True
    _txops.inplace_partial_rotary_mul_grad(xg, c, s, 2, 32, 48)
    assert torch.equal(xf, xg)


def test_recurrent_entry_matches_the_general_path():
    q, k, v, beta, pool, lengths, slots, g = decode_case()
    pool_fast, pool_general = pool.clone(), pool.clone()
    out_fast, out_general = torch.empty_like(v), torch.empty_like(v)
    versions = pool_fast._version, out_fast._version
    assert _txops._eager_recurrent_gated_delta_rule(q, k, v, beta, pool_fast, lengths, slots, g, None, None, 0.25,
                                                    out_fast) is True
    _txops.recurrent_gated_delta_rule(q, k, v, beta, pool_general, lengths, slots, g, None, None, 0.25, out_general)
    assert torch.equal(out_fast, out_general) and torch.equal(pool_fast, pool_general)
    assert (pool_fast._version, out_fast._version) == (versions[0] + 1, versions[1] + 1)


def test_rotary_family_entries_match_the_general_path():
    x, cos, sin = rope_case()
    fast, general = torch.empty_like(x), torch.empty_like(x)
    version = fast._version
    assert _txops._eager_rotary_position_embedding(x, cos, sin, 3, fast, None) is True
    _txops.rotary_position_embedding(x, cos, sin, 3, general, None)
    assert torch.equal(fast, general) and fast._version == version + 1
    gen = torch.Generator().manual_seed(3)
    positions = torch.tensor([5, 0, 5, 2])
    q, k, cache = torch.randn(4, 64, generator=gen), torch.randn(4, 32, generator=gen), torch.randn(6, 32, generator=gen)
    qf, kf, qg, kg = q.clone(), k.clone(), q.clone(), k.clone()
    versions = qf._version, kf._version
    assert _txops._eager_rope_with_sin_cos_cache(positions, qf, kf, cache, None, 32, 0, 0, qf, kf) is True
    _txops.rope_with_sin_cos_cache(positions, qg, kg, cache, None, 32, False, 0, qg, kg)
    assert torch.equal(qf, qg) and torch.equal(kf, kg)
    assert (qf._version, kf._version) == (versions[0] + 1, versions[1] + 1)
    # mrope sections (a list, or anything in its place) and bools go back to the general path, untouched
    assert _txops._eager_rope_with_sin_cos_cache(positions, qf, kf, cache, [2, 3, 3], 32, 1, 0, qf, kf) is False
    assert _txops._eager_rope_with_sin_cos_cache(positions, qf, kf, cache, 3, 32, 1, 0, qf, kf) is False
    assert _txops._eager_rope_with_sin_cos_cache(positions, qf, kf, cache, None, 32, True, 0, qf, kf) is False
    assert torch.equal(qf, qg)


class RecordingMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class Sub(torch.Tensor):
    pass


def test_gate_sends_everything_else_back_untouched():
    x, cos, sin = rope_case()
    out = torch.zeros_like(x)
    refused = {
        "numpy input": (x.numpy(), cos, sin, out),
        "numpy output": (x, cos, sin, out.numpy()),
        "a tensor subclass": (x.as_subclass(Sub), cos, sin, out),
        "a capsule": (torch.utils.dlpack.to_dlpack(x), cos, sin, out),
        "only non-tensors": (1, 2.0, None, 3),
    }
    for why, args in refused.items():
        assert _txops._eager_interleave_rope(*args) is False, why
    leaf = x.clone().requires_grad_()
    assert _txops._eager_interleave_rope(leaf, cos, sin, out) is False  # autograd must record it
    with RecordingMode():
        assert _txops._eager_interleave_rope(x, cos, sin, out) is False  # a dispatch mode must see it
    assert torch.equal(out, torch.zeros_like(x)) and out._version == 0
    with torch.no_grad():  # grad mode off: nothing to record, the fast path runs
        assert _txops._eager_interleave_rope(leaf, cos, sin, out) is True
    with torch.inference_mode():
        assert _txops._eager_interleave_rope(x, cos, sin, out) is True


def test_entry_errors():
    x, cos, sin = rope_case()
    with pytest.raises(TypeError, match="takes 4 positional arguments, got 3"):
        _txops._eager_interleave_rope(x, cos, sin)
    with pytest.raises(ValueError, match="cos") as error:
        _txops._eager_interleave_rope(x, cos[..., :32], sin, torch.empty_like(x))
    assert error.value.code == 561002  # a shape rule, as on the general path
    with pytest.raises(OverflowError, match="int32"):
        _txops._eager_apply_rotary_pos_emb(*apply_case(), 1, 2 ** 40)
    with pytest.raises(TypeError):
        _txops._eager_apply_rotary_pos_emb(*apply_case(), 1, 0.5)
    with pytest.raises(TypeError, match="must be an array"):
        _txops._eager_interleave_rope(x, cos, sin, 3)


def test_no_reference_leaks_on_success_or_failure():
    x, cos, sin = rope_case()
    out, bad = torch.empty_like(x), cos[..., :32]
    before = [sys.getrefcount(t) for t in (x, cos, sin, out, bad)]
    for _ in range(50):
        _txops._eager_interleave_rope(x, cos, sin, out)
        with pytest.raises(ValueError):
            _txops._eager_interleave_rope(x, bad, sin, out)
    assert [sys.getrefcount(t) for t in (x, cos, sin, out, bad)] == before


def test_public_wrappers_take_the_fast_path(monkeypatch):
    """With plain tensors the wrappers never reach their Python dispatch decision (torch_ops)."""
    from txops import gdr, rope, rotary

    def not_here(*args):
        raise AssertionError("the general path was taken")
    for module in (rope, gdr, rotary):
        monkeypatch.setattr(module, "torch_ops", not_here)
        monkeypatch.setattr(module, "traced_torch_ops", not_here)
    x, cos, sin = rope_case()
    out = torch.empty_like(x)
    assert txops.interleave_rope(x, cos, sin, out=out) is out
    q, k, cos4, sin4 = apply_case()
    assert txops.apply_rotary_pos_emb(q, k, cos4, sin4, layout="BSND", rotary_mode="half")[0] is q
    grads = (torch.empty_like(q), torch.empty_like(k))
    assert txops.apply_rotary_pos_emb_grad(q, k, cos4, sin4, out=grads)[:2] == grads
    xb = x.transpose(1, 2).contiguous()
    c, s = cos[..., :16].transpose(1, 2), sin[..., :16].transpose(1, 2)
    assert txops.inplace_partial_rotary_mul(xb, c, s, partial_slice=(0, 16)) is xb
    assert txops.inplace_partial_rotary_mul_backward(xb, c, s, partial_slice=(0, 16)) is xb
    dq, dk, dv, beta, pool, lengths, slots, g = decode_case()
    step = torch.empty_like(dv)
    assert txops.recurrent_gated_delta_rule(dq, dk, dv, beta, pool, lengths, slots, g=g, out=step) is step
    rotated = torch.empty_like(x)
    assert txops.rotary_position_embedding(x, cos, sin, out=rotated) is rotated
    qc, kc = torch.randn(3, 64), torch.randn(3, 32)
    cache = torch.randn(4, 32)
    assert txops.rope_with_sin_cos_cache(torch.tensor([0, 3, 1]), qc, kc, cache, 32, query_out=qc, key_out=kc)[0] is qc
    assert txops.rotary_embedding(torch.tensor([0, 3, 1]), qc, kc, 32, cache, True) is None
    # the general path still answers what the gate refuses
    monkeypatch.undo()
    with pytest.raises(RuntimeError, match="requires grad"):
        txops.recurrent_gated_delta_rule(dq.requires_grad_(), dk, dv, beta, pool, lengths, slots, out=step)
    numpy_out = np.empty(x.shape, np.float32)
    assert txops.interleave_rope(x.numpy(), cos.numpy(), sin.numpy(), out=numpy_out) is numpy_out
    assert np.array_equal(numpy_out, out.numpy())
