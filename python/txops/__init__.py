"""txops: CANN ops-transformer operators (RoPE family, gated delta rule, causal conv1d) on the CPU, for PyTorch and NumPy.

Tensors are exchanged with the C++ library through DLPack, without copies: one build works with numpy and with any
PyTorch that speaks DLPack. Outputs come back in the caller's framework; in-place operators change the caller's
tensor. A bad call raises ValueError / TypeError (txops' one-line message: the parameter, the rule, the value; the
status code is in the exception's `code` attribute).

``import txops`` does not import torch. Once torch is imported (before or after txops), the operators are also
registered as PyTorch operators, ``torch.ops.txops.*``, with fake kernels and autograd formulas, and the functions
below route torch tensors through them when autograd, ``torch.compile`` or a tracing mode must see the call.
"""
from . import _arrays
from ._settings import (active_isa, compat_mode, cpu_has_avx512_bf16, num_threads, set_compat_mode, set_max_isa,
                        set_num_threads, set_verbose, verbose)
from ._txops import __version__
from .conv import causal_conv1d_fn, causal_conv1d_update
from .gdr import (chunk_gated_delta_rule, chunk_gated_delta_rule_grad, recurrent_gated_delta_rule,
                  set_gdr_keep_forward_states)
from .rope import (apply_rotary_pos_emb, apply_rotary_pos_emb_grad, inplace_partial_rotary_mul,
                   inplace_partial_rotary_mul_backward, interleave_rope)
from .rotary import (rope_with_sin_cos_cache, rotary_embedding, rotary_position_embedding,
                     rotary_position_embedding_grad)

__all__ = [
    "interleave_rope", "inplace_partial_rotary_mul", "inplace_partial_rotary_mul_backward", "apply_rotary_pos_emb",
    "apply_rotary_pos_emb_grad", "rotary_position_embedding", "rotary_position_embedding_grad",
    "rope_with_sin_cos_cache", "rotary_embedding", "chunk_gated_delta_rule", "chunk_gated_delta_rule_grad",
    "recurrent_gated_delta_rule", "set_gdr_keep_forward_states", "causal_conv1d_fn", "causal_conv1d_update",
    "num_threads", "set_num_threads", "active_isa", "set_max_isa", "cpu_has_avx512_bf16", "compat_mode",
    "set_compat_mode", "verbose", "set_verbose", "__version__",
]

_arrays.watch_torch()  # register torch.ops.txops now if torch is imported, else right after it is
