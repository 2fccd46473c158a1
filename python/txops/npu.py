"""torch_npu's operator names on the CPU: code written for an Ascend NPU runs with ``import txops.npu as torch_npu``.

The functions txops can serve have torch_npu's names, signatures and defaults (torch_npu / op-plugin schemas):

=============================================================================================  =====================
``npu_interleave_rope(x, cos, sin) -> Tensor``                                                  InterleaveRope
``npu_apply_rotary_pos_emb(query, key, cos, sin, layout='BSH', rotary_mode='half')``           ApplyRotaryPosEmbV2
``npu_rotary_mul(input, r1, r2, rotary_mode='half') -> Tensor``                                RotaryPositionEmbedding
``npu_rotary_mul_backward(grad, input, r1, r2, rotary_mode='half') -> (dx, dr1, dr2)``          RotaryPositionEmbeddingGrad
``npu_chunk_gated_delta_rule(query, key, value, *, beta=None, initial_state=None,``            ChunkGatedDeltaRule
``actual_seq_lengths=None, scale=None, g=None) -> (out, final_state)``
``npu_recurrent_gated_delta_rule(query, key, value, state, *, beta=None, scale=None,``         RecurrentGatedDeltaRule
``actual_seq_lengths=None, ssm_state_indices=None, num_accepted_tokens=None, g=None,``
``gk=None) -> Tensor``
=============================================================================================  =====================

They run txops on CPU tensors (the formulas, shapes and limits of docs/rope.md and docs/gated_delta_rule.md,
which are CANN's with wider dtype and size support). Any other ``npu_*`` name (``npu_rms_norm``,
``npu_fusion_attention``, ...) raises :class:`NotImplementedInTxops`, a NotImplementedError
naming the function (also an AttributeError, so ``hasattr(torch_npu, name)`` is False and feature probes fall
back; ``from txops.npu import name`` then reports ImportError).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, Tuple, Union

from . import gdr as _gdr
from . import rope as _rope
from . import rotary as _rotary

if TYPE_CHECKING:
    import torch

Ints = Union[Sequence[int], "torch.Tensor"]


class NotImplementedInTxops(NotImplementedError, AttributeError):
    """A torch_npu function that txops has no operator for."""


def npu_interleave_rope(x: "torch.Tensor", cos: "torch.Tensor", sin: "torch.Tensor") -> "torch.Tensor":
    """``torch_npu.npu_interleave_rope``: DeepSeek-MLA RoPE (de-interleave, then rotate-half) of x.

    Parameters
    ----------
    x : torch.Tensor
        (B, N, S, D), D even; bf16 / fp16 (torch_npu), also fp32 here; strided views are fine.
    cos, sin : torch.Tensor
        (B or 1, 1, S or 1, D), x's dtype (or fp32).

    Returns
    -------
    torch.Tensor
        A new tensor of x's shape and dtype (differentiable in x, cos and sin).

    Examples
    --------
    >>> import torch, txops.npu as torch_npu
    >>> x = torch.arange(4.0).reshape(1, 1, 1, 4)                          # (x0, x1, x2, x3)
    >>> cos, sin = torch.zeros(1, 1, 1, 4), torch.ones(1, 1, 1, 4)
    >>> torch_npu.npu_interleave_rope(x, cos, sin)                         # (-x1, -x3, x0, x2)
    tensor([[[[-1., -3.,  0.,  2.]]]])
    """
    return _rope.interleave_rope(x, cos, sin)


def npu_apply_rotary_pos_emb(query: "torch.Tensor", key: "torch.Tensor", cos: "torch.Tensor", sin: "torch.Tensor",
                             layout: str = "BSH", rotary_mode: str = "half") -> Tuple["torch.Tensor", "torch.Tensor"]:
    """``torch_npu.npu_apply_rotary_pos_emb``: RoPE in place on query and key (aclnnApplyRotaryPosEmbV2).

    Parameters
    ----------
    query, key : torch.Tensor
        4-D in ``layout`` ('BSH' / 'BSND': (B, S, N, D); 'SBH': (S, B, N, D); 'BNSD'; 3-D for 'TND'); key may
        have fewer heads. Rotated in place.
    cos, sin : torch.Tensor
        query's layout with N = 1; the last dim may be smaller than D (partial rotary: the rest passes).
    layout : str, default 'BSH'
    rotary_mode : {'half', 'interleave', 'quarter'}, default 'half'

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        query and key themselves (differentiable through txops' registered autograd).

    Examples
    --------
    >>> import torch, txops.npu as torch_npu
    >>> q, k = torch.ones(1, 2, 4, 8), torch.ones(1, 2, 2, 8)
    >>> cos, sin = torch.ones(1, 2, 1, 8), torch.zeros(1, 2, 1, 8)
    >>> q_out, k_out = torch_npu.npu_apply_rotary_pos_emb(q, k, cos, sin)
    >>> q_out is q, float(q.sum())
    (True, 64.0)
    """
    return _rope.apply_rotary_pos_emb(query, key, cos, sin, layout=layout, rotary_mode=rotary_mode)


def npu_rotary_mul(input: "torch.Tensor", r1: "torch.Tensor", r2: "torch.Tensor",
                   rotary_mode: str = "half") -> "torch.Tensor":
    """``torch_npu.npu_rotary_mul``: ``input * r1 + rot(input) * r2`` (aclnnRotaryPositionEmbedding).

    Parameters
    ----------
    input : torch.Tensor
        Rank 3 or 4, last dim D even.
    r1, r2 : torch.Tensor
        cos and sin, broadcastable to input (each dim 1 or input's, last dim D).
    rotary_mode : {'half', 'interleave', 'quarter', 'interleave-half'}, default 'half'

    Returns
    -------
    torch.Tensor
        A new tensor of input's shape and dtype (differentiable in input, r1 and r2).

    Examples
    --------
    >>> import torch, txops.npu as torch_npu
    >>> x = torch.arange(4.0).reshape(1, 1, 1, 4)
    >>> torch_npu.npu_rotary_mul(x, torch.zeros(1, 1, 1, 4), torch.ones(1, 1, 1, 4))
    tensor([[[[-2., -3.,  0.,  1.]]]])
    """
    return _rotary.rotary_position_embedding(input, r1, r2, rotary_mode=rotary_mode)


def npu_rotary_mul_backward(grad: "torch.Tensor", input: "torch.Tensor", r1: "torch.Tensor", r2: "torch.Tensor",
                            rotary_mode: str = "half") -> Tuple["torch.Tensor", "torch.Tensor", "torch.Tensor"]:
    """``torch_npu.npu_rotary_mul_backward``: (d input, d r1, d r2) of :func:`npu_rotary_mul`
    (aclnnRotaryPositionEmbeddingGrad); d r1 and d r2 are summed over r1's broadcast dims.

    Examples
    --------
    >>> import torch, txops.npu as torch_npu
    >>> x = torch.ones(1, 2, 1, 4)
    >>> dx, dr1, dr2 = torch_npu.npu_rotary_mul_backward(x, x, torch.ones(1, 1, 1, 4), torch.zeros(1, 1, 1, 4))
    >>> dr1
    tensor([[[[2., 2., 2., 2.]]]])
    """
    return _rotary.rotary_position_embedding_grad(grad, r1, r2, input, rotary_mode=rotary_mode)


def _ones_beta(value):
    import torch
    return torch.ones(value.shape[0], value.shape[1], dtype=value.dtype, device=value.device)


def npu_chunk_gated_delta_rule(query: "torch.Tensor", key: "torch.Tensor", value: "torch.Tensor", *,
                               beta: Optional["torch.Tensor"] = None, initial_state: Optional["torch.Tensor"] = None,
                               actual_seq_lengths: Optional[Ints] = None, scale: Optional[float] = None,
                               g: Optional["torch.Tensor"] = None) -> Tuple["torch.Tensor", "torch.Tensor"]:
    """``torch_npu.npu_chunk_gated_delta_rule``: Gated DeltaNet prefill (aclnnChunkGatedDeltaRule), TND layout.

    Parameters
    ----------
    query, key : torch.Tensor
        (T, Nk, Dk), the sequences concatenated.
    value : torch.Tensor
        (T, Nv, Dv).
    beta : torch.Tensor, optional
        (T, Nv); None means 1 (txops' reading of the optional argument).
    initial_state : torch.Tensor, optional
        (B, Nv, Dv, Dk) fp32 / bf16; None means zeros.
    actual_seq_lengths : sequence of int or int tensor, optional
        The B sequence lengths; None means one sequence.
    scale : float, optional
        Default ``Dk ** -0.5``.
    g : torch.Tensor, optional
        (T, Nv) fp32 log decays.

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        out (T, Nv, Dv), final_state (B, Nv, Dv, Dk).

    Examples
    --------
    >>> import torch, txops.npu as torch_npu
    >>> q = k = torch.nn.functional.normalize(torch.ones(6, 1, 8), dim=-1)
    >>> v, beta = torch.ones(6, 2, 8), torch.full((6, 2), 0.5)
    >>> out, state = torch_npu.npu_chunk_gated_delta_rule(q, k, v, beta=beta, actual_seq_lengths=[4, 2])
    >>> out.shape, state.shape
    (torch.Size([6, 2, 8]), torch.Size([2, 2, 8, 8]))
    """
    beta = _ones_beta(value) if beta is None else beta
    return _gdr.chunk_gated_delta_rule(query, key, value, beta, initial_state, actual_seq_lengths, g=g, scale=scale)


def npu_recurrent_gated_delta_rule(query: "torch.Tensor", key: "torch.Tensor", value: "torch.Tensor",
                                   state: "torch.Tensor", *, beta: Optional["torch.Tensor"] = None,
                                   scale: Optional[float] = None, actual_seq_lengths: Optional[Ints] = None,
                                   ssm_state_indices: Optional[Ints] = None,
                                   num_accepted_tokens: Optional[Ints] = None, g: Optional["torch.Tensor"] = None,
                                   gk: Optional["torch.Tensor"] = None) -> "torch.Tensor":
    """``torch_npu.npu_recurrent_gated_delta_rule``: Gated DeltaNet decode on a state pool updated in place
    (aclnnRecurrentGatedDeltaRule).

    Parameters
    ----------
    query, key : torch.Tensor
        (T, Nk, Dk).
    value : torch.Tensor
        (T, Nv, Dv).
    state : torch.Tensor
        (BlockNum, Nv, Dv, Dk) fp32 / bf16, written in place.
    beta : torch.Tensor, optional
        (T, Nv); None means 1.
    scale : float, optional
        Default ``Dk ** -0.5``.
    actual_seq_lengths : sequence of int or int tensor, optional
        Tokens per sequence; None means one token per sequence (T sequences).
    ssm_state_indices : sequence of int or int tensor, optional
        (T,) the slot each token's state is written to; None means token t uses slot t.
    num_accepted_tokens : sequence of int or int tensor, optional
        (B,) speculative decoding: accepted tokens per sequence.
    g, gk : torch.Tensor, optional
        (T, Nv) and (T, Nv, Dk) fp32 log decays.

    Returns
    -------
    torch.Tensor
        out (T, Nv, Dv).

    Examples
    --------
    >>> import torch, txops.npu as torch_npu
    >>> q = k = torch.nn.functional.normalize(torch.ones(2, 1, 8), dim=-1)
    >>> v, pool = torch.ones(2, 2, 8), torch.zeros(4, 2, 8, 8)
    >>> out = torch_npu.npu_recurrent_gated_delta_rule(q, k, v, pool, ssm_state_indices=[3, 1])
    >>> out.shape, bool(pool[3].any()), bool(pool[0].any())
    (torch.Size([2, 2, 8]), True, False)
    """
    import torch
    tokens = value.shape[0]
    beta = _ones_beta(value) if beta is None else beta
    if actual_seq_lengths is None:
        actual_seq_lengths = torch.ones(tokens, dtype=torch.int32)
    if ssm_state_indices is None:
        ssm_state_indices = torch.arange(tokens, dtype=torch.int32)
    return _gdr.recurrent_gated_delta_rule(query, key, value, beta, state, actual_seq_lengths, ssm_state_indices,
                                           g=g, gk=gk, num_accepted_tokens=num_accepted_tokens, scale=scale)


SERVED = ("npu_interleave_rope", "npu_apply_rotary_pos_emb", "npu_rotary_mul", "npu_rotary_mul_backward",
          "npu_chunk_gated_delta_rule", "npu_recurrent_gated_delta_rule")

#: torch_npu functions whose operator txops lacks, with what txops has that is closest (for the error message).
_NEAREST = {
    "npu_rotary_position_embedding": "npu_rotary_mul (the same operator; rotary_mode as a string)",
}


def __getattr__(name: str):
    if name.startswith("npu_"):
        nearest = _NEAREST.get(name)
        hint = f"; nearest txops operator: {nearest}" if nearest else ""
        raise NotImplementedInTxops(f"torch_npu.{name} is not implemented by txops.npu (txops has no such operator; "
                                    f"it serves {', '.join(SERVED)}{hint})")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(SERVED) + ["NotImplementedInTxops"]
