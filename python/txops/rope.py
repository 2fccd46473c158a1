"""The RoPE operators of txops for torch tensors and numpy arrays, with CANN's Python names, argument names and
defaults where CANN has a Python front end (apply_rotary_pos_emb_grad, inplace_partial_rotary_mul_backward,
interleave_rope as torch_npu.npu_interleave_rope), Pythonic names elsewhere.

Every function works in place on the caller's memory or allocates its outputs in the caller's framework; strided
inputs are passed as they are (no copy). With torch, a call goes through the registered operator
(``torch.ops.txops.*``, see txops._torch_ops) when autograd must record it (grad mode on and an input that
requires grad) or torch.compile / a tracing mode must see it; plain eager calls go to the extension directly.
The formulas are in docs/rope.md.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, Tuple, TypeVar, Union

from . import _arrays
from . import _txops as _C
from ._arrays import empty, export, export_output, grad_needed, torch_ops, traced_torch_ops, written

if TYPE_CHECKING:
    import numpy
    import torch

#: A torch.Tensor or a numpy.ndarray; results come back as the same type.
Array = TypeVar("Array", "torch.Tensor", "numpy.ndarray")
RotaryMode = Union[str, int]
Layout = Union[str, int]

ROTARY_MODES = {"half": 0, "interleave": 1, "quarter": 2, "interleave-half": 3, "interleave_half": 3}
LAYOUTS = {"BSND": 1, "BSH": 1, "SBND": 2, "SBH": 2, "BNSD": 3, "TND": 4}


def rotary_mode_code(rotary_mode: RotaryMode) -> int:
    """'half' | 'interleave' | 'quarter' | 'interleave-half' (or the codes 0..3) -> the code."""
    if type(rotary_mode) is int:
        return rotary_mode  # the operator checks the range and names the value
    if isinstance(rotary_mode, str):
        code = ROTARY_MODES.get(rotary_mode)
        if code is None:
            raise ValueError("rotary_mode must be one of 'half', 'interleave', 'quarter', 'interleave-half', "
                             f"got {rotary_mode!r}")
        return code
    if isinstance(rotary_mode, int) and not isinstance(rotary_mode, bool):
        return rotary_mode  # the operator checks the range and names the value
    raise TypeError(f"rotary_mode must be a str or an int, got {type(rotary_mode).__name__}")


def layout_code(layout: Layout) -> int:
    """1 | 2 | 3 | 4 or 'BSND' | 'SBND' | 'BNSD' | 'TND' ('BSH' / 'SBH' as CANN spells them) -> the code."""
    if type(layout) is int:
        return layout
    if isinstance(layout, str):
        code = LAYOUTS.get(layout.upper())
        if code is None:
            raise ValueError(f"layout must be one of 'BSND', 'SBND', 'BNSD', 'TND' or 1..4, got {layout!r}")
        return code
    if isinstance(layout, int) and not isinstance(layout, bool):
        return layout
    raise TypeError(f"layout must be an int or a str, got {type(layout).__name__}")


def _slice_bounds(partial_slice, x):
    if partial_slice is None:
        return 0, x.shape[-1]
    bounds = tuple(partial_slice)
    if len(bounds) != 2:
        raise ValueError(f"partial_slice must be (start, end), got {partial_slice!r}")
    return int(bounds[0]), int(bounds[1])


def interleave_rope(x: Array, cos: Array, sin: Array, *, out: Optional[Array] = None) -> Array:
    """DeepSeek-MLA rotary embedding (``torch_npu.npu_interleave_rope``): de-interleave, then half rotation.

    ``out[..., i] = x[..., 2i] cos[..., i] - x[..., 2i+1] sin[..., i]`` and
    ``out[..., D/2+i] = x[..., 2i+1] cos[..., D/2+i] + x[..., 2i] sin[..., D/2+i]`` for i < D/2.

    Parameters
    ----------
    x : torch.Tensor or numpy.ndarray
        (B, N, S, D), D even (at most 1024); fp32, fp16 or bf16.
    cos, sin : torch.Tensor or numpy.ndarray
        (B or 1, 1, S or 1, D); x's dtype, or fp32 with a 16-bit x.
    out : torch.Tensor or numpy.ndarray, optional
        Where to write the result (x's shape and dtype); ``out=x`` rotates in place. Must be None when
        autograd records the call.

    Returns
    -------
    torch.Tensor or numpy.ndarray
        `out`, or a new array of x's shape and dtype in x's framework. Differentiable in x, cos and sin.

    Examples
    --------
    >>> import numpy as np, txops
    >>> x = np.ones((1, 2, 3, 4), np.float32)
    >>> cos, sin = np.ones((1, 1, 3, 4), np.float32), np.zeros((1, 1, 3, 4), np.float32)
    >>> txops.interleave_rope(x, cos, sin).shape
    (1, 2, 3, 4)
    """
    if out is not None and not _arrays.compiling() and _C._eager_interleave_rope(x, cos, sin, out):
        return out  # the hot path of eager decode calls (plain torch tensors, nothing to record)
    ops = torch_ops(x, cos, sin)
    if ops is None:
        if out is None:
            out = empty(x.shape, x.dtype, x)
            _C.interleave_rope(export(x), export(cos), export(sin), export(out))
        else:
            _C.interleave_rope(export(x), export(cos), export(sin), export_output(out, "out"))
            written(out)
        return out
    if out is None:
        return ops.interleave_rope(x, cos, sin)
    if grad_needed(x, cos, sin):
        raise ValueError("out must be None when autograd records the call, got a tensor")
    ops.interleave_rope_out(x, cos, sin, out)
    return out


def inplace_partial_rotary_mul(x: Array, cos: Array, sin: Array, *, rotary_mode: RotaryMode = "interleave",
                               partial_slice: Optional[Sequence[int]] = None) -> Array:
    """Rotates the slice ``x[..., start:end]`` in place (``aclnnInplacePartialRotaryMul``).

    ``y = x * cos + rot(x) * sin`` on the slice, ``rot`` per `rotary_mode`; the rest of x is untouched.

    Parameters
    ----------
    x : torch.Tensor or numpy.ndarray
        (B, S, N, D), written in place. With autograd it must not be a leaf that requires grad (use a
        projection's output, or ``x * 1.0``), as for torch's own in-place operators.
    cos, sin : torch.Tensor or numpy.ndarray
        (b, s, n, end - start), each of b, s, n either 1 or x's size.
    rotary_mode : {'interleave', 'half', 'quarter', 'interleave-half'} or int, default 'interleave'
        The rotation (or its code 0 half, 1 interleave, 2 quarter, 3 interleave-half).
    partial_slice : (int, int), optional
        (start, end) of the rotated channels; None means all of D.

    Returns
    -------
    torch.Tensor or numpy.ndarray
        x itself. Differentiable in x, cos and sin.

    Examples
    --------
    >>> import numpy as np, txops
    >>> x = np.arange(8, dtype=np.float32).reshape(1, 1, 1, 8)
    >>> cos, sin = np.zeros((1, 1, 1, 4), np.float32), np.ones((1, 1, 1, 4), np.float32)
    >>> txops.inplace_partial_rotary_mul(x, cos, sin, partial_slice=(4, 8))  # (a, b) -> (-b, a) on [4, 8)
    array([[[[ 0.,  1.,  2.,  3., -5.,  4., -7.,  6.]]]], dtype=float32)
    """
    mode = rotary_mode_code(rotary_mode)
    start, end = _slice_bounds(partial_slice, x)
    if not _arrays.compiling() and _C._eager_inplace_partial_rotary_mul(x, cos, sin, mode, start, end):
        return x
    ops = torch_ops(x, cos, sin)
    if ops is None:
        _C.inplace_partial_rotary_mul(export_output(x, "x"), export(cos), export(sin), mode, start, end)
        written(x)
        return x
    if grad_needed(x, cos, sin):
        return x.copy_(ops.partial_rotary_mul(x, cos, sin, mode, start, end))
    ops.inplace_partial_rotary_mul(x, cos, sin, mode, start, end)
    return x


def inplace_partial_rotary_mul_backward(grad_output: Array, cos: Array, sin: Array, *,
                                        rotary_mode: RotaryMode = "interleave",
                                        partial_slice: Optional[Sequence[int]] = None) -> Array:
    """The adjoint of :func:`inplace_partial_rotary_mul`, in place on `grad_output`
    (``aclnnInplacePartialRotaryMulGrad``).

    The slice becomes ``J^T dy``; the rest of `grad_output` is left as it is (the forward is the identity there).

    Parameters
    ----------
    grad_output : torch.Tensor or numpy.ndarray
        dy, (B, S, N, D); overwritten with dx.
    cos, sin : torch.Tensor or numpy.ndarray
        As for the forward.
    rotary_mode : str or int, default 'interleave'
        As for the forward.
    partial_slice : (int, int), optional
        As for the forward.

    Returns
    -------
    torch.Tensor or numpy.ndarray
        grad_output itself (not differentiable).

    Examples
    --------
    >>> import numpy as np, txops
    >>> dy = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 1, 4)
    >>> cos, sin = np.zeros((1, 1, 1, 4), np.float32), np.ones((1, 1, 1, 4), np.float32)
    >>> txops.inplace_partial_rotary_mul_backward(dy, cos, sin)  # the transpose of (a, b) -> (-b, a)
    array([[[[ 2., -1.,  4., -3.]]]], dtype=float32)
    """
    mode = rotary_mode_code(rotary_mode)
    start, end = _slice_bounds(partial_slice, grad_output)
    if not _arrays.compiling() and _C._eager_inplace_partial_rotary_mul_grad(grad_output, cos, sin, mode, start,
                                                                             end):
        return grad_output
    ops = traced_torch_ops(grad_output)
    if ops is None:
        _C.inplace_partial_rotary_mul_grad(export_output(grad_output, "grad_output"), export(cos), export(sin), mode,
                                           start, end)
        written(grad_output)
    else:
        ops.inplace_partial_rotary_mul_grad(grad_output, cos, sin, mode, start, end)
    return grad_output


def apply_rotary_pos_emb(query: Array, key: Array, cos: Array, sin: Array, *, layout: Layout = 1,
                         rotary_mode: RotaryMode = "half") -> Tuple[Array, Array]:
    """Rotary embedding in place on query and key (``aclnnApplyRotaryPosEmbV2``).

    ``y = x * cos + rot(x) * sin`` on the first ``cos.shape[-1]`` channels of each head (all of D, or fewer for
    partial rotary: the rest passes through).

    Parameters
    ----------
    query, key : torch.Tensor or numpy.ndarray
        (B, S, N, D) for BSND, (S, B, N, D) for SBND, (B, N, S, D) for BNSD, (T, N, D) for TND; key may have
        fewer heads (GQA). Written in place; with autograd they must not be leaves that require grad (views of a
        projection's output are fine).
    cos, sin : torch.Tensor or numpy.ndarray
        query's layout with N = 1, each other axis 1 or query's size; last dim at most D.
    layout : {1, 2, 3, 4} or {'BSND', 'SBND', 'BNSD', 'TND'}, default 1
        ('BSH' / 'SBH' as CANN spells them are accepted.)
    rotary_mode : {'half', 'interleave', 'quarter'} or int, default 'half'

    Returns
    -------
    (torch.Tensor, torch.Tensor) or (numpy.ndarray, numpy.ndarray)
        (query, key) themselves. Differentiable in query, key, cos and sin.

    Examples
    --------
    >>> import numpy as np, txops
    >>> q, k = np.ones((1, 3, 4, 8), np.float32), np.ones((1, 3, 2, 8), np.float32)  # BSND, GQA
    >>> cos, sin = np.ones((1, 3, 1, 8), np.float32), np.zeros((1, 3, 1, 8), np.float32)
    >>> q_out, k_out = txops.apply_rotary_pos_emb(q, k, cos, sin, layout="BSND")
    >>> q_out is q, float(q.sum())
    (True, 96.0)
    """
    mode = rotary_mode_code(rotary_mode)
    layout = layout_code(layout)
    if not _arrays.compiling() and _C._eager_apply_rotary_pos_emb(query, key, cos, sin, layout, mode):
        return query, key  # the hot path of eager decode calls (plain torch tensors, nothing to record)
    ops = torch_ops(query, key, cos, sin)
    if ops is None:
        _C.apply_rotary_pos_emb(export_output(query, "query"), export_output(key, "key"), export(cos), export(sin),
                                layout, mode)
        written(query, key)
        return query, key
    if grad_needed(query, key, cos, sin):
        query_rotated, key_rotated = ops.apply_rotary_pos_emb_functional(query, key, cos, sin, layout, mode)
        return query.copy_(query_rotated), key.copy_(key_rotated)
    ops.apply_rotary_pos_emb(query, key, cos, sin, layout, mode)
    return query, key


def apply_rotary_pos_emb_grad(grad_query_embed: Array, grad_key_embed: Array, cos: Array, sin: Array, *,
                              query: Optional[Array] = None, key: Optional[Array] = None,
                              rotary_mode: RotaryMode = "half",
                              layout: Layout = 1, out: Optional[Sequence[Array]] = None,
                              ) -> Tuple[Array, Array, Optional[Array], Optional[Array]]:
    """Backward of :func:`apply_rotary_pos_emb` (``aclnnApplyRotaryPosEmbGrad``), fused over query and key.

    Parameters
    ----------
    grad_query_embed, grad_key_embed : torch.Tensor or numpy.ndarray
        The gradients of the rotated query and key (their shapes; cos's D).
    cos, sin : torch.Tensor or numpy.ndarray
        As for the forward.
    query, key : torch.Tensor or numpy.ndarray, optional
        The forward's inputs: when both are given, grad_cos and grad_sin are computed too.
    rotary_mode : {'half', 'interleave', 'quarter'} or int, default 'half'
    layout : {1, 2, 3, 4} or {'BSND', 'SBND', 'BNSD', 'TND'}, default 1
    out : sequence of arrays, optional
        (grad_query, grad_key) or, with query and key, (grad_query, grad_key, grad_cos, grad_sin): written
        and returned instead of new arrays. Fresh outputs of a large call are new memory the kernel must
        fault in (on a machine whose allocator returns freed memory to the OS: 64 MiB, ~16k page faults);
        given outputs cost nothing beyond the C++ call.

    Returns
    -------
    tuple
        (grad_query, grad_key, grad_cos or None, grad_sin or None): new arrays in the inputs' framework (or
        the `out` ones), grad_cos / grad_sin of cos's shape and dtype (not differentiable).

    Examples
    --------
    >>> import numpy as np, txops
    >>> dq, dk = np.ones((1, 3, 4, 8), np.float32), np.ones((1, 3, 2, 8), np.float32)
    >>> cos, sin = np.ones((1, 3, 1, 8), np.float32), np.zeros((1, 3, 1, 8), np.float32)
    >>> grad_q, grad_k, grad_cos, grad_sin = txops.apply_rotary_pos_emb_grad(dq, dk, cos, sin)
    >>> float(grad_q.sum()), grad_cos is None
    (96.0, True)
    """
    mode = rotary_mode_code(rotary_mode)
    layout = layout_code(layout)
    with_cos_sin = query is not None and key is not None
    given = tuple(out) if out is not None else ()
    if out is not None and len(given) != (4 if with_cos_sin else 2):
        raise ValueError(f"out must be {'4' if with_cos_sin else '2'} arrays (grad_query, grad_key"
                         f"{', grad_cos, grad_sin' if with_cos_sin else ''}), got {len(given)}")
    if given and not _arrays.compiling() and _C._eager_apply_rotary_pos_emb_grad(
            grad_query_embed, grad_key_embed, cos, sin, query, key, mode, layout, *given,
            *((None, None) if len(given) == 2 else ())):
        return (given[0], given[1]) + ((given[2], given[3]) if with_cos_sin else (None, None))
    ops = traced_torch_ops(grad_query_embed)
    if ops is not None:
        results = ops.apply_rotary_pos_emb_grad(grad_query_embed, grad_key_embed, cos, sin, query, key, mode, layout)
        results = results if with_cos_sin else (results[0], results[1])
        for target, value in zip(given, results):
            target.copy_(value)
        results = given or results
        return (results[0], results[1]) + ((results[2], results[3]) if with_cos_sin else (None, None))
    grad_query = given[0] if given else empty(grad_query_embed.shape, grad_query_embed.dtype, grad_query_embed)
    grad_key = given[1] if given else empty(grad_key_embed.shape, grad_key_embed.dtype, grad_key_embed)
    grad_cos = grad_sin = None
    if with_cos_sin:
        grad_cos = given[2] if given else empty(cos.shape, cos.dtype, cos)
        grad_sin = given[3] if given else empty(sin.shape, sin.dtype, sin)
    _C.apply_rotary_pos_emb_grad(export(grad_query_embed), export(grad_key_embed), export(cos), export(sin),
                                 export(query), export(key), mode, layout, export_output(grad_query, "grad_query"),
                                 export_output(grad_key, "grad_key"), export_output(grad_cos, "grad_cos"),
                                 export_output(grad_sin, "grad_sin"))
    if given:
        written(*given)
    return grad_query, grad_key, grad_cos, grad_sin


__all__ = ["interleave_rope", "inplace_partial_rotary_mul", "inplace_partial_rotary_mul_backward",
           "apply_rotary_pos_emb", "apply_rotary_pos_emb_grad", "rotary_mode_code", "layout_code"]
