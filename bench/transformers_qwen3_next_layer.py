#!/usr/bin/python3
"""transformers_qwen3_next_layer.py — one real-size Qwen3-Next linear-attention layer from transformers
(``Qwen3NextGatedDeltaNet``: hidden 2048, 16 key heads, 32 value heads, head dim 128; random weights), stock
transformers against ``txops.integrations.transformers.enable()``: prefill tokens/s for one sequence of
--prefill tokens, decode tokens/s for --batch sequences (one token each, the recurrent state in transformers'
cache), and the shares of the layer's time spent in the gated delta rule and in the causal conv1d (both run
txops once enabled; the rest — projections, gated RMSNorm — is PyTorch in both runs).

Run: .venv/bin/python bench/transformers_qwen3_next_layer.py [--prefill 4096] [--batch 8] [--decode-steps 8]
     [--threads N] [--dtype fp32|bf16]
"""
import argparse
import os
import sys
import time

import torch

try:
    import txops
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
    import txops  # noqa: E402
from txops.integrations import transformers as txops_transformers  # noqa: E402


class Timed:
    """Wraps module-level functions of modeling_qwen3_next (the gated delta rule's, or the conv's) to sum their
    time."""

    GDR = ("torch_chunk_gated_delta_rule", "torch_recurrent_gated_delta_rule")
    CONV = ("causal_conv1d_fn", "causal_conv1d_update")

    def __init__(self, module, names):
        self.module, self.names, self.seconds, self.saved = module, names, 0.0, {}

    def __enter__(self):
        for name in self.names:
            function = getattr(self.module, name)
            self.saved[name] = function

            def timed(*args, _function=function, **kwargs):
                start = time.perf_counter()
                try:
                    return _function(*args, **kwargs)
                finally:
                    self.seconds += time.perf_counter() - start
            setattr(self.module, name, timed)
        return self

    def __exit__(self, *exc):
        for name, function in self.saved.items():
            setattr(self.module, name, function)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--prefill", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--decode-steps", type=int, default=8)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
        txops.set_num_threads(args.threads)
    from transformers import DynamicCache, Qwen3NextConfig
    from transformers.models.qwen3_next import modeling_qwen3_next as modeling
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    config = Qwen3NextConfig(hidden_size=2048, linear_num_key_heads=16, linear_num_value_heads=32,
                             linear_key_head_dim=128, linear_value_head_dim=128, num_hidden_layers=1,
                             layer_types=["linear_attention"], vocab_size=1024)
    torch.manual_seed(0)
    layer = modeling.Qwen3NextGatedDeltaNet(config, 0).to(dtype).eval()
    prompt = torch.randn(1, args.prefill, config.hidden_size, dtype=dtype) * 0.1
    context = torch.randn(args.batch, 16, config.hidden_size, dtype=dtype) * 0.1
    step = torch.randn(args.batch, 1, config.hidden_size, dtype=dtype) * 0.1
    print(f"Qwen3-Next linear-attention layer (transformers), hidden 2048, 16 key / 32 value heads, head dim 128, "
          f"{args.dtype}; torch {torch.get_num_threads()} threads, txops {txops.num_threads()} threads "
          f"({txops.active_isa()})")
    results = {}
    for name in ("stock", "txops"):
        if name == "txops":
            txops_transformers.enable()
        with torch.no_grad():
            layer(prompt[:, :128])  # warm-up
            with Timed(modeling, Timed.GDR) as timed, Timed(modeling, Timed.CONV) as timed_conv:
                start = time.perf_counter()
                out = layer(prompt)
                prefill = time.perf_counter() - start
            prefill_gdr, prefill_conv = timed.seconds, timed_conv.seconds
            cache = DynamicCache(config=config)
            layer(context, cache_params=cache)
            layer(step, cache_params=cache)  # warm-up step
            with Timed(modeling, Timed.GDR) as timed, Timed(modeling, Timed.CONV) as timed_conv:
                start = time.perf_counter()
                for _ in range(args.decode_steps):
                    decoded = layer(step, cache_params=cache)
                decode = time.perf_counter() - start
            decode_gdr, decode_conv = timed.seconds, timed_conv.seconds
        results[name] = (out, decoded)
        print(f"  {name:<6} prefill {args.prefill / prefill:8.0f} tokens/s ({prefill:6.2f} s; gated delta rule "
              f"{100 * prefill_gdr / prefill:4.1f}%, conv {100 * prefill_conv / prefill:4.1f}%)   decode batch "
              f"{args.batch}: {args.batch * args.decode_steps / decode:7.0f} tokens/s "
              f"({1e3 * decode / args.decode_steps:6.1f} ms/step; gated delta rule {100 * decode_gdr / decode:4.1f}%, "
              f"conv {100 * decode_conv / decode:4.1f}%)")
        results[name + "_times"] = (prefill, decode)
    txops_transformers.disable()
    (stock_prefill, stock_decode), (tx_prefill, tx_decode) = results["stock_times"], results["txops_times"]
    difference = (results["stock"][0].float() - results["txops"][0].float()).abs().max().item()
    print(f"  txops / stock: prefill {stock_prefill / tx_prefill:.1f}x, decode {stock_decode / tx_decode:.1f}x; "
          f"prefill outputs max |diff| {difference:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
