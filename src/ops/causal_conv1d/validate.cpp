// validate.cpp — phase-one rules of CausalConv1dFn and CausalConv1dUpdate, one check per rule, one code and one
// message "<param> <rule>, got <value>" each (README.md has the table). Codes as CANN's op_api gives them:
// null -> 161001; dtypes, ranks, sizes, host-visible integers -> 161002; the per-sequence tensors' and the bias's
// shapes -> 561002. Beyond CANN, txops checks what its kernel leaves to the caller (query_start_loc values, cache
// indices in range and distinct, accepted counts in range), so no call reads or writes outside what it was
// given. compat_mode() == kCann adds CANN's dtype and size limits. Reads no tensor data except the int32 tensors.
#include <algorithm>
#include <cinttypes>
#include <vector>

#include "core/view_rules.h"
#include "ops/causal_conv1d/problem.h"

namespace txops {
namespace {

constexpr int64_t kCannMinDim = 64, kCannMaxDim = 16384, kCannMaxBatch = 1024;

bool cann() { return compat_mode() == Compat::kCann; }

Status require_conv_dtype(const TensorView& x) {
  const bool half = x.dtype == DType::kBF16 || x.dtype == DType::kF16;
  if (cann() && !half)
    return fail(StatusCode::kParamInvalid, "x dtype must be fp16 or bf16 (TXOPS_COMPAT=cann), got %s",
                dtype_name(x.dtype));
  if (!half && x.dtype != DType::kF32)
    return fail(StatusCode::kParamInvalid, "x dtype must be fp16, bf16 or fp32, got %s", dtype_name(x.dtype));
  return Status();
}

// An optional int32 tensor of shape (n,) -> 161002 for the dtype, `shape_code` for the shape.
Status require_int32_vector(const TensorView* v, const char* name, int64_t n, StatusCode shape_code) {
  if (v == nullptr) return Status();
  Status st = require_dtype(*v, name, DType::kI32);
  if (st.ok()) st = require_shape(shape_code, *v, name, "(B,)", {n});
  return st;
}

// Sequence bounds: query_start_loc (B+1,) int32, [0] = 0, non-decreasing, [B] = tokens; or, for 3-D x without
// it, B sequences of L tokens.
Status check_sequences(const TensorView& x, const TensorView* qsl, ConvProblem* p, std::vector<int64_t>* start) {
  const bool varlen = x.ndim == 2;
  const int64_t tokens = varlen ? x.shape[0] : x.shape[0] * x.shape[1];
  if (qsl == nullptr) {
    start->resize(p->batch + 1);
    for (int64_t b = 0; b <= p->batch; ++b) (*start)[b] = b * x.shape[1];
    return Status();
  }
  Status st = require_dtype(*qsl, "queryStartLocOptional", DType::kI32);
  if (st.ok()) st = require_ndim(StatusCode::kParamInvalid, *qsl, "queryStartLocOptional", 1, "(B+1,)");
  if (!st.ok()) return st;
  if (varlen) p->batch = qsl->shape[0] - 1;
  if (qsl->shape[0] != p->batch + 1 || p->batch < 1)
    return fail(StatusCode::kParamInvalid, "queryStartLocOptional must have B+1 entries (B = %" PRId64 ", >= 1), got %" PRId64,
                varlen ? std::max<int64_t>(p->batch, 1) : p->batch, qsl->shape[0]);
  start->resize(p->batch + 1);
  for (int64_t b = 0; b <= p->batch; ++b) {
    const int64_t v = int32_at(*qsl, b);
    const int64_t want_min = b == 0 ? 0 : (*start)[b - 1];
    if (b == 0 && v != 0) return fail(StatusCode::kParamInvalid, "queryStartLocOptional[0] must be 0, got %" PRId64, v);
    if (v < want_min)
      return fail(StatusCode::kParamInvalid,
                  "queryStartLocOptional must be non-decreasing, got [%" PRId64 "] = %" PRId64 " < %" PRId64, b, v,
                  want_min);
    if (!varlen && v != b * x.shape[1])
      return fail(StatusCode::kParamInvalid,
                  "queryStartLocOptional[%" PRId64 "] must be %" PRId64 " for 3-D x (B, L, dim) with L = %" PRId64
                  ", got %" PRId64, b, b * x.shape[1], x.shape[1], v);
    (*start)[b] = v;
  }
  if ((*start)[p->batch] != tokens)
    return fail(StatusCode::kParamInvalid,
                "queryStartLocOptional[B] must equal the token count of x (%" PRId64 "), got %" PRId64, tokens,
                (*start)[p->batch]);
  return Status();
}

}  // namespace

Status validate_causal_conv1d(bool update, const TensorView& x, const TensorView& weight,
                              const TensorView& conv_states, const TensorView* bias,
                              const TensorView* query_start_loc, const TensorView* cache_indices,
                              const TensorView* per_sequence, ConvActivation activation, int64_t null_block_id,
                              const TensorView& y, ConvProblem* p) {
  const StatusCode invalid = StatusCode::kParamInvalid, tiling = StatusCode::kTilingError;
  const char* per_sequence_name = update ? "numAcceptedTokensOptional" : "initialStateModeOptional";
  Status st;
  const NamedView required[] = {{&x, "x"}, {&weight, "weight"}, {&conv_states, "convStatesRef"}, {&y, "y"}};
  for (const auto& r : required)
    if (!(st = require_data(*r.first, r.second)).ok()) return st;
  const NamedView optional[] = {{bias, "biasOptional"},
                                {query_start_loc, "queryStartLocOptional"},
                                {cache_indices, "cacheIndicesOptional"},
                                {per_sequence, per_sequence_name}};
  for (const auto& o : optional)
    if (o.first && !(st = require_data(*o.first, o.second)).ok()) return st;
  if (activation != ConvActivation::kNone && activation != ConvActivation::kSilu)
    return fail(invalid, "activation must be none (0) or silu (1), got %d", static_cast<int>(activation));

  // dtypes
  if (!(st = require_conv_dtype(x)).ok()) return st;
  const NamedView same_as_x[] = {{&weight, "weight"}, {&conv_states, "convStatesRef"}, {bias, "biasOptional"}, {&y, "y"}};
  for (const auto& r : same_as_x)
    if (r.first && !(st = require_same_dtype(*r.first, r.second, x, "x")).ok()) return st;

  // x, weight, conv_states
  if (x.ndim != 2 && x.ndim != 3)
    return fail(invalid, "x must be 3-D (B, L, dim) or 2-D (cuSeqLen, dim), got %d-D %s", x.ndim,
                x.shape_string().c_str());
  const bool varlen = x.ndim == 2;
  if (varlen && query_start_loc == nullptr)
    return fail(invalid, "queryStartLocOptional must be given with 2-D (varlen) x, got null");
  if (update && per_sequence == nullptr && (varlen || x.shape[1] != 1))
    return fail(invalid, "x must be (B, 1, dim) without numAcceptedTokensOptional (several tokens per sequence are "
                         "speculative decoding), got %s", x.shape_string().c_str());
  p->update = update;
  p->dim = x.shape[x.ndim - 1];
  p->batch = varlen ? 0 : x.shape[0];
  const int64_t tokens = varlen ? x.shape[0] : x.shape[0] * x.shape[1];
  if (!varlen && (x.shape[0] < 1 || x.shape[1] < 1))
    return fail(invalid, "x dims 0 (B) and 1 (L) must be >= 1, got %s", x.shape_string().c_str());
  if (tokens < 1 || p->dim < 1) return fail(invalid, "x must not be empty, got %s", x.shape_string().c_str());
  if (cann() && (p->dim < kCannMinDim || p->dim > kCannMaxDim || p->dim * dtype_size(x.dtype) % 32 != 0))
    return fail(invalid, "x dim (dim) must be in [64, 16384] with dim * %d bytes a multiple of 32 (TXOPS_COMPAT=cann), "
                "got %" PRId64, static_cast<int>(dtype_size(x.dtype)), p->dim);
  if (!(st = require_ndim(invalid, weight, "weight", 2, "(K, dim)")).ok()) return st;
  p->width = weight.shape[0];
  if (p->width < 2 || p->width > 4) return fail(invalid, "weight dim 0 (K) must be in [2, 4], got %" PRId64, p->width);
  if (weight.shape[1] != p->dim)
    return fail(invalid, "weight dim 1 must equal x's dim (%" PRId64 "), got %" PRId64, p->dim, weight.shape[1]);
  if (!(st = require_ndim(invalid, conv_states, "convStatesRef", 3, "(numCacheLines, stateLen, dim)")).ok()) return st;
  p->lines = conv_states.shape[0];
  p->state_len = conv_states.shape[1];
  if (conv_states.shape[2] != p->dim)
    return fail(invalid, "convStatesRef dim 2 must equal x's dim (%" PRId64 "), got %" PRId64, p->dim,
                conv_states.shape[2]);
  if (p->state_len < p->width - 1)
    return fail(invalid, "convStatesRef dim 1 (stateLen) must be >= K-1 = %" PRId64 ", got %" PRId64, p->width - 1,
                p->state_len);
  if (y.ndim != x.ndim || !std::equal(x.shape, x.shape + x.ndim, y.shape))
    return fail(invalid, "y shape must equal x's %s, got %s", x.shape_string().c_str(), y.shape_string().c_str());

  // sequences, lines, per-sequence integers
  std::vector<int64_t> start;
  if (!(st = check_sequences(x, query_start_loc, p, &start)).ok()) return st;
  const int64_t B = p->batch;
  if (cann() && B > kCannMaxBatch)
    return fail(invalid, "batch must be in [1, 1024] (TXOPS_COMPAT=cann), got %" PRId64, B);
  if (bias && !(st = require_shape(tiling, *bias, "biasOptional", "(dim,)", {p->dim})).ok()) return st;
  if (!(st = require_int32_vector(cache_indices, "cacheIndicesOptional", B, tiling)).ok()) return st;
  if (!(st = require_int32_vector(per_sequence, per_sequence_name, B, tiling)).ok()) return st;
  if (update && per_sequence && cann() && p->width != 4)
    return fail(invalid, "weight dim 0 (K) must be 4 with numAcceptedTokensOptional (TXOPS_COMPAT=cann), got %" PRId64,
                p->width);
  if (cache_indices == nullptr && p->lines < B)
    return fail(invalid, "convStatesRef dim 0 (numCacheLines) must be >= B = %" PRId64 " without cacheIndicesOptional, "
                "got %" PRId64, B, p->lines);
  p->length.resize(B), p->line.resize(B), p->history_row.resize(B);
  p->x_offset.resize(B), p->y_offset.resize(B);
  std::vector<int64_t> used;
  for (int64_t b = 0; b < B; ++b) {
    p->length[b] = start[b + 1] - start[b];
    int64_t line = b;
    if (cache_indices) {
      line = int32_at(*cache_indices, b);
      if (line == null_block_id) {
        line = -1;
      } else if (line < 0 || line >= p->lines) {
        return fail(invalid, "cacheIndicesOptional[%" PRId64 "] must be in [0, numCacheLines = %" PRId64
                    ") or nullBlockId (%" PRId64 "), got %" PRId64, b, p->lines, null_block_id, line);
      }
    }
    if (line >= 0) used.push_back(line);
    p->line[b] = line;
    int64_t history = 0;
    if (!update) {
      const int64_t mode = per_sequence ? int32_at(*per_sequence, b) : 0;
      if (mode != 0 && mode != 1)
        return fail(invalid, "initialStateModeOptional[%" PRId64 "] must be 0 or 1, got %" PRId64, b, mode);
      history = mode == 1 ? 0 : -1;
    } else if (per_sequence) {
      const int64_t accepted = int32_at(*per_sequence, b);
      if (accepted < 0 || accepted > p->state_len - (p->width - 1))
        return fail(invalid, "numAcceptedTokensOptional[%" PRId64 "] must be in [0, stateLen - (K-1) = %" PRId64
                    "], got %" PRId64, b, p->state_len - (p->width - 1), accepted);
      if (p->state_len < p->width - 2 + p->length[b])
        return fail(tiling, "convStatesRef dim 1 (stateLen) must be >= K-2 + the tokens of sequence %" PRId64
                    " (%" PRId64 ") with numAcceptedTokensOptional, got %" PRId64, b, p->width - 2 + p->length[b],
                    p->state_len);
      history = std::max<int64_t>(accepted - 1, 0);
    }
    p->history_row[b] = history;
    p->x_offset[b] = varlen ? start[b] * x.strides[0] : b * x.strides[0];
    p->y_offset[b] = varlen ? start[b] * y.strides[0] : b * y.strides[0];
  }
  std::sort(used.begin(), used.end());
  const auto repeated = std::adjacent_find(used.begin(), used.end());
  if (repeated != used.end())
    return fail(invalid, "cacheIndicesOptional must not repeat a line other than nullBlockId (two sequences would "
                "write it), got line %" PRId64 " twice", *repeated);
  p->x_token_stride = x.strides[x.ndim - 2];
  p->y_token_stride = y.strides[y.ndim - 2];

  // y and the states are written: no broadcast dims, no overlap with each other or any input.
  if (!(st = check_outputs({{&y, "y"}, {&conv_states, "convStatesRef"}},
                           {{&x, "x"}, {&weight, "weight"}, {bias, "biasOptional"},
                            {query_start_loc, "queryStartLocOptional"}, {cache_indices, "cacheIndicesOptional"},
                            {per_sequence, per_sequence_name}},
                           nullptr, nullptr))
           .ok())
    return st;
  p->activation = activation;
  p->dtype = x.dtype;
  p->x = x, p->weight = weight, p->states = conv_states, p->y = y;
  p->has_bias = bias != nullptr;
  if (bias) p->bias = *bias;
  return Status();
}

}  // namespace txops
