"""The gated-delta-rule operators of txops (Gated DeltaNet linear attention, as in Qwen3-Next) for torch tensors
and numpy arrays: chunk_gated_delta_rule for prefill, recurrent_gated_delta_rule for decode on a state pool.

Shapes (docs/gated_delta_rule.md): query/key (T, Nk, Dk), value (T, Nv, Dv), beta (T, Nv), g (T, Nv) fp32,
states (B | BlockNum, Nv, Dv, Dk); T concatenates the sequences, whose lengths are actual_seq_lengths (int32).
These operators have no backward in txops: with torch, call them under torch.no_grad() / inference_mode().
"""
from . import _txops as _C
from ._arrays import empty, export, export_output, grad_needed, int32_array, zeros


def _refuse_autograd(name, **tensors):
    if grad_needed(*tensors.values()):
        param = next(p for p, t in tensors.items() if getattr(t, "requires_grad", False))
        raise RuntimeError(f"{param} requires grad, but txops.{name} has no backward: call it under "
                           "torch.no_grad() or pass detached tensors")


def _default_scale(scale, key):
    return key.shape[-1] ** -0.5 if scale is None else float(scale)


def chunk_gated_delta_rule(query, key, value, beta, initial_state=None, actual_seq_lengths=None, *, g=None,
                           scale=None, out=None, final_state=None):
    """Prefill -> (out (T, Nv, Dv) in query's dtype, final_state (B, Nv, Dv, Dk)).

    initial_state None means zeros (fp32, one sequence unless actual_seq_lengths says otherwise);
    actual_seq_lengths None means one sequence of all T tokens; scale None means Dk ** -0.5.
    """
    _refuse_autograd("chunk_gated_delta_rule", query=query, key=key, value=value, beta=beta,
                     initial_state=initial_state, g=g)
    tokens, value_heads, value_dim = value.shape[0], value.shape[1], value.shape[2]
    key_dim = key.shape[-1]
    if actual_seq_lengths is None:
        actual_seq_lengths = [tokens]
    lengths = int32_array(actual_seq_lengths, query, "actual_seq_lengths")
    if initial_state is None:
        float32 = _float32_of(query)
        initial_state = zeros((lengths.shape[0], value_heads, value_dim, key_dim), float32, query)
    if out is None:
        out = empty((tokens, value_heads, value_dim), query.dtype, query)
    if final_state is None:
        final_state = empty(tuple(initial_state.shape), initial_state.dtype, initial_state)
    _C.chunk_gated_delta_rule(export(query), export(key), export(value), export(beta), export(initial_state),
                              export(lengths), export(g), _default_scale(scale, key), export_output(out, "out"),
                              export_output(final_state, "final_state"))
    return out, final_state


def recurrent_gated_delta_rule(query, key, value, beta, state, actual_seq_lengths, ssm_state_indices, *, g=None,
                               gk=None, num_accepted_tokens=None, scale=None, out=None):
    """Decode on a state pool -> out (T, Nv, Dv); state (BlockNum, Nv, Dv, Dk) is updated in place.

    Token t reads and writes slot ssm_state_indices[t]; sequence i resumes from the slot of its token
    num_accepted_tokens[i] - 1 (None: 1, its first token). gk (T, Nv, Dk) is an optional per-key-channel decay.
    """
    _refuse_autograd("recurrent_gated_delta_rule", query=query, key=key, value=value, beta=beta, g=g, gk=gk)
    lengths = int32_array(actual_seq_lengths, query, "actual_seq_lengths")
    indices = int32_array(ssm_state_indices, query, "ssm_state_indices")
    accepted = None if num_accepted_tokens is None else int32_array(num_accepted_tokens, query,
                                                                    "num_accepted_tokens")
    if out is None:
        out = empty((value.shape[0], value.shape[1], value.shape[2]), query.dtype, query)
    _C.recurrent_gated_delta_rule(export(query), export(key), export(value), export(beta), export_output(state, "state"),
                                  export(lengths), export(indices), export(g), export(gk), export(accepted),
                                  _default_scale(scale, key), export_output(out, "out"))
    return out


def _float32_of(like):
    from ._arrays import is_torch
    if is_torch(like):
        import torch
        return torch.float32
    import numpy as np
    return np.float32
