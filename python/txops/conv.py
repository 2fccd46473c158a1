"""The causal conv1d operators of txops (the short depthwise convolution of Mamba / Gated DeltaNet layers) for torch
tensors and numpy arrays, with CANN's layouts: x (B, L, dim) or varlen (cuSeqLen, dim), weight (K, dim), conv
states (lines, state_len, dim) updated in place. Channel-first tensors (transformers' (B, dim, L) x, (dim, K)
weight, (B, dim, state_len) states) are passed as transposed views, without a copy. The formulas and rules are
in docs/causal_conv1d.md. Not differentiable: calls on tensors that require grad raise (use torch.no_grad()).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, TypeVar, Union

from . import _arrays
from . import _txops as _C
from ._arrays import empty, export, export_output, int32_array, refuse_autograd, traced_torch_ops, written

if TYPE_CHECKING:
    import numpy
    import torch

#: A torch.Tensor or a numpy.ndarray; results come back as the same type.
Array = TypeVar("Array", "torch.Tensor", "numpy.ndarray")
Ints = Union[Sequence[int], "torch.Tensor", "numpy.ndarray"]

_ACTIVATIONS = {"silu": 1, "swish": 1, "none": 0}


def activation_code(activation: Optional[str]) -> int:
    """'silu' (or 'swish') -> 1, 'none' or None -> 0."""
    if activation is None:
        return 0
    code = _ACTIVATIONS.get(activation) if isinstance(activation, str) else None
    if code is None:
        raise ValueError(f"activation must be 'silu', 'swish', 'none' or None, got {activation!r}")
    return code


def _ints(values, like, param):
    return None if values is None else int32_array(values, like, param)


def _conv(update, x, weight, conv_states, bias, query_start_loc, cache_indices, per_sequence, activation,
          null_block_id, out):
    name = "causal_conv1d_update" if update else "causal_conv1d_fn"
    act = activation_code(activation)
    qsl = _ints(query_start_loc, x, "query_start_loc")
    indices = _ints(cache_indices, x, "cache_indices")
    per = _ints(per_sequence, x, "num_accepted_tokens" if update else "initial_state_mode")
    null_block_id = int(null_block_id)
    entry = _C._eager_causal_conv1d_update if update else _C._eager_causal_conv1d_fn
    if out is not None and not _arrays.compiling() and entry(x, weight, conv_states, bias, qsl, indices, per, act,
                                                             null_block_id, out):
        return out  # the hot path of eager decode steps (plain torch tensors, none requiring grad)
    refuse_autograd(name, x=x, weight=weight, bias=bias)
    ops = traced_torch_ops(x)
    if ops is not None:
        if out is None:
            return getattr(ops, name)(x, weight, conv_states, bias, qsl, indices, per, act, null_block_id)
        getattr(ops, name + "_out")(x, weight, conv_states, bias, qsl, indices, per, act, null_block_id, out)
        return out
    if out is None:
        out = empty(x.shape, x.dtype, x)
    binding = _C.causal_conv1d_update if update else _C.causal_conv1d_fn
    binding(export(x), export(weight), export_output(conv_states, "conv_states"), export(bias), export(qsl),
            export(indices), export(per), act, null_block_id, export_output(out, "out"))
    written(conv_states, out)
    return out


def causal_conv1d_fn(x: Array, weight: Array, conv_states: Array, *, bias: Optional[Array] = None,
                     query_start_loc: Optional[Ints] = None, cache_indices: Optional[Ints] = None,
                     initial_state_mode: Optional[Ints] = None, activation: Optional[str] = "silu",
                     null_block_id: int = -1, out: Optional[Array] = None) -> Array:
    """Causal conv1d over whole sequences (prefill, ``aclnnCausalConv1dFn``); `conv_states` is updated in place.

    ``y_t = act(bias + sum_j weight[j] * p[t + j])`` over ``p = [K-1 history rows | x]`` of each sequence: the
    history is rows 0..K-2 of the sequence's line when its ``initial_state_mode`` is 1, else zeros; afterwards
    the line holds the last ``state_len`` rows of p.

    Parameters
    ----------
    x : torch.Tensor or numpy.ndarray
        (B, L, dim), or (cuSeqLen, dim) with `query_start_loc`; bf16, fp16 or fp32.
    weight : torch.Tensor or numpy.ndarray
        (K, dim), K in 2..4, x's dtype (transformers' (dim, K) weight: pass ``weight.t()``).
    conv_states : torch.Tensor or numpy.ndarray
        (lines, state_len >= K-1, dim), x's dtype; written in place.
    bias : torch.Tensor or numpy.ndarray, optional
        (dim,).
    query_start_loc : sequence of int or integer array, optional
        (B+1,) sequence starts in a varlen x: 0, ..., cuSeqLen.
    cache_indices : sequence of int or integer array, optional
        (B,) the line of each sequence (None: line i); `null_block_id` skips a sequence (y zero, line untouched).
    initial_state_mode : sequence of int or integer array, optional
        (B,) 1: continue from the line's state, 0: from zeros (None: all 0).
    activation : {'silu', 'swish', 'none', None}, default 'silu'
    null_block_id : int, default -1
    out : torch.Tensor or numpy.ndarray, optional
        Where to write y (x's shape and dtype), else a new array.

    Returns
    -------
    torch.Tensor or numpy.ndarray
        y, x's shape and dtype.

    Examples
    --------
    >>> import numpy as np, txops
    >>> x = np.ones((1, 3, 4), np.float32)                        # B=1, L=3, dim=4
    >>> w = np.ones((2, 4), np.float32)                           # K=2
    >>> states = np.zeros((1, 1, 4), np.float32)
    >>> txops.causal_conv1d_fn(x, w, states, activation=None)[0, :, 0]  # x_{t-1} + x_t, zero history
    array([1., 2., 2.], dtype=float32)
    >>> states[0, 0, 0]                                           # the last token, for the next step
    np.float32(1.0)
    """
    return _conv(False, x, weight, conv_states, bias, query_start_loc, cache_indices, initial_state_mode, activation,
                 null_block_id, out)


def causal_conv1d_update(x: Array, weight: Array, conv_states: Array, *, bias: Optional[Array] = None,
                         query_start_loc: Optional[Ints] = None, cache_indices: Optional[Ints] = None,
                         num_accepted_tokens: Optional[Ints] = None, activation: Optional[str] = "silu",
                         null_block_id: int = -1, out: Optional[Array] = None) -> Array:
    """Causal conv1d of a decode step, speculative tokens included (``aclnnCausalConv1dUpdate``); `conv_states`
    is updated in place.

    The history is rows o..o+K-2 of the sequence's line, ``o = max(num_accepted_tokens[i] - 1, 0)`` (0 without
    it); afterwards the line's first ``min(K-2+L, state_len)`` rows hold the window moved by one token.

    Parameters
    ----------
    x : torch.Tensor or numpy.ndarray
        (B, 1, dim); with `num_accepted_tokens` also (B, L, dim), or (cuSeqLen, dim) with `query_start_loc`.
    weight, conv_states, bias, query_start_loc, cache_indices, activation, null_block_id, out
        As for :func:`causal_conv1d_fn`.
    num_accepted_tokens : sequence of int or integer array, optional
        (B,) draft tokens accepted in the previous step, each in [0, state_len - (K-1)].

    Returns
    -------
    torch.Tensor or numpy.ndarray
        y, x's shape and dtype.

    Examples
    --------
    >>> import numpy as np, txops
    >>> states = np.array([[[1.0, 1.0], [2.0, 2.0]]], np.float32)  # one line, state_len 2 = K-1, dim 2
    >>> w = np.ones((3, 2), np.float32)                             # K=3
    >>> x = np.full((1, 1, 2), 3.0, np.float32)
    >>> txops.causal_conv1d_update(x, w, states, activation=None)[0, 0]  # 1 + 2 + 3
    array([6., 6.], dtype=float32)
    >>> states[0, :, 0]                                             # the window moved by one token
    array([2., 3.], dtype=float32)
    """
    return _conv(True, x, weight, conv_states, bias, query_start_loc, cache_indices, num_accepted_tokens, activation,
                 null_block_id, out)


__all__ = ["causal_conv1d_fn", "causal_conv1d_update", "activation_code"]
