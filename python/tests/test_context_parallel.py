"""Context-parallel prefill (txops.distributed): 2 and 4 processes on loopback (gloo), each holding a piece of one
sequence, give each piece's output and the final state BIT FOR BIT (torch.equal) as one process's
txops.chunk_gated_delta_rule on the whole sequence — with and without g, fp32 and bf16 states, fp32 and bf16
activations, with and without an initial state, a last piece shorter than a chunk, the recurrent kernel
(TXOPS_GDR_KERNEL=recurrent), head-group pipelining, the final state broadcast, a subgroup; a rank past the
first must not match its piece run from the zero state (so a broken relay fails). Bad pieces / options raise
the same ValueError on every rank, and the group stays usable afterwards. Each world size is one spawn running
all its cases (the processes' start dominates the time)."""
import datetime
import importlib.util
import os
import socket

import pytest
import torch

import txops

dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with the gloo backend is not available", allow_module_level=True)

try:
    from txops import distributed as txcp
except ImportError:  # an installed wheel built before txops/distributed.py existed: the source tree's module
    # (pure Python over the installed txops.chunk_gated_delta_rule) is loaded as txops.distributed.
    _SOURCE = os.path.join(os.path.dirname(__file__), "..", "txops", "distributed.py")
    _spec = importlib.util.spec_from_file_location("txops.distributed", _SOURCE)
    txcp = importlib.util.module_from_spec(_spec)
    import sys
    sys.modules["txops.distributed"] = txcp
    _spec.loader.exec_module(txcp)

C = 64
KEY_HEADS, VALUE_HEADS, KEY_DIM, VALUE_DIM = 2, 4, 32, 32
TOKENS = 4 * C + 37


def problem(tokens, dtype, state_dtype, with_g, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.nn.functional.normalize(torch.randn(tokens, KEY_HEADS, KEY_DIM, generator=gen), dim=-1)
    k = torch.nn.functional.normalize(torch.randn(tokens, KEY_HEADS, KEY_DIM, generator=gen), dim=-1)
    v = torch.randn(tokens, VALUE_HEADS, VALUE_DIM, generator=gen)
    beta = torch.rand(tokens, VALUE_HEADS, generator=gen) * 0.9 + 0.05
    g = -torch.nn.functional.softplus(torch.randn(tokens, VALUE_HEADS, generator=gen)) * 0.5
    state = torch.randn(1, VALUE_HEADS, VALUE_DIM, KEY_DIM, generator=gen) * 0.5
    return (q.to(dtype), k.to(dtype), v.to(dtype), beta.to(dtype), None if state_dtype is None else
            state.to(state_dtype), g if with_g else None)


# pieces, activations, initial state dtype (None: no initial state), g, head_groups, broadcast, TXOPS_GDR_KERNEL
CASES = {
    2: [
        ([128, 165], torch.bfloat16, torch.float32, True, 1, False, None),
        ([256, 37], torch.bfloat16, torch.bfloat16, True, 1, False, None),  # last piece < C: chunked forced
        ([64, 229], torch.float32, None, False, 1, False, None),
        ([128, 165], torch.float32, torch.bfloat16, True, 2, True, None),
        ([192, 101], torch.bfloat16, torch.float32, True, 4, True, None),  # groups of 1 head within a key head
        ([128, 165], torch.bfloat16, torch.bfloat16, True, 1, True, "recurrent"),
        ([256, 37], torch.float32, torch.float32, False, 2, False, "recurrent"),
    ],
    4: [
        ([64, 64, 128, 37], torch.bfloat16, torch.float32, True, 1, False, None),
        ([64, 128, 64, 37], torch.bfloat16, torch.bfloat16, False, 2, True, None),
        ([64, 64, 64, 101], torch.float32, None, True, 1, True, None),
        ([128, 64, 64, 37], torch.float32, torch.bfloat16, True, 4, False, None),
    ],
}


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(1)
    txops.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60))


def equal_worker(rank, world, port):
    setup(rank, world, port)
    try:
        for case in CASES[world]:
            pieces, dtype, state_dtype, with_g, groups, broadcast, kernel = case
            assert sum(pieces) == TOKENS and len(pieces) == world
            name = f"rank {rank}, case {case}"
            if kernel is not None:
                os.environ["TXOPS_GDR_KERNEL"] = kernel
            try:
                q, k, v, beta, state, g = problem(TOKENS, dtype, state_dtype, with_g)
                expected_out, expected_state = txops.chunk_gated_delta_rule(q, k, v, beta, state, g=g)
                start = sum(pieces[:rank])
                piece = slice(start, start + pieces[rank])
                out, final = txcp.context_parallel_chunk_gated_delta_rule(
                    q[piece], k[piece], v[piece], beta[piece], state if rank == 0 else None,
                    g=None if g is None else g[piece], head_groups=groups, broadcast_final_state=broadcast)
                assert out.dtype == dtype and torch.equal(out, expected_out[piece]), name
                if rank == world - 1 or broadcast:
                    assert final.dtype == expected_state.dtype and torch.equal(final, expected_state), name
                else:
                    assert final is None, name
                if rank > 0:  # the incoming state matters: a relay that lost it would fail the check above
                    alone, _ = txops.chunk_gated_delta_rule(q[piece], k[piece], v[piece], beta[piece],
                                                            g=None if g is None else g[piece])
                    assert not torch.equal(out, alone), name
            finally:
                os.environ.pop("TXOPS_GDR_KERNEL", None)
        if world == 4:  # a relay on a subgroup (global ranks 1 and 3): its ranks, not the world's, hold the pieces
            sub = dist.new_group([1, 3])
            if rank in (1, 3):
                q, k, v, beta, state, g = problem(TOKENS, torch.bfloat16, torch.bfloat16, True, seed=1)
                expected_out, expected_state = txops.chunk_gated_delta_rule(q, k, v, beta, state, g=g)
                piece = slice(0, 192) if rank == 1 else slice(192, TOKENS)
                out, final = txcp.context_parallel_chunk_gated_delta_rule(
                    q[piece], k[piece], v[piece], beta[piece], state if rank == 1 else None, g=g[piece],
                    group=sub, head_groups=2)
                assert torch.equal(out, expected_out[piece]), f"rank {rank}, subgroup"
                assert (final is None) if rank == 1 else torch.equal(final, expected_state), f"rank {rank}, subgroup"
            dist.barrier()
    finally:
        dist.destroy_process_group()


def expect_error(call, words, name):
    try:
        call()
    except ValueError as exc:
        assert all(w in str(exc) for w in words), f"{name}: {exc}"
    else:
        raise AssertionError(f"{name}: no ValueError")


def error_worker(rank, world, port):
    setup(rank, world, port)
    try:
        q, k, v, beta, state, g = problem(TOKENS, torch.bfloat16, torch.float32, True)
        cp = txcp.context_parallel_chunk_gated_delta_rule

        def run(pieces, **kwargs):
            start = sum(pieces[:rank])
            piece = slice(start, start + pieces[rank])
            initial = kwargs.pop("initial", state if rank == 0 else None)
            return cp(q[piece], k[piece], v[piece], beta[piece], initial, g=g[piece], **kwargs)

        # every rank raises, whichever rank holds the bad piece
        expect_error(lambda: run([100, 193]), ["multiple of 64", "rank 0 has 100"], f"rank {rank}, bad piece")
        expect_error(lambda: run([64, 0]), ["at least one token"] if rank == 1 else ["rank(s) [1]"],
                     f"rank {rank}, empty piece")
        expect_error(lambda: run([128, 165], head_groups=3), ["head_groups must divide"], f"rank {rank}, groups")
        expect_error(lambda: run([128, 165], initial=state), ["only rank 0 holds the initial state"],
                     f"rank {rank}, initial state on rank 1")
        expect_error(lambda: run([128, 165], scale=0.1 if rank == 0 else 0.2), ["same scale"],
                     f"rank {rank}, scale")
        bad = slice(128, TOKENS)
        expect_error(lambda: cp(q[:128], k[:128], v[:128], beta[:128], state, g=g[:128]) if rank == 0 else
                     cp(q[bad], k[bad], v[bad], beta[bad].float(), None, g=g[bad]),
                     ["query's dtype"] if rank == 1 else ["rank(s) [1]"], f"rank {rank}, beta dtype")
        # the group is still in step: a good call works
        out, final = run([128, 165])
        expected_out, expected_state = txops.chunk_gated_delta_rule(q, k, v, beta, state, g=g)
        assert torch.equal(out, expected_out[128:] if rank else expected_out[:128])
        assert final is None if rank == 0 else torch.equal(final, expected_state)
    finally:
        dist.destroy_process_group()


def spawn(worker, world):
    torch.multiprocessing.spawn(worker, args=(world, free_port()), nprocs=world, join=True)


@pytest.mark.parametrize("world", [2, 4])
def test_relay_is_bit_identical_to_one_process(world):
    spawn(equal_worker, world)


def test_bad_pieces_raise_on_every_rank():
    spawn(error_worker, 2)


def test_piece_rule_message():
    table = torch.tensor([[100.0, 2, 4, 32, 32, 2, 1, 1, 0.2, 1, 0, 0], [193.0, 2, 4, 32, 32, 2, 1, 0, 0.2, 1, 0, 0]],
                         dtype=torch.float64)
    with pytest.raises(ValueError, match="multiple of 64 tokens"):
        txcp._check(table, 1, "")
