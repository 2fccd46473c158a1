"""txops.npu: torch_npu's names, signatures and defaults, against the pure-PyTorch references; a torch_npu
function txops lacks raises NotImplementedError naming it."""
import doctest
import inspect

import pytest
import torch

import references as ref
import txops.npu as torch_npu


def test_signatures_are_torch_npus():
    def names(fn):
        return [(p.name, p.kind.name, p.default) for p in inspect.signature(fn).parameters.values()]
    empty = inspect.Parameter.empty
    assert names(torch_npu.npu_interleave_rope) == [("x", "POSITIONAL_OR_KEYWORD", empty),
                                                    ("cos", "POSITIONAL_OR_KEYWORD", empty),
                                                    ("sin", "POSITIONAL_OR_KEYWORD", empty)]
    assert [(n, d) for n, _, d in names(torch_npu.npu_apply_rotary_pos_emb)] == [
        ("query", empty), ("key", empty), ("cos", empty), ("sin", empty), ("layout", "BSH"), ("rotary_mode", "half")]
    chunk = names(torch_npu.npu_chunk_gated_delta_rule)
    assert [n for n, _, _ in chunk] == ["query", "key", "value", "beta", "initial_state", "actual_seq_lengths",
                                        "scale", "g"]
    assert all(kind == "KEYWORD_ONLY" and default is None for _, kind, default in chunk[3:])
    recurrent = names(torch_npu.npu_recurrent_gated_delta_rule)
    assert [n for n, _, _ in recurrent] == ["query", "key", "value", "state", "beta", "scale", "actual_seq_lengths",
                                            "ssm_state_indices", "num_accepted_tokens", "g", "gk"]
    assert all(kind == "KEYWORD_ONLY" and default is None for _, kind, default in recurrent[4:])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_npu_interleave_rope(dtype):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 4, 5, 64, generator=gen).to(dtype)
    cos, sin = torch.randn(2, 1, 5, 64, generator=gen).to(dtype), torch.randn(2, 1, 5, 64, generator=gen).to(dtype)
    out = torch_npu.npu_interleave_rope(x, cos, sin)
    expected = ref.interleave_rope(x.double(), cos.double(), sin.double())
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(out.double(), expected, atol=tol, rtol=tol)


@pytest.mark.parametrize("layout,mode", [("BSH", "half"), ("BSND", "interleave"), ("SBH", "half"), ("BNSD", "half"),
                                         ("TND", "quarter")])
def test_npu_apply_rotary_pos_emb(layout, mode):
    gen = torch.Generator().manual_seed(1)
    shapes = {"BSH": ((2, 3, 4, 16), (2, 3, 1, 16)), "BSND": ((2, 3, 4, 16), (1, 3, 1, 16)),
              "SBH": ((3, 2, 4, 16), (3, 1, 1, 16)), "BNSD": ((2, 4, 3, 16), (2, 1, 3, 16)),
              "TND": ((5, 4, 16), (5, 1, 16))}
    q_shape, cos_shape = shapes[layout]
    k_shape = q_shape[:-2] + (2, 16) if layout != "BNSD" else (2, 2, 3, 16)
    q, k = torch.randn(q_shape, generator=gen), torch.randn(k_shape, generator=gen)
    cos, sin = torch.randn(cos_shape, generator=gen), torch.randn(cos_shape, generator=gen)
    code = {"half": 0, "interleave": 1, "quarter": 2}[mode]
    expected_q, expected_k = ref.apply_rotary_pos_emb(q.double(), k.double(), cos.double(), sin.double(), code)
    q_out, k_out = torch_npu.npu_apply_rotary_pos_emb(q, k, cos, sin, layout=layout, rotary_mode=mode)
    assert q_out is q and k_out is k  # in place, as torch_npu
    torch.testing.assert_close(q.double(), expected_q, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(k.double(), expected_k, atol=1e-5, rtol=1e-5)


def test_npu_apply_rotary_pos_emb_default_layout_is_bsh():
    q, k = torch.randn(1, 6, 2, 8), torch.randn(1, 6, 1, 8)
    cos, sin = torch.randn(1, 6, 1, 8), torch.randn(1, 6, 1, 8)
    expected = ref.apply_rotary_pos_emb(q.double(), k.double(), cos.double(), sin.double(), 0)
    torch_npu.npu_apply_rotary_pos_emb(q, k, cos, sin)
    torch.testing.assert_close(q.double(), expected[0], atol=1e-5, rtol=1e-5)


def gdr_inputs(tokens, nk, nv, dk, dv, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.nn.functional.normalize(torch.randn(tokens, nk, dk, generator=gen), dim=-1)
    k = torch.nn.functional.normalize(torch.randn(tokens, nk, dk, generator=gen), dim=-1)
    v = torch.randn(tokens, nv, dv, generator=gen)
    beta = torch.rand(tokens, nv, generator=gen) * 0.9 + 0.05
    g = -torch.nn.functional.softplus(torch.randn(tokens, nv, generator=gen))
    return q, k, v, beta, g


def test_npu_chunk_gated_delta_rule():
    lengths = [7, 0, 20]
    q, k, v, beta, g = gdr_inputs(sum(lengths), 2, 4, 32, 16)
    state0 = torch.randn(3, 4, 16, 32, generator=torch.Generator().manual_seed(2)) * 0.1
    out, final = torch_npu.npu_chunk_gated_delta_rule(q, k, v, beta=beta, initial_state=state0,
                                                      actual_seq_lengths=torch.tensor(lengths, dtype=torch.int32),
                                                      scale=0.4, g=g)
    expected_out, expected_final = ref.chunk_gated_delta_rule(q, k, v, beta, state0, lengths, g, 0.4)
    torch.testing.assert_close(out.double(), expected_out, atol=2e-4, rtol=2e-4)
    torch.testing.assert_close(final.double(), expected_final, atol=2e-4, rtol=2e-4)
    # defaults: beta 1, zero state, one sequence, scale Dk^-0.5, no decay
    out, final = torch_npu.npu_chunk_gated_delta_rule(q, k, v)
    expected_out, expected_final = ref.chunk_gated_delta_rule(q, k, v, torch.ones(27, 4), torch.zeros(1, 4, 16, 32),
                                                              [27], None, 32 ** -0.5)
    torch.testing.assert_close(out.double(), expected_out, atol=2e-4, rtol=2e-4)


def test_npu_recurrent_gated_delta_rule():
    q, k, v, beta, g = gdr_inputs(4, 1, 2, 16, 16, seed=3)
    pool = torch.randn(6, 2, 16, 16, generator=torch.Generator().manual_seed(4)) * 0.1
    expected_out, expected_pool = ref.recurrent_gated_delta_rule(q, k, v, beta, pool, [3, 1], [5, 2, 0, 4], g, None,
                                                                 [2, 1], 0.3)
    out = torch_npu.npu_recurrent_gated_delta_rule(q, k, v, pool, beta=beta, scale=0.3, actual_seq_lengths=[3, 1],
                                                   ssm_state_indices=[5, 2, 0, 4], num_accepted_tokens=[2, 1], g=g)
    torch.testing.assert_close(out.double(), expected_out, atol=2e-4, rtol=2e-4)
    torch.testing.assert_close(pool.double(), expected_pool, atol=2e-4, rtol=2e-4)
    # defaults: one token per sequence, token t in slot t
    pool2 = torch.zeros(4, 2, 16, 16)
    out = torch_npu.npu_recurrent_gated_delta_rule(q, k, v, pool2, beta=beta, g=g)
    expected_out, expected_pool = ref.recurrent_gated_delta_rule(q, k, v, beta, torch.zeros(4, 2, 16, 16),
                                                                 [1] * 4, [0, 1, 2, 3], g, None, None, 16 ** -0.5)
    torch.testing.assert_close(pool2.double(), expected_pool, atol=2e-4, rtol=2e-4)


def test_missing_functions_raise_not_implemented_naming_them():
    with pytest.raises(NotImplementedError, match=r"torch_npu\.npu_rotary_position_embedding is not implemented"):
        torch_npu.npu_rotary_position_embedding(torch.zeros(1, 1, 1, 2), torch.zeros(1, 1, 1, 2),
                                                torch.zeros(1, 1, 1, 2))
    with pytest.raises(NotImplementedError, match="npu_fusion_attention"):
        torch_npu.npu_fusion_attention
    assert not hasattr(torch_npu, "npu_rms_norm")  # feature probes see it missing (AttributeError too)
    with pytest.raises(ImportError):
        from txops.npu import npu_swiglu  # noqa: F401
    with pytest.raises(AttributeError):
        torch_npu.something_else


def test_docstring_examples():
    failures, tried = doctest.testmod(torch_npu, optionflags=doctest.NORMALIZE_WHITESPACE, report=True)
    assert tried > 0 and failures == 0
