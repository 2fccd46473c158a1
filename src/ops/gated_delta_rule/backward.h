// backward.h — the backward of ChunkGatedDeltaRule (txops extension, no CANN counterpart): the validated problem,
// the plan, the per-thread scratch layout shared by the planner (sizes) and the kernel (pointers), and the per-ISA
// kernel entry (backward_kernels.cpp). README.md "Backward" has the maths and the memory.
#ifndef TXOPS_OPS_GATED_DELTA_RULE_BACKWARD_H_
#define TXOPS_OPS_GATED_DELTA_RULE_BACKWARD_H_

#include <cstdint>
#include <vector>

#include "core/prepared_op.h"
#include "ops/gated_delta_rule/args.h"
#include "ops/gated_delta_rule/chunked_layout.h"
#include "ops/gated_delta_rule/kernels.h"

namespace txops {

struct GdrGradProblem {
  // The forward's problem: sizes, query, key, value, beta, g, state_in (= initialState), seq_start.
  // out / state_out are unused.
  GdrProblem fwd;
  TensorView grad_out;                          // (T, Nv, Dv), activation dtype
  bool has_grad_final_state = false;
  TensorView grad_final_state;                  // (B, Nv, Dv, Dk), state dtype, or absent (zero)
  TensorView grad_query, grad_key;              // (T, Nk, Dk), activation dtype
  TensorView grad_value;                        // (T, Nv, Dv)
  TensorView grad_beta;                         // (T, Nv)
  bool has_grad_g = false;
  TensorView grad_g;                            // (T, Nv) fp32, only with g
  TensorView grad_initial_state;                // (B, Nv, Dv, Dk), state dtype
};

// Phase-one rules (validate.cpp, table in README.md "Backward").
Status validate_chunk_gated_delta_rule_grad(const TensorView& query, const TensorView& key, const TensorView& value,
                                            const TensorView& beta, const TensorView& initial_state,
                                            const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                                            const TensorView& grad_out, const TensorView* grad_final_state,
                                            const TensorView& grad_query, const TensorView& grad_key,
                                            const TensorView& grad_value, const TensorView& grad_beta,
                                            const TensorView* grad_g, const TensorView& grad_initial_state,
                                            GdrGradProblem* problem);

// Phase one (backward_plan.cpp): validate and plan.
Status prepare_chunk_gated_delta_rule_grad(const TensorView& query, const TensorView& key, const TensorView& value,
                                           const TensorView& beta, const TensorView& initial_state,
                                           const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                                           const TensorView& grad_out, const TensorView* grad_final_state,
                                           const TensorView& grad_query, const TensorView& grad_key,
                                           const TensorView& grad_value, const TensorView& grad_beta,
                                           const TensorView* grad_g, const TensorView& grad_initial_state,
                                           PreparedOp* op);

// Items are (sequence, key head) pairs: one item runs every value head of its key head, so dq and dk (shared by
// those value heads) are summed inside the item in head order, and no item writes what another writes.
struct GdrGradPlan {
  GdrGradProblem problem;
  int threads = 1;
  int64_t items = 0;                // B * Nk
  std::vector<int64_t> part_start;  // threads + 1: part k runs items [part_start[k], part_start[k + 1])
  int64_t key_dim_padded = 0;       // Dk rounded up to 16
  int64_t max_chunks = 0;           // chunks of the longest sequence
  int64_t scratch_floats = 0;       // per thread (one area per part)
};

// One thread's scratch (C = kGdrChunk, G = value heads per key head, dkp = Dk padded, Dv as is):
struct GdrGradScratch {
  float* boundary = nullptr;  // G x max_chunks x Dv x dkp: the fp32 state before each chunk (checkpoints)
  float* adjoint = nullptr;   // G x Dv x dkp: D = ∂L/∂S of each value head, carried backwards over the chunks
  float* key = nullptr;       // C x dkp: the chunk's k rows (fp32, zero-padded)
  float* query = nullptr;     // C x dkp: scale · q
  float* value = nullptr;     // C x Dv
  float* grad_out = nullptr;  // C x Dv
  float* beta = nullptr;      // C
  float* alpha = nullptr;     // C: exp(g)
  float* dq = nullptr;        // C x dkp accumulators (all value heads of the key head)
  float* dk = nullptr;        // C x dkp
  float* dv = nullptr;        // C x Dv (one value head)
  float* dbeta = nullptr;     // C
  float* dg = nullptr;        // C
  float* states = nullptr;    // kGdrGradMaxRows x C x dkp: the per-token states of the rows being back-propagated
  float* err = nullptr;       // kGdrGradMaxRows x C: v_i − p_i per token
};

// Rows of S back-propagated together, token-major (independent rows overlap in the out-of-order core).
constexpr int64_t kGdrGradMaxRows = 8;

inline int64_t gdr_grad_carve(float* base, int64_t group, int64_t max_chunks, int64_t dv, int64_t dkp,
                              GdrGradScratch* s) {
  constexpr int64_t C = kGdrChunk;
  GdrCarver c(base);
  s->boundary = c.take(group * max_chunks * dv * dkp);
  s->adjoint = c.take(group * dv * dkp);
  s->key = c.take(C * dkp);
  s->query = c.take(C * dkp);
  s->value = c.take(C * dv);
  s->grad_out = c.take(C * dv);
  s->beta = c.take(C);
  s->alpha = c.take(C);
  s->dq = c.take(C * dkp);
  s->dk = c.take(C * dkp);
  s->dv = c.take(C * dv);
  s->dbeta = c.take(C);
  s->dg = c.take(C);
  s->states = c.take(kGdrGradMaxRows * C * dkp);
  s->err = c.take(kGdrGradMaxRows * C);
  return c.used();
}

// Runs items [begin, end) of the plan with one thread's scratch (plan.scratch_floats floats, 64-byte aligned).
using GdrGradRunItemsFn = void(const GdrGradPlan& plan, int64_t begin, int64_t end, float* scratch);
GdrGradRunItemsFn* select_gdr_grad_run_items(Isa isa);

}  // namespace txops

#endif  // TXOPS_OPS_GATED_DELTA_RULE_BACKWARD_H_
