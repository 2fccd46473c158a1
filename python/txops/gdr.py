"""The gated-delta-rule operators of txops (Gated DeltaNet linear attention, as in Qwen3-Next) for torch tensors
and numpy arrays: chunk_gated_delta_rule for prefill, recurrent_gated_delta_rule for decode on a state pool.

Shapes (docs/gated_delta_rule.md): query/key (T, Nk, Dk), value (T, Nv, Dv), beta (T, Nv), g (T, Nv) fp32,
states (B | BlockNum, Nv, Dv, Dk); T concatenates the sequences, whose lengths are actual_seq_lengths (int32).
chunk_gated_delta_rule is differentiable with torch: when autograd records it, the forward also keeps its fp32
states every 64 tokens and its corrected values (torch.ops.txops.chunk_gated_delta_rule_train; 4·(Dk·Dv/64 + Dv)
bytes per token and value head; set_gdr_keep_forward_states(False): none) and its backward,
chunk_gated_delta_rule_grad, reads them; calls without autograd keep nothing. The decode operator has no backward.
Under autograd, torch.compile or a tracing mode they go through torch.ops.txops.* (txops._torch_ops).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, Tuple, TypeVar, Union

import numpy as np

from . import _arrays
from . import _txops as _C
from ._arrays import (empty, export, export_output, grad_needed, int32_array, refuse_autograd, torch_ops,
                      traced_torch_ops, written, zeros)

if TYPE_CHECKING:
    import torch

#: A torch.Tensor or a numpy.ndarray; results come back as the same type.
Array = TypeVar("Array", "torch.Tensor", "np.ndarray")
#: Integers: a list / tuple of ints, or an integer torch tensor / numpy array.
Ints = Union[Sequence[int], "torch.Tensor", "np.ndarray"]


_keep_forward_states = True  # set_gdr_keep_forward_states


def set_gdr_keep_forward_states(keep: bool) -> None:
    """Whether :func:`chunk_gated_delta_rule`, when autograd records it, keeps its fp32 states every 64 tokens and
    its corrected values for the backward (the default: ``4·(Dk·Dv/64 + Dv)`` bytes per token and value head,
    1.5 KiB at Dk = Dv = 128; the backward is then 18–22 % faster) or keeps only its inputs (the backward
    recomputes them). Read when a call is recorded (under torch.compile: when it is traced). The gradients agree
    within the tolerance either way (bit for bit with fp16 / fp32 activations).

    Parameters
    ----------
    keep : bool
        True (the default): keep the states; False: keep only the inputs.

    Examples
    --------
    >>> import txops
    >>> txops.set_gdr_keep_forward_states(False)  # training memory over backward speed
    >>> txops.set_gdr_keep_forward_states(True)
    """
    global _keep_forward_states
    _keep_forward_states = bool(keep)


def _default_scale(scale, key):
    return key.shape[-1] ** -0.5 if scale is None else float(scale)


def _float32_of(like):
    return _arrays._torch.float32 if _arrays.is_torch(like) else np.float32


def chunk_gated_delta_rule(query: Array, key: Array, value: Array, beta: Array,
                           initial_state: Optional[Array] = None, actual_seq_lengths: Optional[Ints] = None, *,
                           g: Optional[Array] = None, scale: Optional[float] = None, out: Optional[Array] = None,
                           final_state: Optional[Array] = None, state_indices: Optional[Ints] = None,
                           has_initial_state: Optional[Ints] = None, checkpoint_every_n_tokens: int = 0,
                           state_checkpoints: Optional[Array] = None, checkpoint_cu_starts: Optional[Ints] = None,
                           kernel: str = "auto", corrected_values: Optional[Array] = None
                           ) -> Union[Tuple[Array, Array], Tuple[Array, Array, Array]]:
    """Gated DeltaNet prefill over variable-length sequences (``aclnnChunkGatedDeltaRule``).

    Per value head and token t of a sequence: ``S = exp(g_t) S``, ``S += beta_t (v_t - S k_t) k_t^T``,
    ``o_t = scale * S q_t``; key heads are shared by Nv / Nk value heads (GQA).

    Parameters
    ----------
    query, key : torch.Tensor or numpy.ndarray
        (T, Nk, Dk), bf16 / fp16 / fp32 (L2-normalised along Dk, as the models do).
    value : torch.Tensor or numpy.ndarray
        (T, Nv, Dv), query's dtype; Dk, Dv at most 256.
    beta : torch.Tensor or numpy.ndarray
        (T, Nv), query's dtype.
    initial_state : torch.Tensor or numpy.ndarray, optional
        (B, Nv, Dv, Dk), fp32 or bf16; None means zeros (fp32).
    actual_seq_lengths : sequence of int or integer array, optional
        The B sequence lengths (sum T; zero-length sequences keep their state); None means one sequence.
    g : torch.Tensor or numpy.ndarray, optional
        (T, Nv) fp32 log decays; None means no decay.
    scale : float, optional
        Default ``Dk ** -0.5``.
    out, final_state : torch.Tensor or numpy.ndarray, optional
        Where to write the results (else new arrays).

    Serving options (``aclnnChunkGatedDeltaRuleEx``, a txops extension; docs/gated_delta_rule.md "Serving";
    not differentiable, run eagerly — torch.compile runs them outside the graph):

    state_indices : sequence of int or integer array, optional
        (B,) rows of a state pool: ``initial_state`` is then the pool (P, Nv, Dv, Dk), sequence b reads row
        ``state_indices[b]`` and writes its final state to the same row of ``final_state`` (default: the pool
        itself, in place). Indices in [0, P) and distinct.
    has_initial_state : sequence of bool / int, optional
        (B,) False/0: sequence b starts from the zero state (its row is not read).
    checkpoint_every_n_tokens : int
        0, or a multiple of 64: also the state after every that many tokens of each sequence (prefix caching),
        into ``state_checkpoints`` (R, Nv, Dv, Dk) fp32 or bf16 (default: a new fp32 array of
        sum(L_b // n) rows); sequence b's j-th snapshot at row ``checkpoint_cu_starts[b] + j - 1``
        (``checkpoint_cu_starts`` (B + 1,) int64 offsets, default the running sum from 0; FlashInfer's names).
    corrected_values : torch.Tensor or numpy.ndarray, optional
        (T, Nv, Dv) fp32, written: each token's corrected value V' (fla's ``v_new``), which
        :func:`chunk_gated_delta_rule_grad` reads with the fp32 snapshots every 64 tokens (training).
    kernel : str
        "auto", "chunked" (what a restart from a snapshot should use: with fp32 states it then reproduces the
        whole run bit for bit) or "recurrent".

    Returns
    -------
    (out, final_state), or (out, final_state, state_checkpoints) when checkpoint_every_n_tokens > 0
        out (T, Nv, Dv) in query's dtype, final_state (B, Nv, Dv, Dk) in initial_state's dtype (the pool with
        state_indices). Differentiable with torch (query, key, value, beta, initial_state, g) when no serving
        option is given: autograd records the call and its backward runs :func:`chunk_gated_delta_rule_grad`;
        given ``out`` / ``final_state`` are then filled with ``copy_`` (recorded too).

    Examples
    --------
    >>> import numpy as np, txops
    >>> T, Nk, Nv, Dk, Dv = 6, 1, 2, 4, 4
    >>> q = k = np.full((T, Nk, Dk), 0.5, np.float32)
    >>> v, beta = np.ones((T, Nv, Dv), np.float32), np.full((T, Nv), 0.5, np.float32)
    >>> out, state = txops.chunk_gated_delta_rule(q, k, v, beta, actual_seq_lengths=[4, 2])
    >>> out.shape, state.shape
    ((6, 2, 4), (2, 2, 4, 4))
    """
    tokens, value_heads, value_dim = value.shape[0], value.shape[1], value.shape[2]
    key_dim = key.shape[-1]
    if (state_indices is not None or has_initial_state is not None or checkpoint_every_n_tokens or
            state_checkpoints is not None or checkpoint_cu_starts is not None or kernel != "auto" or
            corrected_values is not None):
        return _serving_for(query)(query, key, value, beta, initial_state, actual_seq_lengths, g, scale, out,
                                   final_state, state_indices, has_initial_state, checkpoint_every_n_tokens,
                                   state_checkpoints, checkpoint_cu_starts, kernel, corrected_values)
    if actual_seq_lengths is None:
        actual_seq_lengths = [tokens]
    lengths = int32_array(actual_seq_lengths, query, "actual_seq_lengths")
    if initial_state is None:
        initial_state = zeros((lengths.shape[0], value_heads, value_dim, key_dim), _float32_of(query), query)
    scale = _default_scale(scale, key)
    ops = torch_ops(query, key, value, beta, initial_state, g)
    training = ops is not None and grad_needed(query, key, value, beta, initial_state, g)
    if training or (ops is not None and out is None and final_state is None):
        if training and _keep_forward_states:
            # The forward also keeps its fp32 states every 64 tokens and its corrected values for the backward
            # (1.5 KiB per token and value head at Dk = Dv = 128), which then skips recomputing them.
            result, result_state, _, _ = ops.chunk_gated_delta_rule_train(query, key, value, beta, initial_state,
                                                                          lengths, g, scale)
        else:
            result, result_state = ops.chunk_gated_delta_rule(query, key, value, beta, initial_state, lengths, g,
                                                              scale)
        if out is not None:
            result = out.copy_(result)
        if final_state is not None:
            result_state = final_state.copy_(result_state)
        return result, result_state
    if out is None:
        out = empty((tokens, value_heads, value_dim), query.dtype, query)
    if final_state is None:
        final_state = empty(tuple(initial_state.shape), initial_state.dtype, initial_state)
    if ops is not None:
        ops.chunk_gated_delta_rule_out(query, key, value, beta, initial_state, lengths, g, scale, out, final_state)
        return out, final_state
    _C.chunk_gated_delta_rule(export(query), export(key), export(value), export(beta), export(initial_state),
                              export(lengths), export(g), scale, export_output(out, "out"),
                              export_output(final_state, "final_state"))
    written(out, final_state)
    return out, final_state


_KERNELS = {"auto": 0, "chunked": 1, "recurrent": 2}


def _int_array(values, like, dtype, param):
    """values as a contiguous integer array of like's framework (int32 / int64 / bool)."""
    if _arrays.is_torch(like):
        torch = _arrays._torch
        t = values if isinstance(values, torch.Tensor) else torch.tensor(np.asarray(values))
        if t.dtype.is_floating_point or t.dtype.is_complex:
            raise TypeError(f"{param} dtype must be an integer or bool type, got {t.dtype}")
        return t.to({"int32": torch.int32, "int64": torch.int64, "bool": torch.bool}[dtype]).contiguous()
    a = np.asarray(values)
    if a.dtype.kind not in "iub":
        raise TypeError(f"{param} dtype must be an integer or bool type, got {a.dtype}")
    return np.ascontiguousarray(a, dtype=dtype)


def _serving_run(query, key, value, beta, initial_state, lengths, g, scale, out, final_state, indices, has,
                 every, checkpoints, starts, kernel, corrected):
    _C.chunk_gated_delta_rule_ex(export(query), export(key), export(value), export(beta), export(initial_state),
                                 export(lengths), export(g), scale, export_output(out, "out"),
                                 export_output(final_state, "final_state"), export(indices), export(has), every,
                                 None if checkpoints is None else export_output(checkpoints, "state_checkpoints"),
                                 export(starts), kernel,
                                 None if corrected is None else export_output(corrected, "corrected_values"))
    written(out, final_state, *(t for t in (checkpoints, corrected) if t is not None))


_serving_disabled = None  # _serving wrapped by torch.compiler.disable: dynamo runs the serving path eagerly


def _serving_for(query):
    global _serving_disabled
    if not _arrays.is_torch(query):
        return _serving
    if _serving_disabled is None:
        _serving_disabled = _arrays._torch.compiler.disable(_serving)
    return _serving_disabled


def _serving(query, key, value, beta, initial_state, actual_seq_lengths, g, scale, out, final_state, state_indices,
             has_initial_state, every, checkpoints, starts, kernel, corrected=None):
    """chunk_gated_delta_rule with serving options: the extension's chunk_gated_delta_rule_ex, eagerly."""
    if kernel not in _KERNELS:
        raise ValueError(f"kernel must be one of {sorted(_KERNELS)}, got {kernel!r}")
    refuse_autograd("chunk_gated_delta_rule with serving options", query=query, key=key, value=value, beta=beta,
                    initial_state=initial_state, g=g)
    tokens, value_heads, value_dim, key_dim = value.shape[0], value.shape[1], value.shape[2], key.shape[-1]
    if actual_seq_lengths is None:
        actual_seq_lengths = [tokens]
    lengths = int32_array(actual_seq_lengths, query, "actual_seq_lengths")
    batch = lengths.shape[0]
    indices = None if state_indices is None else _int_array(state_indices, query, "int32", "state_indices")
    if initial_state is None:
        if indices is not None:
            raise ValueError("initial_state (the pool) is required with state_indices, got None")
        initial_state = zeros((batch, value_heads, value_dim, key_dim), _float32_of(query), query)
    if final_state is None:
        final_state = initial_state if indices is not None else \
            empty(tuple(initial_state.shape), initial_state.dtype, initial_state)
    has = None if has_initial_state is None else _int_array(has_initial_state, query, "int32",
                                                           "has_initial_state")
    every = int(every)
    cu = None if starts is None else _int_array(starts, query, "int64", "checkpoint_cu_starts")
    if every > 0 and checkpoints is None:
        rows = sum(int(n) // every for n in lengths.tolist()) if cu is None else int(cu[-1])
        # at least one row: a zero-size array may have no data pointer
        checkpoints = empty((max(rows, 1), value_heads, value_dim, key_dim), _float32_of(query), query)[:rows]
    if out is None:
        out = empty((tokens, value_heads, value_dim), query.dtype, query)
    scale = _default_scale(scale, key)
    _serving_run(query, key, value, beta, initial_state, lengths, g, scale, out, final_state, indices, has, every,
                 checkpoints, cu, _KERNELS[kernel], corrected)
    if every > 0:
        return out, final_state, checkpoints
    return out, final_state


def chunk_gated_delta_rule_grad(query: Array, key: Array, value: Array, beta: Array, initial_state: Array,
                                actual_seq_lengths: Ints, grad_out: Array, grad_final_state: Optional[Array] = None, *,
                                g: Optional[Array] = None, scale: Optional[float] = None,
                                need_grad_g: bool = True, forward_checkpoints: Optional[Array] = None,
                                forward_corrected_values: Optional[Array] = None
                                ) -> Tuple[Array, Array, Array, Array, Optional[Array], Array]:
    """The backward of :func:`chunk_gated_delta_rule` (``aclnnChunkGatedDeltaRuleGrad``, a txops extension).

    The gradients of ``L = sum(grad_out * out) + sum(grad_final_state * final_state)`` with respect to the
    forward's inputs, where ``(out, final_state)`` is the forward on the same inputs (its states recomputed here,
    or read from ``forward_checkpoints``). Autograd calls it for you; call it directly for numpy or a
    hand-written backward.

    Parameters
    ----------
    query, key, value, beta, initial_state, actual_seq_lengths, g, scale
        The forward's arguments, as there (initial_state is required here).
    grad_out : torch.Tensor or numpy.ndarray
        (T, Nv, Dv), query's dtype.
    grad_final_state : torch.Tensor or numpy.ndarray, optional
        (B, Nv, Dv, Dk), initial_state's dtype; None means zero.
    need_grad_g : bool
        Compute grad_g (only with g).
    forward_checkpoints : torch.Tensor or numpy.ndarray, optional
        (R, Nv, Dv, Dk) fp32: the snapshots the forward wrote with ``checkpoint_every_n_tokens=64`` (default
        starts; R >= the sum of L_b // 64). The backward then reads the state before each chunk instead of
        recomputing it (faster); a key-major memory order (the transposed view of an (R, Nv, Dk, Dv) array) is
        read fastest.
    forward_corrected_values : torch.Tensor or numpy.ndarray, optional
        (T, Nv, Dv) fp32, only with ``forward_checkpoints``: the forward's ``corrected_values``, read instead of
        recomputed (faster again).

    Returns
    -------
    (grad_query, grad_key, grad_value, grad_beta, grad_g, grad_initial_state)
        In the dtypes of their inputs (grad_g fp32; None without g or with ``need_grad_g=False``); grad_query
        and grad_key are summed over the value heads that share a key head.

    Examples
    --------
    >>> import numpy as np, txops
    >>> T, Nk, Nv, Dk, Dv = 3, 1, 2, 4, 4
    >>> q = k = np.full((T, Nk, Dk), 0.5, np.float32)
    >>> v, beta = np.ones((T, Nv, Dv), np.float32), np.full((T, Nv), 0.5, np.float32)
    >>> s0 = np.zeros((1, Nv, Dv, Dk), np.float32)
    >>> dq, dk, dv, dbeta, dg, ds0 = txops.chunk_gated_delta_rule_grad(q, k, v, beta, s0, [T],
    ...                                                                np.ones((T, Nv, Dv), np.float32))
    >>> dq.shape, dv.shape, dg is None, ds0.shape
    ((3, 1, 4), (3, 2, 4), True, (1, 2, 4, 4))
    """
    lengths = int32_array(actual_seq_lengths, query, "actual_seq_lengths")
    scale = _default_scale(scale, key)
    ops = traced_torch_ops(query)
    if ops is not None:
        grads = ops.chunk_gated_delta_rule_grad(query, key, value, beta, initial_state, lengths, g, scale, grad_out,
                                                grad_final_state, forward_checkpoints, forward_corrected_values)
        return grads[:4] + ((grads[4] if g is not None and need_grad_g else None), grads[5])
    with_grad_g = g is not None and need_grad_g
    grad_query = empty(tuple(query.shape), query.dtype, query)
    grad_key = empty(tuple(key.shape), query.dtype, query)
    grad_value = empty(tuple(value.shape), query.dtype, query)
    grad_beta = empty(tuple(beta.shape), query.dtype, query)
    grad_g = empty(tuple(g.shape), _float32_of(query), query) if with_grad_g else None
    grad_initial_state = empty(tuple(initial_state.shape), initial_state.dtype, initial_state)
    _C.chunk_gated_delta_rule_grad(export(query), export(key), export(value), export(beta), export(initial_state),
                                   export(lengths), export(g), scale, export(grad_out), export(grad_final_state),
                                   export_output(grad_query, "grad_query"), export_output(grad_key, "grad_key"),
                                   export_output(grad_value, "grad_value"), export_output(grad_beta, "grad_beta"),
                                   export_output(grad_g, "grad_g") if with_grad_g else None,
                                   export_output(grad_initial_state, "grad_initial_state"),
                                   export(forward_checkpoints), export(forward_corrected_values))
    written(grad_query, grad_key, grad_value, grad_beta, grad_initial_state, *(() if grad_g is None else (grad_g,)))
    return grad_query, grad_key, grad_value, grad_beta, grad_g, grad_initial_state


def recurrent_gated_delta_rule(query: Array, key: Array, value: Array, beta: Array, state: Array,
                               actual_seq_lengths: Ints, ssm_state_indices: Ints, *, g: Optional[Array] = None,
                               gk: Optional[Array] = None, num_accepted_tokens: Optional[Ints] = None,
                               scale: Optional[float] = None, out: Optional[Array] = None) -> Array:
    """Gated DeltaNet decode on a state pool (``aclnnRecurrentGatedDeltaRule``); `state` is updated in place.

    Token t reads and writes pool slot ``ssm_state_indices[t]``; sequence i resumes from the slot of its token
    ``num_accepted_tokens[i] - 1`` (speculative decoding; None: its first token's slot).

    Parameters
    ----------
    query, key : torch.Tensor or numpy.ndarray
        (T, Nk, Dk), bf16 / fp16 / fp32.
    value : torch.Tensor or numpy.ndarray
        (T, Nv, Dv).
    beta : torch.Tensor or numpy.ndarray
        (T, Nv).
    state : torch.Tensor or numpy.ndarray
        The pool, (BlockNum, Nv, Dv, Dk) fp32 or bf16; written in place.
    actual_seq_lengths : sequence of int or integer array
        Tokens per sequence (sum T).
    ssm_state_indices : sequence of int or integer array
        (T,) pool slot of each token.
    g : torch.Tensor or numpy.ndarray, optional
        (T, Nv) fp32 log decays.
    gk : torch.Tensor or numpy.ndarray, optional
        (T, Nv, Dk) fp32 per-key-channel log decays.
    num_accepted_tokens : sequence of int or integer array, optional
        (B,) accepted draft tokens per sequence, each in 1..its length.
    scale : float, optional
        Default ``Dk ** -0.5``.
    out : torch.Tensor or numpy.ndarray, optional
        Where to write the output (else a new array).

    Returns
    -------
    torch.Tensor or numpy.ndarray
        out (T, Nv, Dv) in query's dtype. Not differentiable.

    Examples
    --------
    >>> import numpy as np, txops
    >>> T, Nk, Nv, Dk, Dv = 2, 1, 2, 4, 4
    >>> q = k = np.full((T, Nk, Dk), 0.5, np.float32)
    >>> v, beta = np.ones((T, Nv, Dv), np.float32), np.full((T, Nv), 0.5, np.float32)
    >>> pool = np.zeros((3, Nv, Dv, Dk), np.float32)
    >>> out = txops.recurrent_gated_delta_rule(q, k, v, beta, pool, [1, 1], [2, 0])  # 2 sequences
    >>> out.shape, bool(pool[1].any()), bool(pool[2].any())
    ((2, 2, 4), False, True)
    """
    lengths = int32_array(actual_seq_lengths, query, "actual_seq_lengths")
    indices = int32_array(ssm_state_indices, query, "ssm_state_indices")
    accepted = None if num_accepted_tokens is None else int32_array(num_accepted_tokens, query,
                                                                    "num_accepted_tokens")
    scale = _default_scale(scale, key)
    if out is not None and not _arrays.compiling() and _C._eager_recurrent_gated_delta_rule(
            query, key, value, beta, state, lengths, indices, g, gk, accepted, scale, out):
        return out  # the hot path of eager decode calls (plain torch tensors, none requiring grad)
    refuse_autograd("recurrent_gated_delta_rule", query=query, key=key, value=value, beta=beta, g=g, gk=gk)
    ops = traced_torch_ops(query)
    if ops is not None:
        if out is None:
            return ops.recurrent_gated_delta_rule(query, key, value, beta, state, lengths, indices, g, gk, accepted,
                                                  scale)
        ops.recurrent_gated_delta_rule_out(query, key, value, beta, state, lengths, indices, g, gk, accepted, scale,
                                           out)
        return out
    if out is None:
        out = empty((value.shape[0], value.shape[1], value.shape[2]), query.dtype, query)
    _C.recurrent_gated_delta_rule(export(query), export(key), export(value), export(beta), export_output(state, "state"),
                                  export(lengths), export(indices), export(g), export(gk), export(accepted),
                                  scale, export_output(out, "out"))
    written(state, out)
    return out


__all__ = ["chunk_gated_delta_rule", "chunk_gated_delta_rule_grad", "recurrent_gated_delta_rule",
           "set_gdr_keep_forward_states"]
