"""Integrations of txops into libraries whose model code people run: ``txops.integrations.transformers``
(``enable()`` / ``disable()``: Hugging Face transformers' gated-delta-rule and RoPE functions run txops on CPU
tensors). fla's API is ``txops.fla``, torch_npu's names are ``txops.npu``. Nothing here is imported by
``import txops``."""
