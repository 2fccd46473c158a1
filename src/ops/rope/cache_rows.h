// cache_rows.h — the planned work of aclnnRopeWithSinCosCache(V2) (vLLM's rotary_embedding): per token, the
// cos/sin halves are read from the cache row of its position (per channel from one of 3-4 position rows in mrope
// mode) and every query and key head of the token is rotated with them, by kernels_cache.cpp's token loop where
// every query / key channel step is 1, else by the RoPE row kernels (kernels_rotate.cpp) on full-width rows
// gathered per block of tokens; channels past rotary_dim are copied when out != in. Filled by prepare_cache.cpp
// after validation; run by cache_rows.cpp.
#ifndef TXOPS_OPS_ROPE_CACHE_ROWS_H_
#define TXOPS_OPS_ROPE_CACHE_ROWS_H_

#include <cstdint>

#include "core/status.h"
#include "core/work_stealing.h"
#include "ops/rope/args.h"

namespace txops {
namespace rope {

constexpr int kMaxMropeSections = 4;

struct CacheJob;
using CacheTokenKernel = void(const CacheJob& job, int64_t begin, int64_t end);

struct CacheSide {
  const void* in = nullptr;
  void* out = nullptr;
  int64_t heads = 0;
  int64_t in_token_stride = 0, out_token_stride = 0;  // elements
  int64_t in_step = 1, out_step = 1;                  // channel strides
  bool copy_pass = false;                             // out != in and head_size > rotary_dim
};

struct CacheJob {
  RotationConfig config;  // half (GPT-NeoX) or interleave (GPT-J), width = rotary_dim, forward
  int64_t head_size = 0;
  int64_t tokens = 0;
  // positions: (tokens,) or (sections, tokens), int64 or int32
  const void* positions = nullptr;
  DType positions_dtype = DType::kI64;
  int64_t positions_row_stride = 0, positions_token_stride = 1;
  int sections = 0;  // 0: rope mode; 3 or 4: mrope
  // The position row each of the rotary_dim / 2 cos channels takes: 0 in rope mode; in mrope, contiguous
  // sections (cache_mode 0) or interleaved (cache_mode 1: channel j with j % 3 == r, r = 1, 2, and
  // j < 3 * section[r] uses row r). Filled by prepare_cache.cpp.
  uint8_t channel_row[kMaxWidth / 2] = {};
  // cache (max_positions, rotary_dim): cos then sin, rotary_dim / 2 each
  const void* cache = nullptr;
  int64_t max_positions = 0;
  int64_t cache_row_stride = 0, cache_step = 1;
  CacheSide sides[2];
  RowKernel* kernel = nullptr;
  CacheTokenKernel* token_kernel = nullptr;  // kernels_cache.cpp; null: the row-buffer path
  int threads = 1;
  GrainSplit token_grains;  // the tokens over the threads, run with work stealing (core/work_stealing.h)
};

// Position row `row` (0 outside mrope) of token t.
inline int64_t cache_position(const CacheJob& job, int row, int64_t token) {
  const int64_t i = row * job.positions_row_stride + token * job.positions_token_stride;
  if (job.positions_dtype == DType::kI32) return static_cast<const int32_t*>(job.positions)[i];
  return static_cast<const int64_t*>(job.positions)[i];
}

// The token loop of kernels_cache.cpp (tokens [begin, end), every head of both sides; not the copy of the channels
// past rotary_dim) for the activations' and the cache's dtypes at or below `isa`; null where that ISA has none
// (SCALAR).
CacheTokenKernel* select_cache_token_kernel(Isa isa, DType x, DType cs);

// Every position in [0, max_positions), else 161002 naming the first bad one. Positions are host-visible
// integers (docs/api.md): phase one checks them, and the run checks them again before it writes anything.
Status check_positions(const CacheJob& job);
// check_positions, then every token rotated.
Status run_cache_rows(const CacheJob& job);

}  // namespace rope
}  // namespace txops

#endif  // TXOPS_OPS_ROPE_CACHE_ROWS_H_
