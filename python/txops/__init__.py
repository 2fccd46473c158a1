"""txops: CANN ops-transformer operators (RoPE family, gated delta rule) on the CPU, for PyTorch and NumPy.

Tensors are exchanged with the C++ library through DLPack, without copies: one build works with numpy and with any
PyTorch that speaks DLPack. Outputs come back in the caller's framework; in-place operators change the caller's
tensor. RoPE functions are differentiable under torch autograd. A bad call raises ValueError / TypeError (txops'
one-line message: the parameter, the rule, the value; the status code is in the exception's `code` attribute).
"""
from ._txops import (active_isa, compat_mode, cpu_has_avx512_bf16, num_threads, set_compat_mode, set_max_isa,
                     set_num_threads, set_verbose, verbose)
from .gdr import chunk_gated_delta_rule, recurrent_gated_delta_rule
from .rope import (apply_rotary_pos_emb, apply_rotary_pos_emb_grad, inplace_partial_rotary_mul,
                   inplace_partial_rotary_mul_backward, interleave_rope)

__version__ = "0.1.0"

__all__ = [
    "interleave_rope", "inplace_partial_rotary_mul", "inplace_partial_rotary_mul_backward", "apply_rotary_pos_emb",
    "apply_rotary_pos_emb_grad", "chunk_gated_delta_rule", "recurrent_gated_delta_rule",
    "num_threads", "set_num_threads", "active_isa", "set_max_isa", "cpu_has_avx512_bf16", "compat_mode",
    "set_compat_mode", "verbose", "set_verbose",
]
