// cache_rows.cpp — running aclnnRopeWithSinCosCache(V2) (see cache_rows.h). Tokens are split between threads.
// Where every query / key channel step is 1, a thread runs kernels_cache.cpp's token loop (cos/sin widened once per
// token, every head rotated with them). Otherwise (strided rows; the SCALAR target) it takes blocks of tokens: it
// copies each token's cos/sin halves out of the cache (bit copies, no arithmetic) into full-width rows in an L1
// buffer, then hands the block's query heads, then its key heads, to the RoPE row kernel as one row stream (token
// rows stepping through the buffer, heads broadcasting over it). Both give the row kernels' bits (bit-identical
// across ISAs and thread counts); every position is checked before any output is written (in phase one, and again
// when the op runs).
#include "ops/rope/cache_rows.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/dtype.h"

namespace txops {
namespace rope {
namespace {

constexpr int64_t kBufferElements = 8192;  // cos (and sin) elements of one token block

// Full-width cos/sin rows of tokens [t0, t1) into cos_rows / sin_rows (rotary_dim elements per token):
// GPT-NeoX repeats the halves (c = cat(ch, ch)), GPT-J repeats each element (c[2k] = c[2k+1] = ch[k]).
template <class E>
void gather_rows(const CacheJob& job, int64_t t0, int64_t t1, E* cos_rows, E* sin_rows) {
  const int64_t width = job.config.width, half = width / 2;
  const bool neox = job.config.mode == RotaryMode::kHalf;
  const E* cache = static_cast<const E*>(job.cache);
  const int rows = job.sections == 0 ? 1 : job.sections;
  for (int64_t t = t0; t < t1; ++t) {
    int64_t base[kMaxMropeSections];
    for (int r = 0; r < rows; ++r) base[r] = cache_position(job, r, t) * job.cache_row_stride;
    E* c = cos_rows + (t - t0) * width;
    E* s = sin_rows + (t - t0) * width;
    for (int64_t k = 0; k < half; ++k) {
      const int64_t at = base[job.channel_row[k]];
      const E cv = cache[at + k * job.cache_step], sv = cache[at + (half + k) * job.cache_step];
      const int64_t a = neox ? k : 2 * k, b = neox ? half + k : 2 * k + 1;
      c[a] = c[b] = cv;
      s[a] = s[b] = sv;
    }
  }
}

// Channels [rotary_dim, head_size) of every head of tokens [t0, t1), copied in -> out. memmove, not memcpy:
// strided views that share memory are not judged by the overlap check (core/view_checks.h), so a caller may
// hand an out that overlaps in; the values are then unspecified, but the copy must stay defined behaviour.
void copy_pass_channels(const CacheJob& job, const CacheSide& side, int64_t t0, int64_t t1) {
  const size_t esize = dtype_size(job.config.x_dtype);
  const int64_t first = job.config.width, count = job.head_size - first;
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t h = 0; h < side.heads; ++h) {
      const int64_t in_at = t * side.in_token_stride + (h * job.head_size + first) * side.in_step;
      const int64_t out_at = t * side.out_token_stride + (h * job.head_size + first) * side.out_step;
      const char* in = static_cast<const char*>(side.in) + in_at * static_cast<int64_t>(esize);
      char* out = static_cast<char*>(side.out) + out_at * static_cast<int64_t>(esize);
      if (side.in_step == 1 && side.out_step == 1) {
        std::memmove(out, in, static_cast<size_t>(count) * esize);
        continue;
      }
      for (int64_t j = 0; j < count; ++j) {
        std::memmove(out + j * side.out_step * static_cast<int64_t>(esize),
                    in + j * side.in_step * static_cast<int64_t>(esize), esize);
      }
    }
  }
}

void rotate_block(const CacheJob& job, const CacheSide& side, int64_t t0, int64_t t1, const void* cos_rows,
                  const void* sin_rows) {
  const int64_t esize = static_cast<int64_t>(dtype_size(job.config.x_dtype));
  RowJob rows;
  rows.config = job.config;
  rows.stream_count = 1;
  rows.simd_rows = side.in_step == 1 && side.out_step == 1;
  RowStream& st = rows.streams[0];
  st.in = static_cast<const char*>(side.in) + t0 * side.in_token_stride * esize;
  st.out = static_cast<char*>(side.out) + t0 * side.out_token_stride * esize;
  st.cos = cos_rows;
  st.sin = sin_rows;
  st.extent[1] = t1 - t0;
  st.extent[2] = side.heads;
  const int64_t width = job.config.width;
  const int64_t token_strides[4] = {side.in_token_stride, side.out_token_stride, width, width};
  const int64_t head_strides[4] = {job.head_size * side.in_step, job.head_size * side.out_step, 0, 0};
  for (int t = 0; t < 4; ++t) {
    st.stride[1][t] = token_strides[t];
    st.stride[2][t] = head_strides[t];
  }
  st.step[kIn] = side.in_step;
  st.step[kOut] = side.out_step;
  job.kernel(rows, 0, st.rows());
  if (side.copy_pass) copy_pass_channels(job, side, t0, t1);
}

// The token loop of kernels_cache.cpp, then the channels past rotary_dim, per block of tokens.
void run_tokens_fast(const CacheJob& job, int64_t begin, int64_t end) {
  constexpr int64_t kBlock = 64;
  for (int64_t t0 = begin; t0 < end; t0 += kBlock) {
    const int64_t t1 = std::min(end, t0 + kBlock);
    job.token_kernel(job, t0, t1);
    for (const CacheSide& side : job.sides) {
      if (side.heads > 0 && side.copy_pass) copy_pass_channels(job, side, t0, t1);
    }
  }
}

template <class E>
void run_tokens(const CacheJob& job, int64_t begin, int64_t end) {
  E cos_rows[kBufferElements], sin_rows[kBufferElements];
  const int64_t block = std::max<int64_t>(1, kBufferElements / job.config.width);
  for (int64_t t0 = begin; t0 < end; t0 += block) {
    const int64_t t1 = std::min(end, t0 + block);
    gather_rows<E>(job, t0, t1, cos_rows, sin_rows);
    for (const CacheSide& side : job.sides) {
      if (side.heads > 0) rotate_block(job, side, t0, t1, cos_rows, sin_rows);
    }
  }
}

}  // namespace

Status check_positions(const CacheJob& job) {
  const int rows = job.sections == 0 ? 1 : job.sections;
  for (int r = 0; r < rows; ++r) {
    for (int64_t t = 0; t < job.tokens; ++t) {
      const int64_t p = cache_position(job, r, t);
      if (p >= 0 && p < job.max_positions) continue;
      const std::string at = (job.sections == 0 ? "" : "[" + std::to_string(r) + "]") + "[" + std::to_string(t) + "]";
      return fail(StatusCode::kParamInvalid, "positions values must be in [0, %lld) (cosSinCache dim 0), got %lld at "
                  "positions%s", static_cast<long long>(job.max_positions), static_cast<long long>(p), at.c_str());
    }
  }
  return Status();
}

Status run_cache_rows(const CacheJob& job) {
  Status checked = check_positions(job);  // again: the caller may have changed them since phase one
  if (!checked.ok()) return checked;
  const bool wide = dtype_size(job.config.cs_dtype) == 4;
  run_grains(job.token_grains, [&](int64_t, int64_t begin, int64_t end) {
    if (job.token_kernel != nullptr) {
      run_tokens_fast(job, begin, end);
    } else if (wide) {
      run_tokens<uint32_t>(job, begin, end);
    } else {
      run_tokens<uint16_t>(job, begin, end);
    }
  });
  return Status();
}

}  // namespace rope
}  // namespace txops
