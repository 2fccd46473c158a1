"""txops.integrations.transformers: the installed transformers' model code on txops. Tiny models built from
configs in code (random weights, fixed seeds, nothing downloaded): greedy generation with a cache gives the stock
tokens and logits (fp32 within 1e-4 relative;
bf16 no further from fp32 than stock bf16), a training step gives the stock gradients, the
replaced functions are really called, and calls txops cannot take fall back to the stock code."""
import contextlib

import pytest
import torch

transformers = pytest.importorskip("transformers")

import txops  # noqa: E402
import txops.fla  # noqa: E402
from txops import gdr, rope  # noqa: E402
from txops.integrations import transformers as tx  # noqa: E402

from transformers.models.deepseek_v3 import modeling_deepseek_v3 as deepseek  # noqa: E402
from transformers.models.llama import modeling_llama as llama  # noqa: E402
from transformers.models.qwen3_next import modeling_qwen3_next as qwen3_next  # noqa: E402


@pytest.fixture
def stock():
    """Stock transformers for the test, whatever the test before it left."""
    tx.disable()
    yield
    tx.disable()


@contextlib.contextmanager
def counting(monkeypatch):
    """Counts the calls that reach the txops operators the integration uses."""
    calls = {"chunk": 0, "recurrent": 0, "rope": 0, "interleave": 0, "rope_functional": 0, "conv": 0}

    def wrap(module, name, key):
        original = getattr(module, name)

        def counted(*args, **kwargs):
            calls[key] += 1
            return original(*args, **kwargs)
        monkeypatch.setattr(module, name, counted)
    wrap(txops.fla, "chunk_gated_delta_rule", "chunk")
    wrap(txops.fla, "fused_recurrent_gated_delta_rule", "recurrent")
    wrap(gdr, "recurrent_gated_delta_rule", "recurrent")
    wrap(rope, "apply_rotary_pos_emb", "rope")
    wrap(rope, "interleave_rope", "interleave")
    from txops import conv
    wrap(conv, "causal_conv1d_fn", "conv")
    wrap(conv, "causal_conv1d_update", "conv")
    ops = txops._arrays.ops
    functional = ops.apply_rotary_pos_emb_functional

    def counted_functional(*args):
        calls["rope_functional"] += 1
        return functional(*args)
    monkeypatch.setattr(ops, "apply_rotary_pos_emb_functional", counted_functional)
    yield calls


def relative(a, b):
    """max |a - b| / max |b| over the finite entries of b (logits may hold -inf where generation masks a token;
    a must have them at the same places)."""
    a, b = a.double(), b.double()
    finite = torch.isfinite(b)
    if not torch.equal(finite, torch.isfinite(a)) or not torch.equal(a[~finite], b[~finite]):
        return float("inf")
    return ((a - b)[finite].abs().max() / b[finite].abs().max()).item()


# ---- enable / disable -----------------------------------------------------------------------------------------

def test_enable_disable_idempotent(stock):
    originals = (qwen3_next.torch_chunk_gated_delta_rule, qwen3_next.torch_recurrent_gated_delta_rule,
                 llama.apply_rotary_pos_emb, deepseek.apply_rotary_pos_emb_interleave)
    names = tx.enable()
    assert tx.enable() == names and tx.is_enabled()
    for wanted in ("qwen3_next.modeling_qwen3_next.torch_chunk_gated_delta_rule",
                   "qwen3_next.modeling_qwen3_next.torch_recurrent_gated_delta_rule",
                   "qwen3_next.modeling_qwen3_next.apply_rotary_pos_emb",
                   "llama.modeling_llama.apply_rotary_pos_emb",
                   "deepseek_v3.modeling_deepseek_v3.apply_rotary_pos_emb_interleave",
                   "deepseek_v3.modeling_deepseek_v3.apply_rotary_pos_emb"):
        assert f"transformers.models.{wanted}" in names
    if hasattr(transformers.models, "qwen3_5"):
        assert "transformers.models.qwen3_5.modeling_qwen3_5.torch_chunk_gated_delta_rule" in names
    assert llama.apply_rotary_pos_emb is not originals[2] and llama.apply_rotary_pos_emb.__txops__
    tx.disable()
    tx.disable()
    assert not tx.is_enabled() and tx.patched() == ()
    assert (qwen3_next.torch_chunk_gated_delta_rule, qwen3_next.torch_recurrent_gated_delta_rule,
            llama.apply_rotary_pos_emb, deepseek.apply_rotary_pos_emb_interleave) == originals


def test_only_reference_code_is_replaced(stock):
    assert tx.enable(models=["llama"]) == ("transformers.models.llama.modeling_llama.apply_rotary_pos_emb",)


# ---- the replaced functions against the stock ones -------------------------------------------------------------

def gdr_inputs(B, T, HV, K, V, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(B, T, HV, K, generator=gen), torch.randn(B, T, HV, K, generator=gen)
    v = torch.randn(B, T, HV, V, generator=gen)
    g = -torch.nn.functional.softplus(torch.randn(B, T, HV, generator=gen))
    beta = torch.rand(B, T, HV, generator=gen).sigmoid()
    state = torch.randn(B, HV, K, V, generator=gen) * 0.1
    return [x.to(dtype) for x in (q, k, v)] + [g, beta.to(dtype), state]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gated_delta_rule_functions_match_stock(stock, dtype):
    stock_chunk = qwen3_next.torch_chunk_gated_delta_rule
    stock_recurrent = qwen3_next.torch_recurrent_gated_delta_rule
    tx.enable()
    q, k, v, g, beta, state = gdr_inputs(2, 70, 4, 16, 32, dtype)
    for kwargs in (dict(initial_state=state, output_final_state=True), dict(initial_state=None,
                                                                            output_final_state=False)):
        expected = stock_chunk(q, k, v, g=g, beta=beta, use_qk_l2norm_in_kernel=True, **kwargs)
        got = qwen3_next.torch_chunk_gated_delta_rule(q, k, v, g=g, beta=beta, use_qk_l2norm_in_kernel=True,
                                                      **kwargs)
        assert got[0].dtype == dtype and relative(got[0], expected[0]) <= (1e-5 if dtype == torch.float32 else 2 ** -7)
        if kwargs["output_final_state"]:
            assert got[1].dtype == torch.float32 and relative(got[1], expected[1]) <= 1e-5
        else:
            assert got[1] is None
    # decode: one token, the cache's state updated in place and returned
    q, k, v, g, beta, _ = gdr_inputs(2, 1, 4, 16, 32, dtype, seed=1)
    expected = stock_recurrent(q, k, v, g=g, beta=beta, initial_state=state.clone(), output_final_state=True,
                               use_qk_l2norm_in_kernel=True)
    cache_state = state.clone()
    got = qwen3_next.torch_recurrent_gated_delta_rule(q, k, v, g=g, beta=beta, initial_state=cache_state,
                                                      output_final_state=True, use_qk_l2norm_in_kernel=True)
    assert got[1] is cache_state
    assert relative(got[0], expected[0]) <= (1e-5 if dtype == torch.float32 else 2 ** -7)
    assert relative(got[1], expected[1]) <= 1e-5
    # several tokens, no state given
    q, k, v, g, beta, _ = gdr_inputs(1, 5, 4, 16, 32, dtype, seed=2)
    expected = stock_recurrent(q, k, v, g=g, beta=beta, output_final_state=True)
    got = qwen3_next.torch_recurrent_gated_delta_rule(q, k, v, g=g, beta=beta, output_final_state=True)
    assert relative(got[0], expected[0]) <= (1e-5 if dtype == torch.float32 else 2 ** -7)
    assert relative(got[1], expected[1]) <= 1e-5


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_causal_conv_functions_match_stock(stock, dtype, monkeypatch):
    """Qwen3-Next's conv before the recurrence: prefill on (B, dim, L), decode on the cache's (B, dim, S) state
    (transformers keeps S = K; S = K-1 is Dao's layout), both in place as the stock code does; a call autograd must
    record stays stock."""
    import inspect
    from txops import conv
    stock_fn, stock_update = (inspect.unwrap(f) for f in (qwen3_next.causal_conv1d_fn, qwen3_next.causal_conv1d_update))
    tx.enable()
    calls = {"n": 0}
    for name in ("causal_conv1d_fn", "causal_conv1d_update"):
        original = getattr(conv, name)

        def counted(*args, _original=original, **kwargs):
            calls["n"] += 1
            return _original(*args, **kwargs)
        monkeypatch.setattr(conv, name, counted)
    tol = 1e-5 if dtype == torch.float32 else 2 ** -7
    gen2 = torch.Generator().manual_seed(5)
    dim, K = 80, 4
    w, b = torch.randn(dim, K, generator=gen2).to(dtype), torch.randn(dim, generator=gen2).to(dtype)
    for activation in ("silu", None):
        x = torch.randn(2, dim, 13, generator=gen2).to(dtype)
        got = qwen3_next.causal_conv1d_fn(x, w, b, activation=activation)
        assert got.dtype == dtype and relative(got, stock_fn(x, w, b, activation=activation)) <= tol
        for state_len in (K, K - 1):
            state = torch.randn(2, dim, state_len, generator=gen2).to(dtype)
            expected_state = state.clone()
            token = torch.randn(2, dim, 1, generator=gen2).to(dtype)
            expected = stock_update(token, expected_state, w, b, activation)
            got = qwen3_next.causal_conv1d_update(token, state, w, b, activation)
            assert relative(got, expected) <= tol
            assert torch.equal(state, expected_state)  # the same values, moved the same way
    assert calls["n"] == 6
    x = torch.randn(1, dim, 5, generator=gen2, requires_grad=True)  # autograd: the stock code, differentiable
    qwen3_next.causal_conv1d_fn(x, w.float(), None, activation="silu").sum().backward()
    assert x.grad is not None and calls["n"] == 6


@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
@pytest.mark.parametrize("rotary", [16, 8])  # full (Llama) and partial (Qwen3-Next's form) rotary width
def test_rope_functions_match_stock(stock, unsqueeze_dim, rotary):
    stock_rope, stock_partial = llama.apply_rotary_pos_emb, qwen3_next.apply_rotary_pos_emb
    stock_interleave = deepseek.apply_rotary_pos_emb_interleave
    tx.enable()
    gen = torch.Generator().manual_seed(3)
    shape_q, shape_k = ((2, 4, 5, 16), (2, 2, 5, 16)) if unsqueeze_dim == 1 else ((2, 5, 4, 16), (2, 5, 2, 16))
    q, k = torch.randn(shape_q, generator=gen), torch.randn(shape_k, generator=gen)
    freqs = torch.randn(2, 5, rotary // 2, generator=gen)
    cos, sin = torch.cat((freqs, freqs), -1).cos(), torch.cat((freqs, freqs), -1).sin()
    if rotary == 16:
        for patched, original in ((llama.apply_rotary_pos_emb, stock_rope),
                                  (qwen3_next.apply_rotary_pos_emb, stock_partial)):
            got, expected = patched(q, k, cos, sin, unsqueeze_dim), original(q, k, cos, sin, unsqueeze_dim)
            assert relative(got[0], expected[0]) <= 1e-6 and relative(got[1], expected[1]) <= 1e-6
        if unsqueeze_dim == 1:
            got = deepseek.apply_rotary_pos_emb_interleave(q, k, cos, sin)
            expected = stock_interleave(q, k, cos, sin)
            assert relative(got[0], expected[0]) <= 1e-6 and relative(got[1], expected[1]) <= 1e-6
    else:
        got, expected = qwen3_next.apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim), \
            stock_partial(q, k, cos, sin, unsqueeze_dim)
        assert relative(got[0], expected[0]) <= 1e-6 and relative(got[1], expected[1]) <= 1e-6


def test_unsupported_calls_fall_back_to_stock(stock, monkeypatch):
    stock_rope, stock_chunk = llama.apply_rotary_pos_emb, qwen3_next.torch_chunk_gated_delta_rule
    tx.enable()
    with counting(monkeypatch) as calls:
        # float64 (no txops kernels): the stock result exactly
        q, k = torch.randn(1, 2, 3, 8, dtype=torch.float64), torch.randn(1, 2, 3, 8, dtype=torch.float64)
        cos, sin = torch.randn(1, 3, 8, dtype=torch.float64), torch.randn(1, 3, 8, dtype=torch.float64)
        assert all(torch.equal(a, b) for a, b in zip(llama.apply_rotary_pos_emb(q, k, cos, sin),
                                                     stock_rope(q, k, cos, sin)))
        # mixed dtypes the stock code promotes (fp32 cos with bf16 q: a fp32 result)
        out = llama.apply_rotary_pos_emb(q.bfloat16(), k.bfloat16(), cos.float(), sin.float())
        assert out[0].dtype == torch.float32
        # a tensor not on the CPU ("meta" stands for CUDA / NPU here): the stock code runs on it
        q_meta, k_meta = torch.empty(1, 2, 3, 8, device="meta"), torch.empty(1, 2, 3, 8, device="meta")
        cos_meta, sin_meta = torch.empty(1, 3, 8, device="meta"), torch.empty(1, 3, 8, device="meta")
        assert llama.apply_rotary_pos_emb(q_meta, k_meta, cos_meta, sin_meta)[0].device.type == "meta"
        assert deepseek.apply_rotary_pos_emb_interleave(q_meta, k_meta, cos_meta, sin_meta)[0].device.type == "meta"
        # the decode recurrence under autograd (txops' decode operator has no backward), the gated delta rule
        # in float64
        q, k, v, g, beta, state = gdr_inputs(1, 1, 2, 8, 8)
        q.requires_grad_()
        out, _ = qwen3_next.torch_recurrent_gated_delta_rule(q, k, v, g=g, beta=beta, initial_state=state,
                                                             output_final_state=True)
        out.sum().backward()
        assert q.grad is not None
        q, k, v, g, beta, state = gdr_inputs(1, 9, 2, 8, 8, torch.float64)
        assert torch.equal(qwen3_next.torch_chunk_gated_delta_rule(q, k, v, g=g.double(), beta=beta)[0],
                           stock_chunk(q, k, v, g=g.double(), beta=beta)[0])
        # a head dim txops' prefill refuses (> 256): the stock code
        q, k, v, g, beta, state = gdr_inputs(1, 3, 1, 8, 300)
        assert qwen3_next.torch_chunk_gated_delta_rule(q, k, v, g=g, beta=beta)[0].shape == (1, 3, 1, 300)
    assert calls == {"chunk": 0, "recurrent": 0, "rope": 0, "interleave": 0, "rope_functional": 0, "conv": 0}


# ---- tiny models end to end ------------------------------------------------------------------------------------

def qwen3_next_model(dtype=torch.float32):
    from transformers import Qwen3NextConfig, Qwen3NextForCausalLM
    torch.manual_seed(0)
    config = Qwen3NextConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
        linear_value_head_dim=16, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
        shared_expert_intermediate_size=32, layer_types=["linear_attention", "full_attention"],
        mlp_only_layers=[0, 1], max_position_embeddings=512)  # dense MLPs: the MoE code is not what is tested
    return Qwen3NextForCausalLM(config).to(dtype).eval()


def llama_model():
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(1)
    config = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512)
    return LlamaForCausalLM(config)


def deepseek_model():
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM
    torch.manual_seed(2)
    config = DeepseekV3Config(vocab_size=256, hidden_size=64, intermediate_size=128, moe_intermediate_size=32,
                              num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4, n_shared_experts=1,
                              n_routed_experts=4, num_experts_per_tok=2, n_group=1, topk_group=1,
                              first_k_dense_replace=2, kv_lora_rank=32, q_lora_rank=48, qk_rope_head_dim=16,
                              qk_nope_head_dim=16, v_head_dim=16, max_position_embeddings=512, rope_interleave=True)
    return DeepseekV3ForCausalLM(config)


def greedy(model, prompt, new_tokens):
    with torch.no_grad():
        out = model.generate(prompt, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                             use_cache=True, output_scores=True, return_dict_in_generate=True, pad_token_id=0)
    return out.sequences, torch.stack(out.scores)


def prompt_of(length, seed=5):
    return torch.randint(0, 256, (1, length), generator=torch.Generator().manual_seed(seed))


def test_qwen3_next_greedy_generation_matches_stock(stock, monkeypatch):
    """300-token prompt (chunked prefill through both attention kinds), then 32 tokens of cached decode."""
    model, prompt = qwen3_next_model(), prompt_of(300)
    expected_tokens, expected_logits = greedy(model, prompt, 32)
    tx.enable()
    with counting(monkeypatch) as calls:
        tokens, logits = greedy(model, prompt, 32)
    assert calls["chunk"] == 1 and calls["recurrent"] == 31  # one linear-attention layer: prefill + 31 decodes
    assert calls["conv"] == 32  # its causal conv, prefill and every decode step
    assert calls["rope"] == 32  # one full-attention layer (partial rotary)
    assert torch.equal(tokens, expected_tokens)
    assert relative(logits, expected_logits) <= 1e-4


def test_qwen3_next_bf16_no_less_accurate_than_stock(stock):
    """bf16 logits against the same model in fp32: txops' bf16 run is no further from them than stock bf16 is
    (stock rounds each RoPE product to bf16, txops once; both run the gated delta rule in fp32). The replaced
    functions themselves are within the bf16 tolerance of the stock ones (test_*_functions_match_stock)."""
    prompt = prompt_of(64, seed=6)
    with torch.no_grad():
        reference = qwen3_next_model()(prompt).logits
        model = qwen3_next_model(torch.bfloat16)
        stock_error = relative(model(prompt).logits, reference)
        tx.enable()
        txops_error = relative(model(prompt).logits, reference)
    assert txops_error <= max(1.25 * stock_error, 2 ** -7), (txops_error, stock_error)


def training_step(model, prompt, target):
    """One training step's (loss, {parameter name: gradient}); the model is left in eval mode."""
    model.train()
    model.zero_grad()
    loss = model(prompt, labels=target).loss
    loss.backward()
    model.eval()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def assert_same_step(loss, grads, expected_loss, expected_grads):
    """Loss within 1e-5 and every parameter's gradient within 1e-4 relative of the stock step's."""
    assert abs(loss.item() - expected_loss.item()) <= 1e-5 * abs(expected_loss.item())
    assert grads.keys() == expected_grads.keys()
    for name, grad in grads.items():
        assert relative(grad, expected_grads[name]) <= 1e-4, name


@pytest.mark.parametrize("make, kind", [(llama_model, "rope"), (deepseek_model, "interleave")])
def test_generation_and_training_step_match_stock(stock, monkeypatch, make, kind):
    model, prompt = make(), prompt_of(24, seed=7)
    model.eval()
    expected_tokens, expected_logits = greedy(model, prompt, 6)
    target = prompt_of(24, seed=8)

    expected_loss, expected_grads = training_step(model, prompt, target)
    tx.enable()
    with counting(monkeypatch) as calls:
        tokens, logits = greedy(model, prompt, 6)
        assert calls[kind] > 0
        loss, grads = training_step(model, prompt, target)
        assert calls["rope_functional" if kind == "rope" else "interleave"] > 0  # the autograd path ran txops
    assert torch.equal(tokens, expected_tokens) and relative(logits, expected_logits) <= 1e-4
    assert_same_step(loss, grads, expected_loss, expected_grads)


def test_qwen3_next_training_step_matches_stock(stock, monkeypatch):
    """A training step of the tiny Qwen3-Next (150 tokens: chunked prefill with a partial chunk): the linear
    attention's forward and backward run txops (chunk_gated_delta_rule and its backward), loss and every
    parameter's gradient within fp32 tolerance of stock transformers'."""
    model, prompt, target = qwen3_next_model(), prompt_of(150, seed=9), prompt_of(150, seed=10)

    expected_loss, expected_grads = training_step(model, prompt, target)
    tx.enable()
    with counting(monkeypatch) as calls:
        loss, grads = training_step(model, prompt, target)
    assert calls["chunk"] == 1  # the linear-attention layer's prefill ran txops, with autograd recording it
    linear = [n for n in grads if "linear_attn" in n]
    assert linear and all(grads[n].abs().max() > 0 for n in linear)
    assert_same_step(loss, grads, expected_loss, expected_grads)


def test_docstring_examples(stock):
    import doctest
    failures, tried = doctest.testmod(tx, optionflags=doctest.NORMALIZE_WHITESPACE, report=True)
    assert tried > 0 and failures == 0


def test_example_script(stock, monkeypatch, capsys):
    """examples/qwen3_next_transformers.py runs (in process, tiny arguments) and reports the same tokens."""
    import importlib.util
    import os
    import sys
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                        "qwen3_next_transformers.py")
    spec = importlib.util.spec_from_file_location("qwen3_next_transformers_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    monkeypatch.setattr(sys, "argv", [path, "--tiny", "--prompt", "16", "--new-tokens", "2"])
    threads = txops.num_threads()
    assert example.main() == 0
    assert "same tokens as stock transformers" in capsys.readouterr().out
    assert not tx.is_enabled() and txops.num_threads() == threads
