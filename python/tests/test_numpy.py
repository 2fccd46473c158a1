"""txops with NumPy alone: this file imports no torch, so `make test` also runs it (with test_docs.py) in a second
virtual environment that has NumPy 1.x and no torch at all. Every operator against a NumPy reference (fp64), and
`import txops` plus every call leaving torch unimported."""
import os
import subprocess
import sys

import numpy as np

import txops

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def rot_half(x):
    x1, x2 = np.split(x, 2, axis=-1)
    return np.concatenate((-x2, x1), axis=-1)


def rot_interleave(x):
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = -x[..., 1::2], x[..., 0::2]
    return out


def test_interleave_rope():
    x, cos, sin = rand(2, 3, 4, 16), rand(1, 1, 4, 16), rand(1, 1, 4, 16)
    deinterleaved = np.concatenate((x[..., 0::2], x[..., 1::2]), axis=-1).astype(np.float64)
    expected = deinterleaved * cos + rot_half(deinterleaved) * sin
    np.testing.assert_allclose(txops.interleave_rope(x, cos, sin), expected, rtol=1e-5, atol=1e-5)


def test_inplace_partial_rotary_mul_and_backward():
    x, cos, sin = rand(2, 4, 3, 24), rand(1, 4, 1, 16), rand(1, 4, 1, 16)
    expected = x.astype(np.float64)
    expected[..., 4:20] = expected[..., 4:20] * cos + rot_interleave(expected[..., 4:20]) * sin
    dy = x.copy()
    assert txops.inplace_partial_rotary_mul(x, cos, sin, partial_slice=(4, 20)) is x
    np.testing.assert_allclose(x, expected, rtol=1e-5, atol=1e-5)
    # the adjoint: <J dy', dy> = <dy', J^T dy> for the rotation J of the slice
    probe = rand(*dy.shape)
    rotated_probe = probe.copy()
    txops.inplace_partial_rotary_mul(rotated_probe, cos, sin, partial_slice=(4, 20))
    transposed = txops.inplace_partial_rotary_mul_backward(dy.copy(), cos, sin, partial_slice=(4, 20))
    np.testing.assert_allclose(np.vdot(rotated_probe, dy), np.vdot(probe, transposed), rtol=1e-4)


def test_apply_rotary_pos_emb_and_grad():
    q, k, cos, sin = rand(2, 5, 4, 32), rand(2, 5, 2, 32), rand(1, 5, 1, 32), rand(1, 5, 1, 32)
    expected_q, expected_k = (t.astype(np.float64) * cos + rot_half(t.astype(np.float64)) * sin for t in (q, k))
    txops.apply_rotary_pos_emb(q, k, cos, sin, layout="BSND", rotary_mode="half")
    np.testing.assert_allclose(q, expected_q, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(k, expected_k, rtol=1e-5, atol=1e-5)
    dq, dk = rand(2, 5, 4, 32), rand(2, 5, 2, 32)
    grad_q, grad_k, grad_cos, grad_sin = txops.apply_rotary_pos_emb_grad(dq, dk, cos, sin)
    assert grad_cos is None and grad_sin is None
    np.testing.assert_allclose(grad_q, dq * cos - rot_half(dq * sin), rtol=1e-5, atol=1e-5)  # J^T dy


def gdr_loop(q, k, v, beta, g, lengths, scale):
    tokens, nv, dv = v.shape
    group = nv // q.shape[1]
    out = np.zeros((tokens, nv, dv))
    states = np.zeros((len(lengths), nv, dv, k.shape[2]))
    start = 0
    for b, n in enumerate(lengths):
        s = states[b]
        for t in range(start, start + n):
            kt, qt = np.repeat(k[t], group, axis=0), np.repeat(q[t], group, axis=0)
            s = np.exp(g[t])[:, None, None] * s
            s = s + beta[t][:, None, None] * np.einsum("hv,hk->hvk", v[t] - np.einsum("hvk,hk->hv", s, kt), kt)
            out[t] = np.einsum("hvk,hk->hv", s, qt * scale)
        states[b] = s
        start += n
    return out, states


def test_gated_delta_rule_prefill_then_decode():
    lengths = [5, 0, 9]
    tokens, nk, nv, dk, dv = sum(lengths) + 1, 1, 2, 16, 8
    q, k = rand(tokens, nk, dk), rand(tokens, nk, dk)
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    v, beta, g = rand(tokens, nv, dv), RNG.uniform(0.1, 0.9, (tokens, nv)).astype(np.float32), -RNG.uniform(
        0, 1, (tokens, nv)).astype(np.float32)
    out, final = txops.chunk_gated_delta_rule(q[:-1], k[:-1], v[:-1], beta[:-1], actual_seq_lengths=lengths,
                                              g=g[:-1], scale=0.5)
    expected_out, expected_final = gdr_loop(q[:-1], k[:-1], v[:-1], beta[:-1], g[:-1], lengths, 0.5)
    np.testing.assert_allclose(out, expected_out, rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(final, expected_final, rtol=2e-4, atol=2e-4)
    pool = np.zeros((3, nv, dv, dk), np.float32)
    pool[1] = final[2]
    step = txops.recurrent_gated_delta_rule(q[-1:], k[-1:], v[-1:], beta[-1:], pool, [1], np.array([1]), g=g[-1:],
                                            scale=0.5)
    full_out, _ = gdr_loop(q, k, v, beta, g, [5, 0, 10], 0.5)
    np.testing.assert_allclose(step, full_out[-1:], rtol=2e-4, atol=2e-4)


def test_no_torch_imported():
    code = ("import sys, numpy as np, txops\n"
            "x = np.ones((1, 1, 2, 4), np.float32)\n"
            "txops.interleave_rope(x, x[:, :, :, :], x)\n"
            "q = np.ones((3, 1, 4), np.float32) * 0.5\n"
            "txops.chunk_gated_delta_rule(q, q, np.ones((3, 1, 4), np.float32), np.ones((3, 1), np.float32) * 0.5)\n"
            "assert 'torch' not in sys.modules, 'txops imported torch'\n"
            "print(txops.__version__, np.__version__)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            cwd=os.path.dirname(os.path.abspath(__file__)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split()[0] == txops.__version__
