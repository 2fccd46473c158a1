"""The RoPE operators of txops for torch tensors and numpy arrays, with CANN's Python names, argument names and
defaults where CANN has a Python front end (apply_rotary_pos_emb_grad, inplace_partial_rotary_mul_backward,
interleave_rope as torch_npu.npu_interleave_rope), Pythonic names elsewhere.

Every function works in place on the caller's memory or allocates its outputs in the caller's framework; strided
inputs are passed as they are (no copy). When torch autograd must record a call (grad mode on and an input that
requires grad), the call goes through the torch.autograd.Functions of txops._autograd, whose backward runs the
txops grad operators.
"""
from . import _txops as _C
from ._arrays import empty, export, export_output, grad_needed

ROTARY_MODES = {"half": 0, "interleave": 1, "quarter": 2, "interleave-half": 3, "interleave_half": 3}
LAYOUTS = {"BSND": 1, "BSH": 1, "SBND": 2, "SBH": 2, "BNSD": 3, "TND": 4}


def rotary_mode_code(rotary_mode):
    """'half' | 'interleave' | 'quarter' | 'interleave-half' (or the codes 0..3) -> the code."""
    if isinstance(rotary_mode, str):
        code = ROTARY_MODES.get(rotary_mode)
        if code is None:
            raise ValueError("rotary_mode must be one of 'half', 'interleave', 'quarter', 'interleave-half', "
                             f"got {rotary_mode!r}")
        return code
    if isinstance(rotary_mode, int) and not isinstance(rotary_mode, bool):
        return rotary_mode  # the operator checks the range and names the value
    raise TypeError(f"rotary_mode must be a str or an int, got {type(rotary_mode).__name__}")


def layout_code(layout):
    """1 | 2 | 3 | 4 or 'BSND' | 'SBND' | 'BNSD' | 'TND' ('BSH' / 'SBH' as CANN spells them) -> the code."""
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


def _autograd():
    from . import _autograd as module  # imports torch; only reached with torch tensors
    return module


def interleave_rope(x, cos, sin, *, out=None):
    """DeepSeek-MLA RoPE (torch_npu.npu_interleave_rope): x (B, N, S, D), cos/sin (Bc, 1, Sc, D) -> out, x's
    shape and dtype, out[i] = x[2i] cos[i] - x[2i+1] sin[i], out[D/2+i] = x[2i+1] cos[D/2+i] + x[2i] sin[D/2+i].
    `out` may be given (x itself for an in-place update)."""
    if grad_needed(x, cos, sin):
        if out is not None:
            raise ValueError("out must be None when autograd records the call, got a tensor")
        return _autograd().InterleaveRope.apply(x, cos, sin)
    if out is None:
        out = empty(x.shape, x.dtype, x)
    _C.interleave_rope(export(x), export(cos), export(sin), export_output(out, "out"))
    return out


def inplace_partial_rotary_mul(x, cos, sin, *, rotary_mode="interleave", partial_slice=None):
    """Rotates x[..., start:end] in place (x (B, S, N, D); cos/sin (b, s, n, end-start), each of b, s, n 1 or
    x's size) and returns x. partial_slice=None means the whole last axis."""
    mode = rotary_mode_code(rotary_mode)
    start, end = _slice_bounds(partial_slice, x)
    if grad_needed(x, cos, sin):
        return _autograd().InplacePartialRotaryMul.apply(x, cos, sin, mode, start, end)
    _C.inplace_partial_rotary_mul(export_output(x, "x"), export(cos), export(sin), mode, start, end)
    return x


def inplace_partial_rotary_mul_backward(grad_output, cos, sin, *, rotary_mode="interleave", partial_slice=None):
    """The adjoint of inplace_partial_rotary_mul, in place on grad_output (returned): the slice becomes J^T dy,
    the rest of grad_output is left as it is (the forward's identity there)."""
    mode = rotary_mode_code(rotary_mode)
    start, end = _slice_bounds(partial_slice, grad_output)
    _C.inplace_partial_rotary_mul_grad(export_output(grad_output, "grad_output"), export(cos), export(sin), mode, start, end)
    return grad_output


def apply_rotary_pos_emb(query, key, cos, sin, *, layout=1, rotary_mode="half"):
    """RoPE in place on query and key (modes 'half', 'interleave', 'quarter'; layouts BSND=1, SBND=2, BNSD=3,
    TND=4); returns (query, key). cos's last dim may be smaller than D: the first cos-D channels rotate."""
    mode = rotary_mode_code(rotary_mode)
    layout = layout_code(layout)
    if grad_needed(query, key, cos, sin):
        return _autograd().apply_rotary_pos_emb(query, key, cos, sin, layout, mode)
    _C.apply_rotary_pos_emb(export_output(query, "query"), export_output(key, "key"), export(cos), export(sin), layout, mode)
    return query, key


def apply_rotary_pos_emb_grad(grad_query_embed, grad_key_embed, cos, sin, *, query=None, key=None,
                              rotary_mode="half", layout=1):
    """Backward of apply_rotary_pos_emb -> (grad_query, grad_key, grad_cos | None, grad_sin | None). grad_cos and
    grad_sin (cos's shape and dtype) are computed when query and key (the forward's inputs) are both given."""
    mode = rotary_mode_code(rotary_mode)
    layout = layout_code(layout)
    grad_query = empty(grad_query_embed.shape, grad_query_embed.dtype, grad_query_embed)
    grad_key = empty(grad_key_embed.shape, grad_key_embed.dtype, grad_key_embed)
    grad_cos = grad_sin = None
    if query is not None and key is not None:
        grad_cos = empty(cos.shape, cos.dtype, cos)
        grad_sin = empty(sin.shape, sin.dtype, sin)
    _C.apply_rotary_pos_emb_grad(export(grad_query_embed), export(grad_key_embed), export(cos), export(sin),
                                 export(query), export(key), mode, layout, export(grad_query), export(grad_key),
                                 export(grad_cos), export(grad_sin))
    return grad_query, grad_key, grad_cos, grad_sin
