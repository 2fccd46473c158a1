"""torch.autograd.Functions for the txops RoPE operators, so that they can sit in a training graph.

Backward runs the txops grad operators: interleave_rope's adjoint is the interleave-half mode of
inplace_partial_rotary_mul_grad over the whole head dim (x (B, N, S, D) read as (B, S', N', D), which the
operator's broadcasting rules accept); apply_rotary_pos_emb's is apply_rotary_pos_emb_grad, which also yields
grad cos / grad sin. txops has no operator for the cos/sin gradients of interleave_rope and
inplace_partial_rotary_mul, so those (only computed when cos or sin requires grad) are torch reductions of the
spec's formulas (docs/rope.md): dcos = sum(dy * x), dsin = sum(dy * rot(x)) over the broadcast axes.
The in-place forwards mark their outputs dirty, as torch's own in-place ops do (apply_rotary_pos_emb on views:
see its function).
"""
import torch
from torch.autograd.function import once_differentiable

from . import _txops as _C
from ._arrays import export

_INTERLEAVE_HALF = 3


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


class InterleaveRope(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, cos, sin):
        out = torch.empty(x.shape, dtype=x.dtype)
        _C.interleave_rope(export(x), export(cos), export(sin), export(out))
        needs_cos_sin = ctx.needs_input_grad[1] or ctx.needs_input_grad[2]
        ctx.save_for_backward(x if needs_cos_sin else None, cos, sin)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        x, cos, sin = ctx.saved_tensors
        grad_x = None
        if ctx.needs_input_grad[0]:
            grad_x = grad_out.clone(memory_format=torch.contiguous_format)
            _C.inplace_partial_rotary_mul_grad(export(grad_x), export(cos), export(sin), _INTERLEAVE_HALF, 0,
                                               grad_x.shape[-1])
        grad_cos, grad_sin = None, None
        if x is not None:
            grad_cos, grad_sin = _cos_sin_grads(grad_out, x, _INTERLEAVE_HALF, cos, sin, *ctx.needs_input_grad[1:3])
        return grad_x, grad_cos, grad_sin


class InplacePartialRotaryMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, cos, sin, mode, start, end):
        needs_cos_sin = ctx.needs_input_grad[1] or ctx.needs_input_grad[2]
        x_slice = x[..., start:end].clone() if needs_cos_sin else None  # x is overwritten below
        _C.inplace_partial_rotary_mul(export(x), export(cos), export(sin), mode, start, end)
        ctx.mark_dirty(x)
        ctx.save_for_backward(x_slice, cos, sin)
        ctx.rotation = (mode, start, end)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        x_slice, cos, sin = ctx.saved_tensors
        mode, start, end = ctx.rotation
        grad_x = None
        if ctx.needs_input_grad[0]:
            grad_x = grad_out.clone(memory_format=torch.contiguous_format)
            _C.inplace_partial_rotary_mul_grad(export(grad_x), export(cos), export(sin), mode, start, end)
        grad_cos, grad_sin = None, None
        if x_slice is not None:
            grad_cos, grad_sin = _cos_sin_grads(grad_out[..., start:end], x_slice, mode, cos, sin,
                                                *ctx.needs_input_grad[1:3])
        return grad_x, grad_cos, grad_sin, None, None, None


def apply_rotary_pos_emb(query, key, cos, sin, layout, mode):
    """In place on query and key, recorded by autograd. torch refuses a Function that modifies views in place and
    returns two tensors; for views the rotation runs out of place and is copied back with copy_ (which torch
    records on views)."""
    if query._base is None and key._base is None:
        return ApplyRotaryPosEmb.apply(query, key, cos, sin, layout, mode, True)
    query_rotated, key_rotated = ApplyRotaryPosEmb.apply(query, key, cos, sin, layout, mode, False)
    return query.copy_(query_rotated), key.copy_(key_rotated)


class ApplyRotaryPosEmb(torch.autograd.Function):
    @staticmethod
    def forward(ctx, query, key, cos, sin, layout, mode, in_place):
        if not in_place:
            query, key = query.clone(), key.clone()
        rotated = cos.shape[-1]
        needs_cos_sin = ctx.needs_input_grad[2] or ctx.needs_input_grad[3]
        # The grad of cos/sin needs the forward's inputs, which the in-place forward overwrites: keep the
        # rotated channels.
        q_in = query[..., :rotated].clone() if needs_cos_sin else None
        k_in = key[..., :rotated].clone() if needs_cos_sin else None
        _C.apply_rotary_pos_emb(export(query), export(key), export(cos), export(sin), layout, mode)
        if in_place:
            ctx.mark_dirty(query, key)
        ctx.save_for_backward(q_in, k_in, cos, sin)
        ctx.settings = (layout, mode)
        return query, key

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_query_out, grad_key_out):
        q_in, k_in, cos, sin = ctx.saved_tensors
        layout, mode = ctx.settings
        rotated = cos.shape[-1]
        # Channels past cos's width (partial rotary) pass through: then start from a copy of the incoming grads
        # and let the grad operator overwrite the rotated channels.
        if rotated == grad_query_out.shape[-1]:
            grad_query = torch.empty(grad_query_out.shape, dtype=grad_query_out.dtype)
            grad_key = torch.empty(grad_key_out.shape, dtype=grad_key_out.dtype)
        else:
            grad_query = grad_query_out.clone(memory_format=torch.contiguous_format)
            grad_key = grad_key_out.clone(memory_format=torch.contiguous_format)
        with_cos_sin = q_in is not None
        grad_cos = torch.empty(cos.shape, dtype=cos.dtype) if with_cos_sin else None
        grad_sin = torch.empty(sin.shape, dtype=sin.dtype) if with_cos_sin else None
        _C.apply_rotary_pos_emb_grad(export(grad_query_out[..., :rotated]), export(grad_key_out[..., :rotated]),
                                     export(cos), export(sin), export(q_in), export(k_in), mode, layout,
                                     export(grad_query[..., :rotated]), export(grad_key[..., :rotated]),
                                     export(grad_cos), export(grad_sin))
        needs = ctx.needs_input_grad
        return (grad_query if needs[0] else None, grad_key if needs[1] else None,
                grad_cos if needs[2] else None, grad_sin if needs[3] else None, None, None, None)
