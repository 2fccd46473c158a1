// fuzz_inplace_partial_rotary_mul.cpp — aclnnInplacePartialRotaryMul (decoder: partial_rotary_mul.h).
#include "partial_rotary_mul.h"

TXFUZZ_TARGET(inplace_partial_rotary_mul) { txfuzz::partial_rotary_mul_body(in, false); }
