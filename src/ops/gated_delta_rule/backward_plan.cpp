// backward_plan.cpp — phase one of the gated delta rule's backward (txops::chunk_gated_delta_rule_grad and
// aclnnChunkGatedDeltaRuleGrad): validate, then plan — the ISA's kernel, the (sequence, key head) items split into
// contiguous ranges of near-equal cost over the threads, the workspace (one scratch area per part: the chunk
// checkpoints and each chunk's U of the item's value heads (one chunk's when the forward's snapshots are given),
// their adjoint states, the chunk's packs, record,
// products and accumulators) — producing a PreparedOp. Also the C++ API function (prepare + run with the
// thread's scratch workspace).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>

#include "core/amx.h"
#include "core/parallel.h"
#include "core/plan_record.h"
#include "core/status.h"
#include "core/streaming.h"
#include "core/verbose.h"
#include "core/work_stealing.h"
#include "ops/gated_delta_rule/backward.h"

namespace txops {
namespace {

constexpr int64_t kAlign = 64;
constexpr const char* kKernelName = "gdr_backward_chunked";

int64_t align_up(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

PreparedOp make_grad_op(std::shared_ptr<GdrGradPlan> plan, Isa isa) {
  record_plan(compiled_isa(isa), plan->threads, kKernelName);
  GdrGradRunItemsFn* run_items = select_gdr_grad_run_items(isa);
  const int64_t scratch_bytes = align_up(plan->scratch_floats * static_cast<int64_t>(sizeof(float)));
  PreparedOp op;
  op.workspace_bytes = static_cast<uint64_t>(kAlign + scratch_bytes * plan->threads);
  op.run = [plan, run_items, scratch_bytes, isa](void* workspace) -> Status {
    std::string details;
    if (verbose()) {
      const GdrProblem& p = plan->problem.fwd;
      char buf[320];
      std::snprintf(buf, sizeof(buf),
                    "kernel=%s isa=%s threads=%d T=%" PRId64 " B=%" PRId64 " Nk=%" PRId64 " Nv=%" PRId64
                    " Dk=%" PRId64 " Dv=%" PRId64 " %s state=%s g=%d checkpoints=%d%s%s workspace=%" PRId64 "B",
                    kKernelName, isa_name(isa), plan->threads, p.num_tokens, p.batch, p.num_key_heads,
                    p.num_value_heads, p.key_dim, p.value_dim, dtype_name(p.query.dtype),
                    dtype_name(p.state_in.dtype), p.has_g ? 1 : 0, plan->problem.has_checkpoints ? 1 : 0,
                    plan->amx ? " x=amx" : "", plan->stream_grads ? " stream=1" : "", scratch_bytes * plan->threads);
      details = buf;
    }
    VerboseTimer timer("chunk_gated_delta_rule_grad", std::move(details));
    char* base = static_cast<char*>(workspace);
    base += (kAlign - reinterpret_cast<uintptr_t>(base) % kAlign) % kAlign;
    const GdrGradPlan& pl = *plan;
    // Parts are fixed by the plan (not by how many threads OpenMP gives); each owns one scratch area, and its
    // thread runs the grains of other parts too once its own are done (core/work_stealing.h).
    run_grains(pl.grains, [&](int64_t part, int64_t begin, int64_t end) {
      run_items(pl, begin, end, reinterpret_cast<float*>(base + scratch_bytes * part));
    });
    return Status();
  };
  return op;
}

}  // namespace

Status prepare_chunk_gated_delta_rule_grad(const TensorView& query, const TensorView& key, const TensorView& value,
                                           const TensorView& beta, const TensorView& initial_state,
                                           const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                                           const TensorView& grad_out, const TensorView* grad_final_state,
                                           const TensorView& grad_query, const TensorView& grad_key,
                                           const TensorView& grad_value, const TensorView& grad_beta,
                                           const TensorView* grad_g, const TensorView& grad_initial_state,
                                           const TensorView* forward_checkpoints,
                                           const TensorView* forward_corrected_values, PreparedOp* op) {
  auto plan = std::make_shared<GdrGradPlan>();
  Status st = validate_chunk_gated_delta_rule_grad(query, key, value, beta, initial_state, actual_seq_lengths, g,
                                                   scale, grad_out, grad_final_state, grad_query, grad_key,
                                                   grad_value, grad_beta, grad_g, grad_initial_state,
                                                   forward_checkpoints, forward_corrected_values, &plan->problem);
  if (!st.ok()) return st;
  const GdrProblem& p = plan->problem.fwd;
  const Isa isa = active_isa();
  plan->items = p.batch * p.num_key_heads;
  plan->key_dim_padded = gdr_pad16(p.key_dim);
  plan->value_dim_padded = gdr_pad16(p.value_dim);
  for (int64_t b = 0; b < p.batch; ++b)
    plan->max_chunks = std::max(plan->max_chunks, (p.seq_length(b) + kGdrChunk - 1) / kGdrChunk);
  plan->kept_chunks = plan->problem.has_checkpoints ? std::min<int64_t>(plan->max_chunks, 1) : plan->max_chunks;
  // Cost of an item in token units: its tokens times its value heads, plus a share for its states.
  std::vector<int64_t> costs(static_cast<size_t>(plan->items));
  for (int64_t item = 0; item < plan->items; ++item)
    costs[item] = (p.seq_length(item / p.num_key_heads) + 16) * p.heads_per_key_head();
  plan->threads = plan_threads(plan->items, 1);
  std::vector<int64_t> part_start;
  partition_by_cost(costs, plan->threads, &part_start);
  plan->grains = split_into_grains(part_start, costs, grains_per_part(), [](int64_t) { return true; });
  plan->amx = isa == Isa::kAvx512 && cpu_has_avx512_bf16() && p.query.dtype == DType::kBF16 &&
              plan->key_dim_padded % 32 == 0 && plan->value_dim_padded % 32 == 0 && amx_bf16_usable();
  // dq, dk and dv are read again only by the ops before this one in the backward, long after their rows were written:
  // where each of them takes 4 MiB or more (core/streaming.h, as the causal conv and RoPE), their rows go past the
  // caches.
  const int64_t grad_elements = p.num_tokens * std::min(p.num_key_heads * p.key_dim, p.num_value_heads * p.value_dim);
  plan->stream_grads = grad_elements * static_cast<int64_t>(dtype_size(p.query.dtype)) >= kStreamingOutputBytes;
  GdrGradScratch s;
  plan->scratch_floats = gdr_grad_carve(nullptr, p.heads_per_key_head(), plan->kept_chunks, p.key_dim,
                                        plan->key_dim_padded, plan->value_dim_padded, &s);
  *op = make_grad_op(std::move(plan), isa);
  return Status();
}

}  // namespace txops
