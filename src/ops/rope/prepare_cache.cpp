// prepare_cache.cpp — phase one of aclnnRopeWithSinCosCache and aclnnRopeWithSinCosCacheV2 (vLLM's
// rotary_embedding, with the mrope mode of the Qwen-VL models): the rules of docs/rope.md in order (one check,
// one code, one message each), then the token plan run by cache_rows.cpp.
// Codes (CANN's table): null data 161001; dtypes, cacheMode and output views 161002; shapes, headSize and
// mropeSection 561002; rotary dim larger than headSize 361001; positions outside the cache 161002 (host-visible
// integers, read here as the gated delta rule's indices are; the run checks them again before it writes).
#include <cstdio>
#include <string>

#include "core/parallel.h"
#include "core/plan_record.h"
#include "core/status.h"
#include "core/streaming.h"
#include "core/verbose.h"
#include "ops/rope/cache_rows.h"
#include "ops/rope/prepare.h"
#include "ops/rope/validate.h"

namespace txops {

using namespace rope;

static constexpr StatusCode kShape = StatusCode::kTilingError;
static constexpr StatusCode kInvalid = StatusCode::kParamInvalid;
static constexpr int64_t kMinChannelsPerThread = 32 * 1024;

// CANN's supported mropeSection values (cacheMode 1 adds [11, 11, 10]).
static bool cann_section_supported(const int64_t* sec, uint64_t n, int64_t cache_mode) {
  static const int64_t kThree[][3] = {{16, 24, 24}, {24, 20, 20}, {8, 12, 12}, {11, 11, 10}};
  if (n == 4) return sec[0] == 16 && sec[1] == 16 && sec[2] == 16 && sec[3] == 16;
  for (int i = 0; i < (cache_mode == 1 ? 4 : 3); ++i) {
    if (sec[0] == kThree[i][0] && sec[1] == kThree[i][1] && sec[2] == kThree[i][2]) return true;
  }
  return false;
}

static std::string list_string(const int64_t* v, uint64_t n) {
  std::string s = "[";
  for (uint64_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

static Status check_sections(const int64_t* sec, uint64_t n, int64_t rotary_dim, int64_t cache_mode) {
  if (n != 3 && n != 4) {
    return fail(kShape, "mropeSection must have 3 or 4 elements, got %llu", static_cast<unsigned long long>(n));
  }
  int64_t sum = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (sec[i] < 0 || sec[i] > kMaxWidth) {
      return fail(kShape, "mropeSection elements must be in [0, %lld], got %s", static_cast<long long>(kMaxWidth),
                  list_string(sec, n).c_str());
    }
    sum += sec[i];
  }
  if (sum != rotary_dim / 2) {
    return fail(kShape, "mropeSection must sum to rotaryDim / 2 = %lld (cosSinCache dim 1 / 2), got %s",
                static_cast<long long>(rotary_dim / 2), list_string(sec, n).c_str());
  }
  if (cache_mode == 1 && n == 4) {
    return fail(kShape, "cacheMode 1 needs a 3-element mropeSection, got %s", list_string(sec, n).c_str());
  }
  if (compat_mode() == Compat::kCann && !cann_section_supported(sec, n, cache_mode)) {
    return fail(kShape, "mropeSection must be one of CANN's supported values under TXOPS_COMPAT=cann, got %s",
                list_string(sec, n).c_str());
  }
  return Status();
}

// dim 1 of a (T, heads * headSize) tensor: a multiple of headSize.
static Status check_heads(const TensorView& v, const char* name, int64_t head_size) {
  if (v.shape[1] % head_size == 0) return Status();
  return fail(kShape, "%s dim 1 must be a multiple of headSize (%lld), got %lld", name,
              static_cast<long long>(head_size), static_cast<long long>(v.shape[1]));
}

// CANN: head size and rotary dim multiples of 32 (16-bit) or 16 (fp32).
static Status check_cann_multiple(int64_t value, const char* what, DType dtype) {
  const int64_t m = dtype == DType::kF32 ? 16 : 32;
  if (compat_mode() != Compat::kCann || value % m == 0) return Status();
  return fail(kShape, "%s must be a multiple of %lld for %s under TXOPS_COMPAT=cann, got %lld", what,
              static_cast<long long>(m), dtype_name(dtype), static_cast<long long>(value));
}

static void fill_side(const TensorView& in, const TensorView& out, int64_t head_size, int64_t rotary_dim,
                      CacheSide* side) {
  side->in = in.data;
  side->out = out.data;
  side->heads = in.shape[1] / head_size;
  side->in_token_stride = in.strides[0];
  side->out_token_stride = out.strides[0];
  side->in_step = in.strides[1];
  side->out_step = out.strides[1];
  side->copy_pass = rotary_dim < head_size && !same_view(in, out);
}

Status prepare_rope_with_sin_cos_cache(const TensorView& positions, const TensorView& query, const TensorView& key,
                                       const TensorView& cache, const int64_t* section, uint64_t section_count,
                                       int64_t head_size, bool is_neox_style, int64_t cache_mode,
                                       const TensorView& query_out, const TensorView& key_out, PreparedOp* op) {
  const bool cann = compat_mode() == Compat::kCann;
  ROPE_CHECK(check_data(positions, "positions"));
  ROPE_CHECK(check_data(query, "queryIn"));
  ROPE_CHECK(check_data(key, "keyIn"));
  ROPE_CHECK(check_data(cache, "cosSinCache"));
  ROPE_CHECK(check_data(query_out, "queryOut"));
  ROPE_CHECK(check_data(key_out, "keyOut"));
  // dtypes and attributes
  if (positions.dtype != DType::kI64 && (cann || positions.dtype != DType::kI32)) {
    return fail(kInvalid, "positions dtype must be int64%s, got %s", cann ? "" : " or int32",
                dtype_name(positions.dtype));
  }
  ROPE_CHECK(check_float_dtype(query, "queryIn"));
  ROPE_CHECK(check_dtype_equals(key, "keyIn", query.dtype, "queryIn"));
  ROPE_CHECK(check_float_dtype(cache, "cosSinCache"));
  if (cache.dtype != query.dtype && (cann || cache.dtype != DType::kF32)) {
    return fail(kInvalid, "cosSinCache dtype must equal queryIn dtype (%s)%s, got %s", dtype_name(query.dtype),
                cann ? "" : " or be fp32", dtype_name(cache.dtype));
  }
  ROPE_CHECK(check_dtype_equals(query_out, "queryOut", query.dtype, "queryIn"));
  ROPE_CHECK(check_dtype_equals(key_out, "keyOut", key.dtype, "keyIn"));
  if (cache_mode != 0 && cache_mode != 1) {
    return fail(kInvalid, "cacheMode must be 0 (sections) or 1 (interleaved sections), got %lld",
                static_cast<long long>(cache_mode));
  }
  // shapes
  ROPE_CHECK(check_rank(query, "queryIn", 2, kShape));
  ROPE_CHECK(check_rank(key, "keyIn", 2, kShape));
  ROPE_CHECK(check_rank(cache, "cosSinCache", 2, kShape));
  const bool mrope = section_count > 0;
  ROPE_CHECK(check_rank(positions, "positions", mrope ? 2 : 1, kShape));
  const int64_t tokens = query.shape[0];
  if (head_size < 1) return fail(kShape, "headSize must be positive, got %lld", static_cast<long long>(head_size));
  ROPE_CHECK(check_cann_multiple(head_size, "headSize", query.dtype));
  ROPE_CHECK(check_heads(query, "queryIn", head_size));
  ROPE_CHECK(check_heads(key, "keyIn", head_size));
  ROPE_CHECK(check_dim(key, "keyIn", 0, "numTokens", tokens, kShape));
  ROPE_CHECK(check_dim(positions, "positions", positions.ndim - 1, "numTokens", tokens, kShape));
  const int64_t rotary_dim = cache.shape[1];
  if (rotary_dim < 2 || rotary_dim > kMaxWidth || rotary_dim % 2 != 0) {
    return fail(kShape, "cosSinCache dim 1 (rotaryDim) must be even and in [2, %lld], got %lld",
                static_cast<long long>(kMaxWidth), static_cast<long long>(rotary_dim));
  }
  if (rotary_dim > head_size) {
    return fail(StatusCode::kRuntimeError,  // CANN's table files this rule under 361001
                "cosSinCache dim 1 (rotaryDim) must be at most headSize (%lld), got %lld",
                static_cast<long long>(head_size), static_cast<long long>(rotary_dim));
  }
  ROPE_CHECK(check_cann_multiple(rotary_dim, "cosSinCache dim 1 (rotaryDim)", query.dtype));
  if (mrope) {
    ROPE_CHECK(check_sections(section, section_count, rotary_dim, cache_mode));
    ROPE_CHECK(check_dim(positions, "positions", 0, "sections", static_cast<int64_t>(section_count), kShape));
  }
  if (cann && (tokens == 0 || cache.shape[0] == 0)) {
    return fail(kShape, "queryIn and cosSinCache must not be empty under TXOPS_COMPAT=cann, got %s and %s",
                query.shape_string().c_str(), cache.shape_string().c_str());
  }
  ROPE_CHECK(check_shape_equals(query_out, "queryOut", query, "queryIn", kShape));
  ROPE_CHECK(check_shape_equals(key_out, "keyOut", key, "keyIn", kShape));
  // output views: each exactly its input (in place) or disjoint from every input and from the other output
  ROPE_CHECK(check_writable(query_out, "queryOut"));
  ROPE_CHECK(check_writable(key_out, "keyOut"));
  const ViewSpan qo = span_of(query_out), ko = span_of(key_out);
  ROPE_CHECK(check_no_overlap(query_out, qo, "queryOut", key_out, ko, "keyOut", false));
  const TensorView* inputs[] = {&query, &key, &cache, &positions};
  const char* names[] = {"queryIn", "keyIn", "cosSinCache", "positions"};
  for (int i = 0; i < 4; ++i) {
    const ViewSpan span = span_of(*inputs[i]);
    ROPE_CHECK(check_no_overlap(query_out, qo, "queryOut", *inputs[i], span, names[i], i == 0));
    ROPE_CHECK(check_no_overlap(key_out, ko, "keyOut", *inputs[i], span, names[i], i == 1));
  }

  CacheJob job;
  job.config.x_dtype = query.dtype;
  job.config.cs_dtype = cache.dtype;
  job.config.mode = is_neox_style ? RotaryMode::kHalf : RotaryMode::kInterleave;
  job.config.backward = false;
  job.config.width = rotary_dim;
  job.head_size = head_size;
  job.tokens = tokens;
  job.positions = positions.data;
  job.positions_dtype = positions.dtype;
  job.positions_token_stride = positions.strides[positions.ndim - 1];
  job.positions_row_stride = mrope ? positions.strides[0] : 0;
  job.sections = mrope ? static_cast<int>(section_count) : 0;
  const bool interleaved = mrope && cache_mode == 1;
  for (int64_t k = 0, row = 0, row_end = mrope ? section[0] : rotary_dim / 2; k < rotary_dim / 2; ++k) {
    if (interleaved) {
      job.channel_row[k] = (k % 3 == 1 && k < 3 * section[1]) ? 1 : (k % 3 == 2 && k < 3 * section[2]) ? 2 : 0;
      continue;
    }
    while (k >= row_end && row + 1 < job.sections) row_end += section[++row];  // skips empty sections
    job.channel_row[k] = static_cast<uint8_t>(row);
  }
  job.cache = cache.data;
  job.max_positions = cache.shape[0];
  job.cache_row_stride = cache.strides[0];
  job.cache_step = cache.strides[1];
  fill_side(query, query_out, head_size, rotary_dim, &job.sides[0]);
  fill_side(key, key_out, head_size, rotary_dim, &job.sides[1]);
  ROPE_CHECK(check_positions(job));
  const bool in_place = same_view(query, query_out) && same_view(key, key_out);
  const uint64_t out_bytes = in_place ? 0 : static_cast<uint64_t>(query_out.numel() + key_out.numel()) *
                                                dtype_size(query.dtype);
  job.config.stream_out = rotary_dim == head_size && out_bytes >= static_cast<uint64_t>(kStreamingOutputBytes);
  Isa isa = Isa::kScalar;
  job.kernel = select_row_kernel(active_isa(), job.config, &isa);
  const int64_t heads = job.sides[0].heads + job.sides[1].heads;
  job.threads = plan_threads(tokens * heads * rotary_dim, kMinChannelsPerThread);
  job.token_grains = split_evenly(tokens, job.threads, grains_per_part());
  const bool simd = query.strides[1] == 1 && key.strides[1] == 1 && query_out.strides[1] == 1 &&
                    key_out.strides[1] == 1;
  if (simd) job.token_kernel = select_cache_token_kernel(active_isa(), query.dtype, cache.dtype);
  const char* kernel_name = job.token_kernel != nullptr ? "rope_cache_tokens_simd"
                            : simd                      ? "rope_cache_rows_simd"
                                                        : "rope_cache_rows_strided";
  record_plan(isa, job.threads, kernel_name);
  op->workspace_bytes = 0;
  op->run = [job, isa, kernel_name](void*) -> Status {
    std::string details;
    if (verbose()) {
      char buf[256];
      std::snprintf(buf, sizeof(buf), "kernel=%s isa=%s threads=%d %s tokens=%lld heads=%lld+%lld head_size=%lld "
                    "rotary_dim=%lld sections=%d x=%s cache=%s%s", kernel_name, isa_name(isa), job.threads,
                    job.config.mode == RotaryMode::kHalf ? "neox" : "gptj", static_cast<long long>(job.tokens),
                    static_cast<long long>(job.sides[0].heads), static_cast<long long>(job.sides[1].heads),
                    static_cast<long long>(job.head_size), static_cast<long long>(job.config.width), job.sections,
                    dtype_name(job.config.x_dtype), dtype_name(job.config.cs_dtype),
                    job.config.stream_out ? " stores=streaming" : "");
      details = buf;
    }
    VerboseTimer timer("rope_with_sin_cos_cache", std::move(details));
    return run_cache_rows(job);
  };
  return Status();
}

}  // namespace txops
