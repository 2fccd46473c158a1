"""The txops operators as PyTorch operators, ``torch.ops.txops.*``: a schema each (``torch.library.define``), a
CPU kernel calling the extension through DLPack, a fake (meta) kernel giving the outputs' shapes, dtypes and
strides without running, and autograd formulas (``torch.library.register_autograd``) for the differentiable
forms. Imported only once torch is (txops._arrays.attach_torch); nothing here is compiled against torch.

Operators (all CPU; ``rotary_mode`` is the code 0 half, 1 interleave, 2 quarter, 3 interleave-half;
``layout`` 1 BSND, 2 SBND, 3 BNSD, 4 TND):

=====================================  ==========================================================================
``interleave_rope``                    (x, cos, sin) -> out; differentiable (x, cos, sin)
``interleave_rope_out``                the same into a given ``out`` (mutated; may be x)
``inplace_partial_rotary_mul``         rotates x[..., start:end] in place (x mutated)
``partial_rotary_mul``                 its functional form: a new tensor; differentiable (x, cos, sin)
``inplace_partial_rotary_mul_grad``    the adjoint, in place on grad_output (mutated)
``apply_rotary_pos_emb``               RoPE in place on query and key (both mutated)
``apply_rotary_pos_emb_functional``    its functional form: (new query, new key); differentiable (q, k, cos, sin)
``apply_rotary_pos_emb_grad``          (grad_query, grad_key, grad_cos, grad_sin); the last two are empty
                                       (0,) tensors unless query and key are given
``chunk_gated_delta_rule``             prefill -> (out, final_state); differentiable (query, key, value, beta,
                                       initial_state, g)
``chunk_gated_delta_rule_out``         the same into given out / final_state (mutated)
``chunk_gated_delta_rule_train``       the training forward -> (out, final_state, checkpoints,
                                       corrected_values): also the fp32 states after every 64 tokens
                                       (max(T // 64, 1), Nv, Dv, Dk), key-major in memory, and the corrected
                                       values V' (T, Nv, Dv) fp32, which its autograd hands to the backward;
                                       differentiable as above
``chunk_gated_delta_rule_grad``        its backward -> (grad_query, grad_key, grad_value, grad_beta, grad_g,
                                       grad_initial_state); grad_g is an empty (0,) tensor when g is None;
                                       forward_checkpoints, forward_corrected_values: the train op's (None:
                                       recomputed)
``recurrent_gated_delta_rule``         decode -> out; the state pool is mutated
``recurrent_gated_delta_rule_out``     the same into a given out (mutated)
``causal_conv1d_fn``                   prefill causal conv -> y; conv_states mutated (``activation`` 0 none,
                                       1 silu)
``causal_conv1d_fn_out``               the same into a given out (mutated)
``causal_conv1d_update``               decode causal conv -> y; conv_states mutated
``causal_conv1d_update_out``           the same into a given out (mutated)
=====================================  ==========================================================================

and the RotaryPositionEmbedding / RopeWithSinCosCache operators of txops._torch_ops_rotary (its table).

The public functions (txops.interleave_rope, ...) route torch tensors through these operators whenever autograd,
torch.compile or a tracing mode must see the call, and otherwise call the extension directly, since a round
trip through the dispatcher costs microseconds. The in-place public functions, when autograd records them, run
the functional form and copy the result into the caller's tensor with ``Tensor.copy_`` (which autograd records
on views too). Kernels that write a tensor in place bump its autograd version counter, as torch's own in-place
operators do.
"""
import torch

from . import _torch_ops_rotary
from . import _txops as _C
from ._arrays import export as _dl  # what the extension reads: a DLPack capsule, or the tensor itself

_INTERLEAVE_HALF = 3

SCHEMAS = {
    "interleave_rope": "(Tensor x, Tensor cos, Tensor sin) -> Tensor",
    "interleave_rope_out": "(Tensor x, Tensor cos, Tensor sin, Tensor(a!) out) -> ()",
    "inplace_partial_rotary_mul": "(Tensor(a!) x, Tensor cos, Tensor sin, int rotary_mode, int start, int end) -> ()",
    "partial_rotary_mul": "(Tensor x, Tensor cos, Tensor sin, int rotary_mode, int start, int end) -> Tensor",
    "inplace_partial_rotary_mul_grad":
        "(Tensor(a!) grad_output, Tensor cos, Tensor sin, int rotary_mode, int start, int end) -> ()",
    "apply_rotary_pos_emb":
        "(Tensor(a!) query, Tensor(b!) key, Tensor cos, Tensor sin, int layout, int rotary_mode) -> ()",
    "apply_rotary_pos_emb_functional":
        "(Tensor query, Tensor key, Tensor cos, Tensor sin, int layout, int rotary_mode) -> (Tensor, Tensor)",
    "apply_rotary_pos_emb_grad":
        "(Tensor grad_query_embed, Tensor grad_key_embed, Tensor cos, Tensor sin, Tensor? query, Tensor? key, "
        "int rotary_mode, int layout) -> (Tensor, Tensor, Tensor, Tensor)",
    "chunk_gated_delta_rule":
        "(Tensor query, Tensor key, Tensor value, Tensor beta, Tensor initial_state, Tensor actual_seq_lengths, "
        "Tensor? g, float scale) -> (Tensor, Tensor)",
    "chunk_gated_delta_rule_out":
        "(Tensor query, Tensor key, Tensor value, Tensor beta, Tensor initial_state, Tensor actual_seq_lengths, "
        "Tensor? g, float scale, Tensor(a!) out, Tensor(b!) final_state) -> ()",
    "chunk_gated_delta_rule_train":
        "(Tensor query, Tensor key, Tensor value, Tensor beta, Tensor initial_state, Tensor actual_seq_lengths, "
        "Tensor? g, float scale) -> (Tensor, Tensor, Tensor, Tensor)",
    "chunk_gated_delta_rule_grad":
        "(Tensor query, Tensor key, Tensor value, Tensor beta, Tensor initial_state, Tensor actual_seq_lengths, "
        "Tensor? g, float scale, Tensor grad_out, Tensor? grad_final_state, Tensor? forward_checkpoints=None, "
        "Tensor? forward_corrected_values=None) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)",
    "recurrent_gated_delta_rule":
        "(Tensor query, Tensor key, Tensor value, Tensor beta, Tensor(a!) state, Tensor actual_seq_lengths, "
        "Tensor ssm_state_indices, Tensor? g, Tensor? gk, Tensor? num_accepted_tokens, float scale) -> Tensor",
    "recurrent_gated_delta_rule_out":
        "(Tensor query, Tensor key, Tensor value, Tensor beta, Tensor(a!) state, Tensor actual_seq_lengths, "
        "Tensor ssm_state_indices, Tensor? g, Tensor? gk, Tensor? num_accepted_tokens, float scale, "
        "Tensor(b!) out) -> ()",
}
_CONV_ARGS = ("(Tensor x, Tensor weight, Tensor(a!) conv_states, Tensor? bias, Tensor? query_start_loc, "
              "Tensor? cache_indices, Tensor? {per_sequence}, int activation, int null_block_id")
for _op, _per_sequence in (("causal_conv1d_fn", "initial_state_mode"), ("causal_conv1d_update", "num_accepted_tokens")):
    SCHEMAS[_op] = _CONV_ARGS.format(per_sequence=_per_sequence) + ") -> Tensor"
    SCHEMAS[_op + "_out"] = _CONV_ARGS.format(per_sequence=_per_sequence) + ", Tensor(b!) out) -> ()"


class Unsupported(Exception):
    """This torch cannot host the operators (torch.library too old)."""


def _written(*tensors):
    torch._C._increment_version(tensors)


def _new(shape, dtype, like):
    return torch.empty(shape, dtype=dtype, device=like.device)


def _value_rows(value):
    """(T, Nv, Dv) of value, as the gated-delta-rule outputs are shaped."""
    if value.dim() != 3:
        raise ValueError(f"value must be (T, Nv, Dv), got rank {value.dim()}")
    return (value.shape[0], value.shape[1], value.shape[2])


# ---- CPU kernels: the extension on the tensors' memory ------------------------------------------------------

def _interleave_rope(x, cos, sin):
    out = _new(x.shape, x.dtype, x)
    _C.interleave_rope(_dl(x), _dl(cos), _dl(sin), _dl(out))
    return out


def _interleave_rope_out(x, cos, sin, out):
    _C.interleave_rope(_dl(x), _dl(cos), _dl(sin), _dl(out))
    _written(out)


def _inplace_partial_rotary_mul(x, cos, sin, mode, start, end):
    _C.inplace_partial_rotary_mul(_dl(x), _dl(cos), _dl(sin), mode, start, end)
    _written(x)


def _partial_rotary_mul(x, cos, sin, mode, start, end):
    out = x.clone(memory_format=torch.contiguous_format)
    _C.inplace_partial_rotary_mul(_dl(out), _dl(cos), _dl(sin), mode, start, end)
    return out


def _inplace_partial_rotary_mul_grad(grad_output, cos, sin, mode, start, end):
    _C.inplace_partial_rotary_mul_grad(_dl(grad_output), _dl(cos), _dl(sin), mode, start, end)
    _written(grad_output)


def _apply_rotary_pos_emb(query, key, cos, sin, layout, mode):
    _C.apply_rotary_pos_emb(_dl(query), _dl(key), _dl(cos), _dl(sin), layout, mode)
    _written(query, key)


def _apply_rotary_pos_emb_functional(query, key, cos, sin, layout, mode):
    query = query.clone(memory_format=torch.contiguous_format)
    key = key.clone(memory_format=torch.contiguous_format)
    _C.apply_rotary_pos_emb(_dl(query), _dl(key), _dl(cos), _dl(sin), layout, mode)
    return query, key


def _grad_cos_sin_wanted(query, key):
    return query is not None and key is not None


def _apply_rotary_pos_emb_grad(grad_query_embed, grad_key_embed, cos, sin, query, key, mode, layout):
    grad_query = _new(grad_query_embed.shape, grad_query_embed.dtype, grad_query_embed)
    grad_key = _new(grad_key_embed.shape, grad_key_embed.dtype, grad_key_embed)
    with_cos_sin = _grad_cos_sin_wanted(query, key)
    grad_cos = _new(cos.shape if with_cos_sin else (0,), cos.dtype, cos)
    grad_sin = _new(sin.shape if with_cos_sin else (0,), sin.dtype, sin)
    _C.apply_rotary_pos_emb_grad(_dl(grad_query_embed), _dl(grad_key_embed), _dl(cos), _dl(sin), _dl(query),
                                 _dl(key), mode, layout, _dl(grad_query), _dl(grad_key),
                                 _dl(grad_cos) if with_cos_sin else None, _dl(grad_sin) if with_cos_sin else None)
    return grad_query, grad_key, grad_cos, grad_sin


def _chunk_gated_delta_rule(query, key, value, beta, initial_state, actual_seq_lengths, g, scale):
    out = _new(_value_rows(value), query.dtype, query)
    final_state = _new(initial_state.shape, initial_state.dtype, initial_state)
    _chunk_gated_delta_rule_out(query, key, value, beta, initial_state, actual_seq_lengths, g, scale, out,
                                final_state)
    return out, final_state


def _chunk_gated_delta_rule_out(query, key, value, beta, initial_state, actual_seq_lengths, g, scale, out,
                                final_state):
    _C.chunk_gated_delta_rule(_dl(query), _dl(key), _dl(value), _dl(beta), _dl(initial_state),
                              _dl(actual_seq_lengths), _dl(g), scale, _dl(out), _dl(final_state))
    _written(out, final_state)


_SNAPSHOT_EVERY = 64  # tokens between the training forward's states (the kernels' chunk)


def _chunk_gated_delta_rule_train(query, key, value, beta, initial_state, actual_seq_lengths, g, scale):
    out, final_state, checkpoints, corrected = _fake_chunk_gated_delta_rule_train(
        query, key, value, beta, initial_state, actual_seq_lengths, g, scale)
    _C.chunk_gated_delta_rule_ex(_dl(query), _dl(key), _dl(value), _dl(beta), _dl(initial_state),
                                 _dl(actual_seq_lengths), _dl(g), scale, _dl(out), _dl(final_state), None, None,
                                 _SNAPSHOT_EVERY, _dl(checkpoints), None, 0, _dl(corrected))
    # rows past the sequences' own (T // 64 bounds them) are zeroed, so the output is fully defined
    checkpoints[int((actual_seq_lengths.to(torch.int64) // _SNAPSHOT_EVERY).sum()):].zero_()
    _written(out, final_state, checkpoints, corrected)
    return out, final_state, checkpoints, corrected


def _chunk_gated_delta_rule_grad(query, key, value, beta, initial_state, actual_seq_lengths, g, scale, grad_out,
                                 grad_final_state, forward_checkpoints=None, forward_corrected_values=None):
    grads = _fake_chunk_gated_delta_rule_grad(query, key, value, beta, initial_state, actual_seq_lengths, g, scale,
                                              grad_out, grad_final_state)
    grad_query, grad_key, grad_value, grad_beta, grad_g, grad_initial_state = grads
    _C.chunk_gated_delta_rule_grad(_dl(query), _dl(key), _dl(value), _dl(beta), _dl(initial_state),
                                   _dl(actual_seq_lengths), _dl(g), scale, _dl(grad_out), _dl(grad_final_state),
                                   _dl(grad_query), _dl(grad_key), _dl(grad_value), _dl(grad_beta),
                                   _dl(grad_g) if g is not None else None, _dl(grad_initial_state),
                                   _dl(forward_checkpoints) if forward_checkpoints is not None else None,
                                   _dl(forward_corrected_values) if forward_corrected_values is not None else None)
    return grads


def _recurrent_gated_delta_rule(query, key, value, beta, state, actual_seq_lengths, ssm_state_indices, g, gk,
                                num_accepted_tokens, scale):
    out = _new(_value_rows(value), query.dtype, query)
    _recurrent_gated_delta_rule_out(query, key, value, beta, state, actual_seq_lengths, ssm_state_indices, g, gk,
                                    num_accepted_tokens, scale, out)
    return out


def _recurrent_gated_delta_rule_out(query, key, value, beta, state, actual_seq_lengths, ssm_state_indices, g, gk,
                                    num_accepted_tokens, scale, out):
    _C.recurrent_gated_delta_rule(_dl(query), _dl(key), _dl(value), _dl(beta), _dl(state),
                                  _dl(actual_seq_lengths), _dl(ssm_state_indices), _dl(g), _dl(gk),
                                  _dl(num_accepted_tokens), scale, _dl(out))
    _written(state, out)


def _causal_conv1d_fn(x, weight, conv_states, bias, query_start_loc, cache_indices, initial_state_mode,
                     activation, null_block_id):
    out = _new(x.shape, x.dtype, x)
    _causal_conv1d_fn_out(x, weight, conv_states, bias, query_start_loc, cache_indices, initial_state_mode,
                          activation, null_block_id, out)
    return out


def _causal_conv1d_fn_out(x, weight, conv_states, bias, query_start_loc, cache_indices, initial_state_mode,
                         activation, null_block_id, out):
    _C.causal_conv1d_fn(_dl(x), _dl(weight), _dl(conv_states), _dl(bias), _dl(query_start_loc), _dl(cache_indices),
                        _dl(initial_state_mode), activation, null_block_id, _dl(out))
    _written(conv_states, out)


def _causal_conv1d_update(x, weight, conv_states, bias, query_start_loc, cache_indices, num_accepted_tokens,
                         activation, null_block_id):
    out = _new(x.shape, x.dtype, x)
    _causal_conv1d_update_out(x, weight, conv_states, bias, query_start_loc, cache_indices, num_accepted_tokens,
                              activation, null_block_id, out)
    return out


def _causal_conv1d_update_out(x, weight, conv_states, bias, query_start_loc, cache_indices, num_accepted_tokens,
                             activation, null_block_id, out):
    _C.causal_conv1d_update(_dl(x), _dl(weight), _dl(conv_states), _dl(bias), _dl(query_start_loc),
                            _dl(cache_indices), _dl(num_accepted_tokens), activation, null_block_id, _dl(out))
    _written(conv_states, out)


# ---- fake kernels: outputs only (shapes, dtypes, contiguous strides, as the CPU kernels make them) ----------

def _fake_interleave_rope(x, cos, sin):
    return _new(x.shape, x.dtype, x)


def _fake_none(*args):
    return None


def _fake_partial_rotary_mul(x, cos, sin, mode, start, end):
    return _new(x.shape, x.dtype, x)


def _fake_apply_rotary_pos_emb_functional(query, key, cos, sin, layout, mode):
    return _new(query.shape, query.dtype, query), _new(key.shape, key.dtype, key)


def _fake_apply_rotary_pos_emb_grad(grad_query_embed, grad_key_embed, cos, sin, query, key, mode, layout):
    with_cos_sin = _grad_cos_sin_wanted(query, key)
    return (_new(grad_query_embed.shape, grad_query_embed.dtype, grad_query_embed),
            _new(grad_key_embed.shape, grad_key_embed.dtype, grad_key_embed),
            _new(cos.shape if with_cos_sin else (0,), cos.dtype, cos),
            _new(sin.shape if with_cos_sin else (0,), sin.dtype, sin))


def _fake_chunk_gated_delta_rule(query, key, value, beta, initial_state, actual_seq_lengths, g, scale):
    return (_new(_value_rows(value), query.dtype, query),
            _new(initial_state.shape, initial_state.dtype, initial_state))


def _fake_chunk_gated_delta_rule_train(query, key, value, beta, initial_state, actual_seq_lengths, g, scale):
    # The snapshots: one row per 64 tokens bounds what any split of T into sequences writes (Σ L_b // 64 <= T // 64);
    # key-major memory ((R, Nv, Dk, Dv), viewed as (R, Nv, Dv, Dk)), which the kernels move as contiguous runs.
    tokens, value_heads, value_dim = value.shape
    rows = max(tokens // _SNAPSHOT_EVERY, 1)
    checkpoints = torch.empty((rows, value_heads, key.shape[-1], value_dim), dtype=torch.float32,
                              device=query.device).transpose(2, 3)
    corrected = torch.empty(value.shape, dtype=torch.float32, device=query.device)
    return _fake_chunk_gated_delta_rule(query, key, value, beta, initial_state, actual_seq_lengths, g,
                                        scale) + (checkpoints, corrected)


def _fake_chunk_gated_delta_rule_grad(query, key, value, beta, initial_state, actual_seq_lengths, g, scale,
                                      grad_out, grad_final_state, forward_checkpoints=None,
                                      forward_corrected_values=None):
    return (_new(query.shape, query.dtype, query), _new(key.shape, query.dtype, query),
            _new(value.shape, query.dtype, query), _new(beta.shape, query.dtype, query),
            _new(g.shape if g is not None else (0,), torch.float32, query),
            _new(initial_state.shape, initial_state.dtype, initial_state))


def _fake_causal_conv1d(x, weight, conv_states, bias, query_start_loc, cache_indices, per_sequence, activation,
                        null_block_id):
    return _new(x.shape, x.dtype, x)


def _fake_recurrent_gated_delta_rule(query, key, value, beta, state, actual_seq_lengths, ssm_state_indices, g,
                                     gk, num_accepted_tokens, scale):
    return _new(_value_rows(value), query.dtype, query)


# ---- autograd -------------------------------------------------------------------------------------------------
# Gradients of x (and query, key) come from the txops grad operators; those of cos and sin of interleave_rope and
# partial_rotary_mul have no txops operator and are torch reductions of the spec's formulas (docs/rope.md):
# dcos = sum(dy * x), dsin = sum(dy * rot(x)) over the broadcast axes, computed only when cos or sin needs a grad.
# What the cos/sin grads need of the inputs is cloned: the in-place public functions overwrite them afterwards.

def _sum_to_shape(values, shape):
    """values reduced (summed) over the axes where `shape` has 1 and values does not."""
    axes = [d for d, (n, m) in enumerate(zip(shape, values.shape)) if n == 1 and m != 1]
    return values.sum(dim=axes, keepdim=True) if axes else values


def _cos_sin_factors(x, mode):
    """(a, b) with forward y = a * cos + b * sin elementwise on the rotated channels: dcos = dy*a, dsin = dy*b."""
    if mode == 0:  # half
        x1, x2 = x.chunk(2, dim=-1)
        return x, torch.cat((-x2, x1), dim=-1)
    if mode == 1:  # interleave
        even, odd = x[..., 0::2], x[..., 1::2]
        return x, torch.stack((-odd, even), dim=-1).flatten(-2)
    if mode == 2:  # quarter
        x1, x2, x3, x4 = x.chunk(4, dim=-1)
        return x, torch.cat((-x2, x1, -x4, x3), dim=-1)
    even, odd = x[..., 0::2], x[..., 1::2]  # interleave-half: the forward de-interleaves first
    return torch.cat((even, odd), dim=-1), torch.cat((-odd, even), dim=-1)


def _cos_sin_grads(dy, x, mode, cos, sin, needs_cos, needs_sin):
    """The gradients of cos and sin (their shapes and dtypes) in fp32 arithmetic."""
    a, b = _cos_sin_factors(x.float(), mode)
    dy = dy.float()
    grad_cos = _sum_to_shape(dy * a, cos.shape).to(cos.dtype) if needs_cos else None
    grad_sin = _sum_to_shape(dy * b, sin.shape).to(sin.dtype) if needs_sin else None
    return grad_cos, grad_sin


def _fresh(grad):
    """A contiguous copy of an incoming gradient, for a grad operator to overwrite."""
    return grad.clone(memory_format=torch.contiguous_format)


def _setup_interleave_rope(ctx, inputs, output):
    x, cos, sin = inputs
    needs_cos_sin = ctx.needs_input_grad[1] or ctx.needs_input_grad[2]
    ctx.save_for_backward(x if needs_cos_sin else None, cos, sin)


def _backward_interleave_rope(ctx, grad_out):
    x, cos, sin = ctx.saved_tensors
    grad_x = grad_cos = grad_sin = None
    if ctx.needs_input_grad[0]:
        # x (B, N, S, D) read as (B, S', N', D) with cos (Bc, 1, Sc, D): the interleave-half adjoint over all of D
        grad_x = _fresh(grad_out)
        torch.ops.txops.inplace_partial_rotary_mul_grad(grad_x, cos, sin, _INTERLEAVE_HALF, 0, grad_x.shape[-1])
    if x is not None:
        grad_cos, grad_sin = _cos_sin_grads(grad_out, x, _INTERLEAVE_HALF, cos, sin, *ctx.needs_input_grad[1:3])
    return grad_x, grad_cos, grad_sin


def _setup_partial_rotary_mul(ctx, inputs, output):
    x, cos, sin, mode, start, end = inputs
    needs_cos_sin = ctx.needs_input_grad[1] or ctx.needs_input_grad[2]
    ctx.save_for_backward(x[..., start:end].clone() if needs_cos_sin else None, cos, sin)
    ctx.rotation = (mode, start, end)


def _backward_partial_rotary_mul(ctx, grad_out):
    x_slice, cos, sin = ctx.saved_tensors
    mode, start, end = ctx.rotation
    grad_x = grad_cos = grad_sin = None
    if ctx.needs_input_grad[0]:
        grad_x = _fresh(grad_out)
        torch.ops.txops.inplace_partial_rotary_mul_grad(grad_x, cos, sin, mode, start, end)
    if x_slice is not None:
        grad_cos, grad_sin = _cos_sin_grads(grad_out[..., start:end], x_slice, mode, cos, sin,
                                            *ctx.needs_input_grad[1:3])
    return grad_x, grad_cos, grad_sin, None, None, None


def _setup_apply_rotary_pos_emb(ctx, inputs, output):
    query, key, cos, sin, layout, mode = inputs
    rotated = cos.shape[-1]
    needs_cos_sin = ctx.needs_input_grad[2] or ctx.needs_input_grad[3]
    q_in = query[..., :rotated].clone() if needs_cos_sin else None
    k_in = key[..., :rotated].clone() if needs_cos_sin else None
    ctx.save_for_backward(q_in, k_in, cos, sin)
    ctx.settings = (layout, mode)


def _backward_apply_rotary_pos_emb(ctx, grad_query_out, grad_key_out):
    q_in, k_in, cos, sin = ctx.saved_tensors
    layout, mode = ctx.settings
    rotated = cos.shape[-1]
    # Channels past cos's width (partial rotary) pass through: their grads are the incoming ones.
    partial = rotated != grad_query_out.shape[-1]
    grad_query, grad_key, grad_cos, grad_sin = torch.ops.txops.apply_rotary_pos_emb_grad(
        grad_query_out[..., :rotated] if partial else grad_query_out,
        grad_key_out[..., :rotated] if partial else grad_key_out, cos, sin, q_in, k_in, mode, layout)
    if partial:
        grad_query = torch.cat((grad_query, grad_query_out[..., rotated:]), dim=-1)
        grad_key = torch.cat((grad_key, grad_key_out[..., rotated:]), dim=-1)
    needs = ctx.needs_input_grad
    with_cos_sin = q_in is not None
    return (grad_query if needs[0] else None, grad_key if needs[1] else None,
            grad_cos if with_cos_sin and needs[2] else None, grad_sin if with_cos_sin and needs[3] else None,
            None, None)


def _setup_chunk_gated_delta_rule(ctx, inputs, output):
    query, key, value, beta, initial_state, actual_seq_lengths, g, scale = inputs
    # The backward recomputes the forward's states from its inputs (nothing else is kept: 0 bytes per token).
    ctx.save_for_backward(query, key, value, beta, initial_state, actual_seq_lengths, g)
    ctx.scale = scale


def _setup_chunk_gated_delta_rule_train(ctx, inputs, output):
    query, key, value, beta, initial_state, actual_seq_lengths, g, scale = inputs
    # The forward's states every 64 tokens and its corrected values are kept for the backward (4·(Dk·Dv/64 + Dv)
    # bytes per token and value head).
    ctx.mark_non_differentiable(output[2], output[3])
    ctx.save_for_backward(query, key, value, beta, initial_state, actual_seq_lengths, g, output[2], output[3])
    ctx.scale = scale


def _backward_chunk_gated_delta_rule_train(ctx, grad_out, grad_final_state, _grad_checkpoints, _grad_corrected):
    return _backward_chunk_gated_delta_rule(ctx, grad_out, grad_final_state)


def _backward_chunk_gated_delta_rule(ctx, grad_out, grad_final_state):
    query, key, value, beta, initial_state, actual_seq_lengths, g, *kept = ctx.saved_tensors
    checkpoints, corrected = kept if kept else (None, None)
    needs = ctx.needs_input_grad
    if grad_out is None:  # autograd materializes an unused output's grad as zeros; None only if that is off
        grad_out = torch.zeros(_value_rows(value), dtype=query.dtype, device=query.device)
    if grad_out.dtype != query.dtype:
        grad_out = grad_out.to(query.dtype)
    if grad_final_state is not None and grad_final_state.dtype != initial_state.dtype:
        grad_final_state = grad_final_state.to(initial_state.dtype)
    grads = torch.ops.txops.chunk_gated_delta_rule_grad(query, key, value, beta, initial_state, actual_seq_lengths,
                                                        g, ctx.scale, grad_out, grad_final_state, checkpoints,
                                                        corrected)
    grad_query, grad_key, grad_value, grad_beta, grad_g, grad_initial_state = grads
    return (grad_query if needs[0] else None, grad_key if needs[1] else None, grad_value if needs[2] else None,
            grad_beta if needs[3] else None, grad_initial_state if needs[4] else None, None,
            grad_g if g is not None and needs[6] else None, None)


KERNELS = {
    "interleave_rope": (_interleave_rope, _fake_interleave_rope),
    "interleave_rope_out": (_interleave_rope_out, _fake_none),
    "inplace_partial_rotary_mul": (_inplace_partial_rotary_mul, _fake_none),
    "partial_rotary_mul": (_partial_rotary_mul, _fake_partial_rotary_mul),
    "inplace_partial_rotary_mul_grad": (_inplace_partial_rotary_mul_grad, _fake_none),
    "apply_rotary_pos_emb": (_apply_rotary_pos_emb, _fake_none),
    "apply_rotary_pos_emb_functional": (_apply_rotary_pos_emb_functional, _fake_apply_rotary_pos_emb_functional),
    "apply_rotary_pos_emb_grad": (_apply_rotary_pos_emb_grad, _fake_apply_rotary_pos_emb_grad),
    "chunk_gated_delta_rule": (_chunk_gated_delta_rule, _fake_chunk_gated_delta_rule),
    "chunk_gated_delta_rule_out": (_chunk_gated_delta_rule_out, _fake_none),
    "chunk_gated_delta_rule_train": (_chunk_gated_delta_rule_train, _fake_chunk_gated_delta_rule_train),
    "chunk_gated_delta_rule_grad": (_chunk_gated_delta_rule_grad, _fake_chunk_gated_delta_rule_grad),
    "recurrent_gated_delta_rule": (_recurrent_gated_delta_rule, _fake_recurrent_gated_delta_rule),
    "recurrent_gated_delta_rule_out": (_recurrent_gated_delta_rule_out, _fake_none),
    "causal_conv1d_fn": (_causal_conv1d_fn, _fake_causal_conv1d),
    "causal_conv1d_fn_out": (_causal_conv1d_fn_out, _fake_none),
    "causal_conv1d_update": (_causal_conv1d_update, _fake_causal_conv1d),
    "causal_conv1d_update_out": (_causal_conv1d_update_out, _fake_none),
}

AUTOGRAD = {
    "interleave_rope": (_backward_interleave_rope, _setup_interleave_rope),
    "partial_rotary_mul": (_backward_partial_rotary_mul, _setup_partial_rotary_mul),
    "apply_rotary_pos_emb_functional": (_backward_apply_rotary_pos_emb, _setup_apply_rotary_pos_emb),
    "chunk_gated_delta_rule": (_backward_chunk_gated_delta_rule, _setup_chunk_gated_delta_rule),
    "chunk_gated_delta_rule_train": (_backward_chunk_gated_delta_rule_train, _setup_chunk_gated_delta_rule_train),
}


# RotaryPositionEmbedding(Grad) and RopeWithSinCosCache live in their own table file (txops._torch_ops_rotary).

for _name in _torch_ops_rotary.SCHEMAS:
    if _name in SCHEMAS:
        raise RuntimeError(f"txops operator {_name} is defined twice")
SCHEMAS.update(_torch_ops_rotary.SCHEMAS)
KERNELS.update(_torch_ops_rotary.KERNELS)
AUTOGRAD.update(_torch_ops_rotary.AUTOGRAD)


class Ops:
    """The registered operators' default overloads, looked up once (an attribute read per call, no
    ``torch.ops`` namespace walk)."""

    def __init__(self):
        for name in SCHEMAS:
            setattr(self, name, getattr(torch.ops.txops, name).default)


_library = None  # the torch.library.Library that owns the registrations (kept alive for the process)
_ops = None


def register():
    """Defines the txops operators (once per process) and returns their handles; raises Unsupported when this
    torch lacks the torch.library API used (torch < 2.4)."""
    global _library, _ops
    if _ops is not None:
        return _ops
    library_api = torch.library
    missing = [f for f in ("define", "impl", "register_fake", "register_autograd") if not hasattr(library_api, f)]
    if missing:
        raise Unsupported(f"torch {torch.__version__} has no torch.library.{', '.join(missing)} (needs torch >= 2.4)")
    library = library_api.Library("txops", "DEF")
    tags = (torch.Tag.pt2_compliant_tag,)
    for name, schema in SCHEMAS.items():
        library.define(name + schema, tags=tags)
        kernel, fake = KERNELS[name]
        library.impl(name, kernel, "CPU")
        library_api.register_fake(f"txops::{name}", fake, lib=library)
    for name, (backward, setup_context) in AUTOGRAD.items():
        library_api.register_autograd(f"txops::{name}", backward, setup_context=setup_context, lib=library)
    _library, _ops = library, Ops()
    return _ops
