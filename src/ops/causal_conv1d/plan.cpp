// plan.cpp — phase one of both causal-conv1d operators: validate, then plan the (sequence, channel block)
// items over threads (contiguous ranges of near-equal tokens; small calls on one thread) for the active ISA's
// kernel. No workspace: the kernel stages at most a few KiB on its stack.
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "core/plan_record.h"
#include "core/verbose.h"
#include "ops/causal_conv1d/prepare.h"
#include "ops/causal_conv1d/problem.h"

namespace txops {
namespace {

// Elements (tokens x channels read and written) a thread should get at least: below this a second thread costs
// more in wake-up than it saves.
constexpr int64_t kMinElementsPerThread = 1 << 15;

struct ConvPlan {
  ConvProblem problem;
  int threads = 1;
  std::vector<int64_t> part_start;
};

Status plan_conv(ConvProblem problem, const char* op_name, PreparedOp* op) {
  auto plan = std::make_shared<ConvPlan>();
  plan->problem = std::move(problem);
  const ConvProblem& p = plan->problem;
  const int64_t blocks = (p.dim + kConvChannelBlock - 1) / kConvChannelBlock;
  std::vector<int64_t> costs(static_cast<size_t>(p.batch * blocks));
  int64_t elements = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t k = 0; k < blocks; ++k) costs[b * blocks + k] = p.length[b] + p.width;  // tokens + state rows
    elements += (p.length[b] + p.width) * p.dim;
  }
  plan->threads = std::min<int>(plan_threads(elements, kMinElementsPerThread), static_cast<int>(costs.size()));
  partition_by_cost(costs, plan->threads, &plan->part_start);
  const Isa isa = active_isa();
  record_plan(compiled_isa(isa), plan->threads, "causal_conv1d_rows");
  ConvRunItemsFn* run = select_conv_run_items(isa);
  op->workspace_bytes = 0;
  op->run = [plan, run, isa, op_name](void*) -> Status {
    std::string details;
    if (verbose()) {
      const ConvProblem& q = plan->problem;
      char buf[200];
      std::snprintf(buf, sizeof(buf), "kernel=causal_conv1d_rows isa=%s threads=%d B=%" PRId64 " dim=%" PRId64
                    " K=%" PRId64 " stateLen=%" PRId64 " %s", isa_name(isa), plan->threads, q.batch, q.dim, q.width,
                    q.state_len, dtype_name(q.dtype));
      details = buf;
    }
    VerboseTimer timer(op_name, std::move(details));
    const ConvPlan& pl = *plan;
    parallel_parts(pl.threads, pl.threads, [&](int64_t part, int64_t, int64_t) {
      run(pl.problem, pl.part_start[part], pl.part_start[part + 1]);
    });
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
