"""The torch.library entries of txops.rotary (RotaryPositionEmbedding, its Grad, RopeWithSinCosCache): schemas,
CPU kernels over the extension, fake kernels and the autograd formula, merged into txops._torch_ops' tables.

=====================================  ==========================================================================
``rotary_position_embedding``          (x, cos, sin, rotary_mode, rotate?) -> y; differentiable (x, cos, sin)
``rotary_position_embedding_out``      the same into a given ``out`` (mutated; may be x)
``rotary_position_embedding_grad``     (dx, dcos, dsin); dcos / dsin are empty (0,) tensors unless x is given
``rope_with_sin_cos_cache``            (positions, query, key, cache, mrope_section?, head_size, is_neox_style,
                                       cache_mode) -> (query_out, key_out); no backward
``rope_with_sin_cos_cache_``           the same in place on query and key (mutated)
=====================================  ==========================================================================
"""
import torch

from . import _txops as _C
from ._arrays import export as _dl

_CACHE_ARGS = ("Tensor positions, Tensor{q} query, Tensor{k} key, Tensor cos_sin_cache, int[]? mrope_section, "
               "int head_size, bool is_neox_style, int cache_mode")

SCHEMAS = {
    "rotary_position_embedding": "(Tensor x, Tensor cos, Tensor sin, int rotary_mode, Tensor? rotate) -> Tensor",
    "rotary_position_embedding_out":
        "(Tensor x, Tensor cos, Tensor sin, int rotary_mode, Tensor? rotate, Tensor(a!) out) -> ()",
    "rotary_position_embedding_grad":
        "(Tensor grad, Tensor cos, Tensor sin, Tensor? x, int rotary_mode) -> (Tensor, Tensor, Tensor)",
    "rope_with_sin_cos_cache": "(" + _CACHE_ARGS.format(q="", k="") + ") -> (Tensor, Tensor)",
    "rope_with_sin_cos_cache_": "(" + _CACHE_ARGS.format(q="(a!)", k="(b!)") + ") -> ()",
}


def _new(shape, dtype, like):
    return torch.empty(shape, dtype=dtype, device=like.device)


# ---- CPU kernels ----------------------------------------------------------------------------------------------

def _rotary_position_embedding(x, cos, sin, rotary_mode, rotate):
    out = _new(x.shape, x.dtype, x)
    _C.rotary_position_embedding(_dl(x), _dl(cos), _dl(sin), rotary_mode, _dl(out), _dl(rotate))
    return out


def _rotary_position_embedding_out(x, cos, sin, rotary_mode, rotate, out):
    _C.rotary_position_embedding(_dl(x), _dl(cos), _dl(sin), rotary_mode, _dl(out), _dl(rotate))
    torch._C._increment_version((out,))


def _rotary_position_embedding_grad(grad, cos, sin, x, rotary_mode):
    dx = _new(grad.shape, grad.dtype, grad)
    dcos = _new(cos.shape if x is not None else (0,), cos.dtype, cos)
    dsin = _new(sin.shape if x is not None else (0,), sin.dtype, sin)
    _C.rotary_position_embedding_grad(_dl(grad), _dl(cos), _dl(sin), _dl(x), rotary_mode, _dl(dx),
                                      _dl(dcos) if x is not None else None, _dl(dsin) if x is not None else None)
    return dx, dcos, dsin


def _rope_with_sin_cos_cache(positions, query, key, cos_sin_cache, mrope_section, head_size, is_neox_style,
                             cache_mode):
    query_out, key_out = _new(query.shape, query.dtype, query), _new(key.shape, key.dtype, key)
    _C.rope_with_sin_cos_cache(_dl(positions), _dl(query), _dl(key), _dl(cos_sin_cache), mrope_section, head_size,
                               is_neox_style, cache_mode, _dl(query_out), _dl(key_out))
    return query_out, key_out


def _rope_with_sin_cos_cache_(positions, query, key, cos_sin_cache, mrope_section, head_size, is_neox_style,
                              cache_mode):
    _C.rope_with_sin_cos_cache(_dl(positions), _dl(query), _dl(key), _dl(cos_sin_cache), mrope_section, head_size,
                               is_neox_style, cache_mode, _dl(query), _dl(key))
    torch._C._increment_version((query, key))


# ---- fake kernels -----------------------------------------------------------------------------------------------

def _fake_rotary_position_embedding(x, cos, sin, rotary_mode, rotate):
    return _new(x.shape, x.dtype, x)


def _fake_rotary_position_embedding_grad(grad, cos, sin, x, rotary_mode):
    return (_new(grad.shape, grad.dtype, grad), _new(cos.shape if x is not None else (0,), cos.dtype, cos),
            _new(sin.shape if x is not None else (0,), sin.dtype, sin))


def _fake_rope_with_sin_cos_cache(positions, query, key, cos_sin_cache, mrope_section, head_size, is_neox_style,
                                  cache_mode):
    return _new(query.shape, query.dtype, query), _new(key.shape, key.dtype, key)


def _fake_none(*args):
    return None


# ---- autograd ---------------------------------------------------------------------------------------------------
# Without a rotate matrix, the txops grad operator gives dx, dcos and dsin (reduced over cos's broadcast dims) in
# one pass. With one, rot(x) = x @ R: dx = dy * cos + (dy * sin) @ R^T, dcos = sum(dy * x), dsin = sum(dy * (x @ R)),
# in torch (fp32 arithmetic).

def _sum_to(values, shape):
    """values summed down to `shape` (right-aligned broadcast: leading dims dropped, size-1 dims kept)."""
    extra = values.dim() - len(shape)
    if extra:
        values = values.sum(dim=tuple(range(extra)))
    axes = [d for d, n in enumerate(shape) if n == 1 and values.shape[d] != 1]
    return values.sum(dim=axes, keepdim=True) if axes else values


def _setup_rotary_position_embedding(ctx, inputs, output):
    x, cos, sin, rotary_mode, rotate = inputs
    needs_cos_sin = ctx.needs_input_grad[1] or ctx.needs_input_grad[2]
    ctx.save_for_backward(x if needs_cos_sin or rotate is not None else None, cos, sin, rotate)
    ctx.rotary_mode = rotary_mode


def _backward_rotary_position_embedding(ctx, grad_out):
    x, cos, sin, rotate = ctx.saved_tensors
    needs = ctx.needs_input_grad
    if rotate is None:
        dx, dcos, dsin = torch.ops.txops.rotary_position_embedding_grad(grad_out, cos, sin, x, ctx.rotary_mode)
        with_cos_sin = x is not None
        return (dx if needs[0] else None, dcos if with_cos_sin and needs[1] else None,
                dsin if with_cos_sin and needs[2] else None, None, None)
    dy, r = grad_out.float(), rotate.float()
    dx = (dy * cos.float() + (dy * sin.float()) @ r.transpose(0, 1)).to(x.dtype) if needs[0] else None
    dcos = _sum_to(dy * x.float(), cos.shape).to(cos.dtype) if needs[1] else None
    dsin = _sum_to(dy * (x.float() @ r), sin.shape).to(sin.dtype) if needs[2] else None
    return dx, dcos, dsin, None, None


KERNELS = {
    "rotary_position_embedding": (_rotary_position_embedding, _fake_rotary_position_embedding),
    "rotary_position_embedding_out": (_rotary_position_embedding_out, _fake_none),
    "rotary_position_embedding_grad": (_rotary_position_embedding_grad, _fake_rotary_position_embedding_grad),
    "rope_with_sin_cos_cache": (_rope_with_sin_cos_cache, _fake_rope_with_sin_cos_cache),
    "rope_with_sin_cos_cache_": (_rope_with_sin_cos_cache_, _fake_none),
}

AUTOGRAD = {
    "rotary_position_embedding": (_backward_rotary_position_embedding, _setup_rotary_position_embedding),
}
