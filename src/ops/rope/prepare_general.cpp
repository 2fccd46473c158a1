// prepare_general.cpp — phase one of aclnnRotaryPositionEmbedding (and V2 with its `rotate` matrix) and
// aclnnRotaryPositionEmbeddingGrad: CANN's general single-tensor RoPE behind torch_npu.npu_rotary_mul. The
// rules of docs/rope.md in order (one check, one code, one message each), then the row plan (plan.cpp), the
// one-sided gradCos/gradSin group plan, or the matrix rows (matrix_rotate.cpp).
// Codes (CANN's table): null data 161001; dtypes and output views 161002; ranks, shapes and mode 561002.
#include "core/status.h"
#include "ops/rope/args.h"
#include "ops/rope/matrix_rotate.h"
#include "ops/rope/plan.h"
#include "ops/rope/prepare.h"
#include "ops/rope/validate.h"

namespace txops {

using namespace rope;

static constexpr StatusCode kShape = StatusCode::kTilingError;
static constexpr StatusCode kInvalid = StatusCode::kParamInvalid;

static Status parse_mode(int64_t mode, RotaryMode* out) {
  if (mode < 0 || mode > 3) {
    return fail(kShape, "mode must be 0 (half), 1 (interleave), 2 (quarter) or 3 (interleave-half), got %lld",
                static_cast<long long>(mode));
  }
  *out = static_cast<RotaryMode>(mode);
  return Status();
}

// x (or dy): rank 3 or 4, D even in [2, 1024], a multiple of 4 for quarter.
static Status check_activation_shape(const TensorView& x, const char* name, RotaryMode mode) {
  if (x.ndim != 3 && x.ndim != 4) return fail(kShape, "%s rank must be 3 or 4, got %d", name, x.ndim);
  ROPE_CHECK(check_head_dim(x, name, x.ndim - 1, kShape));
  const int64_t d = x.shape[x.ndim - 1];
  if (mode == RotaryMode::kQuarter && d % 4 != 0) {
    return fail(kShape, "%s dim %d (D) must be a multiple of 4 for mode 2 (quarter), got %lld", name, x.ndim - 1,
                static_cast<long long>(d));
  }
  return Status();
}

// cos broadcasts to x right-aligned: rank <= x's (CANN: equal), every dim 1 or x's, the last one D.
static Status check_cos_broadcast(const TensorView& cos, const TensorView& x, const char* x_name) {
  const bool cann = compat_mode() == Compat::kCann;
  if (cann && cos.ndim != x.ndim) {
    return fail(kShape, "cos rank must equal %s rank (%d) under TXOPS_COMPAT=cann, got %d", x_name, x.ndim,
                cos.ndim);
  }
  if (cos.ndim < 1 || cos.ndim > x.ndim) {
    return fail(kShape, "cos rank must be in [1, %d] (%s rank), got %d", x.ndim, x_name, cos.ndim);
  }
  const int shift = x.ndim - cos.ndim;
  for (int d = 0; d < cos.ndim; ++d) {
    const int64_t full = x.shape[shift + d];
    if (d == cos.ndim - 1) {
      if (cos.shape[d] != full) {
        return fail(kShape, "cos dim %d (D) must be %lld (%s D), got %lld", d, static_cast<long long>(full), x_name,
                    static_cast<long long>(cos.shape[d]));
      }
    } else if (cos.shape[d] != 1 && cos.shape[d] != full) {
      return fail(kShape, "cos dim %d must be 1 or %lld (%s dim %d), got %lld", d, static_cast<long long>(full),
                  x_name, shift + d, static_cast<long long>(cos.shape[d]));
    }
  }
  return Status();
}

// The view with size-1, stride-0 dims prepended up to `ndim` (the kernels see cos at x's rank).
static TensorView at_rank(const TensorView& v, int ndim) {
  TensorView r = v;
  const int shift = ndim - v.ndim;
  if (shift <= 0) return r;
  r.ndim = ndim;
  for (int d = ndim - 1; d >= 0; --d) {
    r.shape[d] = d >= shift ? v.shape[d - shift] : 1;
    r.strides[d] = d >= shift ? v.strides[d - shift] : 0;
  }
  return r;
}

struct NamedView {
  const TensorView* view;
  const char* name;
};

// Every output writable, disjoint from every input (except an allowed exact alias) and from the other outputs.
static Status check_output_views(const NamedView* outs, int n_out, const NamedView* ins, int n_in,
                                 bool (*alias_ok)(int out, int in)) {
  for (int o = 0; o < n_out; ++o) {
    if (outs[o].view == nullptr) continue;
    const TensorView& out = *outs[o].view;
    ROPE_CHECK(check_writable(out, outs[o].name));
    if (compat_mode() == Compat::kCann) ROPE_CHECK(check_contiguous(out, outs[o].name));
    const ViewSpan span = span_of(out);
    for (int i = 0; i < n_in; ++i) {
      if (ins[i].view == nullptr) continue;
      ROPE_CHECK(check_no_overlap(out, span, outs[o].name, *ins[i].view, span_of(*ins[i].view), ins[i].name,
                                  alias_ok(o, i)));
    }
    for (int p = 0; p < o; ++p) {
      if (outs[p].view == nullptr) continue;
      ROPE_CHECK(check_no_overlap(out, span, outs[o].name, *outs[p].view, span_of(*outs[p].view), outs[p].name,
                                  false));
    }
  }
  return Status();
}

Status prepare_rotary_position_embedding(const TensorView& x, const TensorView& cos, const TensorView& sin,
                                         int64_t mode_code, const TensorView* rotate, const TensorView& out,
                                         PreparedOp* op) {
  ROPE_CHECK(check_data(x, "x"));
  ROPE_CHECK(check_data(cos, "cos"));
  ROPE_CHECK(check_data(sin, "sin"));
  if (rotate != nullptr) ROPE_CHECK(check_data(*rotate, "rotate"));
  ROPE_CHECK(check_data(out, "out"));
  // dtypes
  ROPE_CHECK(check_float_dtype(x, "x"));
  ROPE_CHECK(check_cos_dtype(cos, "cos", x, "x"));
  ROPE_CHECK(check_dtype_equals(sin, "sin", cos.dtype, "cos"));
  if (rotate != nullptr) ROPE_CHECK(check_dtype_equals(*rotate, "rotate", x.dtype, "x"));
  ROPE_CHECK(check_dtype_equals(out, "out", x.dtype, "x"));
  // mode and shapes
  RotaryMode mode = RotaryMode::kHalf;
  ROPE_CHECK(parse_mode(mode_code, &mode));
  ROPE_CHECK(check_activation_shape(x, "x", mode));
  ROPE_CHECK(check_cos_broadcast(cos, x, "x"));
  ROPE_CHECK(check_shape_equals(sin, "sin", cos, "cos", kShape));
  const int64_t width = x.shape[x.ndim - 1];
  if (rotate != nullptr && (rotate->ndim != 2 || rotate->shape[0] != width || rotate->shape[1] != width)) {
    return fail(kShape, "rotate shape must be (%lld, %lld) (x D), got %s", static_cast<long long>(width),
                static_cast<long long>(width), rotate->shape_string().c_str());
  }
  ROPE_CHECK(check_shape_equals(out, "out", x, "x", kShape));
  // the output view: exactly x (in place) or disjoint from every input
  const NamedView outs[] = {{&out, "out"}};
  const NamedView ins[] = {{&x, "x"}, {&cos, "cos"}, {&sin, "sin"}, {rotate, "rotate"}};
  ROPE_CHECK(check_output_views(outs, 1, ins, 4, [](int, int in) { return in == 0; }));

  if (has_zero_extent(x)) {
    plan_nothing(op);
    return Status();
  }
  RowJob job;
  job.config.x_dtype = x.dtype;
  job.config.cs_dtype = cos.dtype;
  job.config.mode = mode;
  job.config.backward = false;
  job.config.width = width;
  const TensorView c = at_rank(cos, x.ndim), s = at_rank(sin, x.ndim);
  fill_row_stream(x, out, c, s, 0, &job.streams[0]);
  if (rotate != nullptr) return plan_matrix_rows(job.config, job.streams[0], *rotate, x, op);
  const uint64_t out_bytes = same_view(x, out) ? 0 : static_cast<uint64_t>(out.numel()) * dtype_size(out.dtype);
  return plan_rows("rotary_position_embedding", job, out_bytes, x, op);
}

Status prepare_rotary_position_embedding_grad(const TensorView& dy, const TensorView& cos, const TensorView& sin,
                                              const TensorView* x, int64_t mode_code, const TensorView& dx,
                                              const TensorView* dcos, const TensorView* dsin, PreparedOp* op) {
  ROPE_CHECK(check_data(dy, "dy"));
  ROPE_CHECK(check_data(cos, "cos"));
  ROPE_CHECK(check_data(sin, "sin"));
  if (x != nullptr) ROPE_CHECK(check_data(*x, "xOptional"));
  ROPE_CHECK(check_data(dx, "dxOut"));
  if (x != nullptr) {
    if (dcos == nullptr || dsin == nullptr) {
      return fail(StatusCode::kNullptr, "%s must not be null when xOptional is given, got null",
                  dcos == nullptr ? "dcosOut" : "dsinOut");
    }
    ROPE_CHECK(check_data(*dcos, "dcosOut"));
    ROPE_CHECK(check_data(*dsin, "dsinOut"));
  } else {
    dcos = dsin = nullptr;  // not computed, not touched
  }
  // dtypes
  ROPE_CHECK(check_float_dtype(dy, "dy"));
  ROPE_CHECK(check_cos_dtype(cos, "cos", dy, "dy"));
  ROPE_CHECK(check_dtype_equals(sin, "sin", cos.dtype, "cos"));
  if (x != nullptr) ROPE_CHECK(check_dtype_equals(*x, "xOptional", dy.dtype, "dy"));
  ROPE_CHECK(check_dtype_equals(dx, "dxOut", dy.dtype, "dy"));
  if (dcos != nullptr) ROPE_CHECK(check_dtype_equals(*dcos, "dcosOut", cos.dtype, "cos"));
  if (dsin != nullptr) ROPE_CHECK(check_dtype_equals(*dsin, "dsinOut", cos.dtype, "cos"));
  // mode and shapes
  RotaryMode mode = RotaryMode::kHalf;
  ROPE_CHECK(parse_mode(mode_code, &mode));
  ROPE_CHECK(check_activation_shape(dy, "dy", mode));
  ROPE_CHECK(check_cos_broadcast(cos, dy, "dy"));
  ROPE_CHECK(check_shape_equals(sin, "sin", cos, "cos", kShape));
  if (x != nullptr) ROPE_CHECK(check_shape_equals(*x, "xOptional", dy, "dy", kShape));
  ROPE_CHECK(check_shape_equals(dx, "dxOut", dy, "dy", kShape));
  if (dcos != nullptr) ROPE_CHECK(check_shape_equals(*dcos, "dcosOut", cos, "cos", kShape));
  if (dsin != nullptr) ROPE_CHECK(check_shape_equals(*dsin, "dsinOut", cos, "cos", kShape));
  // output views: dx may be exactly dy or x (rows are read before they are written); dcos, dsin disjoint
  const NamedView outs[] = {{&dx, "dxOut"}, {dcos, "dcosOut"}, {dsin, "dsinOut"}};
  const NamedView ins[] = {{&dy, "dy"}, {x, "xOptional"}, {&cos, "cos"}, {&sin, "sin"}};
  ROPE_CHECK(check_output_views(outs, 3, ins, 4, [](int out, int in) { return out == 0 && in <= 1; }));

  RotationConfig config;
  config.x_dtype = dy.dtype;
  config.cs_dtype = cos.dtype;
  config.mode = mode;
  config.backward = true;
  config.width = dy.shape[dy.ndim - 1];
  const TensorView c = at_rank(cos, dy.ndim), s = at_rank(sin, dy.ndim);
  const bool in_place = same_view(dy, dx) || (x != nullptr && same_view(*x, dx));
  const uint64_t out_bytes = in_place ? 0 : static_cast<uint64_t>(dx.numel()) * dtype_size(dx.dtype);
  if (x == nullptr) {
    if (has_zero_extent(dy)) {
      plan_nothing(op);
      return Status();
    }
    RowJob job;
    job.config = config;
    fill_row_stream(dy, dx, c, s, 0, &job.streams[0]);
    return plan_rows("rotary_position_embedding_grad", job, out_bytes, dy, op);
  }
  GradJob job;
  job.config = config;
  fill_grad_side(dy, dx, *x, c, 0, &job);
  job.sides[1].member_extent[0] = 0;  // one tensor: the second side has no rows
  fill_grad_groups(c, s, at_rank(*dcos, dy.ndim), at_rank(*dsin, dy.ndim), &job);
  return plan_grad_groups("rotary_position_embedding_grad", job, out_bytes, dy, op);
}

}  // namespace txops
