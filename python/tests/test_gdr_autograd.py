"""The gated delta rule's prefill inside torch autograd graphs: the gradients txops' backward
(chunk_gated_delta_rule_grad) gives against float64 autograd through the token loop (references.py), swept over
lengths around the chunk (1, C-1, C, C+1, 3C+5, ragged with an empty sequence), GQA ratios, odd head dims, g or
none, fp32 / bf16 states, bf16 activations, a scale other than Dk^-1/2; torch.autograd.gradcheck on tiny fp32
problems; torch.compile of a training step; numpy; chained calls; threads; the training forward's kept states
(chunk_gated_delta_rule_train) against the backward that recomputes them. (opcheck of the operators and of
their backward: test_torch_library.py.)"""
import numpy as np
import pytest
import torch

import references as ref
import txops

C = 64  # the chunk the kernels use


def problem(lengths, key_heads, value_heads, key_dim, value_dim, dtype=torch.float32, state_dtype=torch.float32,
            with_g=True, seed=0):
    gen = torch.Generator().manual_seed(seed)
    tokens = sum(lengths)
    q = torch.nn.functional.normalize(torch.randn(tokens, key_heads, key_dim, generator=gen), dim=-1)
    k = torch.nn.functional.normalize(torch.randn(tokens, key_heads, key_dim, generator=gen), dim=-1)
    v = torch.randn(tokens, value_heads, value_dim, generator=gen)
    beta = torch.rand(tokens, value_heads, generator=gen) * 0.9 + 0.05
    g = -torch.nn.functional.softplus(torch.randn(tokens, value_heads, generator=gen)) * 0.5 if with_g else None
    state = torch.randn(len(lengths), value_heads, value_dim, key_dim, generator=gen) * 0.2
    weights = (torch.randn(tokens, value_heads, value_dim, generator=gen),
               torch.randn(len(lengths), value_heads, value_dim, key_dim, generator=gen))
    inputs = dict(query=q.to(dtype), key=k.to(dtype), value=v.to(dtype), beta=beta.to(dtype),
                  initial_state=state.to(state_dtype), g=g)
    return inputs, torch.tensor(lengths, dtype=torch.int32), weights


NAMES = ("query", "key", "value", "beta", "initial_state", "g")


def gradients(forward, inputs, lengths, weights, scale, cast=None):
    """Gradients of sum(w_out * out) + sum(w_state * final_state) w.r.t. the present inputs, through `forward`;
    `cast` maps each input before it becomes a leaf (float64 for the oracle)."""
    leaves = {n: (t if cast is None else cast(t)).detach().clone().requires_grad_() for n, t in inputs.items()
              if t is not None}
    args = [leaves.get(n) for n in NAMES]
    out, final = forward(*args[:5], lengths, args[5], scale)
    loss = (out.double() * weights[0].double()).sum() + (final.double() * weights[1].double()).sum()
    grads = torch.autograd.grad(loss, list(leaves.values()))
    return dict(zip(leaves, grads))


def txops_forward(q, k, v, beta, state, lengths, g, scale):
    return txops.chunk_gated_delta_rule(q, k, v, beta, state, lengths, g=g, scale=scale)


def oracle_forward(q, k, v, beta, state, lengths, g, scale):
    return ref.chunk_gated_delta_rule(q, k, v, beta, state, lengths.tolist(), g, scale)


def errors(got, expected):
    """(max-relative, RMS-relative) of got against expected, both relative to expected's max / RMS."""
    got, expected = got.double(), expected.double()
    diff = got - expected
    scale_max = expected.abs().max().clamp_min(1e-30)
    scale_rms = expected.pow(2).mean().sqrt().clamp_min(1e-30)
    return (diff.abs().max() / scale_max).item(), (diff.pow(2).mean().sqrt() / scale_rms).item()


# The one tolerance table's rows for the backward (tests/support: gdr_backward): fp32 RMS-rel 1e-5 (max-rel 1e-4);
# 16-bit activations: gradients stored in bf16 / fp16, so one rounding (2^-8 relative) on top of fp32's error.
TOLERANCE = {torch.float32: (1e-4, 1e-5), torch.bfloat16: (2 ** -6, 2 ** -7), torch.float16: (2 ** -8, 2 ** -9)}


CASES = [
    # lengths, Nk, Nv, Dk, Dv, dtype, state dtype, g, scale
    ([1], 1, 1, 8, 8, torch.float32, torch.float32, True, None),
    ([C - 1], 2, 4, 16, 8, torch.float32, torch.float32, True, 0.3),
    ([C], 1, 3, 5, 7, torch.float32, torch.float32, False, None),
    ([C + 1], 1, 8, 8, 16, torch.float32, torch.float32, True, 1.7),
    ([3 * C + 5], 2, 2, 12, 9, torch.float32, torch.bfloat16, True, None),
    ([5, 0, C + 3, 1], 2, 4, 16, 16, torch.float32, torch.float32, True, 0.25),
    ([5, 0, C + 3, 1], 2, 4, 16, 16, torch.bfloat16, torch.float32, True, None),
    ([2 * C], 1, 2, 32, 32, torch.float16, torch.bfloat16, False, 0.5),
]


def _case_id(case):
    lengths, nk, nv, dk, dv, dtype, sdtype, with_g, scale = case
    return (f"L{'-'.join(map(str, lengths))}_Nk{nk}_Nv{nv}_Dk{dk}_Dv{dv}_{str(dtype)[6:]}_state-{str(sdtype)[6:]}"
            f"{'_g' if with_g else ''}{'' if scale is None else f'_scale{scale}'}")


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_gradients_match_float64_autograd_of_the_token_loop(case):
    lengths, nk, nv, dk, dv, dtype, state_dtype, with_g, scale = case
    inputs, lens, weights = problem(lengths, nk, nv, dk, dv, dtype, state_dtype, with_g)
    scale = dk ** -0.5 if scale is None else scale
    ours = gradients(txops_forward, inputs, lens, weights, scale)
    # the oracle on the same (rounded) inputs, in float64
    theirs = gradients(oracle_forward, inputs, lens, weights, scale, cast=lambda t: t.double())
    max_tol, rms_tol = TOLERANCE[dtype]
    for name, expected in theirs.items():
        got = ours[name]
        assert got.dtype == inputs[name].dtype and got.shape == expected.shape, name
        if state_dtype == torch.bfloat16:
            # the final state is bf16, so autograd hands its gradient over in bf16 (rounded, 2^-9 relative):
            # every gradient carries that rounding
            tol = TOLERANCE[torch.bfloat16]
        elif name == "g":
            tol = (max(max_tol, 1e-4), max(rms_tol, 1e-5))  # fp32, from 16-bit inputs
        else:
            tol = (max_tol, rms_tol)
        max_rel, rms_rel = errors(got, expected)
        assert max_rel <= tol[0] and rms_rel <= tol[1], (name, max_rel, rms_rel)


@pytest.mark.filterwarnings("ignore:Input #")  # fp32 inputs: txops has no fp64 kernels
def test_gradcheck_tiny_fp32():
    """Finite differences of txops' own forward against its backward (fp32: eps and tolerances to match)."""
    inputs, lens, _ = problem([3, 4], 1, 2, 4, 3, seed=3)
    args = [inputs[n].detach().clone().requires_grad_() for n in NAMES]

    def forward(q, k, v, beta, state, g):
        return txops.chunk_gated_delta_rule(q, k, v, beta, state, lens, g=g, scale=0.7)
    assert torch.autograd.gradcheck(forward, args, eps=1e-2, atol=5e-3, rtol=5e-3, nondet_tol=0.0)


def test_only_the_inputs_that_require_grad_get_one():
    inputs, lens, weights = problem([9], 1, 2, 8, 8)
    q = inputs["query"].clone().requires_grad_()
    out, final = txops.chunk_gated_delta_rule(q, inputs["key"], inputs["value"], inputs["beta"],
                                              inputs["initial_state"], lens, g=inputs["g"])
    assert out.requires_grad and final.requires_grad and out.grad_fn is not None
    (out * weights[0]).sum().backward()  # final_state unused: its gradient is zero
    expected = gradients(oracle_forward, {"query": inputs["query"], **{n: inputs[n] for n in NAMES[1:]}}, lens,
                         (weights[0], torch.zeros_like(weights[1])), 8 ** -0.5, cast=lambda t: t.double())
    torch.testing.assert_close(q.grad.double(), expected["query"], atol=1e-5, rtol=1e-4)


def test_default_initial_state_and_out_arguments_in_a_graph():
    inputs, lens, weights = problem([10], 1, 1, 8, 4)
    v = inputs["value"].clone().requires_grad_()
    out, final = torch.empty(10, 1, 4), torch.empty(1, 1, 4, 8)
    got, got_final = txops.chunk_gated_delta_rule(inputs["query"], inputs["key"], v, inputs["beta"], g=inputs["g"],
                                                  out=out, final_state=final)
    assert got is out and got_final is final and out.grad_fn is not None
    (out * weights[0]).sum().backward()
    expected = gradients(oracle_forward, {**inputs, "initial_state": torch.zeros(1, 1, 4, 8)}, lens,
                         (weights[0], torch.zeros(1, 1, 4, 8)), 8 ** -0.5, cast=lambda t: t.double())
    torch.testing.assert_close(v.grad.double(), expected["value"], atol=1e-5, rtol=1e-4)


def test_two_chained_calls_give_the_gradients_of_one():
    """A sequence run as two calls (the first's final state the second's initial state) differentiates to the
    same gradients as one call over all of it."""
    inputs, lens, weights = problem([2 * C + 7], 1, 2, 16, 16, seed=4)
    cut = C + 3
    leaves = {n: t.clone().requires_grad_() for n, t in inputs.items()}
    whole, whole_final = txops.chunk_gated_delta_rule(*(leaves[n] for n in NAMES[:5]), lens, g=leaves["g"])
    loss = (whole * weights[0]).sum() + (whole_final * weights[1]).sum()
    expected = torch.autograd.grad(loss, list(leaves.values()))
    leaves = {n: t.clone().requires_grad_() for n, t in inputs.items()}
    token_inputs = [leaves[n] for n in ("query", "key", "value", "beta", "g")]
    first = [t[:cut] for t in token_inputs]
    second = [t[cut:] for t in token_inputs]
    out1, mid = txops.chunk_gated_delta_rule(*first[:4], leaves["initial_state"], [cut], g=first[4])
    out2, final = txops.chunk_gated_delta_rule(*second[:4], mid, [2 * C + 7 - cut], g=second[4])
    out = torch.cat((out1, out2))
    loss = (out * weights[0]).sum() + (final * weights[1]).sum()
    got = torch.autograd.grad(loss, list(leaves.values()))
    for name, a, b in zip(leaves, got, expected):
        max_rel, rms_rel = errors(a, b)
        assert max_rel <= 1e-5 and rms_rel <= 1e-6, (name, max_rel, rms_rel)


def test_grad_function_on_numpy_matches_torch():
    inputs, lens, weights = problem([7, 0, 12], 1, 2, 8, 8, seed=5)
    torch_grads = txops.chunk_gated_delta_rule_grad(*(inputs[n] for n in NAMES[:5]), lens, weights[0], weights[1],
                                                    g=inputs["g"], scale=0.4)
    numpy_grads = txops.chunk_gated_delta_rule_grad(*(inputs[n].numpy() for n in NAMES[:5]), lens.numpy(),
                                                    weights[0].numpy(), weights[1].numpy(), g=inputs["g"].numpy(),
                                                    scale=0.4)
    for a, b in zip(torch_grads, numpy_grads):
        assert isinstance(b, np.ndarray)
        assert np.array_equal(a.numpy(), b)  # the same kernel on the same bits
    no_g = txops.chunk_gated_delta_rule_grad(*(inputs[n] for n in NAMES[:5]), lens, weights[0], g=inputs["g"],
                                             need_grad_g=False)
    assert no_g[4] is None
    # a zero-length sequence: dInitialState = dFinalState
    assert torch.equal(torch_grads[5][1], weights[1][1])


def test_bit_identical_for_one_to_four_threads():
    inputs, lens, weights = problem([C + 9, 40], 2, 4, 16, 16, seed=6)
    results = []
    try:
        for threads in (1, 2, 3, 4):
            txops.set_num_threads(threads)
            results.append(txops.chunk_gated_delta_rule_grad(*(inputs[n] for n in NAMES[:5]), lens, weights[0],
                                                             weights[1], g=inputs["g"]))
    finally:
        txops.set_num_threads(0)
    for other in results[1:]:
        assert all(torch.equal(a, b) for a, b in zip(results[0], other))


def test_compiled_training_step_is_bit_identical_to_eager():
    inputs, lens, weights = problem([C + 5], 1, 2, 16, 16, seed=8)
    projection = torch.nn.Linear(16, 16, bias=False)
    torch.nn.init.normal_(projection.weight, std=0.2)

    def step(q, k, v, beta, state, g):
        out, final = txops.chunk_gated_delta_rule(q, k, projection(v), beta, state, lens, g=g)
        loss = (out * weights[0]).sum() + (final * weights[1]).sum()
        return torch.autograd.grad(loss, [q, v, projection.weight])

    def leaves():
        return [inputs[n].clone().requires_grad_(n in ("query", "value")) for n in NAMES]
    eager = step(*leaves())
    compiled = torch.compile(step, fullgraph=False)(*leaves())
    assert all(torch.equal(a, b) for a, b in zip(eager, compiled))


def test_recurrent_decode_still_refuses_autograd():
    inputs, _, _ = problem([2], 1, 1, 8, 8)
    pool = torch.zeros(3, 1, 8, 8)
    with pytest.raises(RuntimeError, match="query requires grad"):
        txops.recurrent_gated_delta_rule(inputs["query"].requires_grad_(), inputs["key"], inputs["value"],
                                         inputs["beta"], pool, [1, 1], [0, 2])


def test_kept_states_give_the_recomputing_backwards_gradients():
    """Under autograd the public function runs the training forward, which keeps its fp32 states every 64 tokens
    ((T // 64, Nv, Dv, Dk), key-major in memory) and its corrected values for the backward; the gradients are those
    of the registered
    operator whose backward recomputes the states: the same bits with fp32 activations, within the bf16
    tolerance with bf16 (whose forward grams may use vdpbf16ps)."""
    for dtype in (torch.float32, torch.bfloat16):
        inputs, lens, weights = problem([2 * C + 9, 0, C, 5], 2, 4, 16, 8, dtype=dtype, seed=9)
        leaves = {n: t.clone().requires_grad_() for n, t in inputs.items()}
        out, final = txops.chunk_gated_delta_rule(*(leaves[n] for n in NAMES[:5]), lens, g=leaves["g"])
        assert "chunk_gated_delta_rule_train" in out.grad_fn.name()
        loss = (out.double() * weights[0].double()).sum() + (final.double() * weights[1].double()).sum()
        kept = torch.autograd.grad(loss, list(leaves.values()))
        leaves = {n: t.clone().requires_grad_() for n, t in inputs.items()}
        out, final = torch.ops.txops.chunk_gated_delta_rule(*(leaves[n] for n in NAMES[:5]), lens, leaves["g"],
                                                            16 ** -0.5)
        loss = (out.double() * weights[0].double()).sum() + (final.double() * weights[1].double()).sum()
        recomputed = torch.autograd.grad(loss, list(leaves.values()))
        for name, a, b in zip(leaves, kept, recomputed):
            if dtype == torch.float32:
                assert torch.equal(a, b), name
            else:
                max_rel, rms_rel = errors(a, b)
                assert max_rel <= 2 ** -6 and rms_rel <= 2 ** -8, (name, max_rel, rms_rel)
    # what is kept: one fp32 state per 64 tokens and value head, rows past the sequences' own zero
    inputs, lens, weights = problem([2 * C + 9, 0, C, 5], 2, 4, 16, 8, seed=9)
    _, _, states, corrected = torch.ops.txops.chunk_gated_delta_rule_train(*(inputs[n] for n in NAMES[:5]), lens,
                                                                           inputs["g"], 0.25)
    assert states.shape == (3, 4, 8, 16) and states.dtype == torch.float32 and states.stride() == (512, 128, 1, 8)
    assert torch.count_nonzero(states[:3]) > 0
    assert corrected.shape == inputs["value"].shape and corrected.dtype == torch.float32
    # set_gdr_keep_forward_states(False): the plain operator (its backward recomputes), the same bits (fp32)
    leaves = {n: t.clone().requires_grad_() for n, t in inputs.items()}
    txops.set_gdr_keep_forward_states(False)
    try:
        out, final = txops.chunk_gated_delta_rule(*(leaves[n] for n in NAMES[:5]), lens, g=leaves["g"])
    finally:
        txops.set_gdr_keep_forward_states(True)
    assert "chunk_gated_delta_rule_train" not in out.grad_fn.name()
    loss = (out.double() * weights[0].double()).sum() + (final.double() * weights[1].double()).sum()
    plain = torch.autograd.grad(loss, list(leaves.values()))
    leaves = {n: t.clone().requires_grad_() for n, t in inputs.items()}
    out, final = txops.chunk_gated_delta_rule(*(leaves[n] for n in NAMES[:5]), lens, g=leaves["g"])
    loss = (out.double() * weights[0].double()).sum() + (final.double() * weights[1].double()).sum()
    kept = torch.autograd.grad(loss, list(leaves.values()))
    assert all(torch.equal(a, b) for a, b in zip(plain, kept))
    # inference keeps nothing: without autograd the plain operator runs
    with torch.no_grad():
        out, _ = txops.chunk_gated_delta_rule(*(inputs[n].requires_grad_() for n in NAMES[:5]), lens, g=inputs["g"])
    assert out.grad_fn is None


def test_numpy_backward_reads_the_forwards_snapshots():
    """numpy: the forward's snapshots (checkpoint_every_n_tokens=64, fp32, key-major), with and without its
    corrected values, handed to chunk_gated_delta_rule_grad give the recomputing call's gradients bit for bit (fp32)."""
    inputs, lens, weights = problem([C + 9, 2 * C], 1, 2, 8, 8, seed=10)
    args = [inputs[n].numpy() for n in NAMES[:5]]
    snapshots = np.zeros((3, 2, 8, 8), np.float32).transpose(0, 1, 3, 2)  # (R, Nv, Dv, Dk), key-major memory
    corrected = np.zeros((C + 9 + 2 * C, 2, 8), np.float32)
    txops.chunk_gated_delta_rule(*args, lens.numpy(), g=inputs["g"].numpy(), checkpoint_every_n_tokens=C,
                                 state_checkpoints=snapshots, corrected_values=corrected)
    plain = txops.chunk_gated_delta_rule_grad(*args, lens.numpy(), weights[0].numpy(), weights[1].numpy(),
                                              g=inputs["g"].numpy())
    kept = txops.chunk_gated_delta_rule_grad(*args, lens.numpy(), weights[0].numpy(), weights[1].numpy(),
                                             g=inputs["g"].numpy(), forward_checkpoints=snapshots)
    both = txops.chunk_gated_delta_rule_grad(*args, lens.numpy(), weights[0].numpy(), weights[1].numpy(),
                                             g=inputs["g"].numpy(), forward_checkpoints=snapshots,
                                             forward_corrected_values=corrected)
    for a, b, c in zip(plain, kept, both):
        assert np.array_equal(a, b) and np.array_equal(a, c)
