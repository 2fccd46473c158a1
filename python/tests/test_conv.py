"""txops.causal_conv1d_fn / causal_conv1d_update from Python: against a float64 PyTorch oracle written from
docs/causal_conv1d.md with torch's own depthwise conv1d (not txops' C++ reference), in CANN's layouts and in
transformers' channel-first layouts passed as transposed views; numpy; torch.compile with no graph break, bit for
bit; autograd refused (torch.library opcheck of the conv operators: test_torch_library.py)."""
import numpy as np
import pytest

import txops

torch = pytest.importorskip("torch")
F = torch.nn.functional

TOL = {torch.float32: 1e-5, torch.bfloat16: 2 ** -8, torch.float16: 2 ** -10}


def rand(*shape, seed, dtype=torch.float32, lo=-2.0, hi=2.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(*shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def oracle(update, x, weight, states, bias, qsl, indices, per_sequence, silu, null_block_id=-1):
    """(y, states) in float64: per sequence the window p = [K-1 history rows | x] convolved by torch's conv1d."""
    x64, w64, s64 = x.double(), weight.double(), states.double().clone()
    K, dim, S = weight.shape[0], weight.shape[1], states.shape[1]
    if x.dim() == 3:
        B, L = x.shape[0], x.shape[1]
        seqs = [x64[b] for b in range(B)]
        starts = [b * L for b in range(B + 1)]
    else:
        starts = list(qsl)
        seqs = [x64[starts[b]:starts[b + 1]] for b in range(len(starts) - 1)]
    y = torch.zeros(sum(s.shape[0] for s in seqs), dim, dtype=torch.float64)
    for b, seq in enumerate(seqs):
        line = b if indices is None else indices[b]
        if indices is not None and line == null_block_id:
            continue
        if update:
            o = 0 if per_sequence is None else max(per_sequence[b] - 1, 0)
            history = s64[line, o:o + K - 1]
        else:
            use = per_sequence is not None and per_sequence[b] == 1
            history = s64[line, :K - 1] if use else torch.zeros(K - 1, dim, dtype=torch.float64)
        p = torch.cat([history, seq])                                  # (K-1+L, dim)
        out = F.conv1d(p.t()[None], w64.t()[:, None, :], groups=dim)[0].t() if len(seq) else seq  # w[j]: p[t+j]
        if bias is not None:
            out = out + bias.double()
        if silu:
            out = out * torch.sigmoid(out)
        y[starts[b]:starts[b] + seq.shape[0]] = out
        L = seq.shape[0]
        P = K - 1 + L
        rows = min(K - 2 + L, S) if update else S
        for r in range(rows):
            src = 1 + r if update else P - S + r
            if src >= 0:
                s64[line, r] = p[src]
    return y.reshape(x.shape), s64


def check(update, x, weight, states, *, bias=None, qsl=None, indices=None, per_sequence=None, activation="silu",
          null_block_id=-1):
    y_ref, s_ref = oracle(update, x, weight, states, bias, qsl, indices, per_sequence, activation == "silu",
                          null_block_id)
    fn = txops.causal_conv1d_update if update else txops.causal_conv1d_fn
    extra = {"num_accepted_tokens" if update else "initial_state_mode": per_sequence}
    y = fn(x, weight, states, bias=bias, query_start_loc=qsl, cache_indices=indices, activation=activation,
           null_block_id=null_block_id, **extra)
    scale = max(y_ref.abs().max().item(), y_ref.pow(2).mean().sqrt().item(), 1e-30)
    assert (y.double() - y_ref).abs().max().item() <= TOL[x.dtype] * scale
    assert torch.equal(states.double(), s_ref)  # the states are copies of inputs: exact


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("K", [2, 3, 4])
def test_prefill_against_torch_conv1d(dtype, K):
    dim = 72
    x, w = rand(3, 9, dim, seed=1, dtype=dtype), rand(K, dim, seed=2, dtype=dtype, lo=-1, hi=1)
    states, bias = rand(4, K - 1, dim, seed=3, dtype=dtype), rand(dim, seed=4, dtype=dtype, lo=-0.5, hi=0.5)
    check(False, x, w, states, bias=bias, indices=[3, 0, 1], per_sequence=[1, 0, 1])
    xv = rand(12, dim, seed=5, dtype=dtype)  # varlen with an empty sequence and a skipped one
    check(False, xv, w, states, qsl=[0, 5, 5, 6, 12], indices=[2, 1, -1, 0], per_sequence=[1, 1, 0, 0],
          activation="none")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_update_and_speculative_against_torch_conv1d(dtype):
    dim, K = 40, 4
    w = rand(K, dim, seed=6, dtype=dtype, lo=-1, hi=1)
    states = rand(3, K - 1, dim, seed=7, dtype=dtype)
    check(True, rand(3, 1, dim, seed=8, dtype=dtype), w, states, indices=[2, 0, 1])
    spec = rand(3, K - 1 + 3, dim, seed=9, dtype=dtype)  # 3 draft tokens: state_len K-1+3
    check(True, rand(2, 3, dim, seed=10, dtype=dtype), w, spec, indices=[0, 2], per_sequence=[2, 0])
    check(True, rand(4, dim, seed=11, dtype=dtype), w, spec, qsl=[0, 1, 4], indices=[1, 0], per_sequence=[1, 3])


def test_channel_first_views_without_copies():
    """transformers' layouts: x (B, dim, L), weight (dim, K), conv_state (B, dim, S), passed as transposes."""
    B, dim, L, K = 2, 48, 7, 4
    x_cf = rand(B, dim, L, seed=12)
    w_cf = rand(dim, K, seed=13, lo=-1, hi=1)
    state_cf = rand(B, dim, K - 1, seed=14)
    expected_y, expected_states = oracle(False, x_cf.transpose(1, 2), w_cf.t(), state_cf.transpose(1, 2), None, None,
                                         None, [1, 1], True)
    y_cf = torch.empty_like(x_cf)
    txops.causal_conv1d_fn(x_cf.transpose(1, 2), w_cf.t(), state_cf.transpose(1, 2), initial_state_mode=[1, 1],
                           out=y_cf.transpose(1, 2))
    assert (y_cf.transpose(1, 2).double() - expected_y).abs().max() < 1e-5
    assert torch.equal(state_cf.transpose(1, 2).double(), expected_states)


def test_numpy_and_torch_agree():
    x, w, s = rand(2, 6, 32, seed=15), rand(3, 32, seed=16), rand(2, 2, 32, seed=17)
    s_np = s.numpy().copy()
    y_np = txops.causal_conv1d_fn(x.numpy(), w.numpy(), s_np, initial_state_mode=np.array([1, 0], np.int32))
    y_t = txops.causal_conv1d_fn(x, w, s, initial_state_mode=[1, 0])
    assert np.array_equal(y_np, y_t.numpy()) and np.array_equal(s_np, s.numpy())


def test_out_and_versions_and_errors():
    x, w, s = rand(1, 4, 16, seed=18), rand(4, 16, seed=19), rand(1, 3, 16, seed=20)
    out = torch.empty_like(x)
    versions = s._version, out._version
    assert txops.causal_conv1d_fn(x, w, s, out=out) is out
    assert (s._version, out._version) == (versions[0] + 1, versions[1] + 1)
    with pytest.raises(ValueError, match="cacheIndicesOptional\\[0\\] must be in \\[0, numCacheLines = 1\\)") as err:
        txops.causal_conv1d_fn(x, w, s, cache_indices=[4])
    assert err.value.code == 161002
    with pytest.raises(ValueError, match="activation must be"):
        txops.causal_conv1d_fn(x, w, s, activation="relu")
    with pytest.raises(RuntimeError, match="no backward"):
        txops.causal_conv1d_fn(x.clone().requires_grad_(), w, s)
    with torch.no_grad():
        txops.causal_conv1d_fn(x.clone().requires_grad_(), w, s)


def test_compiled_prefill_then_decode_matches_eager_bit_for_bit():
    def step(x, w, states, token):
        y = txops.causal_conv1d_fn(x, w, states, initial_state_mode=torch.ones(2, dtype=torch.int32))
        z = torch.empty_like(token)
        txops.causal_conv1d_update(token, w, states, out=z)
        return y, z, states

    torch._dynamo.reset()
    x, w, s, tok = rand(2, 6, 32, seed=24), rand(4, 32, seed=25), rand(2, 3, 32, seed=26), rand(2, 1, 32, seed=27)
    expected = step(x, w, s.clone(), tok)
    actual = torch.compile(step, fullgraph=True, dynamic=False)(x, w, s.clone(), tok)
    for a, e in zip(actual, expected):
        assert torch.equal(a, e)
    torch._dynamo.reset()
