"""The txops operators as PyTorch operators (torch.ops.txops.*): torch.library.opcheck on every operator (schema
and mutations, autograd registration, fake kernels, AOT dispatch with dynamic shapes) over a few shapes and
dtypes; fake kernels against the real outputs (hypothesis); the public functions routed through the operators
under a tracing mode; errors, version counters; the lazy torch import and registration; the version."""
import importlib.metadata
import os
import subprocess
import sys

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch._subclasses.fake_tensor import FakeTensorMode

import txops
from txops import _torch_ops

OPS = torch.ops.txops
ALL_OPS = sorted(_torch_ops.SCHEMAS)


def randn(*shape, dtype=torch.float32, seed=0, requires_grad=False):
    t = torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)
    return t.requires_grad_(requires_grad)


def cos_sin(*shape, dtype=torch.float32, seed=1, requires_grad=False):
    angles = randn(*shape, seed=seed) * 3
    return (angles.cos().to(dtype).requires_grad_(requires_grad), angles.sin().to(dtype).requires_grad_(requires_grad))


def rope_cases():
    """(op name, args) pairs for the RoPE operators: a few shapes, fp32 / bf16 / fp16, with and without grads."""
    cases = []
    for dtype, grad in ((torch.float32, True), (torch.bfloat16, False), (torch.float16, False)):
        for x_shape, c_shape in (((2, 3, 5, 64), (1, 1, 5, 64)), ((1, 2, 1, 16), (1, 1, 1, 16)),
                                 ((3, 2, 4, 8), (3, 1, 4, 8))):
            x = randn(*x_shape, dtype=dtype, requires_grad=grad)
            cos, sin = cos_sin(*c_shape, dtype=dtype, requires_grad=grad)
            cases.append(("interleave_rope", (x, cos, sin)))
            cases.append(("interleave_rope_out", (x.detach(), cos.detach(), sin.detach(), torch.empty_like(x.detach()))))
        for mode, (start, end) in ((0, (0, 32)), (1, (8, 24)), (2, (0, 16)), (3, (16, 32))):
            x = randn(2, 4, 3, 32, dtype=dtype, requires_grad=grad)
            cos, sin = cos_sin(1, 4, 1, end - start, dtype=dtype, requires_grad=grad)
            cases.append(("partial_rotary_mul", (x, cos, sin, mode, start, end)))
            plain = (x.detach().clone(), cos.detach(), sin.detach(), mode, start, end)
            cases.append(("inplace_partial_rotary_mul", plain))
            cases.append(("inplace_partial_rotary_mul_grad", plain))
    layouts = {1: ((2, 5, 4, 32), (2, 5, 2, 32), (1, 5, 1, 32)), 3: ((2, 4, 5, 32), (2, 2, 5, 32), (2, 1, 5, 32)),
               4: ((10, 4, 32), (10, 2, 32), (10, 1, 32)), 2: ((5, 2, 4, 32), (5, 2, 2, 32), (5, 2, 1, 16))}
    for dtype, grad in ((torch.float32, True), (torch.bfloat16, False)):
        for layout, (q_shape, k_shape, c_shape) in layouts.items():
            mode = layout % 3
            q, k = randn(*q_shape, dtype=dtype, requires_grad=grad), randn(*k_shape, dtype=dtype, seed=3,
                                                                               requires_grad=grad)
            cos, sin = cos_sin(*c_shape, dtype=dtype, requires_grad=grad)
            cases.append(("apply_rotary_pos_emb_functional", (q, k, cos, sin, layout, mode)))
            plain = [t.detach().clone() for t in (q, k, cos, sin)]
            cases.append(("apply_rotary_pos_emb", (*plain, layout, mode)))
            if c_shape[-1] == q_shape[-1]:
                dq, dk = randn(*q_shape, dtype=dtype, seed=5), randn(*k_shape, dtype=dtype, seed=6)
                cases.append(("apply_rotary_pos_emb_grad", (dq, dk, plain[2], plain[3], None, None, mode, layout)))
                if dtype == torch.float32:
                    cases.append(("apply_rotary_pos_emb_grad", (dq, dk, plain[2], plain[3], plain[0], plain[1], mode,
                                                                layout)))
    return cases


def gdr_inputs(lengths, nk, nv, dk, dv, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    tokens = sum(lengths)
    q = torch.nn.functional.normalize(torch.randn(tokens, nk, dk, generator=gen), dim=-1).to(dtype)
    k = torch.nn.functional.normalize(torch.randn(tokens, nk, dk, generator=gen), dim=-1).to(dtype)
    v = torch.randn(tokens, nv, dv, generator=gen).to(dtype)
    beta = (torch.rand(tokens, nv, generator=gen) * 0.9 + 0.05).to(dtype)
    g = -torch.rand(tokens, nv, generator=gen)
    return q, k, v, beta, g


def gdr_cases():
    cases = []
    for dtype, state_dtype in ((torch.float32, torch.float32), (torch.bfloat16, torch.float32),
                               (torch.bfloat16, torch.bfloat16)):
        for lengths, nk, nv, dk, dv in (([5, 0, 40], 2, 4, 32, 16), ([3], 1, 1, 16, 16)):
            q, k, v, beta, g = gdr_inputs(lengths, nk, nv, dk, dv, dtype)
            state = torch.randn(len(lengths), nv, dv, dk).to(state_dtype) * 0.1
            seq = torch.tensor(lengths, dtype=torch.int32)
            for gate in (g, None):
                cases.append(("chunk_gated_delta_rule", (q, k, v, beta, state, seq, gate, 0.25)))
                grad_out = torch.randn(v.shape).to(dtype)
                for grad_final in (torch.randn(state.shape).to(state_dtype), None):
                    cases.append(("chunk_gated_delta_rule_grad",
                                  (q, k, v, beta, state, seq, gate, 0.25, grad_out, grad_final)))
            # recorded by autograd (opcheck then checks the registered backward too)
            leaves = [t.clone().requires_grad_() for t in (q, k, v, beta, state)]
            cases.append(("chunk_gated_delta_rule", (*leaves, seq, g.clone().requires_grad_(), 0.25)))
            # the training forward (also the states every 64 tokens), plain and recorded, and the backward reading
            # its states
            cases.append(("chunk_gated_delta_rule_train", (q, k, v, beta, state, seq, g, 0.25)))
            cases.append(("chunk_gated_delta_rule_train", (*leaves, seq, g.clone().requires_grad_(), 0.25)))
            kept = torch.ops.txops.chunk_gated_delta_rule_train(q, k, v, beta, state, seq, g, 0.25)[2:]
            cases.append(("chunk_gated_delta_rule_grad", (q, k, v, beta, state, seq, g, 0.25,
                                                          torch.randn(v.shape).to(dtype), None, *kept)))
            out, final = torch.empty(v.shape, dtype=dtype), torch.empty_like(state)
            cases.append(("chunk_gated_delta_rule_out", (q, k, v, beta, state, seq, g, 0.25, out, final)))
        lengths = [2, 1, 1]
        q, k, v, beta, g = gdr_inputs(lengths, 2, 4, 16, 8, dtype)
        pool = torch.randn(6, 4, 8, 16).to(state_dtype) * 0.1
        seq, slots = torch.tensor(lengths, dtype=torch.int32), torch.tensor([4, 1, 5, 0], dtype=torch.int32)
        gk = -torch.rand(4, 4, 16) * 0.1
        accepted = torch.tensor([2, 1, 1], dtype=torch.int32)
        cases.append(("recurrent_gated_delta_rule", (q, k, v, beta, pool, seq, slots, g, gk, accepted, 0.5)))
        cases.append(("recurrent_gated_delta_rule", (q, k, v, beta, pool.clone(), seq, slots, None, None, None, 0.5)))
        cases.append(("recurrent_gated_delta_rule_out", (q, k, v, beta, pool.clone(), seq, slots, g, None, None, 0.5,
                                                         torch.empty(v.shape, dtype=dtype))))
    return cases


def conv_cases():
    cases = []
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        x, w = randn(2, 5, 16, dtype=dtype, seed=21), randn(3, 16, dtype=dtype, seed=22)
        states = randn(3, 2, 16, dtype=dtype, seed=23)
        qsl, idx, modes = (torch.tensor(v, dtype=torch.int32) for v in ([0, 4, 10], [2, 0], [1, 0]))
        cases.append(("causal_conv1d_fn", (x, w, states.clone(), None, None, idx, modes, 1, -1)))
        cases.append(("causal_conv1d_fn", (x.reshape(10, 16), w, states.clone(), w[0], qsl, None, None, 0, -1)))
        cases.append(("causal_conv1d_fn_out", (x, w, states.clone(), None, None, idx, modes, 1, -1, torch.empty_like(x))))
        token = x[:, :1].contiguous()
        cases.append(("causal_conv1d_update", (token, w, states.clone(), w[1], None, idx, None, 1, -1)))
        spec_states = randn(2, 4, 16, dtype=dtype, seed=24)  # 2 draft tokens: stateLen K-1+2
        cases.append(("causal_conv1d_update", (x[:, :2].contiguous(), w, spec_states, None, None, None,
                                               torch.tensor([1, 2], dtype=torch.int32), 1, -1)))
        cases.append(("causal_conv1d_update_out", (token, w, states.clone(), None, None, None, None, 0, -1,
                                                   torch.empty_like(token))))
    return cases


def rotary_cases():
    """RotaryPositionEmbedding(Grad) (every mode, broadcast cos, rotate matrix, with grads) and RopeWithSinCosCache
    (neox / GPT-J, partial rotary dim, mrope)."""
    cases = []
    for dtype, grad in ((torch.float32, True), (torch.bfloat16, False)):
        for mode, (x_shape, c_shape) in enumerate((((2, 3, 4, 16), (1, 3, 1, 16)), ((2, 4, 8), (4, 8)),
                                                   ((1, 2, 3, 8), (1, 1, 1, 8)), ((3, 2, 2, 12), (3, 1, 2, 12)))):
            x = randn(*x_shape, dtype=dtype, requires_grad=grad)
            cos, sin = cos_sin(*c_shape, dtype=dtype, requires_grad=grad)
            cases.append(("rotary_position_embedding", (x, cos, sin, mode, None)))
            plain = (x.detach(), cos.detach(), sin.detach())
            cases.append(("rotary_position_embedding_out", (*plain, mode, None, torch.empty_like(plain[0]))))
            dy = randn(*x_shape, dtype=dtype, seed=7)
            cases.append(("rotary_position_embedding_grad", (dy, plain[1], plain[2], plain[0], mode)))
            cases.append(("rotary_position_embedding_grad", (dy, plain[1], plain[2], None, mode)))
        rotate = torch.eye(16, dtype=dtype).roll(1, dims=1)
        x = randn(2, 3, 4, 16, dtype=dtype, requires_grad=grad)
        cos, sin = cos_sin(1, 3, 1, 16, dtype=dtype, requires_grad=grad)
        cases.append(("rotary_position_embedding", (x, cos, sin, 1, rotate)))
        positions = torch.tensor([3, 0, 3, 1, 2])
        q, k = randn(5, 3 * 32, dtype=dtype), randn(5, 32, dtype=dtype, seed=9)
        cache = randn(4, 16, dtype=dtype, seed=10)
        for neox in (True, False):
            cases.append(("rope_with_sin_cos_cache", (positions, q, k, cache, None, 32, neox, 0)))
            cases.append(("rope_with_sin_cos_cache_", (positions, q.clone(), k.clone(), cache, None, 32, neox, 0)))
        mrope_positions = torch.tensor([[3, 0, 3, 1, 2], [1, 1, 0, 2, 3], [0, 2, 2, 3, 1]])
        for cache_mode in (0, 1):
            cases.append(("rope_with_sin_cos_cache", (mrope_positions, q, k, cache, [2, 3, 3], 32, True, cache_mode)))
    return cases


CASES = rope_cases() + gdr_cases() + conv_cases() + rotary_cases()


def case_id(case):
    name, args = case
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    grad = "-grad" if any(t.requires_grad for t in tensors) else ""
    return f"{name}-{str(tensors[0].dtype)[6:]}-{'x'.join(map(str, tensors[0].shape))}{grad}"


def test_every_operator_is_registered_and_checked():
    assert ALL_OPS == sorted(name for name, _ in _torch_ops.KERNELS.items())
    assert {name for name, _ in CASES} == set(ALL_OPS)
    for name in ALL_OPS:
        op = getattr(OPS, name).default
        assert torch.Tag.pt2_compliant_tag in op.tags
        assert getattr(txops._arrays.ops, name) is op
    for name in _torch_ops.AUTOGRAD:
        assert torch._C._dispatch_has_kernel_for_dispatch_key(f"txops::{name}", "Autograd")


def test_mutations_are_declared():
    mutated = {name: [a.name for a in getattr(OPS, name).default._schema.arguments
                      if a.alias_info is not None and a.alias_info.is_write] for name in ALL_OPS}
    assert mutated == {
        "interleave_rope": [], "interleave_rope_out": ["out"], "inplace_partial_rotary_mul": ["x"],
        "partial_rotary_mul": [], "inplace_partial_rotary_mul_grad": ["grad_output"],
        "apply_rotary_pos_emb": ["query", "key"], "apply_rotary_pos_emb_functional": [],
        "apply_rotary_pos_emb_grad": [], "chunk_gated_delta_rule": [], "chunk_gated_delta_rule_grad": [],
        "chunk_gated_delta_rule_train": [],
        "chunk_gated_delta_rule_out": ["out", "final_state"], "recurrent_gated_delta_rule": ["state"],
        "recurrent_gated_delta_rule_out": ["state", "out"], "causal_conv1d_fn": ["conv_states"],
        "causal_conv1d_fn_out": ["conv_states", "out"], "causal_conv1d_update": ["conv_states"],
        "causal_conv1d_update_out": ["conv_states", "out"], "rotary_position_embedding": [],
        "rotary_position_embedding_out": ["out"], "rotary_position_embedding_grad": [], "rope_with_sin_cos_cache": [],
        "rope_with_sin_cos_cache_": ["query", "key"]}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_opcheck(case):
    name, args = case
    torch.library.opcheck(getattr(OPS, name).default, args)


def _fake_like(mode, t):
    return None if t is None else mode.from_tensor(t) if isinstance(t, torch.Tensor) else t


def _metadata(result):
    results = result if isinstance(result, tuple) else (result,)
    return [(tuple(r.shape), r.dtype, r.stride()) for r in results]


@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(b=st.integers(1, 3), n=st.integers(1, 4), s=st.integers(1, 6), half_d=st.integers(1, 8),
       cos_b=st.booleans(), cos_s=st.booleans(), dtype=st.sampled_from([torch.float32, torch.bfloat16]))
def test_fake_kernels_match_real_outputs(b, n, s, half_d, cos_b, cos_s, dtype):
    d = 2 * half_d
    x = randn(b, n, s, d, dtype=dtype)
    cos, sin = cos_sin(b if cos_b else 1, 1, s if cos_s else 1, d, dtype=dtype)
    q, k = randn(b, s, n, d, dtype=dtype), randn(b, s, 1, d, dtype=dtype)
    c2, s2 = cos_sin(1, s, 1, d, dtype=dtype)
    calls = [("interleave_rope", (x, cos, sin)), ("partial_rotary_mul", (q, c2, s2, 1, 0, d)),
             ("apply_rotary_pos_emb_functional", (q, k, c2, s2, 1, 0)),
             ("apply_rotary_pos_emb_grad", (q, k, c2, s2, q, k, 0, 1)),
             ("apply_rotary_pos_emb_grad", (q, k, c2, s2, None, None, 0, 1))]
    for name, args in calls:
        real = getattr(OPS, name)(*args)
        with FakeTensorMode() as mode:
            fake = getattr(OPS, name)(*(_fake_like(mode, a) for a in args))
        assert _metadata(fake) == _metadata(real), name


def test_public_functions_route_through_the_operators_under_tracing():
    """Under FakeTensorMode (as torch.compile and export trace) the public functions reach the fake kernels."""
    x = randn(2, 3, 4, 16)
    cos, sin = cos_sin(1, 1, 4, 16)
    q, k, v, beta, g = gdr_inputs([3, 2], 1, 2, 16, 8, torch.float32)
    with FakeTensorMode() as mode:
        fx, fc, fs = (mode.from_tensor(t) for t in (x, cos, sin))
        out = txops.interleave_rope(fx, fc, fs)
        assert type(out) is not torch.Tensor and out.shape == x.shape
        assert txops.inplace_partial_rotary_mul(fx, fc.transpose(1, 2), fs.transpose(1, 2)) is fx
        fq, fk, fv, fb, fg = (mode.from_tensor(t) for t in (q, k, v, beta, g))
        o, state = txops.chunk_gated_delta_rule(fq, fk, fv, fb, actual_seq_lengths=[3, 2], g=fg)
        assert o.shape == (5, 2, 8) and state.shape == (2, 2, 8, 16)


def test_errors_keep_type_message_and_code_through_the_operators():
    x = randn(2, 4, 3, 64, requires_grad=True)
    bad_cos = randn(1, 4, 3, 64)
    with pytest.raises(ValueError, match=r"^txops::interleave_rope: cos .*, got") as info:
        txops.interleave_rope(x, bad_cos, bad_cos)  # autograd path: through torch.ops.txops.interleave_rope
    assert info.value.code == 561002
    with pytest.raises(ValueError, match=r"^txops::interleave_rope: cos .*, got"):
        OPS.interleave_rope(x.detach(), bad_cos, bad_cos)


@pytest.mark.parametrize("through_op", [False, True])
def test_in_place_writes_bump_the_version_counter(through_op):
    """A tensor autograd saved, then overwritten by a txops in-place operator: backward refuses, as for torch's
    own in-place operators (writes through DLPack are invisible to torch otherwise)."""
    w = randn(1, 1, 1, 8, requires_grad=True)
    x = randn(1, 2, 3, 8)
    y = (x * w).sum()  # saves x for w's gradient
    cos, sin = cos_sin(1, 2, 1, 8)
    if through_op:
        OPS.inplace_partial_rotary_mul(x, cos, sin, 1, 0, 8)
    else:
        txops.inplace_partial_rotary_mul(x, cos, sin)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_inference_tensors():
    with torch.inference_mode():
        x = randn(1, 2, 3, 8)
        cos, sin = cos_sin(1, 2, 1, 8)
        expected = OPS.partial_rotary_mul(x, cos, sin, 0, 0, 8)
        txops.inplace_partial_rotary_mul(x, cos, sin, rotary_mode="half")
        assert torch.equal(x, expected)


def _run(code):
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            cwd=os.path.dirname(os.path.abspath(__file__)))
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_import_txops_does_not_import_torch_and_registers_when_torch_comes():
    out = _run("import sys, numpy as np, txops\n"
               "x = np.ones((1, 1, 2, 4), np.float32); c = np.ones((1, 1, 2, 4), np.float32)\n"
               "txops.interleave_rope(x, c, c)\n"
               "print('torch' in sys.modules)\n"
               "import torch\n"
               "print(torch.ops.txops.interleave_rope.default.name())\n")
    assert out.split() == ["False", "txops::interleave_rope"]


def test_torch_imported_first():
    out = _run("import torch, txops\nprint(torch.ops.txops.chunk_gated_delta_rule.default.name())")
    assert out.strip() == "txops::chunk_gated_delta_rule"


def test_one_version():
    assert txops.__version__ == txops._txops.__version__
    try:
        installed = importlib.metadata.version("txops")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("txops is not installed (source tree)")
    if os.path.dirname(txops.__file__) == os.path.join(os.path.dirname(os.path.dirname(__file__)), "txops"):
        pytest.skip("the source tree's txops shadows the installed one")
    assert installed == txops.__version__
