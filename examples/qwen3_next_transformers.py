#!/usr/bin/python3
"""qwen3_next_transformers.py — a small Qwen3-Next from Hugging Face transformers (random weights, built from a
config in code: nothing is downloaded) generating greedily on the CPU, with stock transformers and with txops
(``txops.integrations.transformers.enable()``), printing both speeds and checking that the tokens are the same.

Stock transformers runs the linear-attention layers' gated delta rule as plain PyTorch on the CPU
(``torch_chunk_gated_delta_rule`` / ``torch_recurrent_gated_delta_rule``); with txops they run txops' prefill and
decode operators and their short convolution txops' causal conv1d, and the full-attention layers' RoPE runs txops'
fused q/k rotation. The rest (projections, norms, MLPs, attention) is the same PyTorch code in both runs.

Run: .venv/bin/python examples/qwen3_next_transformers.py [--prompt 1024] [--new-tokens 16] [--batch 1]
     [--dtype fp32|bf16] [--threads N] [--tiny]      (needs transformers; `make python` installs txops into .venv/)
"""
import argparse
import os
import sys
import time

import torch

try:
    import txops  # installed (pip install .)
except ImportError:  # else the source tree's package (module built in place by `make build`)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
    import txops  # noqa: E402
from txops.integrations import transformers as txops_transformers  # noqa: E402


def build_model(dtype, tiny=False):
    from transformers import Qwen3NextConfig, Qwen3NextForCausalLM
    torch.manual_seed(0)
    width = 1 if tiny else 4  # --tiny: hidden 128, one head of each kind per group (a quick smoke run)
    config = Qwen3NextConfig(
        vocab_size=256 if tiny else 2048, hidden_size=128 * width, intermediate_size=256 * width,
        num_hidden_layers=4, layer_types=["linear_attention"] * 3 + ["full_attention"],  # Qwen3-Next's 3 : 1
        linear_num_key_heads=width, linear_num_value_heads=2 * width, linear_key_head_dim=64,
        linear_value_head_dim=64, num_attention_heads=2 * width, num_key_value_heads=max(width // 2, 1),
        head_dim=64,                                                        # partial RoPE (factor 0.25)
        mlp_only_layers=[0, 1, 2, 3], max_position_embeddings=8192)         # dense MLPs (no MoE routing)
    return Qwen3NextForCausalLM(config).to(dtype).eval()


def generate(model, prompt, new_tokens):
    """(tokens, prefill seconds, decode seconds): one forward over the prompt, then cached greedy decode."""
    from transformers import DynamicCache
    with torch.no_grad():
        cache = DynamicCache(config=model.config)
        start = time.perf_counter()
        logits = model(prompt, past_key_values=cache, use_cache=True).logits[:, -1]
        prefill = time.perf_counter() - start
        tokens = [logits.argmax(-1, keepdim=True)]
        start = time.perf_counter()
        for _ in range(new_tokens - 1):
            logits = model(tokens[-1], past_key_values=cache, use_cache=True).logits[:, -1]
            tokens.append(logits.argmax(-1, keepdim=True))
        decode = time.perf_counter() - start
    return torch.cat(tokens, dim=1), prefill, decode


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--prompt", type=int, default=1024, help="prompt tokens per sequence")
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    parser.add_argument("--threads", type=int, default=0, help="torch and txops threads (default: all cores)")
    parser.add_argument("--tiny", action="store_true", help="a 4-layer model of hidden size 128 (smoke test)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
        txops.set_num_threads(args.threads)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    model = build_model(dtype, args.tiny)
    prompt = torch.randint(0, model.config.vocab_size, (args.batch, args.prompt),
                           generator=torch.Generator().manual_seed(1))
    print(f"Qwen3-Next (transformers {__import__('transformers').__version__}), "
          f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters, random weights, {args.dtype}; "
          f"batch {args.batch}, prompt {args.prompt}, {args.new_tokens} new tokens; "
          f"torch {torch.get_num_threads()} threads, txops {txops.num_threads()} threads ({txops.active_isa()})")
    warm_up = prompt[:, :min(args.prompt, 64)]
    generate(model, warm_up, 2)  # warm-up: first-call allocations and lazy initialisation
    results = {}
    for name in ("stock", "txops"):
        if name == "txops":
            txops_transformers.enable()
            generate(model, warm_up, 2)
        tokens, prefill, decode = generate(model, prompt, args.new_tokens)
        results[name] = tokens
        decode_rate = args.batch * (args.new_tokens - 1) / decode if args.new_tokens > 1 else float("nan")
        print(f"  {name:<6} prefill {args.batch * args.prompt / prefill:9.0f} tokens/s ({prefill * 1e3:8.1f} ms)   "
              f"decode {decode_rate:8.1f} tokens/s ({decode * 1e3 / max(args.new_tokens - 1, 1):6.1f} ms/step)")
    txops_transformers.disable()
    same = torch.equal(results["stock"], results["txops"])
    print("same tokens as stock transformers" if same else "TOKENS DIFFER from stock transformers")
    return 0 if same or dtype != torch.float32 else 1


if __name__ == "__main__":
    sys.exit(main())
