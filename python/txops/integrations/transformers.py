"""Hugging Face transformers on txops: ``enable()`` makes the model code of the installed transformers run txops'
operators on CPU tensors; ``disable()`` puts the stock functions back. One call, process-wide, idempotent; models
need no change and nothing is downloaded.

What is replaced (module-level functions of ``transformers.models.<model>.modeling_<model>``, which the layers
look up at call time):

* ``torch_chunk_gated_delta_rule`` / ``torch_recurrent_gated_delta_rule`` (Qwen3-Next, Qwen3.5 / Qwen3.5-MoE,
  and the models whose copies are the same code): the linear-attention layers' prefill runs
  ``txops.chunk_gated_delta_rule`` (through :mod:`txops.fla`: the cache's ``[B, HV, K, V]`` state passed as its
  transposed view), decode runs ``txops.recurrent_gated_delta_rule`` on the cache's recurrent state in place (the
  layer copies the returned state into that same tensor right after, so nothing else changes). GQA stays as the
  model does it (q / k repeated before the call). Inputs are taken to fp32 as the stock functions do. The prefill
  is differentiable (txops' backward, ``chunk_gated_delta_rule_grad``): training runs txops too.
* ``causal_conv1d_fn`` / ``causal_conv1d_update`` (the same models' short convolution before the recurrence,
  when transformers falls back to PyTorch): ``txops.causal_conv1d_fn`` / ``causal_conv1d_update`` on the
  channel-first tensors' transposed views; decode updates the cache's conv state in place, as the stock code does.
  Calls autograd must record keep the stock code (txops' conv has no backward).
* ``apply_rotary_pos_emb_interleave`` (DeepSeek-V3 / V3.2 and the copies of it): ``txops.interleave_rope`` on q
  and k (de-interleave, then rotate-half), differentiable.
* ``apply_rotary_pos_emb`` (Llama and the many models with the same function, and the partial-rotary form of
  Qwen3-Next / GLM): txops' fused q/k rotation (``aclnnApplyRotaryPosEmbV2``, BNSD layout, cos narrower than
  the head passes the rest), differentiable through the registered autograd (backward:
  ``apply_rotary_pos_emb_grad``).

A function is replaced only where its code (docstring and decorators aside) is exactly the reference one of the
installed transformers (``qwen3_next``, ``llama``, ``deepseek_v3``), so a model with a different variant keeps
its own. Every replacement falls back to the stock function (the plain PyTorch one for CPU tensors) whenever
txops cannot take the call: a tensor not on the CPU, a dtype other than fp32 / fp16 / bf16, mixed dtypes the
stock code would promote, shapes txops refuses, and, for the decode recurrence (txops' decode operator has no
backward), a call autograd must record.
"""
from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import sys
import textwrap
import threading
from typing import Iterable, Optional, Tuple

#: Models whose modules are looked at by default (those whose function is not the reference code are skipped).
GDR_MODELS = ("qwen3_next", "qwen3_5", "qwen3_5_moe", "olmo_hybrid", "qwen4_exp")
INTERLEAVE_MODELS = ("deepseek_v3", "deepseek_v32", "glm4_moe_lite", "glm_moe_dsa", "mistral4", "longcat_flash",
                     "youtu")
ROPE_MODELS = ("llama", "mistral", "mixtral", "ministral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen3_next",
               "qwen3_5", "qwen3_5_moe", "gemma", "gemma2", "gemma3", "granite", "granitemoe", "olmoe",
               "deepseek_v3", "deepseek_v32", "glm4_moe", "glm4_moe_lite", "mistral4", "smollm3", "starcoder2",
               "phi", "stablelm", "seed_oss", "exaone4", "hunyuan_v1_dense", "hunyuan_v1_moe", "dots1", "gpt_neox")

_lock = threading.RLock()
_patches = []  # (module, attribute, stock function, replacement)
_skipped = []  # "module.attribute: why"

_FLOAT_DTYPES = None


def _torch():
    import torch
    return torch


def _float_dtypes():
    global _FLOAT_DTYPES
    if _FLOAT_DTYPES is None:
        torch = _torch()
        _FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
    return _FLOAT_DTYPES


def _on_cpu(*tensors):
    torch = _torch()
    return all(isinstance(t, torch.Tensor) and t.device.type == "cpu" for t in tensors)


def _grad_needed(*tensors):
    torch = _torch()
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _stock_for(tensor, original):
    """The stock function to fall back to: for CPU tensors the plain PyTorch one (transformers' wrapper may
    have bound fla's Triton kernel, which has no CPU path), else the wrapper as transformers built it."""
    if getattr(tensor, "device", None) is not None and tensor.device.type == "cpu":
        return inspect.unwrap(original)
    return original


# ---- the gated delta rule --------------------------------------------------------------------------------------

def _gdr_supported(query, key, value, g, beta, initial_state, differentiable):
    """Whether txops takes the call; `differentiable`: the txops path has a backward (prefill), else a call that
    autograd must record goes to the stock code."""
    tensors = [query, key, value, g, beta] + ([] if initial_state is None else [initial_state])
    if not _on_cpu(*tensors):
        return False
    if any(t.dtype not in _float_dtypes() for t in tensors):
        return False
    if not differentiable and _grad_needed(*tensors):
        return False
    return query.dim() == 4 and key.dim() == 4 and value.dim() == 4 and query.shape[-1] <= 256 \
        and value.shape[-1] <= 256


def _fp32(x):
    torch = _torch()
    return x if x.dtype == torch.float32 else x.float()


def _txops_chunk(query, key, value, g, beta, initial_state, output_final_state, use_qk_l2norm_in_kernel,
                 cu_seqlens):
    from .. import fla
    dtype = query.dtype
    q, k, v, b, decay = (_fp32(x) for x in (query, key, value, beta, g))
    if use_qk_l2norm_in_kernel:
        q, k = fla._l2norm(q), fla._l2norm(k)  # transformers' l2norm: x * rsqrt(sum(x*x) + 1e-6), in fp32
    out, final = fla.chunk_gated_delta_rule(q, k, v, decay, b, initial_state=initial_state,
                                            output_final_state=output_final_state, cu_seqlens=cu_seqlens)
    return out.to(dtype), final


def _txops_recurrent(query, key, value, g, beta, initial_state, output_final_state, use_qk_l2norm_in_kernel,
                     cu_seqlens):
    torch = _torch()
    from .. import fla, gdr
    dtype = query.dtype
    q, k, v, b, decay = (_fp32(x) for x in (query, key, value, beta, g))
    if use_qk_l2norm_in_kernel:
        q, k = fla._l2norm(q), fla._l2norm(k)
    batch, tokens, heads, key_dim = k.shape
    value_heads, value_dim = v.shape[2], v.shape[3]
    in_place = (initial_state is not None and output_final_state and cu_seqlens is None
                and initial_state.dtype == torch.float32
                and tuple(initial_state.shape) == (batch, value_heads, key_dim, value_dim))
    if not in_place:
        out, final = fla.fused_recurrent_gated_delta_rule(q, k, v, decay, beta=b, initial_state=initial_state,
                                                          output_final_state=output_final_state,
                                                          cu_seqlens=cu_seqlens)
        return out.to(dtype), final
    # decode on the cache's state itself: slot n of the pool (its V-first view) is sequence n
    rows = batch * tokens
    lengths = torch.full((batch,), tokens, dtype=torch.int32)
    slots = torch.arange(batch, dtype=torch.int32) if tokens == 1 else \
        torch.arange(batch, dtype=torch.int32).repeat_interleave(tokens)
    out = gdr.recurrent_gated_delta_rule(q.reshape(rows, heads, key_dim), k.reshape(rows, heads, key_dim),
                                         v.reshape(rows, value_heads, value_dim), b.reshape(rows, value_heads),
                                         initial_state.transpose(-1, -2), lengths, slots,
                                         g=decay.reshape(rows, value_heads), scale=key_dim ** -0.5)
    return out.view(batch, tokens, value_heads, value_dim).to(dtype), initial_state


def _make_chunk(original):
    @functools.wraps(original)
    def torch_chunk_gated_delta_rule(query, key, value, g, beta, chunk_size=64, initial_state=None,
                                     output_final_state=False, use_qk_l2norm_in_kernel=False, **kwargs):
        if _gdr_supported(query, key, value, g, beta, initial_state, True):
            try:
                return _txops_chunk(query, key, value, g, beta, initial_state, output_final_state,
                                    use_qk_l2norm_in_kernel, kwargs.get("cu_seqlens"))
            except (ValueError, TypeError, NotImplementedError):
                pass  # a shape or option txops refuses: the stock code decides
        return _stock_for(query, original)(query, key, value, g=g, beta=beta, chunk_size=chunk_size,
                                           initial_state=initial_state, output_final_state=output_final_state,
                                           use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel, **kwargs)
    return torch_chunk_gated_delta_rule


def _make_recurrent(original):
    @functools.wraps(original)
    def torch_recurrent_gated_delta_rule(query, key, value, g, beta, initial_state=None, output_final_state=False,
                                         use_qk_l2norm_in_kernel=False, **kwargs):
        if _gdr_supported(query, key, value, g, beta, initial_state, False):
            try:
                return _txops_recurrent(query, key, value, g, beta, initial_state, output_final_state,
                                        use_qk_l2norm_in_kernel, kwargs.get("cu_seqlens"))
            except (ValueError, TypeError, NotImplementedError):
                pass
        return _stock_for(query, original)(query, key, value, g=g, beta=beta, initial_state=initial_state,
                                           output_final_state=output_final_state,
                                           use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel, **kwargs)
    return torch_recurrent_gated_delta_rule


# ---- the causal conv of the linear-attention layers ---------------------------------------------------------
# transformers keeps channel-first tensors: hidden states (B, dim, L), weight (dim, K), conv state (B, dim, S);
# txops reads them as their transposed views (B, L, dim), (K, dim), (B, S, dim) without a copy.

_CONV_ACTIVATIONS = {None: None, "silu": "silu", "swish": "silu"}


def _conv_supported(hidden_states, weight, bias, activation, *more):
    tensors = [hidden_states, weight] + ([] if bias is None else [bias]) + list(more)
    if activation not in _CONV_ACTIVATIONS or not _on_cpu(*tensors) or _grad_needed(*tensors):
        return False  # txops' conv has no backward: training keeps the stock code
    dtype = hidden_states.dtype
    return dtype in _float_dtypes() and all(t.dtype == dtype for t in tensors) and hidden_states.dim() == 3 \
        and weight.dim() == 2 and 2 <= weight.shape[1] <= 4 and weight.shape[0] == hidden_states.shape[1]


def _make_conv_fn(original):
    @functools.wraps(original)
    def causal_conv1d_fn(hidden_states, weight, bias=None, activation=None, **kwargs):
        # kwargs: the layer's forward kwargs, which the stock fallback accepts and ignores (so does this one)
        if not _conv_supported(hidden_states, weight, bias, activation):
            return _stock_for(hidden_states, original)(hidden_states, weight, bias, activation, **kwargs)
        torch = _torch()
        from .. import conv
        batch, dim, _ = hidden_states.shape
        out = torch.empty_like(hidden_states)  # hidden_states' strides: its transposed view is laid out like x's
        scratch = torch.empty(batch, weight.shape[1] - 1, dim, dtype=hidden_states.dtype)  # the final state: unused
        conv.causal_conv1d_fn(hidden_states.transpose(1, 2), weight.t(), scratch, bias=bias,
                              activation=_CONV_ACTIVATIONS[activation], out=out.transpose(1, 2))
        return out
    return causal_conv1d_fn


def _make_conv_update(original):
    @functools.wraps(original)
    def causal_conv1d_update(hidden_states, conv_state, weight, bias=None, activation=None):
        width = weight.shape[-1] if weight.dim() == 2 else 0
        if not (_conv_supported(hidden_states, weight, bias, activation, conv_state) and hidden_states.shape[2] == 1
                and conv_state.dim() == 3 and conv_state.shape[:2] == hidden_states.shape[:2]
                and conv_state.shape[2] >= width - 1):
            return _stock_for(hidden_states, original)(hidden_states, conv_state, weight, bias, activation)
        torch = _torch()
        from .. import conv
        state_len = conv_state.shape[2]
        keep = state_len - (width - 1)  # the columns before the K-1 the conv reads: they move by one token too
        moved = conv_state[:, :, 1:keep + 1].clone() if keep > 0 else None  # read before the call rewrites them
        out = torch.empty_like(hidden_states)
        conv.causal_conv1d_update(hidden_states.transpose(1, 2), weight.t(), conv_state[:, :, keep:].transpose(1, 2),
                                  bias=bias, activation=_CONV_ACTIVATIONS[activation], out=out.transpose(1, 2))
        if moved is not None:
            conv_state[:, :, :keep] = moved
        return out
    return causal_conv1d_update


# ---- RoPE ----------------------------------------------------------------------------------------------------

def _rope_supported(q, k, cos, sin):
    if not _on_cpu(q, k, cos, sin):
        return False
    dtype = q.dtype
    # one dtype for all four: with cos in another dtype the stock code would promote the result
    if dtype not in _float_dtypes() or k.dtype != dtype or cos.dtype != dtype or sin.dtype != dtype:
        return False
    return q.dim() == 4 and k.dim() == 4 and cos.dim() == 3 and sin.shape == cos.shape


_LAYOUT_OF_UNSQUEEZE = {1: 3, 2: 1}  # unsqueeze_dim -> txops layout: 1 = (B, N, S, D) BNSD; 2 = (B, S, N, D) BSND


def _make_rope(original):
    @functools.wraps(original)
    def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
        layout = _LAYOUT_OF_UNSQUEEZE.get(unsqueeze_dim)
        if layout is not None and _rope_supported(q, k, cos, sin):
            from .. import _arrays, rope
            torch = _torch()
            cos4, sin4 = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
            try:
                ops = _arrays.torch_ops(q, k, cos4, sin4)
                if ops is not None:  # autograd / compile / tracing: the functional operator (new tensors)
                    return ops.apply_rotary_pos_emb_functional(q, k, cos4, sin4, layout, 0)
                q_out = q.clone(memory_format=torch.contiguous_format)
                k_out = k.clone(memory_format=torch.contiguous_format)
                return rope.apply_rotary_pos_emb(q_out, k_out, cos4, sin4, layout=layout, rotary_mode="half")
            except (ValueError, TypeError):
                pass
        return original(q, k, cos, sin, unsqueeze_dim)
    return apply_rotary_pos_emb


def _make_interleave(original):
    @functools.wraps(original)
    def apply_rotary_pos_emb_interleave(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
        if unsqueeze_dim == 1 and _rope_supported(q, k, cos, sin) and cos.shape[-1] == q.shape[-1] == k.shape[-1]:
            from .. import rope
            torch = _torch()
            # the stock function reads the first half of cos / sin (cat(freqs, freqs)) for both halves
            half = cos.shape[-1] // 2
            cos4 = torch.cat((cos[..., :half], cos[..., :half]), dim=-1).unsqueeze(1)
            sin4 = torch.cat((sin[..., :half], sin[..., :half]), dim=-1).unsqueeze(1)
            try:
                return rope.interleave_rope(q, cos4, sin4), rope.interleave_rope(k, cos4, sin4)
            except (ValueError, TypeError):
                pass
        return original(q, k, cos, sin, position_ids, unsqueeze_dim)
    return apply_rotary_pos_emb_interleave


# ---- finding and patching the functions ----------------------------------------------------------------------

def _normalised(function) -> Optional[str]:
    """The function's code as an AST dump without docstring, decorators and name (None if no source)."""
    try:
        source = textwrap.dedent(inspect.getsource(inspect.unwrap(function)))
        node = ast.parse(source).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return None
    if not isinstance(node, ast.FunctionDef):
        return None
    node.decorator_list, node.name = [], "f"
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        node.body = body[1:]
    return ast.dump(node)


def _modeling(model):
    name = f"transformers.models.{model}.modeling_{model}"
    try:
        if importlib.util.find_spec(name) is None:
            return None
        return importlib.import_module(name)
    except Exception:  # a model module that cannot import here (optional dependency): not patched
        return None


def _references():
    """{kind: (attribute, [reference code, ...], replacement factory)} from the installed transformers."""
    refs = {}
    qwen3_next, llama, deepseek = _modeling("qwen3_next"), _modeling("llama"), _modeling("deepseek_v3")
    if qwen3_next is not None:
        refs["chunk"] = ("torch_chunk_gated_delta_rule", [_normalised(qwen3_next.torch_chunk_gated_delta_rule)],
                         _make_chunk, GDR_MODELS)
        refs["recurrent"] = ("torch_recurrent_gated_delta_rule",
                             [_normalised(qwen3_next.torch_recurrent_gated_delta_rule)], _make_recurrent, GDR_MODELS)
        for name, factory in (("causal_conv1d_fn", _make_conv_fn), ("causal_conv1d_update", _make_conv_update)):
            if hasattr(qwen3_next, name):
                refs[name] = (name, [_normalised(getattr(qwen3_next, name))], factory, GDR_MODELS)
    rope_codes = [_normalised(m.apply_rotary_pos_emb) for m in (llama, qwen3_next) if m is not None]
    if rope_codes:
        refs["rope"] = ("apply_rotary_pos_emb", rope_codes, _make_rope, ROPE_MODELS)
    if deepseek is not None:
        refs["interleave"] = ("apply_rotary_pos_emb_interleave", [_normalised(deepseek.apply_rotary_pos_emb_interleave)],
                              _make_interleave, INTERLEAVE_MODELS)
    return refs


def enable(models: Optional[Iterable[str]] = None) -> Tuple[str, ...]:
    """Routes the installed transformers' gated-delta-rule and RoPE functions to txops (see the module docstring).

    Parameters
    ----------
    models : iterable of str, optional
        Model module names to look at (``"llama"``, ``"qwen3_next"``, ...); default: the lists
        ``GDR_MODELS``, ``INTERLEAVE_MODELS`` and ``ROPE_MODELS`` of this module. A function is replaced only where
        it is the reference code.

    Returns
    -------
    tuple of str
        The replaced functions, ``"<module>.<function>"``; calling again returns them without doing anything.

    Examples
    --------
    >>> import txops.integrations.transformers as tx
    >>> "transformers.models.llama.modeling_llama.apply_rotary_pos_emb" in tx.enable()
    True
    >>> tx.disable()
    """
    with _lock:
        if _patches:
            return patched()
        import transformers  # noqa: F401  (fails clearly when transformers is not installed)
        _skipped.clear()
        wanted = None if models is None else set(models)
        for kind, (attribute, codes, factory, default_models) in _references().items():
            for model in (default_models if wanted is None else sorted(wanted)):
                module = _modeling(model)
                stock = getattr(module, attribute, None) if module is not None else None
                if stock is None:
                    continue
                name = f"{module.__name__}.{attribute}"
                if _normalised(stock) not in codes:
                    _skipped.append(f"{name}: not the reference code")
                    continue
                replacement = factory(stock)
                replacement.__txops__ = True
                setattr(module, attribute, replacement)
                _patches.append((module, attribute, stock, replacement))
        if "fla.ops.backends" in sys.modules:  # fla's ops are imported: its own function runs txops too
            from .. import fla
            fla.register_fla_backend()
        return patched()


def disable() -> None:
    """Puts the stock functions back (those enable() replaced and nobody replaced since). Idempotent.

    Examples
    --------
    >>> import txops.integrations.transformers as tx
    >>> tx.disable(); tx.is_enabled()
    False
    """
    with _lock:
        for module, attribute, stock, replacement in reversed(_patches):
            if getattr(module, attribute, None) is replacement:
                setattr(module, attribute, stock)
        _patches.clear()


def is_enabled() -> bool:
    """Whether enable() is in effect.

    Examples
    --------
    >>> import txops.integrations.transformers as tx
    >>> tx.is_enabled()
    False
    """
    return bool(_patches)


def patched() -> Tuple[str, ...]:
    """The functions enable() replaced, ``"<module>.<function>"``.

    Examples
    --------
    >>> import txops.integrations.transformers as tx
    >>> tx.patched()
    ()
    """
    return tuple(f"{module.__name__}.{attribute}" for module, attribute, _, _ in _patches)


def skipped() -> Tuple[str, ...]:
    """The functions enable() looked at and left alone, with why (not the reference code).

    Examples
    --------
    >>> import txops.integrations.transformers as tx
    >>> isinstance(tx.skipped(), tuple)
    True
    """
    return tuple(_skipped)


__all__ = ["enable", "disable", "is_enabled", "patched", "skipped", "GDR_MODELS", "INTERLEAVE_MODELS",
           "ROPE_MODELS"]
