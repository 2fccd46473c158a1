#!/usr/bin/python3
"""context_parallel.py — the context-parallel prefill (txops.distributed) against one process, on this machine.

P processes (default 2) on loopback (gloo), 1 thread each (torch.set_num_threads(1) and txops.set_num_threads(1)),
each holding an equal 64-aligned piece of one sequence (default Qwen3-Next's Nk=16, Nv=32, Dk=Dv=128, T=4096,
bf16 activations, fp32 state, with g). Measured in --reps interleaved rounds (every quantity once per round, so
the shared machine's slow drifts spread over all of them), minima reported:

  one process     txops.chunk_gated_delta_rule on the whole sequence, 1 thread (rank 0 alone)
  piece r         rank r's piece from its true incoming state (each rank alone, in turn)
  transfer        one send/recv of the (1, Nv, Dv, Dk) fp32 state (half a ping-pong)
  relay           context_parallel_chunk_gated_delta_rule, head_groups=1: from a barrier to the last rank's return
  overhead        relay - (sum of the pieces + (P-1) transfers)
  head groups G   the pipelined relay (head_groups=G); the whole sequence in one process as the same G calls on
                  groups of value heads (the same bits; a smaller working set); each piece alone as its G calls,
                  and the ideal pipeline (G+P-1)/G * the slowest of those

Every relay's outputs and final state are first checked bit for bit against the one-process call. The machine
is shared, so the load average is printed with the table. Run with the project venv's python:

  .venv/bin/python bench/context_parallel.py [--world 2] [--tokens 4096] [--groups 2,4,8] [--reps 5] [--json F]
"""
import argparse
import datetime
import json
import os
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_common as tc  # noqa: E402

tc.ensure_tuned_env()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import txops  # noqa: E402

try:
    from txops.distributed import context_parallel_chunk_gated_delta_rule  # noqa: E402
except ImportError:  # an installed wheel older than python/txops/distributed.py: use the source tree's module
    import importlib.util
    _path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "txops", "distributed.py")
    _spec = importlib.util.spec_from_file_location("txops.distributed", _path)
    _module = importlib.util.module_from_spec(_spec)
    sys.modules["txops.distributed"] = _module
    _spec.loader.exec_module(_module)
    context_parallel_chunk_gated_delta_rule = _module.context_parallel_chunk_gated_delta_rule


def inputs(args):
    gen = torch.Generator().manual_seed(0)
    t, nk, nv, d = args.tokens, args.key_heads, args.value_heads, args.dim
    q = torch.nn.functional.normalize(torch.randn(t, nk, d, generator=gen), dim=-1).to(torch.bfloat16)
    k = torch.nn.functional.normalize(torch.randn(t, nk, d, generator=gen), dim=-1).to(torch.bfloat16)
    v = torch.randn(t, nv, d, generator=gen).to(torch.bfloat16)
    beta = (torch.rand(t, nv, generator=gen) * 0.9 + 0.05).to(torch.bfloat16)
    g = -torch.nn.functional.softplus(torch.randn(t, nv, generator=gen)) * 0.1
    state = torch.randn(1, nv, d, d, generator=gen) * 0.1
    return q, k, v, beta, g, state


def split_heads(groups, value_heads, key_heads):
    """[(value-head slice, key-head slice)] of the G head groups (as txops.distributed splits them)."""
    size, ratio = value_heads // groups, value_heads // key_heads
    return [(slice(j * size, (j + 1) * size),
             slice(j * size // ratio, (j + 1) * size // ratio) if size % ratio == 0 else
             slice(j * size // ratio, j * size // ratio + 1)) for j in range(groups)]


def worker(rank, world, port, args, result_path):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(1)
    txops.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=300))
    q, k, v, beta, g, state = inputs(args)
    n = args.tokens // world
    pieces = [n] * (world - 1) + [args.tokens - n * (world - 1)]
    start = sum(pieces[:rank])
    part = slice(start, start + pieces[rank])
    mine = (q[part], k[part], v[part], beta[part], g[part])
    shape = (1, args.value_heads, args.dim, args.dim)
    torch.set_grad_enabled(False)
    # the whole sequence on one process (every rank, for the bit check) and the fp32 state this rank's piece
    # starts from, as one process holds it at that token
    whole_out, whole_state = txops.chunk_gated_delta_rule(q, k, v, beta, state, g=g)
    incoming = state if rank == 0 else txops.chunk_gated_delta_rule(
        q[:start], k[:start], v[:start], beta[:start], state, g=g[:start])[1]
    out = torch.empty(pieces[rank], args.value_heads, args.dim, dtype=torch.bfloat16)
    whole = torch.empty_like(whole_out)
    final = torch.empty(shape)

    def by_groups(groups, q, k, v, beta, g, s0, out):
        for h, kh in split_heads(groups, args.value_heads, args.key_heads):
            txops.chunk_gated_delta_rule(q[:, kh], k[:, kh], v[:, h], beta[:, h], s0[:, h], g=g[:, h],
                                         out=out[:, h], final_state=final[:, h])

    def relay(groups):
        return context_parallel_chunk_gated_delta_rule(*mine[:4], state if rank == 0 else None, g=mine[4],
                                                       head_groups=groups)

    for groups in [1] + args.groups:  # warm-up and bit check
        got, got_state = relay(groups)
        assert torch.equal(got, whole_out[part]), f"rank {rank}, head_groups={groups}: out differs"
        if rank == world - 1:
            assert torch.equal(got_state, whole_state), f"head_groups={groups}: final state differs"

    def alone(r, fn):
        """fn's time on rank r while the others wait (0 elsewhere)."""
        dist.barrier()
        t = 0.0
        if rank == r:
            t0 = time.perf_counter()
            fn()
            t = time.perf_counter() - t0
        dist.barrier()
        return t

    def together(fn):
        """From a barrier to the last rank's end of fn."""
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        span = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
        dist.all_reduce(span, op=dist.ReduceOp.MAX)
        return span.item()

    buf = torch.empty(shape)

    def ping_pong():
        if rank == 0:
            dist.send(buf, 1)
            dist.recv(buf, 1)
        elif rank == 1:
            dist.recv(buf, 0)
            dist.send(buf, 0)

    # rounds: every quantity once per round, so that the machine's slow drifts spread over all of them
    samples = {}

    def add(name, value):
        samples.setdefault(name, []).append(value)

    for _ in range(args.reps):
        for G in [1] + args.groups:
            add(f"one_process_g{G}_s", alone(0, lambda: by_groups(G, q, k, v, beta, g, state, whole)))
            for r in range(world):
                add(f"piece{r}_g{G}_s", alone(r, lambda: by_groups(G, *mine, incoming, out)))
            add(f"relay_g{G}_s", together(lambda: relay(G)))
        add("transfer_s", together(ping_pong) / 2)
    record = {}
    for name, values in samples.items():
        stats = torch.tensor([min(values), sorted(values)[len(values) // 2]], dtype=torch.float64)
        dist.all_reduce(stats, op=dist.ReduceOp.MAX)  # "alone" times are 0 on the other ranks
        record[name], record[name[:-2] + "_median_s"] = stats.tolist()
    if rank == 0:
        with open(result_path, "w") as f:
            json.dump(record, f)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--tokens", type=int, default=4096)
    p.add_argument("--key-heads", type=int, default=16)
    p.add_argument("--value-heads", type=int, default=32)
    p.add_argument("--dim", type=int, default=128, help="Dk = Dv")
    p.add_argument("--groups", default="2,4,8", help="head_groups of the pipelined relay (comma-separated)")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--json", default="", help="also write the figures to this file")
    args = p.parse_args()
    args.groups = [int(x) for x in args.groups.split(",") if x]
    if args.tokens // args.world % 64:
        p.error("--tokens / --world must be a multiple of 64 (equal 64-aligned pieces)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "result.json")
        t0 = time.perf_counter()
        torch.multiprocessing.spawn(worker, args=(args.world, port, args, path), nprocs=args.world, join=True)
        wall = time.perf_counter() - t0
        with open(path) as f:
            r = json.load(f)
    P = args.world
    piece = [r[f"piece{i}_g1_s"] for i in range(P)]
    r["overhead_s"] = r["relay_g1_s"] - sum(piece) - (P - 1) * r["transfer_s"]
    r.update(world=P, tokens=args.tokens, key_heads=args.key_heads, value_heads=args.value_heads, dim=args.dim,
             isa=txops.active_isa(), loadavg=os.getloadavg()[0], run_s=wall, rounds=args.reps)
    one = r["one_process_g1_s"]
    ms = lambda s: f"{s * 1e3:9.2f} ms"  # noqa: E731

    def mm(name):  # minimum and median of a measured quantity
        return f"{ms(r[name])} (median {r[name[:-2] + '_median_s'] * 1e3:7.2f})"
    print(f"context-parallel prefill: T={args.tokens} Nk={args.key_heads} Nv={args.value_heads} "
          f"Dk=Dv={args.dim} bf16, fp32 state, g; {P} processes x 1 thread; {r['isa']}; "
          f"load average {r['loadavg']:.2f}; minima (medians) of {args.reps} interleaved rounds")
    print(f"{'one process (1 thread)':36s}{mm('one_process_g1_s')}")
    for i in range(P):
        print(f"{f'piece {i} alone ({args.tokens // P} tokens)':36s}{mm(f'piece{i}_g1_s')}")
    mib = args.value_heads * args.dim ** 2 * 4 / 2 ** 20
    print(f"{'state transfer (%.1f MiB fp32)' % mib:36s}{mm('transfer_s')}")
    print(f"{'relay (head_groups=1)':36s}{mm('relay_g1_s')}   {r['relay_g1_s'] / one:.2f} x one process")
    print(f"{'  overhead beyond compute+transfer':36s}{ms(r['overhead_s'])}   "
          f"{r['overhead_s'] / r['relay_g1_s'] * 100:.1f} % of the relay")
    for G in args.groups:
        t, one_g = r[f"relay_g{G}_s"], r[f"one_process_g{G}_s"]
        pieces_g = [r[f"piece{i}_g{G}_s"] for i in range(P)]
        ideal = (G + P - 1) / G * max(pieces_g)
        r[f"ideal_g{G}_s"] = ideal
        print(f"{f'pipelined relay, head_groups={G}':36s}{mm(f'relay_g{G}_s')}   {t / one:.2f} x one process")
        print(f"{f'  one process as {G} group calls':36s}{mm(f'one_process_g{G}_s')}   "
              f"pipelined / this = {t / one_g:.2f}")
        print(f"{f'  pieces alone as {G} group calls':36s}"
              f"{' + '.join('%.1f' % (x * 1e3) for x in pieces_g)} ms; ideal pipeline (G+P-1)/G x slowest "
              f"= {ideal * 1e3:.1f} ms")
    print(f"(whole run {wall:.1f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()
