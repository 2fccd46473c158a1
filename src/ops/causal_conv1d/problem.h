// problem.h — a validated causal-conv1d call, as the plan and the kernels see it (both operators: prefill and
// update differ only in where each sequence's history starts and which state rows are written back), and the
// interface between plan.cpp and the Highway kernels in kernels.cpp.
#ifndef TXOPS_OPS_CAUSAL_CONV1D_PROBLEM_H_
#define TXOPS_OPS_CAUSAL_CONV1D_PROBLEM_H_

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "txops/txops.h"

namespace txops {

struct ConvProblem {
  bool update = false;   // causal_conv1d_update's history and write-back rules, else causal_conv1d_fn's
  int64_t batch = 0, dim = 0, width = 0, state_len = 0, lines = 0;
  ConvActivation activation = ConvActivation::kSilu;
  DType dtype = DType::kBF16;  // of x, weight, bias, conv_states and y
  TensorView x, weight, bias, states, y;
  bool has_bias = false;
  // Sequence b's token l is x element x_offset[b] + l * x_token_stride (and likewise y); channel c is + c times
  // the channel stride (last dim) of each tensor.
  std::vector<int64_t> x_offset, y_offset;
  int64_t x_token_stride = 0, y_token_stride = 0;
  std::vector<int64_t> length;       // tokens of each sequence
  std::vector<int64_t> line;         // its conv-state line, or -1: skipped (null_block_id): y zero, no state write
  std::vector<int64_t> history_row;  // first state row of its K-1 history rows, or -1: a zero history
};

// Channels one kernel item covers: a sequence's channels [block * kConvChannelBlock, ...).
constexpr int64_t kConvChannelBlock = 64;

// Runs items [begin, end) of the (sequence, channel block) items, sequence-major.
using ConvRunItemsFn = void(const ConvProblem& p, int64_t begin, int64_t end);
ConvRunItemsFn* select_conv_run_items(Isa isa);

Status validate_causal_conv1d(bool update, const TensorView& x, const TensorView& weight,
                              const TensorView& conv_states, const TensorView* bias,
                              const TensorView* query_start_loc, const TensorView* cache_indices,
                              const TensorView* per_sequence, ConvActivation activation, int64_t null_block_id,
                              const TensorView& y, ConvProblem* p);

}  // namespace txops

#endif  // TXOPS_OPS_CAUSAL_CONV1D_PROBLEM_H_
