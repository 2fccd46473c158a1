"""txops.fla (flash-linear-attention's gated-delta-rule API) against fla's own pure-PyTorch references
(fla/ops/gated_delta_rule/naive.py of the installed fla, loaded from its file: importing fla.ops needs Triton),
over a sweep of shapes, GVA, varlen, state layouts, dtypes and fla's in-kernel options; and txops registered in
fla's backend registry (only where fla.ops imports, i.e. with Triton installed)."""
import importlib.util
import os
import random

import pytest
import torch
import torch.nn.functional as F

import txops
import txops.fla as tfla

fla_spec = importlib.util.find_spec("fla")
if fla_spec is None:
    pytest.skip("flash-linear-attention (fla-core) is not installed", allow_module_level=True)


def _load_naive():
    path = os.path.join(fla_spec.submodule_search_locations[0], "ops", "gated_delta_rule", "naive.py")
    spec = importlib.util.spec_from_file_location("fla_gated_delta_rule_naive", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


naive = _load_naive()


def reference(q, k, v, g, beta, scale, h0, cu_seqlens, chunked, gk=None):
    """fla's naive functions per sequence (they have no GVA, varlen or gk): q/k heads repeated as fla's kernels
    read them, states [N, HV, K, V] fp32. With gk, a token loop written here."""
    group = v.shape[2] // q.shape[2]
    q, k = q.repeat_interleave(group, 2), k.repeat_interleave(group, 2)
    B, T, HV, K, V = *v.shape[:3], q.shape[-1], v.shape[-1]
    if cu_seqlens is None:
        pieces = [(b, slice(None)) for b in range(B)]
    else:
        pieces = [(0, slice(int(a), int(b))) for a, b in zip(cu_seqlens[:-1], cu_seqlens[1:])]
    outs, finals = [], []
    for n, (b, rows) in enumerate(pieces):
        args = [x[b:b + 1, rows] for x in (q, k, v, g, beta)]
        state = None if h0 is None else h0[n:n + 1]
        if args[0].shape[1] == 0:
            outs.append(torch.zeros(1, 0, HV, V))
            finals.append(torch.zeros(1, HV, K, V) if state is None else state.float())
            continue
        if gk is not None:
            o, s = recurrent_with_gk(*args, gk[b:b + 1, rows], scale, state)
        elif chunked:
            o, s = naive.naive_chunk_gated_delta_rule(*args, scale=scale, initial_state=state, output_final_state=True)
        else:
            qq, kk, vv, gg, bb = args
            o, s = naive.naive_recurrent_gated_delta_rule(qq, kk, vv, bb, gg, scale=scale, initial_state=state,
                                                          output_final_state=True)
        outs.append(o.float())
        finals.append(s.float())
    if cu_seqlens is None:
        return torch.cat(outs, 0), torch.cat(finals, 0)
    return torch.cat(outs, 1), torch.cat(finals, 0)


def recurrent_with_gk(q, k, v, g, beta, gk, scale, state):
    """fla's fused_recurrent kernel's per-token order with gk: h *= exp(g); h *= exp(gk) per key row; delta rule."""
    q, k, v, g, beta, gk = (x[0].float() for x in (q, k, v, g, beta, gk))
    h = torch.zeros(q.shape[1], q.shape[2], v.shape[2]) if state is None else state[0].float().clone()
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    out = []
    for t in range(q.shape[0]):
        h = h * g[t].exp()[:, None, None] * gk[t].exp()[:, :, None]
        delta = beta[t][:, None] * (v[t] - torch.einsum("hkv,hk->hv", h, k[t]))
        h = h + k[t][:, :, None] * delta[:, None, :]
        out.append(torch.einsum("hkv,hk->hv", h, q[t] * scale))
    return torch.stack(out)[None], h[None]


def relative_error(got, expected):
    got, expected = got.double(), expected.double()
    denom = max(expected.abs().max().item(), expected.square().mean().sqrt().item(), 1e-30)
    return (got - expected).abs().max().item() / denom


BOUND = {torch.float32: 1e-4, torch.float16: 2 ** -9, torch.bfloat16: 2 ** -7}


def make_inputs(B, T, H, HV, K, V, dtype, seed, normalise=True, with_state=True):
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(B, T, H, K, generator=gen), torch.randn(B, T, H, K, generator=gen)
    if normalise:
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    v = torch.randn(B, T, HV, V, generator=gen)
    g = F.logsigmoid(torch.randn(B, T, HV, generator=gen) + 2)
    beta = torch.rand(B, T, HV, generator=gen).clamp(0.05, 0.95)
    h0 = torch.randn(B if B > 1 else 4, HV, K, V, generator=gen) * 0.1 if with_state else None
    return [x.to(dtype) for x in (q, k, v)] + [g, beta.to(dtype), h0]


def sweep(count, seed=1234):
    """count fla call configurations drawn from a fixed generator (same every run)."""
    rng = random.Random(seed)
    cases = []
    for i in range(count):
        H = rng.choice([1, 2, 4])
        HV = H * rng.choice([1, 2])
        K, V = rng.choice([(16, 16), (32, 16), (16, 64), (64, 32), (128, 128)])
        varlen = i % 3 == 0
        T = rng.choice([1, 7] if K >= 64 else [1, 7, 40, 70])  # the references' cost grows with K * V * T
        cases.append(dict(
            H=H, HV=HV, K=K, V=V, varlen=varlen, B=1 if varlen else rng.choice([1, 2]), T=T,
            chunked_reference=i % 2 == 0, dtype=rng.choice([torch.float32, torch.float32, torch.bfloat16,
                                                            torch.float16]),
            with_state=rng.random() < 0.7, state_v_first=rng.random() < 0.3, l2norm=rng.random() < 0.4,
            scale=rng.choice([None, 0.3]), output_final_state=rng.random() < 0.8, seed=i))
    return cases


def _ids(case):
    return (f"B{case['B']}T{case['T']}H{case['H']}HV{case['HV']}K{case['K']}V{case['V']}-"
            f"{str(case['dtype']).split('.')[-1]}{'-varlen' if case['varlen'] else ''}"
            f"{'-vfirst' if case['state_v_first'] else ''}{'-l2' if case['l2norm'] else ''}")


@pytest.mark.parametrize("case", sweep(12), ids=_ids)
def test_against_fla_naive(case):
    """Both txops.fla functions on one fla call configuration, against naive_chunk_gated_delta_rule (even cases)
    or naive_recurrent_gated_delta_rule (odd cases)."""
    dtype = case["dtype"]
    q, k, v, g, beta, h0 = make_inputs(case["B"], 0 if case["varlen"] else case["T"], case["H"], case["HV"],
                                       case["K"], case["V"], dtype, case["seed"], normalise=not case["l2norm"],
                                       with_state=case["with_state"])
    cu_seqlens = None
    if case["varlen"]:  # four sequences, one of them empty
        lengths = [case["T"], 0, 5, 40]
        cu_seqlens = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), dtype=torch.long)
        q, k, v, g, beta, h0 = make_inputs(1, sum(lengths), case["H"], case["HV"], case["K"], case["V"], dtype,
                                           case["seed"], normalise=not case["l2norm"], with_state=case["with_state"])
    if h0 is not None and cu_seqlens is None:
        h0 = h0[:case["B"]]
    state_in = None if h0 is None else (h0.transpose(-1, -2).contiguous() if case["state_v_first"] else h0)
    state_copy = None if state_in is None else state_in.clone()
    kwargs = dict(scale=case["scale"], initial_state=state_in, output_final_state=case["output_final_state"],
                  use_qk_l2norm_in_kernel=case["l2norm"], state_v_first=case["state_v_first"], cu_seqlens=cu_seqlens)
    results = {"chunk": tfla.chunk_gated_delta_rule(q, k, v, g, beta, **kwargs),
               "fused_recurrent": tfla.fused_recurrent_gated_delta_rule(q, k, v, g, beta=beta, **kwargs)}
    if case["l2norm"]:  # fla's in-kernel l2norm, then the references on the normalised inputs
        q, k = tfla._l2norm(q), tfla._l2norm(k)
    expected_o, expected_final = reference(q, k, v, g, beta, case["scale"], h0, cu_seqlens,
                                           chunked=case["chunked_reference"])
    for fn, (o, final) in results.items():
        assert o.shape == v.shape and o.dtype == dtype, fn
        assert relative_error(o, expected_o) <= BOUND[dtype], fn
        if case["output_final_state"]:
            assert final.dtype == torch.float32, fn
            expected = expected_final.transpose(-1, -2) if case["state_v_first"] else expected_final
            assert final.shape == expected.shape, fn
            assert relative_error(final, expected) <= BOUND[dtype], fn
        else:
            assert final is None, fn
    if state_in is not None:
        assert torch.equal(state_in, state_copy)  # the initial state is read, never written


@pytest.mark.parametrize("varlen,state_v_first,in_kernel", [(False, False, False), (True, True, True)])
def test_gradients_against_autograd_of_fla_naive(varlen, state_v_first, in_kernel):
    """Training through txops.fla: the gradients of q, k, v, g, beta and the initial state (and of A_log / dt_bias
    with fla's in-kernel gate) against autograd through fla's naive chunked reference, in fp32."""
    B, T = (1, 75) if varlen else (2, 70)
    q, k, v, g, beta, h0 = make_inputs(B, T, 2, 4, 16, 16, torch.float32, 11, normalise=False)
    cu_seqlens = torch.tensor([0, 5, 5, 75]) if varlen else None
    h0 = h0[:3] if varlen else h0[:B]
    gen = torch.Generator().manual_seed(12)
    A_log, dt_bias = torch.randn(4, generator=gen) * 0.3, torch.randn(4, generator=gen) * 0.3
    w_out = torch.randn(B, T, 4, 16, generator=gen)
    w_state = torch.randn(*h0.shape, generator=gen)

    def loss_of(fn, leaves):
        q, k, v, g, beta, h0, A_log, dt_bias = leaves
        if fn is None:  # the reference: the in-kernel options written out, then fla's naive chunked function
            q, k = tfla._l2norm(q), tfla._l2norm(k)
            if in_kernel:
                g = -A_log.exp() * F.softplus(g + dt_bias)
                beta = beta.sigmoid()
            o, final = reference(q, k, v, g, beta, None, h0, cu_seqlens, chunked=True)
        else:
            state = h0.transpose(-1, -2) if state_v_first else h0
            o, final = fn(q, k, v, g, beta=beta, initial_state=state, output_final_state=True,
                          use_qk_l2norm_in_kernel=True, cu_seqlens=cu_seqlens, state_v_first=state_v_first,
                          use_gate_in_kernel=in_kernel, A_log=A_log, dt_bias=dt_bias,
                          use_beta_sigmoid_in_kernel=in_kernel)
            final = final.transpose(-1, -2) if state_v_first else final
        return (o * w_out).sum() + (final * w_state).sum()

    tensors = (q, k, v, g, beta, h0, A_log, dt_bias)
    expected_leaves = [t.detach().clone().requires_grad_() for t in tensors]
    expected = torch.autograd.grad(loss_of(None, expected_leaves), expected_leaves, allow_unused=True)
    for fn in (tfla.chunk_gated_delta_rule, tfla.fused_recurrent_gated_delta_rule):
        leaves = [t.detach().clone().requires_grad_() for t in tensors]
        got = torch.autograd.grad(loss_of(fn, leaves), leaves, allow_unused=True)
        for name, a, b in zip(("q", "k", "v", "g", "beta", "h0", "A_log", "dt_bias"), got, expected):
            if b is None:
                assert a is None or not a.any(), name
                continue
            assert relative_error(a, b) <= 1e-4, (fn.__name__, name, relative_error(a, b))


def test_gk_and_defaults_of_fused_recurrent():
    q, k, v, g, beta, h0 = make_inputs(2, 9, 2, 4, 16, 8, torch.float32, 5)
    gk = -torch.rand(2, 9, 4, 16, generator=torch.Generator().manual_seed(3)) * 0.2
    o, final = tfla.fused_recurrent_gated_delta_rule(q, k, v, g, gk, beta=beta, initial_state=h0,
                                                     output_final_state=True)
    expected_o, expected_final = reference(q, k, v, g, beta, None, h0, None, chunked=False, gk=gk)
    assert relative_error(o, expected_o) <= 1e-4 and relative_error(final, expected_final) <= 1e-4
    # g and beta optional: no decay, beta = 1
    o, final = tfla.fused_recurrent_gated_delta_rule(q, k, v, output_final_state=True)
    ones, zeros = torch.ones(2, 9, 4), torch.zeros(2, 9, 4)
    expected_o, expected_final = reference(q, k, v, zeros, ones, None, None, None, chunked=False)
    assert relative_error(o, expected_o) <= 1e-4 and relative_error(final, expected_final) <= 1e-4


def test_in_kernel_gate_and_beta_sigmoid():
    q, k, v, a, b, h0 = make_inputs(1, 40, 2, 2, 32, 32, torch.float32, 11)
    A_log, dt_bias = torch.randn(2) * 0.5, torch.randn(2) * 0.1
    raw_gate, raw_beta = torch.randn(1, 40, 2), torch.randn(1, 40, 2)
    o, final = tfla.chunk_gated_delta_rule(q, k, v, raw_gate, raw_beta, initial_state=h0[:1], output_final_state=True,
                                           use_gate_in_kernel=True, A_log=A_log, dt_bias=dt_bias,
                                           use_beta_sigmoid_in_kernel=True, allow_neg_eigval=True, chunk_size=32)
    g = -A_log.exp() * F.softplus(raw_gate + dt_bias)
    expected_o, expected_final = reference(q, k, v, g, 2 * raw_beta.sigmoid(), None, h0[:1], None, chunked=False)
    assert relative_error(o, expected_o) <= 1e-4 and relative_error(final, expected_final) <= 1e-4


def test_fla_errors():
    q, k, v, g, beta, h0 = make_inputs(2, 8, 2, 3, 16, 16, torch.float32, 0)
    with pytest.raises(ValueError, match="divisible"):
        tfla.chunk_gated_delta_rule(q, k, v, g, beta)
    q, k, v, g, beta, h0 = make_inputs(2, 8, 2, 4, 16, 16, torch.float32, 0)
    with pytest.raises(ValueError, match="batch size is expected to be 1"):
        tfla.chunk_gated_delta_rule(q, k, v, g, beta, cu_seqlens=torch.tensor([0, 8]))
    with pytest.raises(ValueError, match="number of initial states"):
        tfla.chunk_gated_delta_rule(q, k, v, g, beta, initial_state=h0[:1])
    with pytest.raises(ValueError, match="chunk_size"):
        tfla.chunk_gated_delta_rule(q, k, v, g, beta, chunk_size=128)
    with pytest.raises(NotImplementedError, match="gv"):
        tfla.fused_recurrent_gated_delta_rule(q, k, v, g, gv=torch.zeros_like(v), beta=beta)
    gk = -torch.rand(2, 8, 4, 16) * 0.1
    with pytest.raises(RuntimeError, match="no backward"):  # gk: the decode operator, which has none
        tfla.fused_recurrent_gated_delta_rule(q.clone().requires_grad_(), k, v, g, gk=gk, beta=beta)
    with torch.no_grad():
        tfla.fused_recurrent_gated_delta_rule(q, k, v, g, gk=gk, beta=beta)  # fine without autograd
    assert tfla.supports(torch.zeros(1))[0] and not tfla.supports(torch.zeros(1, dtype=torch.float64))[0]


def test_deprecated_state_layout_name_is_state_v_first():
    q, k, v, g, beta, h0 = make_inputs(2, 8, 1, 1, 16, 8, torch.float32, 2)
    v_first = h0.transpose(-1, -2).contiguous()
    o1, s1 = tfla.chunk_gated_delta_rule(q, k, v, g, beta, initial_state=v_first, output_final_state=True,
                                         transpose_state_layout=True)
    o2, s2 = tfla.chunk_gated_delta_rule(q, k, v, g, beta, initial_state=h0, output_final_state=True)
    assert torch.equal(o1, o2) and torch.equal(s1, s2.transpose(-1, -2))


def _fla_ops_importable():
    if importlib.util.find_spec("triton") is None:
        return False
    try:
        import fla.ops.backends  # noqa: F401
    except Exception:
        return False
    return True


@pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                    reason="fla.ops imports only with Triton installed (fla-core's cpu/cuda extra); run this test "
                           "with Triton on the path to check the registry")
def test_registered_in_fla_backend_registry():
    assert _fla_ops_importable()
    from fla.ops.backends import BackendRegistry
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule as fla_chunk
    assert tfla.register_fla_backend() and tfla.register_fla_backend()  # idempotent
    registry = BackendRegistry._registries["gated_delta_rule"]
    assert "txops" in registry._backends
    q, k, v, g, beta, h0 = make_inputs(1, 90, 2, 4, 32, 32, torch.float32, 4)
    cu_seqlens = torch.tensor([0, 30, 90])
    o, final = fla_chunk(q, k, v, g, beta, initial_state=h0[:2], output_final_state=True, cu_seqlens=cu_seqlens)
    expected_o, expected_final = reference(q, k, v, g, beta, None, h0[:2], cu_seqlens, chunked=True)
    assert relative_error(o, expected_o) <= 1e-4 and relative_error(final, expected_final) <= 1e-4


def test_docstring_examples():
    import doctest
    failures, tried = doctest.testmod(tfla, optionflags=doctest.NORMALIZE_WHITESPACE, report=True)
    assert tried > 0 and failures == 0
