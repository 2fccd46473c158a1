"""CANN's general rotary embedding operators for torch tensors and numpy arrays: RotaryPositionEmbedding (the kernel
behind ``torch_npu.npu_rotary_mul``) with its backward, and RopeWithSinCosCache (vLLM's ``rotary_embedding``:
cos/sin rows gathered from a cache by position, with the mrope mode of the Qwen-VL models).

As in txops.rope: outputs are allocated in the caller's framework or written into given ones, strided inputs pass
as they are, and torch tensors go through the registered operators (``torch.ops.txops.*``) only when autograd,
torch.compile or a tracing mode must see the call. The formulas are in docs/rope.md.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, Tuple, TypeVar

from . import _arrays
from . import _txops as _C
from ._arrays import (empty, export, export_output, grad_needed, is_torch, refuse_autograd, torch_ops,
                      traced_torch_ops, written, zeros)
from .rope import RotaryMode, rotary_mode_code

if TYPE_CHECKING:
    import numpy
    import torch

Array = TypeVar("Array", "torch.Tensor", "numpy.ndarray")


def rotary_position_embedding(x: Array, cos: Array, sin: Array, *, rotary_mode: RotaryMode = "half",
                              rotate: Optional[Array] = None, out: Optional[Array] = None) -> Array:
    """``y = x * cos + rot(x) * sin`` (``aclnnRotaryPositionEmbedding``; with `rotate`, V2's ``rot(x) = x @ rotate``).

    Parameters
    ----------
    x : torch.Tensor or numpy.ndarray
        Rank 3 or 4, D (last dim) even and at most 1024 (a multiple of 4 for quarter); fp32, fp16 or bf16.
    cos, sin : torch.Tensor or numpy.ndarray
        Broadcastable to x (right-aligned; each dim 1 or x's, last dim D); x's dtype, or fp32.
    rotary_mode : {'half', 'interleave', 'quarter', 'interleave-half'} or int, default 'half'
    rotate : torch.Tensor or numpy.ndarray, optional
        A (D, D) matrix in x's dtype replacing rot(x) by x @ rotate (its zero entries contribute nothing).
    out : torch.Tensor or numpy.ndarray, optional
        Where to write y (x's shape and dtype; ``out=x`` rotates in place). None when autograd records the call.

    Returns
    -------
    torch.Tensor or numpy.ndarray
        `out`, or a new array of x's shape and dtype. Differentiable in x, cos and sin.

    Examples
    --------
    >>> import numpy as np, txops
    >>> x = np.arange(4, dtype=np.float32).reshape(1, 1, 1, 4)
    >>> cos, sin = np.zeros((1, 1, 1, 4), np.float32), np.ones((1, 1, 1, 4), np.float32)
    >>> txops.rotary_position_embedding(x, cos, sin)                   # cat(-x2, x1)
    array([[[[-2., -3.,  0.,  1.]]]], dtype=float32)
    """
    mode = rotary_mode_code(rotary_mode)
    if out is not None and not _arrays.compiling() and _C._eager_rotary_position_embedding(x, cos, sin, mode, out,
                                                                                          rotate):
        return out  # the plain-eager fast path (plain torch tensors, nothing to record)
    ops = torch_ops(x, cos, sin)
    if ops is None:
        target = empty(x.shape, x.dtype, x) if out is None else out
        _C.rotary_position_embedding(export(x), export(cos), export(sin), mode, export_output(target, "out"),
                                     export(rotate))
        if out is not None:
            written(out)
        return target
    if out is None:
        return ops.rotary_position_embedding(x, cos, sin, mode, rotate)
    if grad_needed(x, cos, sin):
        raise ValueError("out must be None when autograd records the call, got a tensor")
    ops.rotary_position_embedding_out(x, cos, sin, mode, rotate, out)
    return out


def rotary_position_embedding_grad(grad: Array, cos: Array, sin: Array, x: Optional[Array] = None, *,
                                   rotary_mode: RotaryMode = "half",
                                   ) -> Tuple[Array, Optional[Array], Optional[Array]]:
    """The backward of :func:`rotary_position_embedding` (``aclnnRotaryPositionEmbeddingGrad``).

    Parameters
    ----------
    grad : torch.Tensor or numpy.ndarray
        dy, x's shape.
    cos, sin : torch.Tensor or numpy.ndarray
        As for the forward.
    x : torch.Tensor or numpy.ndarray, optional
        The forward's input: when given, dcos and dsin are computed too (summed over cos's broadcast dims).
    rotary_mode : str or int, default 'half'

    Returns
    -------
    tuple
        (dx, dcos or None, dsin or None): new arrays; dcos / dsin in cos's shape and dtype.

    Examples
    --------
    >>> import numpy as np, txops
    >>> dy = np.ones((1, 1, 2, 4), np.float32)
    >>> cos, sin = np.ones((1, 1, 1, 4), np.float32), np.zeros((1, 1, 1, 4), np.float32)
    >>> dx, dcos, dsin = txops.rotary_position_embedding_grad(dy, cos, sin, dy)
    >>> dcos                                                           # summed over the two rows
    array([[[[2., 2., 2., 2.]]]], dtype=float32)
    """
    mode = rotary_mode_code(rotary_mode)
    ops = traced_torch_ops(grad)
    if ops is not None:
        dx, dcos, dsin = ops.rotary_position_embedding_grad(grad, cos, sin, x, mode)
        return (dx, dcos, dsin) if x is not None else (dx, None, None)
    dx = empty(grad.shape, grad.dtype, grad)
    dcos = empty(cos.shape, cos.dtype, cos) if x is not None else None
    dsin = empty(sin.shape, sin.dtype, sin) if x is not None else None
    _C.rotary_position_embedding_grad(export(grad), export(cos), export(sin), export(x), mode, export(dx),
                                      export(dcos), export(dsin))
    return dx, dcos, dsin


def rope_with_sin_cos_cache(positions: Array, query: Array, key: Array, cos_sin_cache: Array, head_size: int, *,
                            is_neox_style: bool = True, mrope_section: Optional[Sequence[int]] = None,
                            cache_mode: int = 0, query_out: Optional[Array] = None,
                            key_out: Optional[Array] = None) -> Tuple[Array, Array]:
    """Rotary embedding from a cos/sin cache indexed by position (``aclnnRopeWithSinCosCache`` / ``V2``).

    Parameters
    ----------
    positions : torch.Tensor or numpy.ndarray
        (T,) int64 or int32; or (m, T) with `mrope_section` of m = 3 or 4 parts (mrope).
    query, key : torch.Tensor or numpy.ndarray
        (T, Nq * head_size) and (T, Nk * head_size), one float dtype.
    cos_sin_cache : torch.Tensor or numpy.ndarray
        (max_positions, rotary_dim): rows cat(cos, sin), rotary_dim / 2 each; rotary_dim <= head_size (the
        channels past it pass through). query's dtype, or fp32.
    head_size : int
    is_neox_style : bool, default True
        GPT-NeoX halves (True) or GPT-J interleaved pairs (False).
    mrope_section : sequence of int, optional
        Channels of each position row, summing to rotary_dim / 2.
    cache_mode : {0, 1}, default 0
        mrope channel assignment: contiguous sections (0) or Qwen3-VL's interleaved one (1, 3 sections).
    query_out, key_out : torch.Tensor or numpy.ndarray, optional
        Where to write (query's / key's shape and dtype; the inputs themselves for in place).

    Returns
    -------
    (torch.Tensor, torch.Tensor) or (numpy.ndarray, numpy.ndarray)
        (query_out, key_out) (not differentiable: the operator has no backward).

    Examples
    --------
    >>> import numpy as np, txops
    >>> q, k = np.ones((2, 8), np.float32), np.ones((2, 4), np.float32)        # 2 and 1 heads of 4
    >>> cache = np.array([[1, 1, 0, 0], [0, 0, 1, 1]], np.float32)             # position 1 turns by 90 degrees
    >>> q_out, k_out = txops.rope_with_sin_cos_cache(np.array([0, 1]), q, k, cache, 4)
    >>> k_out
    array([[ 1.,  1.,  1.,  1.],
           [-1., -1.,  1.,  1.]], dtype=float32)
    """
    if (query_out is not None and key_out is not None and mrope_section is None and not _arrays.compiling()
            and _C._eager_rope_with_sin_cos_cache(positions, query, key, cos_sin_cache, None, head_size,
                                                  1 if is_neox_style else 0, cache_mode, query_out, key_out)):
        return query_out, key_out  # the plain-eager fast path (vLLM's per-layer decode call)
    refuse_autograd("rope_with_sin_cos_cache", query=query, key=key, cos_sin_cache=cos_sin_cache)
    section = None if mrope_section is None else [int(v) for v in mrope_section]
    ops = traced_torch_ops(query)
    if ops is not None:
        q_new, k_new = ops.rope_with_sin_cos_cache(positions, query, key, cos_sin_cache, section, head_size,
                                                   is_neox_style, cache_mode)
        if query_out is None and key_out is None:
            return q_new, k_new
        q_target = query_out if query_out is not None else q_new
        k_target = key_out if key_out is not None else k_new
        if query_out is not None:
            query_out.copy_(q_new)
        if key_out is not None:
            key_out.copy_(k_new)
        return q_target, k_target
    q_target = empty(query.shape, query.dtype, query) if query_out is None else query_out
    k_target = empty(key.shape, key.dtype, key) if key_out is None else key_out
    _C.rope_with_sin_cos_cache(export(positions), export(query), export(key), export(cos_sin_cache), section,
                               int(head_size), bool(is_neox_style), int(cache_mode),
                               export_output(q_target, "query_out"), export_output(k_target, "key_out"))
    written(*(t for t in (query_out, key_out) if t is not None))
    return q_target, k_target


def rotary_embedding(positions: Array, query: Array, key: Optional[Array], head_size: int, cos_sin_cache: Array,
                     is_neox: bool) -> None:
    """vLLM's ``rotary_embedding`` custom op: query and key rotated in place.

    Parameters
    ----------
    positions : torch.Tensor or numpy.ndarray
        (T,) or (batch, seq) with T = batch * seq, int64 or int32.
    query : torch.Tensor or numpy.ndarray
        T tokens of Nq * head_size channels: (T, Nq * head_size), (batch, seq, Nq * head_size) or
        (T, Nq, head_size), viewable as (T, Nq * head_size) (it is written in place).
    key : torch.Tensor or numpy.ndarray or None
        The same for the key heads; None rotates query only.
    head_size : int
    cos_sin_cache : torch.Tensor or numpy.ndarray
        (max_positions, rotary_dim), rows cat(cos, sin).
    is_neox : bool
        GPT-NeoX halves (True) or GPT-J pairs (False).

    Examples
    --------
    >>> import numpy as np, txops
    >>> q = np.ones((1, 4), np.float32)
    >>> txops.rotary_embedding(np.array([1]), q, None, 4, np.array([[1, 1, 0, 0], [0, 0, 1, 1]], np.float32), True)
    >>> q
    array([[-1., -1.,  1.,  1.]], dtype=float32)
    """
    if (key is not None and len(positions.shape) == 1 and len(query.shape) == 2 and len(key.shape) == 2
            and not _arrays.compiling()
            and _C._eager_rope_with_sin_cos_cache(positions, query, key, cos_sin_cache, None, head_size,
                                                  1 if is_neox else 0, 0, query, key)):
        return None
    tokens = 1
    for n in positions.shape:
        tokens *= int(n)
    flat_positions = positions.reshape(tokens)
    flat_query = _token_rows(query, tokens, "query")
    flat_key = _token_rows(key, tokens, "key") if key is not None else zeros((tokens, 0), query.dtype, query)
    # (the views share their bases' version counters: the writes are recorded on query and key)
    rope_with_sin_cos_cache(flat_positions, flat_query, flat_key, cos_sin_cache, head_size, is_neox_style=is_neox,
                            query_out=flat_query, key_out=flat_key)


def _token_rows(x, tokens, param):
    """x as a (tokens, channels) view of the same memory (in place: no copy is allowed)."""
    if len(x.shape) == 2 and int(x.shape[0]) == tokens:
        return x
    channels = 1
    for n in x.shape:
        channels *= int(n)
    if tokens == 0 or channels % tokens:
        raise ValueError(f"{param} must hold positions' {tokens} tokens, got shape {tuple(x.shape)}")
    try:
        return x.view(tokens, channels // tokens) if is_torch(x) else _numpy_view(x, (tokens, channels // tokens))
    except (RuntimeError, AttributeError, ValueError):
        raise ValueError(f"{param} must be viewable as ({tokens}, {channels // tokens}) to be rotated in place, "
                         f"got shape {tuple(x.shape)} strides {tuple(x.strides) if not is_torch(x) else x.stride()}")


def _numpy_view(x, shape):
    view = x.view()
    view.shape = shape  # raises instead of copying when the strides do not allow it
    return view


__all__ = ["rotary_position_embedding", "rotary_position_embedding_grad", "rope_with_sin_cos_cache",
           "rotary_embedding"]
