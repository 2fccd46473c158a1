// prepare_partial.cpp — phase one of aclnnInterleaveRope and aclnnInplacePartialRotaryMul(Grad): the rules of
// docs/rope.md in order (one check, one code, one message each), then the row plan.
// Codes: null data 161001; dtype, attribute and output-view problems 161002; ranks, shapes, slice, mode 561002.
// TXOPS_COMPAT=cann narrows to CANN's documented support with CANN's codes (see README.md).
#include <cstdio>

#include "core/status.h"
#include "ops/rope/args.h"
#include "ops/rope/plan.h"
#include "ops/rope/prepare.h"
#include "ops/rope/validate.h"

namespace txops {

using namespace rope;

static constexpr StatusCode kShape = StatusCode::kTilingError;
static constexpr StatusCode kInvalid = StatusCode::kParamInvalid;
static const char* const kDimNamesBSND[] = {"B", "S", "N", "D"};

Status prepare_interleave_rope(const TensorView& x, const TensorView& cos, const TensorView& sin,
                               const TensorView& out, PreparedOp* op) {
  const bool cann = compat_mode() == Compat::kCann;
  ROPE_CHECK(check_data(x, "x"));
  ROPE_CHECK(check_data(cos, "cos"));
  ROPE_CHECK(check_data(sin, "sin"));
  ROPE_CHECK(check_data(out, "out"));
  // dtypes
  ROPE_CHECK(check_float_dtype(x, "x"));
  if (cann && x.dtype == DType::kF32) {
    return fail(kInvalid, "x dtype must be fp16 or bf16 under TXOPS_COMPAT=cann, got %s", dtype_name(x.dtype));
  }
  ROPE_CHECK(check_dtype_equals(out, "out", x.dtype, "x"));
  ROPE_CHECK(check_cos_dtype(cos, "cos", x, "x"));
  ROPE_CHECK(check_dtype_equals(sin, "sin", cos.dtype, "cos"));
  // ranks and shapes: x, out (B, N, S, D); cos, sin (Bc, 1, Sc, D)
  ROPE_CHECK(check_rank(x, "x", 4, kShape));
  ROPE_CHECK(check_rank(cos, "cos", 4, kShape));
  ROPE_CHECK(check_rank(sin, "sin", 4, kShape));
  ROPE_CHECK(check_rank(out, "out", 4, kShape));
  ROPE_CHECK(check_head_dim(x, "x", 3, kShape));
  if (cann) ROPE_CHECK(check_dim(x, "x", 3, "D", 64, kShape));
  ROPE_CHECK(check_shape_equals(out, "out", x, "x", kShape));
  if (cann) {
    ROPE_CHECK(check_dim(cos, "cos", 0, "B", x.shape[0], kShape));
  } else {
    ROPE_CHECK(check_dim_one_or(cos, "cos", 0, "B", x.shape[0], kShape));
  }
  ROPE_CHECK(check_dim(cos, "cos", 1, "N", 1, kShape));
  ROPE_CHECK(check_dim_one_or(cos, "cos", 2, "S", x.shape[2], kShape));
  ROPE_CHECK(check_dim(cos, "cos", 3, "D", x.shape[3], kShape));
  ROPE_CHECK(check_shape_equals(sin, "sin", cos, "cos", kShape));
  // the output view
  ROPE_CHECK(check_writable(out, "out"));
  const ViewSpan out_span = span_of(out);
  ROPE_CHECK(check_no_overlap(out, out_span, "out", x, span_of(x), "x", /*alias_ok=*/true));
  ROPE_CHECK(check_no_overlap(out, out_span, "out", cos, span_of(cos), "cos", false));
  ROPE_CHECK(check_no_overlap(out, out_span, "out", sin, span_of(sin), "sin", false));

  if (has_zero_extent(x)) {
    plan_nothing(op);
    return Status();
  }
  RowJob job;
  job.config.x_dtype = x.dtype;
  job.config.cs_dtype = cos.dtype;
  job.config.mode = RotaryMode::kInterleaveHalf;
  job.config.backward = false;
  job.config.width = x.shape[3];
  fill_row_stream(x, out, cos, sin, 0, &job.streams[0]);
  const bool in_place = same_view(x, out);
  const uint64_t out_bytes = in_place ? 0 : static_cast<uint64_t>(out.numel()) * dtype_size(out.dtype);
  return plan_rows("interleave_rope", job, out_bytes, x, op);
}

// Both directions of InplacePartialRotaryMul: dyRef for the grad, xRef for the forward.
static Status prepare_partial(bool backward, const TensorView& x, const TensorView& cos, const TensorView& sin,
                              int64_t mode, const int64_t* slice, uint64_t slice_len, PreparedOp* op) {
  const bool cann = compat_mode() == Compat::kCann;
  const char* x_name = backward ? "dyRef" : "xRef";
  ROPE_CHECK(check_data(x, x_name));
  ROPE_CHECK(check_data(cos, "cos"));
  ROPE_CHECK(check_data(sin, "sin"));
  ROPE_CHECK(check_float_dtype(x, x_name));
  ROPE_CHECK(check_float_dtype(cos, "cos"));
  ROPE_CHECK(check_dtype_equals(sin, "sin", cos.dtype, "cos"));
  if (mode < 0 || mode > 3) {
    return fail(kShape, "rotaryMode must be 0 (half), 1 (interleave), 2 (quarter) or 3 (interleave-half), got %lld",
                static_cast<long long>(mode));
  }
  if (cann && mode != 1) {
    return fail(kShape, "rotaryMode must be 1 (interleave) under TXOPS_COMPAT=cann, got %lld",
                static_cast<long long>(mode));
  }
  ROPE_CHECK(check_rank(x, x_name, 4, kShape));
  const int64_t d = x.shape[3];
  if (d > kMaxWidth) {
    return fail(kShape, "%s dim 3 (D) must be at most %lld, got %lld", x_name, static_cast<long long>(kMaxWidth),
                static_cast<long long>(d));
  }
  // partialSlice {start, end}: null means the whole last axis
  int64_t start = 0, end = d;
  if (slice != nullptr) {
    if (slice_len != 2) {
      return fail(kShape, "partialSlice length must be 2 ({start, end}), got %llu",
                  static_cast<unsigned long long>(slice_len));
    }
    start = slice[0];
    end = slice[1];
  }
  if (start < 0 || start > d) {
    return fail(kShape, "partialSlice start must be in [0, %lld] (D), got %lld", static_cast<long long>(d),
                static_cast<long long>(start));
  }
  if (end < start || end > d) {
    return fail(kShape, "partialSlice end must be in [start=%lld, D=%lld], got %lld", static_cast<long long>(start),
                static_cast<long long>(d), static_cast<long long>(end));
  }
  const int64_t width = end - start;
  // An empty slice (start == end, CANN's default {0, 0} included) is a no-op that CANN returns from at once:
  // decided here, before the slice-length rules on cos/sin, after the rules every call obeys (ranks above,
  // cos/sin ranks below).
  if (width == 0) {
    ROPE_CHECK(check_rank(cos, "cos", 4, kShape));
    ROPE_CHECK(check_rank(sin, "sin", 4, kShape));
    plan_nothing(op);
    return Status();
  }
  const int64_t multiple = mode == 2 ? 4 : 2;
  if (width % multiple != 0) {
    return fail(kShape, "partialSlice length (end - start) must be a multiple of %lld for rotaryMode %lld, got %lld",
                static_cast<long long>(multiple), static_cast<long long>(mode), static_cast<long long>(width));
  }
  ROPE_CHECK(check_rank(cos, "cos", 4, kShape));
  ROPE_CHECK(check_rank(sin, "sin", 4, kShape));
  for (int dim = 0; dim < 3; ++dim) {
    ROPE_CHECK(check_dim_one_or(cos, "cos", dim, kDimNamesBSND[dim], x.shape[dim], kShape));
  }
  if (cos.shape[3] != width) {
    return fail(kShape, "cos dim 3 must equal the slice length end - start (%lld), got %lld",
                static_cast<long long>(width), static_cast<long long>(cos.shape[3]));
  }
  ROPE_CHECK(check_shape_equals(sin, "sin", cos, "cos", kShape));
  ROPE_CHECK(check_writable(x, x_name));
  const ViewSpan x_span = span_of(x);
  ROPE_CHECK(check_no_overlap(x, x_span, x_name, cos, span_of(cos), "cos", false));
  ROPE_CHECK(check_no_overlap(x, x_span, x_name, sin, span_of(sin), "sin", false));
  if (cann) {
    ROPE_CHECK(check_contiguous(x, x_name));
    ROPE_CHECK(check_contiguous(cos, "cos"));
    ROPE_CHECK(check_contiguous(sin, "sin"));
  }

  if (has_zero_extent(x)) {
    plan_nothing(op);
    return Status();
  }
  RowJob job;
  job.config.x_dtype = x.dtype;
  job.config.cs_dtype = cos.dtype;
  job.config.mode = static_cast<RotaryMode>(mode);
  job.config.backward = backward;
  job.config.width = width;
  fill_row_stream(x, x, cos, sin, start, &job.streams[0]);
  return plan_rows(backward ? "inplace_partial_rotary_mul_grad" : "inplace_partial_rotary_mul", job, 0, x, op);
}

Status prepare_inplace_partial_rotary_mul(const TensorView& x, const TensorView& cos, const TensorView& sin,
                                          int64_t mode, const int64_t* slice, uint64_t slice_len, PreparedOp* op) {
  return prepare_partial(false, x, cos, sin, mode, slice, slice_len, op);
}

Status prepare_inplace_partial_rotary_mul_grad(const TensorView& dy, const TensorView& cos, const TensorView& sin,
                                               int64_t mode, const int64_t* slice, uint64_t slice_len,
                                               PreparedOp* op) {
  return prepare_partial(true, dy, cos, sin, mode, slice, slice_len, op);
}

}  // namespace txops
