"""Errors and the binding itself: exceptions carry txops' message and status code and never crash the
interpreter; DLPack capsules are consumed per the protocol and released (no leaks); the GIL is released while an
operator runs; settings round-trip."""
import sys
import threading

import numpy as np
import pytest
import torch
from torch.utils import dlpack as torch_dlpack

import txops
from txops import _txops


def rope_args(dtype=torch.float32):
    x = torch.randn(2, 4, 3, 64, dtype=dtype)
    cos = torch.randn(1, 1, 3, 64, dtype=dtype)
    return x, cos, cos.clone()


def test_argument_errors_raised_before_the_operator():
    x, cos, sin = rope_args()
    with pytest.raises(TypeError, match=r"^sin must be an array with __dlpack__.*got list$") as info:
        txops.interleave_rope(x, cos, [1.0])
    assert info.value.code == 161002
    with pytest.raises(ValueError, match="^sin must be a tensor, got None$") as info:
        txops.interleave_rope(x, cos, None)
    assert info.value.code == 161001
    with pytest.raises(TypeError, match="x dtype must be a float"):
        txops.interleave_rope(torch.zeros(2, 2, dtype=torch.complex64), cos, sin)
    with pytest.raises(ValueError, match="rotary_mode must be one of .* got 'spiral'"):
        txops.inplace_partial_rotary_mul(x, cos, sin, rotary_mode="spiral")
    with pytest.raises(ValueError, match=r"partial_slice must be \(start, end\), got \[1\]"):
        txops.inplace_partial_rotary_mul(x, cos, sin, partial_slice=[1])
    with pytest.raises(ValueError, match="layout must be one of"):
        txops.apply_rotary_pos_emb(x, x, cos, sin, layout="HWC")
    with pytest.raises(ValueError, match=r"rank must be at most 8, got 9"):
        txops.interleave_rope(np.zeros((1,) * 9, dtype=np.float32), cos, sin)


def test_operator_errors_carry_txops_message():
    x, cos, sin = rope_args()
    bad_cos = torch.randn(1, 4, 3, 64)  # N axis must be 1
    with pytest.raises(ValueError, match=r"^txops::interleave_rope: cos .*, got") as info:
        txops.interleave_rope(x, bad_cos, bad_cos)
    assert info.value.code == 561002
    with pytest.raises(TypeError, match=r"^txops::interleave_rope: .*dtype.*, got") as info:
        txops.interleave_rope(x.double(), cos.double(), sin.double())
    assert info.value.code == 161002
    with pytest.raises(ValueError, match=r"^txops::inplace_partial_rotary_mul: rotaryMode must be .*, got 7$"):
        txops.inplace_partial_rotary_mul(x, cos, sin, rotary_mode=7)


def test_capsule_protocol():
    x, cos, sin = rope_args()
    capsules = [torch_dlpack.to_dlpack(t) for t in (x, cos, sin, torch.empty_like(x))]
    _txops.interleave_rope(*capsules)
    assert all("used_dltensor" in repr(c) for c in capsules)
    with pytest.raises(ValueError, match='x must be an unconsumed DLPack capsule'):
        _txops.interleave_rope(*capsules)


def test_no_reference_leaks_on_success_or_failure():
    x = np.random.rand(2, 4, 3, 64).astype(np.float32)
    cos = np.random.rand(1, 1, 3, 64).astype(np.float32)
    bad = np.random.rand(1, 4, 3, 64).astype(np.float32)
    before = sys.getrefcount(x), sys.getrefcount(cos), sys.getrefcount(bad)
    for _ in range(50):
        for c in (cos, bad):
            try:
                txops.interleave_rope(x, c, c, out=x)
            except ValueError:
                pass
    del c
    assert (sys.getrefcount(x), sys.getrefcount(cos), sys.getrefcount(bad)) == before


def test_gil_released_while_operator_runs():
    x = torch.randn(8, 32, 256, 128)
    cos = torch.randn(1, 1, 256, 128)
    txops.interleave_rope(x, cos, cos, out=x)
    ticks = 0
    _txops._set_repeat(200)
    try:
        worker = threading.Thread(target=lambda: txops.interleave_rope(x, cos, cos, out=x))
        worker.start()
        while worker.is_alive():
            ticks += 1
        worker.join()
    finally:
        _txops._set_repeat(1)
    # With the GIL held for the whole call, this thread could not tick until the call ended.
    assert ticks > 1000, ticks


def test_settings_round_trip():
    assert txops.active_isa() in ("scalar", "avx2", "avx512")
    assert txops.compat_mode() == "txops"
    txops.set_compat_mode("cann")
    try:
        assert txops.compat_mode() == "cann"
    finally:
        txops.set_compat_mode("txops")
    with pytest.raises(ValueError, match="isa must be one of"):
        txops.set_max_isa("sse2")
    assert isinstance(txops.cpu_has_avx512_bf16(), bool)
    assert txops.verbose() in (False, True)


def test_read_only_numpy_outputs_are_refused():
    x = np.zeros((2, 3, 1, 8), dtype=np.float32)
    cos = np.broadcast_to(np.ones((1, 1, 1, 8), dtype=np.float32), (2, 3, 1, 8))  # read-only: fine as an input
    with pytest.raises(ValueError, match="^x must be writable .*, got a read-only array$"):
        txops.inplace_partial_rotary_mul(cos, cos, cos)
    with pytest.raises(ValueError, match="^out must be writable"):
        txops.interleave_rope(np.zeros((1, 1, 1, 8), np.float32), cos[:1, :1], cos[:1, :1], out=cos[:1, :1])
    txops.inplace_partial_rotary_mul(x, cos, cos)


def test_concurrent_calls_from_python_threads():
    """With the GIL released, calls from several Python threads overlap; each still gets its exact result."""
    xs = [torch.randn(2, 8, 64, 64) for _ in range(3)]
    cos = torch.randn(1, 1, 64, 64)
    q = torch.nn.functional.normalize(torch.randn(50, 1, 32), dim=-1)
    v, beta = torch.randn(50, 2, 32), torch.rand(50, 2)
    expected = [txops.interleave_rope(x, cos, cos) for x in xs]
    expected_gdr = txops.chunk_gated_delta_rule(q, q, v, beta)[0]
    mismatches = []

    def work(i):
        for _ in range(10):
            if not torch.equal(txops.interleave_rope(xs[i], cos, cos), expected[i]):
                mismatches.append(("interleave_rope", i))
            if not torch.equal(txops.chunk_gated_delta_rule(q, q, v, beta)[0], expected_gdr):
                mismatches.append(("chunk_gated_delta_rule", i))
    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not mismatches
