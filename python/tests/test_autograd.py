"""The RoPE operators inside torch autograd graphs: gradients (inputs, cos, sin) against autograd of the
pure-PyTorch forwards, torch.autograd.gradcheck in fp32 with tolerances to match, and in-place semantics."""
import pytest
import torch

import references as ref
import txops


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def grads_of(forward, inputs, weights):
    """Gradients of sum(forward(*inputs) * weights) w.r.t. inputs that require grad."""
    outputs = forward(*inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    loss = sum((o * w).sum() for o, w in zip(outputs, weights))
    return torch.autograd.grad(loss, [t for t in inputs if t.requires_grad])


def leaves(*tensors, requires_grad=(True,)):
    flags = list(requires_grad) + [requires_grad[-1]] * (len(tensors) - len(requires_grad))
    return [t.clone().requires_grad_(flag) for t, flag in zip(tensors, flags)]


@pytest.mark.parametrize("cos_grad", [False, True])
def test_interleave_rope_grads(cos_grad):
    x, cos, sin = randn(2, 3, 5, 32), randn(1, 1, 5, 32, seed=1), randn(1, 1, 5, 32, seed=2)
    weight = (randn(2, 3, 5, 32, seed=3),)
    flags = (True, cos_grad, cos_grad)
    ours = grads_of(txops.interleave_rope, leaves(x, cos, sin, requires_grad=flags), weight)
    theirs = grads_of(ref.interleave_rope, leaves(x, cos, sin, requires_grad=flags), weight)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("mode", range(4))
def test_inplace_partial_rotary_mul_grads(mode):
    x, cos, sin = randn(2, 4, 3, 24), randn(1, 4, 1, 16, seed=1), randn(1, 4, 1, 16, seed=2)
    weight = (randn(2, 4, 3, 24, seed=3),)

    def ours_forward(x_leaf, c, s):
        x_work = x_leaf * 1.0  # a non-leaf: in-place ops on leaves that require grad are refused by torch
        return txops.inplace_partial_rotary_mul(x_work, c, s, rotary_mode=mode, partial_slice=(4, 20))

    def ref_forward(x_leaf, c, s):
        return ref.partial_rotary_mul(x_leaf, c, s, mode, 4, 20)

    ours = grads_of(ours_forward, leaves(x, cos, sin), weight)
    theirs = grads_of(ref_forward, leaves(x, cos, sin), weight)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("layout,q_shape,k_shape,c_shape", [
    (1, (2, 5, 4, 32), (2, 5, 2, 32), (1, 5, 1, 32)),
    (3, (2, 4, 5, 32), (2, 2, 5, 32), (2, 1, 5, 32)),
    (4, (6, 4, 32), (6, 2, 32), (6, 1, 32)),
])
@pytest.mark.parametrize("mode", ["half", "interleave", "quarter"])
def test_apply_rotary_pos_emb_grads(layout, q_shape, k_shape, c_shape, mode):
    q, k = randn(*q_shape), randn(*k_shape, seed=4)
    cos, sin = randn(*c_shape, seed=1), randn(*c_shape, seed=2)
    weights = (randn(*q_shape, seed=5), randn(*k_shape, seed=6))
    code = ["half", "interleave", "quarter"].index(mode)

    def ours_forward(q_leaf, k_leaf, c, s):
        return txops.apply_rotary_pos_emb(q_leaf * 1.0, k_leaf * 1.0, c, s, layout=layout, rotary_mode=mode)

    ours = grads_of(ours_forward, leaves(q, k, cos, sin), weights)
    theirs = grads_of(lambda *t: ref.apply_rotary_pos_emb(*t, code), leaves(q, k, cos, sin), weights)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


def test_apply_rotary_pos_emb_partial_width_grads():
    q, k = randn(2, 3, 2, 64), randn(2, 3, 1, 64, seed=4)
    cos, sin = randn(1, 3, 1, 32, seed=1), randn(1, 3, 1, 32, seed=2)
    weights = (randn(2, 3, 2, 64, seed=5), randn(2, 3, 1, 64, seed=6))
    ours = grads_of(lambda a, b, c, s: txops.apply_rotary_pos_emb(a * 1.0, b * 1.0, c, s),
                    leaves(q, k, cos, sin), weights)
    theirs = grads_of(lambda *t: ref.apply_rotary_pos_emb(*t, 0), leaves(q, k, cos, sin), weights)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


# gradcheck: txops computes in fp32 (no fp64 kernels), so the finite differences use fp32 tolerances.
GRADCHECK = dict(eps=1e-2, atol=1e-3, rtol=1e-2, nondet_tol=0.0)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_gradcheck_interleave_rope():
    inputs = leaves(randn(1, 2, 3, 8), randn(1, 1, 3, 8, seed=1), randn(1, 1, 3, 8, seed=2))
    assert torch.autograd.gradcheck(txops.interleave_rope, inputs, **GRADCHECK)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_gradcheck_inplace_partial_rotary_mul():
    inputs = leaves(randn(1, 3, 2, 12), randn(1, 3, 1, 8, seed=1), randn(1, 3, 1, 8, seed=2))

    def forward(x, c, s):
        return txops.inplace_partial_rotary_mul(x.clone(), c, s, rotary_mode="half", partial_slice=(2, 10))
    assert torch.autograd.gradcheck(forward, inputs, **GRADCHECK)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_gradcheck_apply_rotary_pos_emb():
    inputs = leaves(randn(1, 3, 2, 8), randn(1, 3, 1, 8, seed=4), randn(1, 3, 1, 8, seed=1),
                    randn(1, 3, 1, 8, seed=2))

    def forward(q, k, c, s):
        return txops.apply_rotary_pos_emb(q.clone(), k.clone(), c, s, rotary_mode="interleave")
    assert torch.autograd.gradcheck(forward, inputs, **GRADCHECK)


def test_training_step_bf16():
    """A bf16 graph with a parameter before the rotation: grads flow and have the parameter's dtype."""
    weight = torch.nn.Parameter(randn(32, 32).to(torch.bfloat16))
    x = randn(2, 5, 4, 32).to(torch.bfloat16)
    cos, sin = randn(1, 5, 1, 32, seed=1).to(torch.bfloat16), randn(1, 5, 1, 32, seed=2).to(torch.bfloat16)
    q = x @ weight
    k = x[:, :, :2] @ weight
    q, k = txops.apply_rotary_pos_emb(q, k, cos, sin)
    (q.float().square().sum() + k.float().sum()).backward()
    assert weight.grad is not None and weight.grad.dtype == torch.bfloat16
    assert torch.isfinite(weight.grad.float()).all()


def test_no_graph_without_requires_grad():
    x, cos, sin = randn(1, 2, 3, 8), randn(1, 1, 3, 8, seed=1), randn(1, 1, 3, 8, seed=2)
    assert txops.interleave_rope(x, cos, sin).grad_fn is None
    with torch.no_grad():
        assert txops.interleave_rope(x.requires_grad_(), cos, sin).grad_fn is None


def test_apply_rotary_pos_emb_on_views_in_a_graph():
    """q and k as views of one projection (the usual model code): in place on the caller's views, grads right."""
    x, weight = randn(6, 16), randn(16, 3 * 8, seed=1)
    cos, sin = randn(6, 1, 8, seed=2), randn(6, 1, 8, seed=3)
    target = randn(6, 3, 8, seed=4)

    def loss_of(rope):
        w = weight.clone().requires_grad_()
        qk = (x @ w).unflatten(-1, (3, 8))
        q, k = qk[:, :2], qk[:, 2:]
        q_out, k_out = rope(q, k)
        loss = ((torch.cat((q_out, k_out), 1) - target) ** 2).sum()
        return loss, torch.autograd.grad(loss, w)[0], (q_out, q)

    loss, grad, (q_out, q) = loss_of(lambda q, k: txops.apply_rotary_pos_emb(q, k, cos, sin, layout="TND"))
    assert q_out is q
    expected_loss, expected_grad, _ = loss_of(lambda q, k: ref.apply_rotary_pos_emb(q, k, cos, sin, 0))
    torch.testing.assert_close(loss, expected_loss, atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(grad, expected_grad, atol=1e-4, rtol=1e-5)
