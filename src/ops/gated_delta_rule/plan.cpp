// plan.cpp — phase one of both gated-delta-rule operators: validate, then plan (ISA kernel, row layout,
// partition over (sequence, value head), workspace = per-thread fp32 scratch + the decode start-state snapshot
// when slots conflict), producing a PreparedOp whose run() executes the plan (TXOPS_VERBOSE names the kernel).
// Prefill chooses the chunked or the recurrent kernel per shape (README.md, "Kernels"); TXOPS_GDR_KERNEL
// overrides the choice for tests and benchmarks.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "core/parallel.h"
#include "core/status.h"
#include "core/verbose.h"
#include "ops/gated_delta_rule/kernels.h"
#include "ops/gated_delta_rule/prepare.h"

namespace txops {
namespace {

constexpr int64_t kAlign = 64;

int64_t align_up(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// (sequence, head) items a thread should get at least: a decode item is small (one state streamed once).
int64_t work_items_min(const GdrProblem& p) { return p.decode ? 8 : 1; }

// The kernel family the plan runs (README.md, "Kernels").
const char* kernel_name(const GdrPlan& plan) {
  if (plan.problem.decode) {
    if (plan.direct_state) return plan.layout.token_major ? "gdr_decode_pool_rows" : "gdr_decode_pool_rows_in_registers";
    return plan.layout.register_rows > 0 ? "gdr_decode_staged_rows_in_registers" : "gdr_decode_staged_generic";
  }
  if (plan.chunked) return "gdr_prefill_chunked";
  if (plan.layout.token_major) return "gdr_prefill_token_major_rows";
  return plan.layout.register_rows > 0 ? "gdr_prefill_rows_in_registers" : "gdr_prefill_generic_rows";
}

PreparedOp make_op(std::shared_ptr<GdrPlan> plan, Isa isa, const char* op_name) {
  GdrRunItemsFn* run_items = plan->chunked ? select_gdr_chunked_run_items(isa) : select_gdr_run_items(isa);
  GdrSnapshotFn* snapshot_fn = select_gdr_snapshot(isa);
  const int64_t scratch_bytes = align_up(plan->scratch_floats * static_cast<int64_t>(sizeof(float)));
  PreparedOp op;
  op.workspace_bytes = static_cast<uint64_t>(kAlign + scratch_bytes * plan->threads + align_up(plan->snapshot_bytes));
  op.run = [plan, run_items, snapshot_fn, scratch_bytes, isa, op_name](void* workspace) -> Status {
    std::string details;
    if (verbose()) {
      const GdrProblem& p = plan->problem;
      char buf[256];
      std::snprintf(buf, sizeof(buf),
                    "kernel=%s isa=%s threads=%d T=%" PRId64 " B=%" PRId64 " Nk=%" PRId64 " Nv=%" PRId64
                    " Dk=%" PRId64 " Dv=%" PRId64 " %s state=%s%s",
                    kernel_name(*plan), isa_name(isa), plan->threads, p.num_tokens, p.batch, p.num_key_heads,
                    p.num_value_heads, p.key_dim, p.value_dim, dtype_name(p.query.dtype),
                    dtype_name(p.state_in.dtype), plan->heads_only ? " slot-conflicts:heads-only" : "");
      details = buf;
    }
    VerboseTimer timer(op_name, std::move(details));
    char* base = static_cast<char*>(workspace);
    base += (kAlign - reinterpret_cast<uintptr_t>(base) % kAlign) % kAlign;
    char* snapshot = plan->snapshot_bytes > 0 ? base + scratch_bytes * plan->threads : nullptr;
    const GdrPlan& pl = *plan;
    if (snapshot != nullptr) {
      const int64_t pairs = pl.problem.batch * pl.problem.num_value_heads;
      parallel_for(pl.threads, pl.threads, [&](int64_t part_begin, int64_t part_end) {
        for (int64_t part = part_begin; part < part_end; ++part) {
          int64_t b, e;
          balanced_range(pairs, pl.threads, static_cast<int>(part), &b, &e);
          snapshot_fn(pl, b, e, snapshot);
        }
      });
    }
    // Parts are fixed by the plan (not by how many threads OpenMP gives); each owns one scratch area.
    parallel_for(pl.threads, pl.threads, [&](int64_t part_begin, int64_t part_end) {
      for (int64_t part = part_begin; part < part_end; ++part) {
        int64_t b, e;
        balanced_range(pl.items, pl.threads, static_cast<int>(part), &b, &e);
        run_items(pl, b, e, reinterpret_cast<float*>(base + scratch_bytes * part), snapshot);
      }
    });
    return Status();
  };
  return op;
}

void plan_common(GdrPlan* plan, Isa isa) {
  const GdrProblem& p = plan->problem;
  plan->layout = select_gdr_layout(isa)(p.key_dim);
  const int64_t dkp = plan->layout.key_dim_padded, dv = p.value_dim, tb = kGdrTokenBlock;
  auto rounded = [](int64_t f) { return (f + 15) / 16 * 16; };
  plan->threads = plan_threads(plan->items, work_items_min(p));
  // Prefill stages the fp32 states of every head a thread owns in one sequence (at most Nv, at most its items).
  const int64_t items_per_thread = (plan->items + plan->threads - 1) / plan->threads;
  const int64_t staged_heads = p.decode ? 1 : (items_per_thread < p.num_value_heads ? items_per_thread + 1 : p.num_value_heads);
  plan->scratch_floats = plan->chunked ? gdr_chunked_scratch_floats(p.key_dim, dv, staged_heads)
                                       : 5 * rounded(tb * dkp) + 2 * rounded(tb * dv) + 3 * rounded(tb) + staged_heads * dv * dkp;
}

// Prefill kernel choice. TXOPS_GDR_KERNEL=chunked|recurrent forces one (tests, benchmarks); otherwise (unset,
// "auto", anything else) the measured rule of README.md "Kernels": chunked on AVX2 and AVX3 when the sequences
// average at least one chunk (shorter ones are dominated by staging the state, which the recurrent kernel does
// faster) and the recurrent kernel has no token-major fast path or the ISA is AVX2 (AVX3 with Dk <= 128: the
// recurrent kernel is as fast or faster).
bool choose_chunked(const GdrProblem& p, Isa isa) {
  const char* env = std::getenv("TXOPS_GDR_KERNEL");
  if (env != nullptr && std::strcmp(env, "chunked") == 0) return true;
  if (env != nullptr && std::strcmp(env, "recurrent") == 0) return false;
  if (isa == Isa::kScalar || p.num_tokens < kGdrChunk * p.batch) return false;
  return isa == Isa::kAvx2 || !select_gdr_layout(isa)(p.key_dim).token_major;
}

}  // namespace

Status prepare_chunk_gated_delta_rule(const TensorView& query, const TensorView& key, const TensorView& value,
                                      const TensorView& beta, const TensorView& initial_state,
                                      const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                                      const TensorView& out, const TensorView& final_state, PreparedOp* op) {
  auto plan = std::make_shared<GdrPlan>();
  Status st = validate_chunk_gated_delta_rule(query, key, value, beta, initial_state, actual_seq_lengths, g, scale,
                                              out, final_state, &plan->problem);
  if (!st.ok()) return st;
  const Isa isa = active_isa();
  plan->items = plan->problem.batch * plan->problem.num_value_heads;
  plan->chunked = choose_chunked(plan->problem, isa);
  plan_common(plan.get(), isa);
  plan->avx512_bf16 = plan->chunked && isa == Isa::kAvx512 && cpu_has_avx512_bf16();
  *op = make_op(std::move(plan), isa, "chunk_gated_delta_rule");
  return Status();
}

Status prepare_recurrent_gated_delta_rule(const TensorView& query, const TensorView& key, const TensorView& value,
                                          const TensorView& beta, const TensorView& state,
                                          const TensorView& actual_seq_lengths,
                                          const TensorView& ssm_state_indices, const TensorView* g,
                                          const TensorView* gk, const TensorView* num_accepted_tokens, float scale,
                                          const TensorView& out, PreparedOp* op) {
  auto plan = std::make_shared<GdrPlan>();
  Status st = validate_recurrent_gated_delta_rule(query, key, value, beta, state, actual_seq_lengths,
                                                  ssm_state_indices, g, gk, num_accepted_tokens, scale, out,
                                                  &plan->problem);
  if (!st.ok()) return st;
  const Isa isa = active_isa();
  GdrProblem& p = plan->problem;
  plan->heads_only = p.slot_conflict;
  plan->items = plan->heads_only ? p.num_value_heads : p.batch * p.num_value_heads;
  plan_common(plan.get(), isa);
  if (p.slot_conflict) {
    plan->snapshot_bytes = p.batch * p.num_value_heads * p.value_dim * p.key_dim *
                           static_cast<int64_t>(dtype_size(p.state_in.dtype));
  }
  int64_t longest = 0;
  for (int64_t b = 0; b < p.batch; ++b) longest = p.seq_length(b) > longest ? p.seq_length(b) : longest;
  plan->direct_state = plan->layout.register_rows > 0 && plan->layout.key_dim_padded == p.key_dim &&
                       p.state_in.strides[3] == 1 && longest <= kGdrTokenBlock;
  plan->avx512_bf16 = isa == Isa::kAvx512 && cpu_has_avx512_bf16();
  *op = make_op(std::move(plan), isa, "recurrent_gated_delta_rule");
  return Status();
}

}  // namespace txops
