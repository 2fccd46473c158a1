// prepare_apply.cpp — phase one of aclnnApplyRotaryPosEmbV2 (forward, in place on query and key) and
// aclnnApplyRotaryPosEmbGrad (fused backward, optional gradCos/gradSin), and the rotary-mode string parser.
// Codes: null data or a required output missing 161001; everything else 161002 (CANN files this op's shape
// errors under 161002). TXOPS_COMPAT=cann narrows to CANN's documented support (see README.md).
#include <cstring>

#include "core/status.h"
#include "ops/rope/args.h"
#include "ops/rope/plan.h"
#include "ops/rope/prepare.h"
#include "ops/rope/validate.h"

namespace txops {

using namespace rope;

static constexpr StatusCode kInvalid = StatusCode::kParamInvalid;

// Where B, S (or T) and N sit in each layout (docs/rope.md); cos has N = 1, B in {1, B}, S = S.
struct LayoutDims {
  int rank;
  int b_dim;  // -1 for TND
  int n_dim;
  const char* names[4];
};

static Status layout_dims(int64_t layout, LayoutDims* dims) {
  const bool cann = compat_mode() == Compat::kCann;
  switch (layout) {
    case 1: *dims = {4, 0, 2, {"B", "S", "N", "D"}}; return Status();
    case 2: *dims = {4, 1, 2, {"S", "B", "N", "D"}}; return Status();
    case 3:
      if (cann) break;
      *dims = {4, 0, 1, {"B", "N", "S", "D"}};
      return Status();
    case 4: *dims = {3, -1, 1, {"T", "N", "D", ""}}; return Status();
    default: break;
  }
  if (cann) {
    return fail(kInvalid, "layout must be 1 (BSND), 2 (SBND) or 4 (TND) under TXOPS_COMPAT=cann, got %lld",
                static_cast<long long>(layout));
  }
  return fail(kInvalid, "layout must be 1 (BSND), 2 (SBND), 3 (BNSD) or 4 (TND), got %lld",
              static_cast<long long>(layout));
}

// `other` (key side) matches `ref` (query side) in every dim but N.
static Status check_pair(const TensorView& other, const char* other_name, const TensorView& ref,
                         const LayoutDims& dims) {
  ROPE_CHECK(check_rank(other, other_name, dims.rank, kInvalid));
  for (int d = 0; d < dims.rank; ++d) {
    if (d == dims.n_dim) continue;
    ROPE_CHECK(check_dim(other, other_name, d, dims.names[d], ref.shape[d], kInvalid));
  }
  return Status();
}

// cos: N = 1, B in {1, B}, S (T) = S; last dim checked by the caller.
static Status check_cos_shape(const TensorView& cos, const TensorView& q, const LayoutDims& dims) {
  ROPE_CHECK(check_rank(cos, "cos", dims.rank, kInvalid));
  for (int d = 0; d < dims.rank - 1; ++d) {
    if (d == dims.n_dim) {
      ROPE_CHECK(check_dim(cos, "cos", d, "N", 1, kInvalid));
    } else if (d == dims.b_dim) {
      ROPE_CHECK(check_dim_one_or(cos, "cos", d, "B", q.shape[d], kInvalid));
    } else {
      ROPE_CHECK(check_dim(cos, "cos", d, dims.names[d], q.shape[d], kInvalid));
    }
  }
  return Status();
}

static Status check_mode(RotaryMode mode, const char* name, bool grad) {
  const bool cann = compat_mode() == Compat::kCann;
  if (grad && cann && mode != RotaryMode::kHalf) {
    return fail(kInvalid, "%s must be half under TXOPS_COMPAT=cann, got %s", name, rotary_mode_name(mode));
  }
  if (mode == RotaryMode::kHalf || mode == RotaryMode::kInterleave || mode == RotaryMode::kQuarter) return Status();
  return fail(kInvalid, "%s must be half, interleave or quarter, got %s", name, rotary_mode_name(mode));
}

static Status check_width_multiple(int64_t width, const char* what, RotaryMode mode) {
  if (mode != RotaryMode::kQuarter || width % 4 == 0) return Status();
  return fail(kInvalid, "%s must be a multiple of 4 for rotaryMode quarter, got %lld", what,
              static_cast<long long>(width));
}

Status prepare_apply_rotary_pos_emb(const TensorView& query, const TensorView& key, const TensorView& cos,
                                    const TensorView& sin, int64_t layout, RotaryMode mode, PreparedOp* op) {
  ROPE_CHECK(check_data(query, "queryRef"));
  ROPE_CHECK(check_data(key, "keyRef"));
  ROPE_CHECK(check_data(cos, "cos"));
  ROPE_CHECK(check_data(sin, "sin"));
  LayoutDims dims;
  ROPE_CHECK(layout_dims(layout, &dims));
  ROPE_CHECK(check_mode(mode, "rotaryMode", false));
  ROPE_CHECK(check_float_dtype(query, "queryRef"));
  ROPE_CHECK(check_dtype_equals(key, "keyRef", query.dtype, "queryRef"));
  ROPE_CHECK(check_cos_dtype(cos, "cos", query, "queryRef"));
  ROPE_CHECK(check_dtype_equals(sin, "sin", cos.dtype, "cos"));
  ROPE_CHECK(check_rank(query, "queryRef", dims.rank, kInvalid));
  const int last = dims.rank - 1;
  ROPE_CHECK(check_head_dim(query, "queryRef", last, kInvalid));
  ROPE_CHECK(check_pair(key, "keyRef", query, dims));
  ROPE_CHECK(check_cos_shape(cos, query, dims));
  const int64_t width = cos.shape[last];
  if (width < 2 || width > query.shape[last] || width % 2 != 0) {
    return fail(kInvalid, "cos dim %d (D) must be even and in [2, %lld] (query D), got %lld", last,
                static_cast<long long>(query.shape[last]), static_cast<long long>(width));
  }
  ROPE_CHECK(check_width_multiple(width, "cos D", mode));
  ROPE_CHECK(check_shape_equals(sin, "sin", cos, "cos", kInvalid));
  ROPE_CHECK(check_writable(query, "queryRef"));
  ROPE_CHECK(check_writable(key, "keyRef"));
  const ViewSpan q_span = span_of(query), k_span = span_of(key), c_span = span_of(cos), s_span = span_of(sin);
  ROPE_CHECK(check_no_overlap(query, q_span, "queryRef", key, k_span, "keyRef", false));
  ROPE_CHECK(check_no_overlap(query, q_span, "queryRef", cos, c_span, "cos", false));
  ROPE_CHECK(check_no_overlap(query, q_span, "queryRef", sin, s_span, "sin", false));
  ROPE_CHECK(check_no_overlap(key, k_span, "keyRef", cos, c_span, "cos", false));
  ROPE_CHECK(check_no_overlap(key, k_span, "keyRef", sin, s_span, "sin", false));

  RowJob job;
  job.config.x_dtype = query.dtype;
  job.config.cs_dtype = cos.dtype;
  job.config.mode = mode;
  job.config.backward = false;
  job.config.width = width;
  job.stream_count = 2;
  fill_row_stream(query, query, cos, sin, 0, &job.streams[0]);
  fill_row_stream(key, key, cos, sin, 0, &job.streams[1]);
  return plan_rows("apply_rotary_pos_emb", job, 0, query, op);
}

Status prepare_apply_rotary_pos_emb_v1(const TensorView& query, const TensorView& key, const TensorView& cos,
                                       const TensorView& sin, int64_t layout, PreparedOp* op) {
  if (compat_mode() == Compat::kCann) {  // V1's documented support: BSND or TND, D 64 or 128, cos D = D
    if (layout != 1 && layout != 4) {
      return fail(kInvalid, "layout must be 1 (BSND) or 4 (TND) under TXOPS_COMPAT=cann, got %lld",
                  static_cast<long long>(layout));
    }
    const TensorView* views[] = {&query, &key, &cos, &sin};
    const char* names[] = {"queryRef", "keyRef", "cos", "sin"};
    for (int i = 0; i < 4; ++i) {
      const int64_t d = views[i]->ndim > 0 ? views[i]->shape[views[i]->ndim - 1] : 0;
      if (d != 64 && d != 128) {
        return fail(kInvalid, "%s last dim (D) must be 64 or 128 under TXOPS_COMPAT=cann, got %lld", names[i],
                    static_cast<long long>(d));
      }
    }
  }
  return prepare_apply_rotary_pos_emb(query, key, cos, sin, layout, RotaryMode::kHalf, op);
}

Status prepare_apply_rotary_pos_emb_grad(const TensorView& grad_query_embed, const TensorView& grad_key_embed,
                                         const TensorView& cos, const TensorView& sin, const TensorView* query,
                                         const TensorView* key, RotaryMode mode, int64_t layout,
                                         const TensorView& grad_query, const TensorView& grad_key,
                                         const TensorView* grad_cos, const TensorView* grad_sin, PreparedOp* op) {
  const TensorView& dqe = grad_query_embed;
  const TensorView& dke = grad_key_embed;
  ROPE_CHECK(check_data(dqe, "gradQueryEmbed"));
  ROPE_CHECK(check_data(dke, "gradKeyEmbed"));
  ROPE_CHECK(check_data(cos, "cos"));
  ROPE_CHECK(check_data(sin, "sin"));
  ROPE_CHECK(check_data(grad_query, "gradQueryOut"));
  ROPE_CHECK(check_data(grad_key, "gradKeyOut"));
  if ((query == nullptr) != (key == nullptr)) {
    return fail(kInvalid, "queryOptional and keyOptional must be given together, got only %s",
                query != nullptr ? "queryOptional" : "keyOptional");
  }
  const bool with_cos_grad = query != nullptr;
  if (with_cos_grad) {
    ROPE_CHECK(check_data(*query, "queryOptional"));
    ROPE_CHECK(check_data(*key, "keyOptional"));
    if (grad_cos == nullptr || grad_sin == nullptr) {
      return fail(StatusCode::kNullptr, "%s must not be null when queryOptional and keyOptional are given, got null",
                  grad_cos == nullptr ? "gradCosOut" : "gradSinOut");
    }
    ROPE_CHECK(check_data(*grad_cos, "gradCosOut"));
    ROPE_CHECK(check_data(*grad_sin, "gradSinOut"));
  }
  LayoutDims dims;
  ROPE_CHECK(layout_dims(layout, &dims));
  ROPE_CHECK(check_mode(mode, "rotaryModeOptional", true));
  // dtypes: activations one dtype; cos/sin (and their grads) that dtype or fp32
  ROPE_CHECK(check_float_dtype(dqe, "gradQueryEmbed"));
  ROPE_CHECK(check_dtype_equals(dke, "gradKeyEmbed", dqe.dtype, "gradQueryEmbed"));
  ROPE_CHECK(check_cos_dtype(cos, "cos", dqe, "gradQueryEmbed"));
  ROPE_CHECK(check_dtype_equals(sin, "sin", cos.dtype, "cos"));
  ROPE_CHECK(check_dtype_equals(grad_query, "gradQueryOut", dqe.dtype, "gradQueryEmbed"));
  ROPE_CHECK(check_dtype_equals(grad_key, "gradKeyOut", dqe.dtype, "gradQueryEmbed"));
  if (with_cos_grad) {
    ROPE_CHECK(check_dtype_equals(*query, "queryOptional", dqe.dtype, "gradQueryEmbed"));
    ROPE_CHECK(check_dtype_equals(*key, "keyOptional", dqe.dtype, "gradQueryEmbed"));
    ROPE_CHECK(check_dtype_equals(*grad_cos, "gradCosOut", cos.dtype, "cos"));
    ROPE_CHECK(check_dtype_equals(*grad_sin, "gradSinOut", cos.dtype, "cos"));
  }
  // shapes
  ROPE_CHECK(check_rank(dqe, "gradQueryEmbed", dims.rank, kInvalid));
  const int last = dims.rank - 1;
  ROPE_CHECK(check_head_dim(dqe, "gradQueryEmbed", last, kInvalid));
  ROPE_CHECK(check_width_multiple(dqe.shape[last], "gradQueryEmbed D", mode));
  ROPE_CHECK(check_pair(dke, "gradKeyEmbed", dqe, dims));
  ROPE_CHECK(check_cos_shape(cos, dqe, dims));
  ROPE_CHECK(check_dim(cos, "cos", last, "D", dqe.shape[last], kInvalid));
  ROPE_CHECK(check_shape_equals(sin, "sin", cos, "cos", kInvalid));
  ROPE_CHECK(check_shape_equals(grad_query, "gradQueryOut", dqe, "gradQueryEmbed", kInvalid));
  ROPE_CHECK(check_shape_equals(grad_key, "gradKeyOut", dke, "gradKeyEmbed", kInvalid));
  if (with_cos_grad) {
    ROPE_CHECK(check_shape_equals(*query, "queryOptional", dqe, "gradQueryEmbed", kInvalid));
    ROPE_CHECK(check_shape_equals(*key, "keyOptional", dke, "gradKeyEmbed", kInvalid));
    ROPE_CHECK(check_shape_equals(*grad_cos, "gradCosOut", cos, "cos", kInvalid));
    ROPE_CHECK(check_shape_equals(*grad_sin, "gradSinOut", cos, "cos", kInvalid));
  }
  // output views: no self-overlap; disjoint from each other and from the inputs, except that a grad may
  // replace its own embed grad or saved input exactly (rows are read before they are written)
  struct Named {
    const TensorView* view;
    const char* name;
    ViewSpan span;
  };
  Named outputs[] = {{&grad_query, "gradQueryOut", {}}, {&grad_key, "gradKeyOut", {}},
                     {with_cos_grad ? grad_cos : nullptr, "gradCosOut", {}},
                     {with_cos_grad ? grad_sin : nullptr, "gradSinOut", {}}};
  Named inputs[] = {{&dqe, "gradQueryEmbed", {}}, {&dke, "gradKeyEmbed", {}}, {&cos, "cos", {}},
                    {&sin, "sin", {}}, {query, "queryOptional", {}}, {key, "keyOptional", {}}};
  for (Named& t : outputs) {
    if (t.view != nullptr) t.span = span_of(*t.view);
  }
  for (Named& t : inputs) {
    if (t.view != nullptr) t.span = span_of(*t.view);
  }
  for (int o = 0; o < 4; ++o) {
    const Named& out = outputs[o];
    if (out.view == nullptr) continue;
    ROPE_CHECK(check_writable(*out.view, out.name));
    for (int i = 0; i < 6; ++i) {
      const Named& in = inputs[i];
      if (in.view == nullptr) continue;
      const bool own_side = (o == 0 && (i == 0 || i == 4)) || (o == 1 && (i == 1 || i == 5));
      ROPE_CHECK(check_no_overlap(*out.view, out.span, out.name, *in.view, in.span, in.name, own_side));
    }
    for (int p = 0; p < o; ++p) {
      const Named& other = outputs[p];
      if (other.view == nullptr) continue;
      ROPE_CHECK(check_no_overlap(*out.view, out.span, out.name, *other.view, other.span, other.name, false));
    }
  }
  if (compat_mode() == Compat::kCann) {
    for (const Named& t : outputs) {
      if (t.view != nullptr) ROPE_CHECK(check_contiguous(*t.view, t.name));
    }
    for (const Named& t : inputs) {
      if (t.view != nullptr) ROPE_CHECK(check_contiguous(*t.view, t.name));
    }
  }

  RotationConfig config;
  config.x_dtype = dqe.dtype;
  config.cs_dtype = cos.dtype;
  config.mode = mode;
  config.backward = true;
  config.width = dqe.shape[last];
  const uint64_t out_bytes =
      static_cast<uint64_t>(grad_query.numel() + grad_key.numel()) * dtype_size(grad_query.dtype);
  if (!with_cos_grad) {
    RowJob job;
    job.config = config;
    job.stream_count = 2;
    fill_row_stream(dqe, grad_query, cos, sin, 0, &job.streams[0]);
    fill_row_stream(dke, grad_key, cos, sin, 0, &job.streams[1]);
    const bool in_place = same_view(dqe, grad_query) && same_view(dke, grad_key);
    return plan_rows("apply_rotary_pos_emb_grad", job, in_place ? 0 : out_bytes, dqe, op);
  }
  GradJob job;
  job.config = config;
  fill_grad_side(dqe, grad_query, *query, cos, 0, &job);
  fill_grad_side(dke, grad_key, *key, cos, 1, &job);
  fill_grad_groups(cos, sin, *grad_cos, *grad_sin, &job);
  const bool in_place = same_view(dqe, grad_query) || same_view(*query, grad_query);
  return plan_grad_groups("apply_rotary_pos_emb_grad", job, in_place ? 0 : out_bytes, dqe, op);
}

Status parse_rotary_mode(const char* text, const char* param, RotaryMode* mode) {
  if (text == nullptr || std::strcmp(text, "half") == 0) {
    *mode = RotaryMode::kHalf;
  } else if (std::strcmp(text, "interleave") == 0) {
    *mode = RotaryMode::kInterleave;
  } else if (std::strcmp(text, "quarter") == 0) {
    *mode = RotaryMode::kQuarter;
  } else {
    return fail(kInvalid, "%s must be \"half\", \"interleave\" or \"quarter\", got \"%.64s\"", param, text);
  }
  return Status();
}

}  // namespace txops
