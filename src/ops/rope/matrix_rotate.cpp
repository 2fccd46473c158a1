// matrix_rotate.cpp — the rows of aclnnRotaryPositionEmbeddingV2 with a `rotate` matrix (see matrix_rotate.h).
// Each call first lists, per output channel j, the non-zero entries rotate[i][j] in increasing i (the matrices
// users build are signed permutations or block-diagonal: one to a few entries per column). Per row, in fp32:
// r[j] = sum over those entries of x[i] * rotate[i][j] (fma, increasing i; a zero entry contributes nothing, so
// an inf in x does not turn every channel into NaN), then y[j] = fma(x[j], cos[j], r[j] * sin[j]) — the
// rounding sequence of the other RoPE rows — and one round-to-nearest-even store. Rows are split between
// threads; each row is loaded whole before it is stored, so out may be x itself.
#include "ops/rope/matrix_rotate.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/work_stealing.h"
#include "core/plan_record.h"
#include "core/verbose.h"

namespace txops {
namespace rope {
namespace {

constexpr int64_t kMinChannelsPerThread = 32 * 1024;

struct MatrixEntry {
  int32_t row;
  float value;
};

// Column j's entries are entries[begin[j] .. begin[j + 1]).
struct SparseColumns {
  std::vector<MatrixEntry> entries;
  std::vector<int64_t> begin;
};

SparseColumns read_columns(const void* data, DType dtype, int64_t width, int64_t row_stride, int64_t col_stride) {
  SparseColumns cols;
  cols.begin.reserve(static_cast<size_t>(width + 1));
  for (int64_t j = 0; j < width; ++j) {
    cols.begin.push_back(static_cast<int64_t>(cols.entries.size()));
    for (int64_t i = 0; i < width; ++i) {
      const float v = load_f32(data, dtype, i * row_stride + j * col_stride);
      if (v != 0.0f) cols.entries.push_back({static_cast<int32_t>(i), v});
    }
  }
  cols.begin.push_back(static_cast<int64_t>(cols.entries.size()));
  return cols;
}

void rotate_rows(const RotationConfig& cfg, const RowStream& st, const SparseColumns& cols, int64_t begin,
                 int64_t end) {
  const int64_t n = cfg.width;
  float xb[kMaxWidth], yb[kMaxWidth];
  OuterCursor<4> cursor(st.extent, st.stride, begin);
  for (int64_t r = begin; r < end; ++r, cursor.next()) {
    const int64_t* off = cursor.offset;
    for (int64_t j = 0; j < n; ++j) xb[j] = load_f32(st.in, cfg.x_dtype, off[kIn] + j * st.step[kIn]);
    for (int64_t j = 0; j < n; ++j) {
      float rot = 0.0f;
      for (int64_t e = cols.begin[j]; e < cols.begin[j + 1]; ++e) {
        rot = std::fma(xb[cols.entries[e].row], cols.entries[e].value, rot);
      }
      const float c = load_f32(st.cos, cfg.cs_dtype, off[kCos] + j * st.step[kCos]);
      const float s = load_f32(st.sin, cfg.cs_dtype, off[kSin] + j * st.step[kSin]);
      yb[j] = std::fma(xb[j], c, rot * s);
    }
    for (int64_t j = 0; j < n; ++j) store_f32(st.out, cfg.x_dtype, off[kOut] + j * st.step[kOut], yb[j]);
  }
}

}  // namespace

Status plan_matrix_rows(const RotationConfig& config, const RowStream& stream, const TensorView& rotate,
                        const TensorView& shape_of, PreparedOp* op) {
  const int64_t rows = stream.rows();
  const int threads = plan_threads(rows * config.width * 2, kMinChannelsPerThread);
  record_plan(Isa::kScalar, threads, "rope_rows_matrix");
  op->workspace_bytes = 0;
  const void* data = rotate.data;
  const DType dtype = rotate.dtype;
  const int64_t row_stride = rotate.strides[0], col_stride = rotate.strides[1];
  const std::string shape = shape_of.shape_string();
  const GrainSplit grains = split_evenly(rows, threads, grains_per_part());  // work stealing (core/work_stealing.h)
  op->run = [config, stream, data, dtype, row_stride, col_stride, grains, threads, shape](void*) -> Status {
    VerboseTimer timer("rotary_position_embedding",
                       verbose() ? "kernel=rope_rows_matrix isa=scalar threads=" + std::to_string(threads) +
                                       " shape=" + shape + " x=" + dtype_name(config.x_dtype) +
                                       " cos=" + dtype_name(config.cs_dtype)
                                 : std::string());
    const SparseColumns cols = read_columns(data, dtype, config.width, row_stride, col_stride);
    run_grains(grains, [&](int64_t, int64_t begin, int64_t end) { rotate_rows(config, stream, cols, begin, end); });
    return Status();
  };
  return Status();
}

}  // namespace rope
}  // namespace txops
