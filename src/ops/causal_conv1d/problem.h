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
  bool stream_y = false;             // y is large: the channel- and token-contiguous paths stream it
  bool write_back_in_pass1 = false;  // those paths write each line back in pass 1 (no pass 2)
  int64_t channel_chunk = 0;         // pass 1 items' channels at most (plan.cpp, conv_channel_chunk)
};

// The work is done in two passes, each over its own items (the plan partitions them over threads):
//  1. y: items of up to kConvTokenChunk tokens of one sequence and up to channel_chunk channels (whole rows of up to
//     kConvRowChunk channels on the channel-contiguous path, kConvChannelChunk on the others), so that each token
//     row is read and written as one contiguous run (the memory streams linearly); a chunk's first K-1
//     window rows are the previous tokens of the sequence, or for its first chunk the history (state rows or
//     zeros). Reads the states, writes only y.
//  2. the state write-back: items of one sequence's kConvStateBlock channels; each saves the history rows it
//     reads before writing any row of the line (rows may move up or down within it). The channel-contiguous path
//     does this itself at the end of each sequence's first token chunk (the only reader of the history; lines are
//     not shared), while the rows are in cache, when no sequence is empty (write_back_in_pass1); then there is no
//     pass 2.
constexpr int64_t kConvTokenChunk = 128, kConvChannelChunk = 4096, kConvRowChunk = 8192, kConvStateBlock = 512;
// Pass 1 has three code paths, chosen by the layout (all give the same bits): channel-contiguous rows (CANN's
// layouts: items of kConvTokenChunk tokens x whole rows), token-contiguous channels (transformers'
// channel-first (B, dim, L): items of kConvTokenContiguousChannels channels x all tokens, streamed per channel in
// segments of kConvSegment tokens), anything else staged row by row.
enum class ConvPath { kChannelContiguous, kTokenContiguous, kStaged };
ConvPath conv_path(const ConvProblem& p);
constexpr int64_t kConvTokenContiguousChannels = 16, kConvSegment = 1024;
// The channel-contiguous path computes blocks of kConvAccBlock channels x groups of kConvTokenGroup tokens into
// fp32 first (8 tokens on AVX-512: 11 x rows per 8 outputs at K = 4, and 16 of its 32 registers hold the bf16
// accumulators; AVX2 takes 4, kernels_contiguous.cpp; 128 channels: each block's SiLU pass is short enough for the
// out-of-order core to overlap the next block's loads with it. README.md, "Session 27").
constexpr int64_t kConvAccBlock = 128;
constexpr int kConvTokenGroup = 8;
// The channel-contiguous path's fp32 weight and bias rows cover all channels, padded to the widest target's group
// (32 bf16 pair channels); item channel starts are multiples of 32, so every item starts on a whole group.
inline int64_t conv_weight_stride(const ConvProblem& p) { return (p.dim + 31) / 32 * 32; }

struct ConvItem {
  int64_t sequence, token_begin, token_end, channel_begin, channel_end;
};

// fp32 scratch floats pass 1 needs per thread: the K-row window ring, the K weight rows, the bias and y, each
// channel_chunk wide, padded to whole vectors.
int64_t conv_scratch_floats(const ConvProblem& p);

// weights_staged: the channel-contiguous path's fp32 weight and bias rows are already in `scratch` (an earlier range
// of the same call run on it).
using ConvForwardFn = void(const ConvProblem& p, const ConvItem* items, int64_t begin, int64_t end, float* scratch,
                           bool weights_staged);
using ConvWriteBackFn = void(const ConvProblem& p, int64_t begin, int64_t end);  // items: sequence-major blocks
ConvForwardFn* select_conv_forward(Isa isa);
ConvWriteBackFn* select_conv_write_back(Isa isa);

Status validate_causal_conv1d(bool update, const TensorView& x, const TensorView& weight,
                              const TensorView& conv_states, const TensorView* bias,
                              const TensorView* query_start_loc, const TensorView* cache_indices,
                              const TensorView* per_sequence, ConvActivation activation, int64_t null_block_id,
                              const TensorView& y, ConvProblem* p);

}  // namespace txops

#endif  // TXOPS_OPS_CAUSAL_CONV1D_PROBLEM_H_
