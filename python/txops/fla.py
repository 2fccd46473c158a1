"""flash-linear-attention's gated-delta-rule API on txops: code written against ``fla.ops.gated_delta_rule`` runs on
the CPU with ``from txops.fla import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule``.

The functions take fla's argument names, defaults and layouts (fla-core 0.5.2):

* q, k ``[B, T, H, K]``; v ``[B, T, HV, V]`` with ``HV`` a multiple of ``H`` (value head i reads key head
  ``i // (HV // H)``, as fla's kernels and ``repeat_interleave`` do); g, beta ``[B, T, HV]``; g in log space
  (fp32 is used whatever g's dtype);
* states ``[N, HV, K, V]`` (``state_v_first=True``: ``[N, HV, V, K]``), N = B, or the number of sequences of
  ``cu_seqlens`` (varlen, B = 1: the ``N + 1`` cumulative offsets, as flash-attention's); the final state is
  fp32 as fla's, the output in q's dtype;
* returns ``(o, final_state)``, final_state None unless ``output_final_state``.

txops stores states V-first, ``(N, HV, V, K)``: a ``[N, HV, K, V]`` state is passed to the operator as its
transposed view, and the final state is written through one, so neither is copied. The fused in-kernel options
(``use_qk_l2norm_in_kernel``, ``use_beta_sigmoid_in_kernel`` / ``allow_neg_eigval``, ``use_gate_in_kernel`` with
``A_log`` / ``dt_bias``) are done in torch before the operator, with fla's formulas (l2norm: ``x / sqrt(sum x^2 +
1e-6)`` in fp32, back to x's dtype). Not provided (NotImplementedError): context parallelism (``cp_context``),
fused_recurrent's ``gv`` and per-channel beta ``[B, T, HV, V]``. Both functions are differentiable (autograd
through txops' prefill operator and its backward, ``txops.chunk_gated_delta_rule_grad``, and through the torch
code around it), except fused_recurrent with ``gk``: txops' decode operator has no backward, and such a call
that autograd would have to record raises RuntimeError.

fla's own backend registry (``fla.ops.backends``, fla-core >= 0.5) dispatches ``fla.ops.gated_delta_rule.
chunk_gated_delta_rule`` to the first registered backend whose verifier accepts the call;
:func:`register_fla_backend` adds txops there, for CPU tensors, so that fla's function itself runs txops.
(fla's ``fused_recurrent_gated_delta_rule`` is not dispatched through the registry; call this module's.)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Tuple

from . import gdr as _gdr

if TYPE_CHECKING:
    import torch

_CHUNK_SIZES = (16, 32, 64)
_DTYPES = ("float32", "float16", "bfloat16")


def _torch():
    import torch
    return torch


def _l2norm(x):
    """fla's l2norm_fwd: x / sqrt(sum(x^2) + 1e-6) along the last dim, in fp32, back to x's dtype."""
    torch = _torch()
    xf = x.float()
    return (xf * torch.rsqrt((xf * xf).sum(-1, keepdim=True) + 1e-6)).to(x.dtype)


def _grad_needed(*tensors):
    torch = _torch()
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _state_v_first(state_v_first, kwargs):
    if "transpose_state_layout" in kwargs:  # fla's deprecated name of state_v_first
        if state_v_first:
            raise ValueError("Cannot pass both `state_v_first` and the deprecated `transpose_state_layout`.")
        state_v_first = bool(kwargs.pop("transpose_state_layout"))
    if "head_first" in kwargs:
        raise DeprecationWarning("head_first has been removed. Inputs must be in `[B, T, H, ...]` format.")
    return state_v_first


def _lengths(batch, tokens, cu_seqlens, cu_seqlens_cpu, q):
    """The sequence lengths (int32 torch tensor) and N."""
    torch = _torch()
    if cu_seqlens is None:
        return torch.full((batch,), tokens, dtype=torch.int32), batch
    if batch != 1:
        raise ValueError(f"The batch size is expected to be 1 rather than {batch} when using `cu_seqlens`."
                         f"Please flatten variable-length inputs before processing.")
    offsets = cu_seqlens_cpu if cu_seqlens_cpu is not None else cu_seqlens
    offsets = torch.as_tensor(offsets).to(device="cpu", dtype=torch.int64)
    if offsets.dim() != 1 or offsets.numel() < 2:
        raise ValueError(f"cu_seqlens must be 1-D with N + 1 >= 2 offsets, got shape {tuple(offsets.shape)}")
    if int(offsets[0]) != 0 or int(offsets[-1]) != tokens:
        raise ValueError(f"cu_seqlens must start at 0 and end at T = {tokens}, got {offsets.tolist()}")
    lengths = offsets[1:] - offsets[:-1]
    return lengths.to(torch.int32), lengths.numel()


def _inputs(name, q, k, v, g, beta, scale, initial_state, cu_seqlens, cu_seqlens_cpu, state_v_first,
            use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel, allow_neg_eigval, use_gate_in_kernel, A_log,
            dt_bias, gk=None):
    """fla's arguments -> what txops' operators take: token-major (B*T, heads, dim) views, fp32 g, the
    lengths, txops-layout (V-first) views of the initial state and of a new fp32 final state."""
    torch = _torch()
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(f"q, k, v must be [B, T, H, K] / [B, T, HV, V], got ranks {q.dim()}, {k.dim()}, {v.dim()}")
    if q.shape[2] != k.shape[2]:
        raise ValueError(f"q and k must have the same number of heads, "
                         f"but got q.shape[2]={q.shape[2]} and k.shape[2]={k.shape[2]}")
    batch, tokens, heads, key_dim = k.shape
    value_heads, value_dim = v.shape[2], v.shape[3]
    if value_heads % heads != 0:
        raise ValueError(f"For GVA, num_v_heads (HV={value_heads}) must be evenly divisible by "
                         f"num_heads (H={heads}), but got HV % H = {value_heads % heads}")
    if allow_neg_eigval and not use_beta_sigmoid_in_kernel:
        raise ValueError("`allow_neg_eigval=True` requires `use_beta_sigmoid_in_kernel=True`.")
    if gk is not None and _grad_needed(q, k, v, g, beta, initial_state, A_log, dt_bias, gk):
        raise RuntimeError(f"txops.fla.{name}: an input requires grad, but txops' decode operator (the gk path) has "
                           "no backward: call it under torch.no_grad() or pass detached tensors")
    lengths, sequences = _lengths(batch, tokens, cu_seqlens, cu_seqlens_cpu, q)
    if initial_state is not None and initial_state.shape[0] != sequences:
        raise ValueError(f"The number of initial states is expected to be equal to the number of input sequences, "
                         f"i.e., {sequences} rather than {initial_state.shape[0]}.")
    if use_qk_l2norm_in_kernel:
        q, k = _l2norm(q), _l2norm(k)
    dtype = q.dtype
    if beta is None:
        beta = torch.ones(batch, tokens, value_heads, dtype=dtype, device=q.device)
    if use_beta_sigmoid_in_kernel:
        beta = beta.float().sigmoid() * (2.0 if allow_neg_eigval else 1.0)
    if g is not None:
        g = g.float()
        if use_gate_in_kernel:
            if A_log is None:
                raise ValueError("`A_log` must be provided when `use_gate_in_kernel=True`.")
            g = -A_log.float().exp() * torch.nn.functional.softplus(g + (0.0 if dt_bias is None else dt_bias.float()))
    rows = batch * tokens
    q, k = q.reshape(rows, heads, key_dim), k.to(dtype).reshape(rows, heads, key_dim)
    v = v.to(dtype).reshape(rows, value_heads, value_dim)
    beta = beta.to(dtype).reshape(rows, value_heads)
    g = None if g is None else g.reshape(rows, value_heads)
    final_shape = (sequences, value_heads, value_dim, key_dim) if state_v_first else \
        (sequences, value_heads, key_dim, value_dim)
    final = torch.empty(final_shape, dtype=torch.float32, device=q.device)
    if initial_state is None:
        start = torch.zeros((1, 1, 1, 1), dtype=torch.float32, device=q.device).expand(
            sequences, value_heads, value_dim, key_dim)  # a broadcast zero state: nothing allocated per sequence
    else:
        start = initial_state if initial_state.dtype == torch.float32 else initial_state.float()
        start = start if state_v_first else start.transpose(-1, -2)
    final_view = final if state_v_first else final.transpose(-1, -2)
    scale = key_dim ** -0.5 if scale is None else float(scale)
    out = torch.empty((batch, tokens, value_heads, value_dim), dtype=dtype, device=q.device)
    return q, k, v, g, beta, lengths, start, final, final_view, scale, out


def _prefill(q2, k2, v2, beta2, start, lengths, g2, scale, out, final, final_view, state_v_first):
    """txops' prefill operator into out / final (through their views) or, when autograd records the call, its
    functional form (so the graph runs through the operator's backward) -> (out, final)."""
    out_rows = out.view(q2.shape[0], v2.shape[1], v2.shape[2])
    if not _grad_needed(q2, k2, v2, beta2, start, g2):
        _gdr.chunk_gated_delta_rule(q2, k2, v2, beta2, start, lengths, g=g2, scale=scale, out=out_rows,
                                    final_state=final_view)
        return out, final
    rows, state = _gdr.chunk_gated_delta_rule(q2, k2, v2, beta2, start, lengths, g=g2, scale=scale)
    state = state if state_v_first else state.transpose(-1, -2).contiguous()
    return rows.view(out.shape), state


def chunk_gated_delta_rule(q: "torch.Tensor", k: "torch.Tensor", v: "torch.Tensor", g: "torch.Tensor",
                           beta: "torch.Tensor", scale: Optional[float] = None,
                           initial_state: Optional["torch.Tensor"] = None, output_final_state: bool = False,
                           use_qk_l2norm_in_kernel: bool = False, use_beta_sigmoid_in_kernel: bool = False,
                           allow_neg_eigval: bool = False, state_v_first: bool = False,
                           cu_seqlens: Optional["torch.Tensor"] = None,
                           cu_seqlens_cpu: Optional["torch.Tensor"] = None, cp_context=None,
                           **kwargs) -> Tuple["torch.Tensor", Optional["torch.Tensor"]]:
    """Gated DeltaNet prefill with fla's ``chunk_gated_delta_rule`` API, run by txops' prefill operator.

    Parameters
    ----------
    q, k : torch.Tensor
        ``[B, T, H, K]``, fp32 / fp16 / bf16 (fla expects them L2-normalised, or ``use_qk_l2norm_in_kernel``).
    v : torch.Tensor
        ``[B, T, HV, V]``, HV a multiple of H; K, V at most 256.
    g : torch.Tensor
        ``[B, T, HV]`` log decays (with ``use_gate_in_kernel``: the raw gate, see fla).
    beta : torch.Tensor
        ``[B, T, HV]`` (with ``use_beta_sigmoid_in_kernel``: logits).
    scale : float, optional
        Default ``K ** -0.5``.
    initial_state : torch.Tensor, optional
        ``[N, HV, K, V]`` (``[N, HV, V, K]`` with ``state_v_first``), fp32 or bf16.
    output_final_state : bool
        Return the final state (else None).
    use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel, allow_neg_eigval, state_v_first : bool
        As fla's.
    cu_seqlens, cu_seqlens_cpu : torch.Tensor, optional
        ``[N + 1]`` offsets of the sequences in T (B must be 1).
    **kwargs
        ``use_gate_in_kernel``, ``A_log``, ``dt_bias``, ``chunk_size`` (16, 32 or 64: checked, the result is
        the same), ``transpose_state_layout`` (deprecated name of ``state_v_first``).

    Returns
    -------
    (torch.Tensor, torch.Tensor or None)
        o ``[B, T, HV, V]`` in q's dtype, and the fp32 final state or None.

    Examples
    --------
    >>> import torch, txops.fla
    >>> B, T, H, HV, K, V = 1, 10, 1, 2, 8, 8
    >>> q = k = torch.nn.functional.normalize(torch.ones(B, T, H, K), dim=-1)
    >>> v, g, beta = torch.ones(B, T, HV, V), -torch.ones(B, T, HV) * 0.1, torch.full((B, T, HV), 0.5)
    >>> o, state = txops.fla.chunk_gated_delta_rule(q, k, v, g, beta, output_final_state=True,
    ...                                             cu_seqlens=torch.tensor([0, 4, 10]))
    >>> o.shape, state.shape
    (torch.Size([1, 10, 2, 8]), torch.Size([2, 2, 8, 8]))
    """
    state_v_first = _state_v_first(state_v_first, kwargs)
    if cp_context is not None:
        raise NotImplementedError("txops.fla.chunk_gated_delta_rule: context parallelism (cp_context) is not "
                                  "supported")
    chunk_size = kwargs.pop("chunk_size", 64)
    if chunk_size not in _CHUNK_SIZES:
        raise ValueError(f"`chunk_size` must be 16, 32, or 64 for Gated Delta Rule, got {chunk_size}.")
    if g is None:
        raise ValueError("txops.fla.chunk_gated_delta_rule: g is required (log decays [B, T, HV])")
    q2, k2, v2, g2, beta2, lengths, start, final, final_view, scale, out = _inputs(
        "chunk_gated_delta_rule", q, k, v, g, beta, scale, initial_state, cu_seqlens, cu_seqlens_cpu, state_v_first,
        use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel, allow_neg_eigval, kwargs.get("use_gate_in_kernel", False),
        kwargs.get("A_log"), kwargs.get("dt_bias"))
    out, final = _prefill(q2, k2, v2, beta2, start, lengths, g2, scale, out, final, final_view, state_v_first)
    return out, (final if output_final_state else None)


def fused_recurrent_gated_delta_rule(q: "torch.Tensor", k: "torch.Tensor", v: "torch.Tensor",
                                     g: Optional["torch.Tensor"] = None, gk: Optional["torch.Tensor"] = None,
                                     gv: Optional["torch.Tensor"] = None, beta: Optional["torch.Tensor"] = None,
                                     scale: Optional[float] = None, initial_state: Optional["torch.Tensor"] = None,
                                     output_final_state: bool = False, use_qk_l2norm_in_kernel: bool = False,
                                     use_gate_in_kernel: bool = False, A_log: Optional["torch.Tensor"] = None,
                                     dt_bias: Optional["torch.Tensor"] = None,
                                     use_beta_sigmoid_in_kernel: bool = False, allow_neg_eigval: bool = False,
                                     state_v_first: bool = False, cu_seqlens: Optional["torch.Tensor"] = None,
                                     **kwargs) -> Tuple["torch.Tensor", Optional["torch.Tensor"]]:
    """The gated delta rule token by token with fla's ``fused_recurrent_gated_delta_rule`` API (decode).

    Arguments as :func:`chunk_gated_delta_rule`, plus ``gk`` ``[B, T, HV, K]`` per-key-channel log decays
    (txops' decode operator); g and beta are optional (no decay; beta 1). The state stays in fp32 through each
    sequence and is stored once, as fla's kernel does: without gk the call runs txops' prefill operator (which
    picks its recurrent kernel for short sequences), with gk the decode operator on a copy of the state.
    ``initial_state`` is never modified.

    Examples
    --------
    >>> import torch, txops.fla
    >>> q = k = torch.nn.functional.normalize(torch.ones(2, 1, 1, 8), dim=-1)   # batch 2, one token each
    >>> v, g, beta = torch.ones(2, 1, 2, 8), -torch.ones(2, 1, 2) * 0.1, torch.full((2, 1, 2), 0.5)
    >>> o, state = txops.fla.fused_recurrent_gated_delta_rule(q, k, v, g, beta=beta, output_final_state=True)
    >>> o.shape, state.shape
    (torch.Size([2, 1, 2, 8]), torch.Size([2, 2, 8, 8]))
    """
    torch = _torch()
    state_v_first = _state_v_first(state_v_first, kwargs)
    if gv is not None:
        raise NotImplementedError("txops.fla.fused_recurrent_gated_delta_rule: gv (per-value-channel decay) has no "
                                  "txops operator")
    if beta is not None and beta.dim() == v.dim():
        raise NotImplementedError("txops.fla.fused_recurrent_gated_delta_rule: per-channel beta [B, T, HV, V] has no "
                                  "txops operator (beta must be [B, T, HV])")
    if use_gate_in_kernel and g is None:
        raise ValueError("`g` (raw pre-activation) must be provided when `use_gate_in_kernel=True`.")
    q2, k2, v2, g2, beta2, lengths, start, final, final_view, scale, out = _inputs(
        "fused_recurrent_gated_delta_rule", q, k, v, g, beta, scale, initial_state, cu_seqlens, None, state_v_first,
        use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel, allow_neg_eigval, use_gate_in_kernel, A_log, dt_bias,
        gk)
    if gk is None:
        out, final = _prefill(q2, k2, v2, beta2, start, lengths, g2, scale, out, final, final_view, state_v_first)
    else:
        out_rows = out.view(q2.shape[0], v2.shape[1], v2.shape[2])
        final_view.copy_(start)  # the pool the decode operator updates: slot n is sequence n's state
        slots = torch.repeat_interleave(torch.arange(lengths.numel(), dtype=torch.int32), lengths.long())
        _gdr.recurrent_gated_delta_rule(q2, k2, v2, beta2, final_view, lengths, slots, g=g2,
                                        gk=gk.float().reshape(q2.shape[0], v2.shape[1], k2.shape[2]), scale=scale,
                                        out=out_rows)
    return out, (final if output_final_state else None)


chunk_gdn = chunk_gated_delta_rule
fused_recurrent_gdn = fused_recurrent_gated_delta_rule


# ---- fla's backend registry -------------------------------------------------------------------------------------

def supports(*tensors) -> Tuple[bool, Optional[str]]:
    """(True, None) when txops can run a call on these tensors (CPU, fp32/fp16/bf16), else (False, why). Calls
    that autograd records are accepted: the prefill operator has a backward."""
    for t in tensors:
        if t is None:
            continue
        if t.device.type != "cpu":
            return False, f"txops runs CPU tensors, got a {t.device.type} tensor"
        if t.is_floating_point() and str(t.dtype).rsplit(".", 1)[-1] not in _DTYPES:
            return False, f"txops takes fp32 / fp16 / bf16, got {t.dtype}"
    return True, None


_backend = None


def register_fla_backend() -> bool:
    """Registers txops in flash-linear-attention's backend registry for the gated delta rule, so that
    ``fla.ops.gated_delta_rule.chunk_gated_delta_rule`` runs txops on CPU tensors (its verifier accepts CPU
    fp32/fp16/bf16 calls, autograd included, K and V at most 256, no context parallelism; other calls go on to
    fla's other backends and its Triton kernels). Idempotent. Set ``FLA_TXOPS=0`` to disable it at run time.

    Returns
    -------
    bool
        True when registered; False when ``fla.ops`` cannot be imported (fla missing, or its Triton dependency,
        which fla's ops need even to import) or this fla has no backend registry.
    """
    global _backend
    if _backend is not None:
        return True
    try:
        from fla.ops.backends import BackendRegistry, BaseBackend
    except Exception:  # ImportError, or fla's import-time device probing failing without triton
        return False
    BackendRegistry.ensure_initialized("gated_delta_rule")  # creates fla's registry (else it would replace ours)
    registry = BackendRegistry._registries.get("gated_delta_rule")
    if registry is None:
        from fla.ops.gated_delta_rule.backends import gdr_registry as registry

    class TxopsBackend(BaseBackend):
        """txops' CPU kernels for fla's chunk_gated_delta_rule."""
        backend_type = "txops"
        package_name = "txops"
        env_var = "FLA_TXOPS"
        default_enable = True
        priority = 1

        def chunk_gated_delta_rule_verifier(self, q, k, v, g, beta, scale=None, initial_state=None,
                                            output_final_state=False, use_qk_l2norm_in_kernel=False,
                                            use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
                                            state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None,
                                            cp_context=None, **kwargs):
            if cp_context is not None:
                return False, "txops does not support context parallelism"
            if q.shape[-1] > 256 or v.shape[-1] > 256:
                return False, f"txops' prefill takes K, V <= 256, got {q.shape[-1]}, {v.shape[-1]}"
            return supports(q, k, v, g, beta, initial_state, kwargs.get("A_log"), kwargs.get("dt_bias"))

        def chunk_gated_delta_rule(self, *args, **kwargs):
            return chunk_gated_delta_rule(*args, **kwargs)

    registry.register(TxopsBackend())
    _backend = TxopsBackend
    return True


__all__ = ["chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule", "chunk_gdn", "fused_recurrent_gdn",
           "register_fla_backend", "supports"]
