#!/usr/bin/python3
"""torch_conv.py — the causal conv1d cases of `txops bench` (kind "conv": Qwen3-Next's conv before the gated delta
rule) in PyTorch, eager and torch.compile, on the same thread counts; the ratio peer / txops per case.

The peer is what transformers runs on the CPU without the causal-conv1d package (modeling_qwen3_next's
causal_conv1d_fn / causal_conv1d_update fallbacks), written out here so that both eager and compiled forms are the
same formulas: prefill = the depthwise F.conv1d over the channel-first (B, dim, L) activations with K-1 leading
rows of history (the txops case continues from a state), then SiLU; decode = cat(state, x), the conv over the
last K columns, SiLU, and the state moved by one token. Tensors are channel-first as transformers keeps them;
txops' own time is the record's (C++ API, token-major (B, L, dim) as CANN lays it out) or, when faster, the same
call through the Python package in this run.

Run: .venv/bin/python bench/torch_conv.py --compare build/bench.json [--peers eager,compile]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_common as tc  # noqa: E402

tc.ensure_tuned_env()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def prefill(x, weight, history):
    """x (B, dim, L), weight (dim, K), history (B, dim, K-1) -> SiLU(conv) (B, dim, L)."""
    padded = torch.cat([history, x], dim=-1)
    return F.silu(F.conv1d(padded, weight.unsqueeze(1), groups=x.shape[1]))


def decode(x, weight, state):
    """x (B, dim, 1), state (B, dim, K-1) updated in place -> (B, dim, 1)."""
    window = torch.cat([state, x], dim=-1)
    state.copy_(window[:, :, 1:])
    return F.silu(F.conv1d(window, weight.unsqueeze(1), groups=x.shape[1]))


def inputs(rec):
    dims, _ = tc.parse_shape(rec["shape"])
    dt = DTYPES[rec["dtype"]]
    gen = torch.Generator().manual_seed(1)
    B, dim, K = dims["B"], dims["dim"], dims["K"]
    L = 1 if rec["op"] == "causal_conv1d_update" else dims["T"] // B
    x = torch.rand(B, dim, L, generator=gen).to(dt)
    weight = torch.rand(dim, K, generator=gen).to(dt)
    state = torch.rand(B, dim, K - 1, generator=gen).to(dt)
    return x, weight, state


def build_peer(rec, compiled):
    x, weight, state = inputs(rec)
    fn = prefill if rec["op"] == "causal_conv1d_fn" else decode
    if compiled:
        fn = tc.Compiled(fn, fullgraph=True, dynamic=False)
    return (lambda: fn(x, weight, state)), fn


def build_txops(rec):
    import txops
    x, weight, state = inputs(rec)
    x_t = x.transpose(1, 2).contiguous()  # token-major, as the record's C++ call has it
    states = state.transpose(1, 2).contiguous()
    w = weight.t().contiguous()
    out = torch.empty_like(x_t)
    if rec["op"] == "causal_conv1d_fn":
        modes = torch.ones(x.shape[0], dtype=torch.int32)
        return lambda: txops.causal_conv1d_fn(x_t, w, states, initial_state_mode=modes, out=out)
    return lambda: txops.causal_conv1d_update(x_t, w, states, out=out)


def main():
    args = tc.parse_args(__doc__.splitlines()[1])
    peers = tc.peers_wanted(args)
    if "compile" in peers:
        tc.setup_compile()
    records = tc.load_records(args.compare, {"conv"}, args)
    cmp = tc.Comparison("causal conv1d, txops vs PyTorch (transformers' CPU fallback formulas)", peers)
    cmp.header()
    for threads in sorted({r["threads"] for r in records}):
        torch.set_num_threads(threads)
        import txops
        txops.set_num_threads(threads)
        if "compile" in peers:
            tc.reset_compile()
        for r in (r for r in records if r["threads"] == threads):
            times, notes = {}, []
            for peer in peers:
                try:
                    with torch.no_grad():
                        call, fn = build_peer(r, compiled=peer == "compile")
                        call()
                        times[peer] = tc.time_fn(call, args.target_s, args.max_reps)[0]
                    if peer == "compile":
                        cmp.compile_s += fn.compile_s or 0.0
                        notes.append(f"compile: compiled in {fn.compile_s:.1f} s")
                except Exception as e:  # noqa: BLE001 - a peer that cannot run a case is reported, not fatal
                    notes.append(f"{peer}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            txops_py = None
            if r.get("passed"):
                txops_py = tc.time_fn(build_txops(r), args.target_s, args.max_reps)[0]
            cmp.add(r, times, "; ".join(notes), txops_py_s=txops_py)
    cmp.summary()


if __name__ == "__main__":
    main()
