#!/usr/bin/python3
"""transformers_qwen3_next_train.py — a training step (forward + backward) of one real-size Qwen3-Next
linear-attention layer from transformers (``Qwen3NextGatedDeltaNet``: hidden 2048, 16 key heads, 32 value heads,
head dim 128; random weights) on one sequence of --tokens tokens, stock transformers (autograd through its chunked
PyTorch ``torch_chunk_gated_delta_rule``) against ``txops.integrations.transformers.enable()`` (txops' prefill
and its backward). Each variant runs in its own process, so its peak resident memory (``ru_maxrss``) is its own:
the step's time (best of --steps after one warm-up step), the time inside the gated delta rule's forward, the peak
memory, and the gradients' agreement (max relative difference of the parameter gradients, txops against stock).

--tiny-model: instead, a whole tiny Qwen3-Next causal LM (random weights, the config of
python/tests/test_transformers_integration.py: 2 layers, one linear-attention and one full-attention, hidden 64),
a training step on a --tokens prompt with its loss.

Run: .venv/bin/python bench/transformers_qwen3_next_train.py [--tokens 2048] [--steps 2] [--threads N] [--tiny-model]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time


def run_variant(args):
    import torch
    try:
        import txops
    except ImportError:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
        import txops  # noqa: F401
    from txops.integrations import transformers as txops_transformers
    from transformers import Qwen3NextConfig
    from transformers.models.qwen3_next import modeling_qwen3_next as modeling
    if args.threads:
        torch.set_num_threads(args.threads)
        txops.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.tiny_model:
        config = Qwen3NextConfig(
            vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4,
            linear_key_head_dim=16, linear_value_head_dim=16, num_experts=4, num_experts_per_tok=2,
            moe_intermediate_size=32, shared_expert_intermediate_size=32,
            layer_types=["linear_attention", "full_attention"], mlp_only_layers=[0, 1],
            max_position_embeddings=max(512, args.tokens))
        model = modeling.Qwen3NextForCausalLM(config).train()
        gen = torch.Generator().manual_seed(9)
        prompt = torch.randint(0, 256, (1, args.tokens), generator=gen)
        labels = torch.randint(0, 256, (1, args.tokens), generator=gen)
        layer, loss_of = model, lambda: model(prompt, labels=labels).loss
    else:
        config = Qwen3NextConfig(hidden_size=2048, linear_num_key_heads=16, linear_num_value_heads=32,
                                 linear_key_head_dim=128, linear_value_head_dim=128, num_hidden_layers=1,
                                 layer_types=["linear_attention"], vocab_size=1024)
        layer = modeling.Qwen3NextGatedDeltaNet(config, 0).train()
        x = torch.randn(1, args.tokens, config.hidden_size) * 0.1
        weight = torch.randn(1, args.tokens, config.hidden_size)
        loss_of = lambda: (layer(x) * weight).sum()  # noqa: E731
    if args.variant == "txops":
        txops_transformers.enable()
    chunk = modeling.torch_chunk_gated_delta_rule
    gdr_seconds = [0.0]

    def timed_chunk(*a, **k):
        start = time.perf_counter()
        try:
            return chunk(*a, **k)
        finally:
            gdr_seconds[0] += time.perf_counter() - start
    modeling.torch_chunk_gated_delta_rule = timed_chunk
    best, best_gdr = float("inf"), 0.0
    for _ in range(1 + args.steps):
        layer.zero_grad()
        gdr_seconds[0] = 0.0
        start = time.perf_counter()
        loss = loss_of()
        loss.backward()
        seconds = time.perf_counter() - start
        if seconds < best:
            best, best_gdr = seconds, gdr_seconds[0]
    grads = {n: p.grad for n, p in layer.named_parameters() if p.grad is not None}
    torch.save(grads, args.grads_out)
    return {"variant": args.variant, "step_s": best, "gdr_forward_s": best_gdr,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "threads": torch.get_num_threads(), "isa": txops.active_isa()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--tiny-model", action="store_true", help="the whole tiny Qwen3-Next model of the tests")
    parser.add_argument("--variant", choices=["stock", "txops"], help=argparse.SUPPRESS)
    parser.add_argument("--grads-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(run_variant(args)))
        return 0
    import tempfile
    import torch
    results, grads = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for variant in ("stock", "txops"):
            path = os.path.join(tmp, variant + ".pt")
            command = [sys.executable, os.path.abspath(__file__), "--variant", variant, "--grads-out", path,
                       "--tokens", str(args.tokens), "--steps", str(args.steps), "--threads", str(args.threads)]
            command += ["--tiny-model"] if args.tiny_model else []
            output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            results[variant] = json.loads(output.strip().splitlines()[-1])
            grads[variant] = torch.load(path)
    worst = max(((grads["txops"][n].double() - g.double()).abs().max() / g.double().abs().max().clamp_min(1e-30)).item()
                for n, g in grads["stock"].items())
    stock, ours = results["stock"], results["txops"]
    what = "tiny Qwen3-Next model (2 layers, hidden 64)" if args.tiny_model else "Qwen3-Next linear-attention layer"
    print(f"{what} (transformers), training step (forward + backward), 1 x {args.tokens} tokens, fp32; "
          f"{ours['threads']} threads ({ours['isa']})")
    for r in (stock, ours):
        print(f"  {r['variant']:<6} step {1e3 * r['step_s']:8.1f} ms (gated delta rule forward "
              f"{1e3 * r['gdr_forward_s']:7.1f} ms)"
              f"   peak RSS {r['peak_rss_mib']:7.0f} MiB")
    print(f"  txops / stock: step {stock['step_s'] / ours['step_s']:.2f}x faster, peak memory "
          f"{ours['peak_rss_mib'] / stock['peak_rss_mib']:.2f}x; parameter gradients max relative difference "
          f"{worst:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
