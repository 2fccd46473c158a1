// fuzz_inplace_partial_rotary_mul_grad.cpp — aclnnInplacePartialRotaryMulGrad (decoder: partial_rotary_mul.h).
#include "partial_rotary_mul.h"

TXFUZZ_TARGET(inplace_partial_rotary_mul_grad) { txfuzz::partial_rotary_mul_body(in, true); }
