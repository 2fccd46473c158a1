"""Context parallelism for the gated delta rule's prefill (Gated DeltaNet) on torch.distributed.

What: one long sequence is cut into P contiguous pieces, one per rank of a process group; each rank runs
:func:`txops.chunk_gated_delta_rule` on its own tokens, starting from the recurrent state that the rank before
it hands over (``send`` / ``recv``), and returns its piece of the output; the last rank ends with the sequence's
final state. Why: a rank holds only its T/P tokens of activations, and the result is **bit for bit** what one
process gives on the whole sequence (tested with ``torch.equal``), so prefill can be spread over machines
without changing a single output bit.

Exactness. The state is a prefix scan: rank r needs the state after the last token of rank r-1, which is known
only once every earlier piece is done. Three facts make the relay exact:

* txops computes a sequence chunk by chunk (64 tokens, from the sequence's first token) and keeps the state in
  fp32 for the whole sequence; so pieces whose lengths are multiples of 64 (all but the last) cut the sequence
  at chunk boundaries, and a piece's fp32 final state *is* the fp32 state one process holds there;
* between ranks the state always travels in fp32 (a bf16 initial state is widened exactly on rank 0; a bf16
  final state is rounded once, on the last rank, as txops rounds it);
* every piece runs the kernel one process would run on the whole sequence: txops picks its kernel from the
  shape (chunked when the sequence has at least 64 tokens, on AVX2 / AVX-512), and the two kernels give
  different bits, so a last piece shorter than 64 tokens is run with ``kernel="chunked"`` (unless the caller
  set ``TXOPS_GDR_KERNEL`` or the CPU runs the scalar target, where both sides take the recurrent kernel).

Cost. With one sequence the pieces run one after another (rank r waits for rank r-1), so the relay takes the
one-process compute time plus P-1 state transfers of ``Nv*Dv*Dk*4`` bytes: no speedup, only T/P tokens of
activations per rank. The chunked kernel's state-independent phase one (packing, the grams ``K Kᵀ``,
``Q Kᵀ`` and their masks, about a quarter of its time by the kernel README's profile) could in principle run
before the state arrives, but it is internal to the kernel; computing a piece from the zero state and
correcting it afterwards would need the kernel's intermediate ``T(β e^G K)`` and would not be bit-identical in
floating point, so it is not offered: the default is the exact sequential relay. The recurrence is independent
per value head, though, so ``head_groups=G`` splits the Nv value heads into G groups and relays them group by
group: rank r works on group j while rank r+1 works on group j-1 (a pipeline of G + P - 1 steps of
``t(T/P)/G``), with the same bits. Measured on 2 cores, 2 processes, T=4096, Nv=32, Dk=Dv=128: the plain
relay takes what one process takes (plus ~1 ms per 2 MiB state transfer), ``head_groups=8`` 0.56-0.72x of one
process (ideal 0.56x); docs/context_parallel.md has the figures and the command.

Forward only (inference prefill): inputs that require grad under grad mode are refused.
"""
from __future__ import annotations

import os
from typing import List, Optional, Sequence, Tuple

import torch
import torch.distributed as dist

from . import _settings
from .gdr import chunk_gated_delta_rule

__all__ = ["context_parallel_chunk_gated_delta_rule", "PIECE_MULTIPLE"]

#: Every rank's piece but the last must hold a positive multiple of this many tokens (the kernels' chunk).
PIECE_MULTIPLE = 64

_DTYPES = {torch.float32: 1, torch.bfloat16: 2, torch.float16: 3}
_DTYPE_OF = {code: dtype for dtype, code in _DTYPES.items()}
_META = 12  # entries of one rank's description (see _describe)


def _describe(query, key, value, beta, initial_state, g, scale, head_groups, broadcast) -> Tuple[List[float], str]:
    """The numbers every rank must agree on, and a local error message ('' if none). Never raises, so that a
    bad input on one rank becomes a ValueError on every rank instead of a hang in the relay."""
    problem = ""
    meta = [-1.0] * _META
    try:
        if not all(isinstance(t, torch.Tensor) for t in (query, key, value, beta)):
            raise ValueError("query, key, value and beta must be torch tensors")
        if query.dim() != 3 or key.dim() != 3 or value.dim() != 3 or beta.dim() != 2:
            raise ValueError("query, key (T, Nk, Dk), value (T, Nv, Dv) and beta (T, Nv) expected, got "
                             f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}, {tuple(beta.shape)}")
        tokens, key_heads, key_dim = key.shape
        value_heads = value.shape[1]
        if (tuple(query.shape) != tuple(key.shape) or value.shape[0] != tokens or
                tuple(beta.shape) != (tokens, value_heads) or
                (g is not None and tuple(g.shape) != (tokens, value_heads))):
            raise ValueError("query, key (T, Nk, Dk), value (T, Nv, Dv), beta and g (T, Nv) must agree, got "
                             f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}, "
                             f"{tuple(beta.shape)}, {None if g is None else tuple(g.shape)}")
        if key_heads < 1 or value_heads % key_heads != 0:
            raise ValueError(f"Nv must be a multiple of Nk, got Nk = {key_heads}, Nv = {value_heads}")
        if any(t.dtype != query.dtype for t in (key, value, beta)) or (g is not None and g.dtype != torch.float32):
            raise ValueError("key, value and beta must have query's dtype and g must be fp32")
        if tokens < 1:
            raise ValueError(f"every rank's piece needs at least one token, got {tokens}")
        if query.device.type != "cpu":
            raise ValueError(f"txops runs on CPU tensors, got {query.device}")
        if torch.is_grad_enabled() and any(t is not None and t.requires_grad
                                           for t in (query, key, value, beta, initial_state, g)):
            raise ValueError("context_parallel_chunk_gated_delta_rule is forward-only: call it under "
                             "torch.no_grad() or with tensors that do not require grad")
        state_code = 0
        if initial_state is not None:
            if initial_state.dtype not in (torch.float32, torch.bfloat16):
                raise ValueError(f"initial_state must be fp32 or bf16, got {initial_state.dtype}")
            if tuple(initial_state.shape) != (1, value_heads, value.shape[2], key_dim):
                raise ValueError(f"initial_state must be (1, Nv, Dv, Dk) = {(1, value_heads, value.shape[2], key_dim)}"
                                 f", got {tuple(initial_state.shape)}")
            state_code = _DTYPES[initial_state.dtype]
        if query.dtype not in _DTYPES:
            raise ValueError(f"query must be bf16, fp16 or fp32, got {query.dtype}")
        scale_value = key_dim ** -0.5 if scale is None else float(scale)
        meta = [float(tokens), float(key_heads), float(value_heads), float(key_dim),
                float(value.shape[2]), float(_DTYPES[query.dtype]), float(g is not None), float(state_code),
                scale_value, float(head_groups), float(bool(broadcast)), 0.0]
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        problem = str(exc)
        meta[-1] = 1.0
    return meta, problem


def _check(table: torch.Tensor, rank: int, problem: str) -> None:
    """Every rank runs this on the same gathered table and so raises the same ValueError (or none)."""
    world = table.shape[0]
    bad = [r for r in range(world) if table[r, -1] != 0]
    if bad:
        if rank in bad:
            raise ValueError(f"rank {rank}: {problem}")
        raise ValueError(f"context parallel prefill: invalid inputs on rank(s) {bad} (their errors say why)")
    names = ("Nk", "Nv", "Dk", "Dv", "the activations' dtype", "g given or not", None, "scale", "head_groups",
             "broadcast_final_state")
    for column, name in enumerate(names, start=1):
        if name is not None and not bool((table[:, column] == table[0, column]).all()):
            raise ValueError(f"every rank must pass the same {name}, got {table[:, column].tolist()}")
    if any(table[r, 7] != 0 for r in range(1, world)):
        raise ValueError("only rank 0 holds the initial state: pass initial_state=None on the other ranks")
    lengths = [int(x) for x in table[:, 0].tolist()]
    for r in range(world - 1):
        if lengths[r] % PIECE_MULTIPLE != 0:
            raise ValueError(f"every rank's piece but the last must be a multiple of {PIECE_MULTIPLE} tokens "
                             f"(the chunk size), so that pieces meet at chunk boundaries; rank {r} has "
                             f"{lengths[r]} (pieces {lengths})")
    value_heads, key_heads = int(table[0, 2]), int(table[0, 1])
    groups = int(table[0, 9])
    ratio = value_heads // key_heads
    if groups < 1 or value_heads % groups != 0:
        raise ValueError(f"head_groups must divide Nv = {value_heads}, got {groups}")
    size = value_heads // groups
    if size % ratio != 0 and ratio % size != 0:
        raise ValueError(f"a head group of {size} value heads must cover whole key heads or lie within one "
                         f"(Nv / Nk = {ratio} value heads per key head), got head_groups = {groups}")


def _global(group, rank: int) -> int:
    return rank if group is None else dist.get_global_rank(group, rank)


def _force_chunked(lengths: Sequence[int], rank: int) -> bool:
    """Whether this rank's call must be told to take the chunked kernel to match one process on the whole
    sequence: plan.cpp's rule (choose_chunked) takes it, off the scalar target and unless TXOPS_GDR_KERNEL says
    otherwise, when the sequence has >= 64 tokens; a piece of fewer tokens would take the recurrent kernel."""
    if len(lengths) < 2 or lengths[rank] >= PIECE_MULTIPLE:
        return False
    if os.environ.get("TXOPS_GDR_KERNEL") in ("chunked", "recurrent"):
        return False
    return _settings.active_isa() != "scalar" and sum(lengths) >= PIECE_MULTIPLE


def _run_piece(force: bool, query, key, value, beta, state, g, scale, out, final_state) -> None:
    chunk_gated_delta_rule(query, key, value, beta, state, g=g, scale=scale, out=out, final_state=final_state,
                           kernel="chunked" if force else "auto")


def context_parallel_chunk_gated_delta_rule(
        query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, beta: torch.Tensor,
        initial_state: Optional[torch.Tensor] = None, *, g: Optional[torch.Tensor] = None,
        scale: Optional[float] = None, group: Optional["dist.ProcessGroup"] = None, head_groups: int = 1,
        broadcast_final_state: bool = False) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """Prefill of ONE sequence split over the ranks of ``group``, bit-identical to one process.

    Rank r (0 .. P-1 in ``group``) holds tokens ``[sum of the pieces before r, ... + T_r)`` of the sequence. All
    ranks must call it together (it is a collective: one small all_gather to check the pieces, then the state
    relay r -> r+1).

    Parameters
    ----------
    query, key : torch.Tensor
        This rank's piece, (T_r, Nk, Dk), bf16 / fp16 / fp32 (CPU tensors; any strides).
    value : torch.Tensor
        (T_r, Nv, Dv), query's dtype.
    beta : torch.Tensor
        (T_r, Nv), query's dtype.
    initial_state : torch.Tensor, optional
        Rank 0 only: (1, Nv, Dv, Dk) fp32 or bf16; None means zeros (fp32). The other ranks pass None.
    g : torch.Tensor, optional
        (T_r, Nv) fp32 log decays (every rank or none).
    scale : float, optional
        Default ``Dk ** -0.5``.
    group : torch.distributed.ProcessGroup, optional
        Default the world. Any backend whose send / recv move CPU tensors (gloo).
    head_groups : int
        G >= 1 dividing Nv: relay the state in G groups of value heads, so that rank r computes group j while
        rank r+1 computes group j-1 (a pipeline; same bits). Each group must cover whole key heads or lie within
        one (GQA).
    broadcast_final_state : bool
        Also give the final state to every rank (one broadcast); by default only the last rank returns it.

    Returns
    -------
    (out, final_state)
        out: this rank's (T_r, Nv, Dv) in query's dtype. final_state: (1, Nv, Dv, Dk) in initial_state's
        dtype (fp32 without one) on the last rank (on every rank with ``broadcast_final_state``), else None.

    Raises
    ------
    ValueError
        On every rank alike, when a piece but the last is not a multiple of 64 tokens, a piece is empty, the
        ranks disagree on shapes / dtypes / g / scale / options, a rank other than 0 passes an initial state, or
        an input requires grad.

    Examples
    --------
    On each of P ranks (e.g. ``torchrun --nproc-per-node P``), with the whole sequence's tensors ``q, k, v, b,
    g`` and rank 0's ``s0``, each rank passing its 64-aligned piece:

    >>> import torch.distributed as dist
    >>> from txops.distributed import context_parallel_chunk_gated_delta_rule
    >>> dist.init_process_group("gloo")  # doctest: +SKIP
    >>> r, P = dist.get_rank(), dist.get_world_size()  # doctest: +SKIP
    >>> n = -(-q.shape[0] // (64 * P)) * 64  # doctest: +SKIP
    >>> piece = slice(r * n, (r + 1) * n)  # doctest: +SKIP
    >>> out, state = context_parallel_chunk_gated_delta_rule(
    ...     q[piece], k[piece], v[piece], b[piece], s0 if r == 0 else None, g=g[piece])  # doctest: +SKIP
    """
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    meta, problem = _describe(query, key, value, beta, initial_state, g, scale, head_groups,
                              broadcast_final_state)
    gathered = [torch.zeros(_META, dtype=torch.float64) for _ in range(world)]
    dist.all_gather(gathered, torch.tensor(meta, dtype=torch.float64), group=group)
    table = torch.stack(gathered)
    _check(table, rank, problem)

    lengths = [int(x) for x in table[:, 0].tolist()]
    key_heads, value_heads = int(table[0, 1]), int(table[0, 2])
    key_dim, value_dim = int(table[0, 3]), int(table[0, 4])
    state_dtype = _DTYPE_OF.get(int(table[0, 7]), torch.float32)
    scale = float(table[0, 8])
    force = _force_chunked(lengths, rank)
    ratio = value_heads // key_heads
    size = value_heads // head_groups
    shape = (1, value_heads, value_dim, key_dim)

    # The fp32 state this rank starts from and the fp32 state it ends with (exactly what one process holds).
    if rank == 0:
        state_in = (torch.zeros(shape, dtype=torch.float32) if initial_state is None
                    else initial_state.to(torch.float32).contiguous())
    else:
        state_in = torch.empty(shape, dtype=torch.float32)
    state_out = torch.empty(shape, dtype=torch.float32)
    out = torch.empty((value.shape[0], value_heads, value_dim), dtype=query.dtype)

    previous = _global(group, rank - 1) if rank > 0 else None
    following = _global(group, rank + 1) if rank < world - 1 else None
    receives = ([dist.irecv(state_in[:, j * size:(j + 1) * size], src=previous, group=group, tag=j)
                 for j in range(head_groups)] if previous is not None else [])
    sends = []
    for j in range(head_groups):
        heads = slice(j * size, (j + 1) * size)
        if size % ratio == 0:
            keys = slice(j * size // ratio, (j + 1) * size // ratio)
        else:  # the group lies within key head (j * size) // ratio
            keys = slice(j * size // ratio, j * size // ratio + 1)
        if receives:
            receives[j].wait()
        _run_piece(force, query[:, keys], key[:, keys], value[:, heads], beta[:, heads], state_in[:, heads],
                   None if g is None else g[:, heads], scale, out[:, heads], state_out[:, heads])
        if following is not None:
            sends.append(dist.isend(state_out[:, heads], dst=following, group=group, tag=j))
    for request in sends:
        request.wait()

    final_state = None
    if rank == world - 1:
        final_state = state_out if state_dtype == torch.float32 else state_out.to(state_dtype)
    if broadcast_final_state:
        # fp32 on the wire, rounded on each rank: the same bits as the last rank's rounding.
        carrier = state_out if rank == world - 1 else torch.empty(shape, dtype=torch.float32)
        dist.broadcast(carrier, src=_global(group, world - 1), group=group)
        if rank != world - 1:
            final_state = carrier if state_dtype == torch.float32 else carrier.to(state_dtype)
    return out, final_state
