// plan.cpp — phase one of both causal-conv1d operators: validate, then plan the two passes of problem.h (y over
// (sequence, token chunk, channel chunk) items in contiguous ranges of near-equal work; the state write-back over
// (sequence, channel block) items), each on as many threads as its work is worth, and the run closure. The
// workspace is pass 1's fp32 scratch, one area per thread.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "core/plan_record.h"
#include "core/streaming.h"
#include "core/verbose.h"
#include "core/work_stealing.h"
#include "ops/causal_conv1d/prepare.h"
#include "ops/causal_conv1d/problem.h"

namespace txops {
namespace {

// Elements (channel-tokens) a thread should get at least: below this a second thread costs more in wake-up and
// barrier than it saves.
constexpr int64_t kMinElementsPerThread = 1 << 16;
constexpr int64_t kAlign = 64;

struct ConvPlan {
  ConvProblem problem;
  std::vector<ConvItem> items;         // pass 1
  GrainSplit grains;                   // pass 1's item ranges, one per thread, cut into grains (core/work_stealing.h)
  int threads = 1, write_back_threads = 1;
  int64_t write_back_items = 0, scratch_bytes = 0;
  GrainSplit write_back_grains;        // pass 2's items (equal cost) over write_back_threads, cut into grains
};

// Channels per pass-1 item. Channel-first data streams per channel: a few channels over all tokens. Channel-contiguous
// rows are read whole (up to kConvRowChunk channels, split evenly beyond), one run per token that the memory system
// streams at full speed (runs of a part of each row ran 15-25 % slower from memory, conv README), unless there are
// too few token chunks to give every thread an item: then the rows are split into as many parts as threads. The
// staged path keeps kConvChannelChunk. Item channel starts stay multiples of 32 (problem.h, conv_weight_stride).
int64_t conv_channel_chunk(const ConvProblem& p, ConvPath path) {
  if (path == ConvPath::kTokenContiguous) return kConvTokenContiguousChannels;
  if (path == ConvPath::kStaged) return std::min(p.dim, kConvChannelChunk);
  int64_t token_items = 0, elements = 0;
  for (int64_t L : p.length) token_items += (L + kConvTokenChunk - 1) / kConvTokenChunk, elements += L * p.dim;
  const int64_t threads = plan_threads(elements, kMinElementsPerThread);
  const int64_t parts = std::max((p.dim + kConvRowChunk - 1) / kConvRowChunk, token_items >= threads ? 1 : threads);
  const int64_t chunk = ((p.dim + parts - 1) / parts + 31) / 32 * 32;
  return std::max<int64_t>(1, std::min(p.dim, chunk));
}

void plan_items(ConvPlan* plan) {
  ConvProblem& p = plan->problem;
  std::vector<int64_t> costs;
  int64_t elements = 0;
  const ConvPath path = conv_path(p);
  const bool per_channel = path == ConvPath::kTokenContiguous;
  const int64_t token_chunk = per_channel ? INT64_MAX : kConvTokenChunk;
  const int64_t channel_chunk = p.channel_chunk = conv_channel_chunk(p, path);
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t L = p.length[b];
    for (int64_t t0 = 0; t0 < L; t0 += std::min(token_chunk, L - t0)) {
      const int64_t t1 = t0 + std::min(token_chunk, L - t0);
      for (int64_t c0 = 0; c0 < p.dim; c0 += channel_chunk) {
        const int64_t c1 = std::min(p.dim, c0 + channel_chunk);
        plan->items.push_back({b, t0, t1, c0, c1});
        // tokens + the window's history and weight rows (+ the line's rows, written back by the first chunk)
        costs.push_back((t1 - t0 + p.width + (p.write_back_in_pass1 && t0 == 0 ? p.state_len : 0)) * (c1 - c0));
        elements += costs.back();
      }
    }
  }
  plan->threads = std::max(1, std::min<int>(plan_threads(elements, kMinElementsPerThread),
                                            static_cast<int>(plan->items.size())));
  std::vector<int64_t> part_start;
  partition_by_cost(costs, plan->threads, &part_start);
  plan->grains = split_into_grains(part_start, costs, grains_per_part(), [](int64_t) { return true; });
  const int64_t blocks = (p.dim + kConvStateBlock - 1) / kConvStateBlock;
  plan->write_back_items = p.write_back_in_pass1 ? 0 : p.batch * blocks;
  plan->write_back_threads = std::max(1, std::min<int>(plan_threads(p.batch * p.state_len * p.dim,
                                                                    kMinElementsPerThread),
                                                       static_cast<int>(plan->write_back_items)));
  plan->write_back_grains = split_evenly(plan->write_back_items, plan->write_back_threads, grains_per_part());
  plan->scratch_bytes = (conv_scratch_floats(p) * static_cast<int64_t>(sizeof(float)) + kAlign - 1) / kAlign * kAlign;
}

Status plan_conv(ConvProblem problem, const char* op_name, PreparedOp* op) {
  auto plan = std::make_shared<ConvPlan>();
  plan->problem = std::move(problem);
  ConvProblem& p = plan->problem;
  int64_t tokens = 0;
  bool empty_sequence = false;
  for (int64_t L : p.length) tokens += L, empty_sequence = empty_sequence || L == 0;
  // The channel- and token-contiguous paths stream a large y, and write each line back in pass 1: their first items
  // (the token-contiguous path's hold all tokens of their channels, plan_items) are the only readers of its history.
  const bool row_path = conv_path(p) != ConvPath::kStaged;
  p.stream_y = row_path && tokens * p.dim * static_cast<int64_t>(dtype_size(p.dtype)) >= kStreamingOutputBytes;
  p.write_back_in_pass1 = row_path && !empty_sequence;
  plan_items(plan.get());
  const Isa isa = active_isa();
  record_plan(compiled_isa(isa), plan->threads, "causal_conv1d_rows");
  ConvForwardFn* forward = select_conv_forward(isa);
  ConvWriteBackFn* write_back = select_conv_write_back(isa);
  op->workspace_bytes = static_cast<uint64_t>(kAlign + plan->scratch_bytes * plan->threads);
  op->run = [plan, forward, write_back, isa, op_name](void* workspace) -> Status {
    std::string details;
    const ConvPlan& pl = *plan;
    const ConvProblem& q = pl.problem;
    if (verbose()) {
      char buf[240];
      std::snprintf(buf, sizeof(buf), "kernel=causal_conv1d_rows isa=%s threads=%d write_back_threads=%d B=%" PRId64
                    " dim=%" PRId64 " K=%" PRId64 " stateLen=%" PRId64 " %s", isa_name(isa), pl.threads,
                    pl.write_back_threads, q.batch, q.dim, q.width, q.state_len, dtype_name(q.dtype));
      details = buf;
    }
    VerboseTimer timer(op_name, std::move(details));
    char* base = static_cast<char*>(workspace);
    base += (kAlign - reinterpret_cast<uintptr_t>(base) % kAlign) % kAlign;
    // Pass 1 reads the states (history rows) and writes y; pass 2 rewrites the states, after all of pass 1.
    // In both, each part's thread takes the other parts' grains once its own are done (core/work_stealing.h); in
    // pass 1 the first grain run on a part's scratch stages the weights there for the rest.
    std::vector<char> weights_staged(static_cast<size_t>(pl.threads), 0);
    run_grains(pl.grains, [&](int64_t part, int64_t begin, int64_t end) {
      forward(q, pl.items.data(), begin, end, reinterpret_cast<float*>(base + pl.scratch_bytes * part),
              weights_staged[part] != 0);
      weights_staged[part] = 1;
    });
    if (pl.write_back_items > 0)  // (sequence, channel block) items, each written alone
      run_grains(pl.write_back_grains, [&](int64_t, int64_t begin, int64_t end) { write_back(q, begin, end); });
    return Status();
  };
  return Status();
}

}  // namespace

Status prepare_causal_conv1d_fn(const TensorView& x, const TensorView& weight, const TensorView& conv_states,
                                const TensorView* bias, const TensorView* query_start_loc,
                                const TensorView* cache_indices, const TensorView* initial_state_mode,
                                ConvActivation activation, int64_t null_block_id, const TensorView& y,
                                PreparedOp* op) {
  ConvProblem p;
  Status st = validate_causal_conv1d(false, x, weight, conv_states, bias, query_start_loc, cache_indices,
                                     initial_state_mode, activation, null_block_id, y, &p);
  if (!st.ok()) return st;
  return plan_conv(std::move(p), "causal_conv1d_fn", op);
}

Status prepare_causal_conv1d_update(const TensorView& x, const TensorView& weight, const TensorView& conv_states,
                                    const TensorView* bias, const TensorView* query_start_loc,
                                    const TensorView* cache_indices, const TensorView* num_accepted_tokens,
                                    ConvActivation activation, int64_t null_block_id, const TensorView& y,
                                    PreparedOp* op) {
  ConvProblem p;
  Status st = validate_causal_conv1d(true, x, weight, conv_states, bias, query_start_loc, cache_indices,
                                     num_accepted_tokens, activation, null_block_id, y, &p);
  if (!st.ok()) return st;
  return plan_conv(std::move(p), "causal_conv1d_update", op);
}

}  // namespace txops
