"""torch.compile of models that call txops: no graph break (fullgraph=True), results bit for bit those of eager.

One small inference block calls every public operator (RoPE in place on views of a fused projection, the
interleaved RoPE, partial RoPE, the grad operators, a gated-delta-rule prefill then a decode step on a state
pool) and is compiled with inductor; a RoPE training step is compiled with the aot_eager backend (autograd
through torch.ops.txops, backward included). Inductor's caches live in build-py/ (see conftest.py), so a second
run is quicker. The glue in the model is chosen to be exact under inductor (views, cat, copies, mm without bias,
elementwise products and sums), so that bit equality tests txops, not inductor's arithmetic."""
import pytest
import torch

import txops

TOKENS, LENGTHS = 12, [7, 5]
NK, NV, DK, DV = 1, 2, 16, 16
HEADS, HEAD_DIM = 2, 16


def randn(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


class Block(torch.nn.Module):
    """A toy hybrid layer: attention-style q/k RoPE and a Gated-DeltaNet-style recurrence on one projection."""

    def __init__(self, hidden=32):
        super().__init__()
        width = 2 * HEADS * HEAD_DIM + NK * DK * 2 + NV * DV + NV
        self.weight = torch.nn.Parameter(randn(hidden, width, seed=1) * hidden ** -0.5, requires_grad=False)

    def forward(self, h, cos, sin, cos_i, sin_i, gate, state0, pool, lengths, slots):
        fused = h @ self.weight                                          # (T, width)
        qa, ka, qg, kg, v, beta = fused.split([HEADS * HEAD_DIM, HEADS * HEAD_DIM, NK * DK, NK * DK, NV * DV, NV], -1)
        q = qa.unflatten(-1, (HEADS, HEAD_DIM))                          # strided views, rotated in place (TND)
        k = ka.unflatten(-1, (HEADS, HEAD_DIM))
        txops.apply_rotary_pos_emb(q, k, cos, sin, layout="TND", rotary_mode="half")
        x = q.unsqueeze(0).transpose(1, 2)                               # (1, N, T, D) for interleave_rope
        y = txops.interleave_rope(x, cos_i, sin_i)
        z = k.unsqueeze(0).clone()                                       # (1, T, N, D): partial RoPE on [4, 12)
        txops.inplace_partial_rotary_mul(z, cos_i[..., 4:12].transpose(1, 2), sin_i[..., 4:12].transpose(1, 2),
                                         rotary_mode="interleave", partial_slice=(4, 12))
        dz = txops.inplace_partial_rotary_mul_backward(z.clone(), cos_i[..., :HEAD_DIM].transpose(1, 2),
                                                       sin_i[..., :HEAD_DIM].transpose(1, 2), rotary_mode="quarter")
        gq, gk, gcos, _ = txops.apply_rotary_pos_emb_grad(q, k, cos, sin, query=q, key=k, layout="TND")
        qn = qg.unflatten(-1, (NK, DK)) * 0.25                          # |k| ~ 1: a stable recurrence
        kn = kg.unflatten(-1, (NK, DK)) * 0.25
        vv = v.unflatten(-1, (NV, DV))
        b = beta * 0.0 + gate                                            # beta in (0, 1), exact glue
        out, state = txops.chunk_gated_delta_rule(qn, kn, vv, b, state0, lengths, scale=0.25)
        pool = pool.clone()
        step = txops.recurrent_gated_delta_rule(qn[-2:], kn[-2:], vv[-2:], b[-2:], pool, [1, 1], slots, scale=0.25)
        return y, z, dz, gq, gk, gcos, out, state, step, pool


def inputs():
    h = randn(TOKENS, 32, seed=2)
    angles = randn(TOKENS, 1, HEAD_DIM, seed=3)
    cos, sin = angles.cos(), angles.sin()
    angles_i = randn(1, 1, TOKENS, HEAD_DIM, seed=4)
    state0 = randn(len(LENGTHS), NV, DV, DK, seed=5) * 0.1
    pool = randn(4, NV, DV, DK, seed=6) * 0.1
    gate = torch.rand(TOKENS, NV, generator=torch.Generator().manual_seed(7)) * 0.8 + 0.1
    return (h, cos, sin, angles_i.cos(), angles_i.sin(), gate, state0, pool, torch.tensor(LENGTHS, dtype=torch.int32),
            torch.tensor([3, 1], dtype=torch.int32))


def assert_bitwise_equal(actual, expected):
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert a.shape == e.shape and a.dtype == e.dtype, i
        assert torch.equal(a.view(-1).view(torch.int32), e.view(-1).view(torch.int32)), f"output {i} differs"


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def inductor_recording(targets):
    """The inductor backend, recording the operators of the graph Dynamo hands it."""
    def backend(graph_module, example_inputs):
        from torch._inductor.compile_fx import compile_fx
        targets.extend(str(n.target) for n in graph_module.graph.nodes if n.op == "call_function")
        return compile_fx(graph_module, example_inputs)
    return backend


def test_compiled_inference_block_matches_eager_bit_for_bit():
    model = Block()
    targets = []
    with torch.no_grad():
        expected = model(*inputs())
        compiled = torch.compile(model, fullgraph=True, dynamic=False, backend=inductor_recording(targets))
        actual = compiled(*inputs())
        again = compiled(*inputs())  # the cached graph, not a retrace
    assert_bitwise_equal(actual, expected)
    assert_bitwise_equal(again, expected)
    called = {t.split(".")[1] for t in targets if t.startswith("txops.")}
    assert called == {"apply_rotary_pos_emb", "interleave_rope", "inplace_partial_rotary_mul",
                      "inplace_partial_rotary_mul_grad", "apply_rotary_pos_emb_grad", "chunk_gated_delta_rule",
                      "recurrent_gated_delta_rule"}, targets


def rope_loss(q_proj, k_proj, cos, sin, cos_i, sin_i, x):
    q, k = txops.apply_rotary_pos_emb(q_proj * 1.0, k_proj * 1.0, cos, sin, layout="BSND", rotary_mode="interleave")
    y = txops.interleave_rope(x, cos_i, sin_i)
    z = txops.inplace_partial_rotary_mul(x.transpose(1, 2) * 2.0, cos_i[..., :8].transpose(1, 2),
                                         sin_i[..., :8].transpose(1, 2), rotary_mode="half", partial_slice=(8, 16))
    return (q * q).sum() + (k * 3.0).sum() + (y * y).sum() + (z * z).sum()


def test_compiled_training_step_matches_eager():
    """Autograd through the registered operators inside a compiled graph: forward and all gradients as eager."""
    def leaves():
        return [randn(*shape, seed=s).requires_grad_() for s, shape in enumerate(
            [(2, 5, 4, 16), (2, 5, 2, 16), (1, 5, 1, 16), (1, 5, 1, 16), (1, 1, 5, 16), (1, 1, 5, 16),
             (2, 4, 5, 16)])]
    eager_inputs, compiled_inputs = leaves(), leaves()
    expected = rope_loss(*eager_inputs)
    expected_grads = torch.autograd.grad(expected, eager_inputs)
    compiled = torch.compile(rope_loss, fullgraph=True, dynamic=False, backend="aot_eager")
    actual = compiled(*compiled_inputs)
    grads = torch.autograd.grad(actual, compiled_inputs)
    assert torch.equal(actual, expected)
    for g, e in zip(grads, expected_grads):
        assert torch.equal(g, e)


def out_variants(x, cos_i, sin_i, q, k, cos, sin, dq, dk, dv, beta, pool, lengths, slots):
    """The out= forms (the eager fast path's entry points): under dynamo they must trace to the operators."""
    y = torch.empty_like(x)
    txops.interleave_rope(x, cos_i, sin_i, out=y)
    grads = (torch.empty_like(q), torch.empty_like(k))
    txops.apply_rotary_pos_emb_grad(q, k, cos, sin, layout="TND", out=grads)
    pool = pool.clone()
    step = torch.empty_like(dv)
    txops.recurrent_gated_delta_rule(dq, dk, dv, beta, pool, lengths, slots, scale=0.25, out=step)
    return y, grads[0], grads[1], step, pool


def test_compiled_out_variants_match_eager_bit_for_bit():
    h, cos, sin, cos_i, sin_i, gate, _, pool, _, slots = inputs()
    q, k = randn(TOKENS, HEADS, HEAD_DIM, seed=8), randn(TOKENS, HEADS, HEAD_DIM, seed=9)
    x = randn(1, HEADS, TOKENS, HEAD_DIM, seed=10)
    dq, dk = randn(2, NK, DK, seed=11) * 0.25, randn(2, NK, DK, seed=12) * 0.25
    dv, beta = randn(2, NV, DV, seed=13), gate[:2]
    args = (x, cos_i, sin_i, q, k, cos, sin, dq, dk, dv, beta, pool, torch.tensor([1, 1], dtype=torch.int32), slots)
    targets = []
    expected = out_variants(*args)
    compiled = torch.compile(out_variants, fullgraph=True, dynamic=False, backend=inductor_recording(targets))
    assert_bitwise_equal(compiled(*args), expected)
    called = {t.split(".")[1] for t in targets if t.startswith("txops.")}
    assert called == {"interleave_rope_out", "apply_rotary_pos_emb_grad", "recurrent_gated_delta_rule_out"}, targets
