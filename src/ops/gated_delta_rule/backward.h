// backward.h — the backward of ChunkGatedDeltaRule (txops extension, no CANN counterpart): the validated problem,
// the plan, the per-thread scratch layout shared by the planner (sizes) and the kernel (pointers), and the per-ISA
// kernel entry (backward_kernels.cpp). README.md "Backward" has the maths and the memory.
#ifndef TXOPS_OPS_GATED_DELTA_RULE_BACKWARD_H_
#define TXOPS_OPS_GATED_DELTA_RULE_BACKWARD_H_

#include <algorithm>
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
  // The forward's fp32 snapshots after every kGdrChunk tokens (its checkpoint_every option, starts the running
  // sum): S before chunk c >= 1 of sequence b is row checkpoint_start[b] + c - 1. Absent: the backward recomputes.
  bool has_checkpoints = false;
  TensorView checkpoints;                       // (R, Nv, Dv, Dk) fp32
  std::vector<int64_t> checkpoint_start;        // B
  // The forward's corrected values V' (= each chunk's U), only with the checkpoints. Absent: computed from them.
  bool has_corrected_values = false;
  TensorView corrected_values;                  // (T, Nv, Dv) fp32
};

// Phase-one rules (validate.cpp, table in README.md "Backward").
Status validate_chunk_gated_delta_rule_grad(const TensorView& query, const TensorView& key, const TensorView& value,
                                            const TensorView& beta, const TensorView& initial_state,
                                            const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                                            const TensorView& grad_out, const TensorView* grad_final_state,
                                            const TensorView& grad_query, const TensorView& grad_key,
                                            const TensorView& grad_value, const TensorView& grad_beta,
                                            const TensorView* grad_g, const TensorView& grad_initial_state,
                                            const TensorView* forward_checkpoints,
                                            const TensorView* forward_corrected_values, GdrGradProblem* problem);

// Phase one (backward_plan.cpp): validate and plan.
Status prepare_chunk_gated_delta_rule_grad(const TensorView& query, const TensorView& key, const TensorView& value,
                                           const TensorView& beta, const TensorView& initial_state,
                                           const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                                           const TensorView& grad_out, const TensorView* grad_final_state,
                                           const TensorView& grad_query, const TensorView& grad_key,
                                           const TensorView& grad_value, const TensorView& grad_beta,
                                           const TensorView* grad_g, const TensorView& grad_initial_state,
                                           const TensorView* forward_checkpoints,
                                           const TensorView* forward_corrected_values, PreparedOp* op);

// Items are (sequence, key head) pairs: one item runs every value head of its key head, so dq and dk (shared by
// those value heads) are summed inside the item in head order, and no item writes what another writes.
struct GdrGradPlan {
  GdrGradProblem problem;
  int threads = 1;
  int64_t items = 0;                // B * Nk
  GrainSplit grains;                // one part of items per thread (partition_by_cost) cut into grains, run with work
                                    // stealing (core/work_stealing.h)
  int64_t key_dim_padded = 0;       // Dk rounded up to 16
  int64_t value_dim_padded = 0;     // Dv rounded up to 16
  int64_t max_chunks = 0;           // chunks of the longest sequence
  int64_t kept_chunks = 0;          // chunks whose S and U the scratch keeps: max_chunks, or 1 with the checkpoints
  int64_t scratch_floats = 0;       // per thread (one area per part)
  bool amx = false;                 // the products with a bf16 operand on AMX tiles (bf16 activations, Dk and Dv
                                    // rounded to 16 multiples of 32, a CPU and OS with AMX-BF16; README "AMX path")
  bool stream_grads = false;        // dq, dk and dv rows written with non-temporal stores (each of them 4 MiB or more)
};

// One thread's scratch (C = kGdrChunk, G = value heads per key head, dkp / dvp = Dk / Dv rounded up to 16). The
// forward's chunk machinery (chunked_layout.h) recomputes each chunk's record; the rest is the backward's.
struct GdrGradScratch {
  GdrPackScratch pack;          // the chunk's [K; Q] rows, raw grams, β, e^G, cumsum(g) of one value head
  GdrChunkRecord record;        // its scaled rows, A and P, decays
  GdrPassScratch pass;          // X = β⊙e^G⊙K Sᵀ of the checkpoint pass
  float* checkpoints = nullptr; // G x kept x Dk x dvp: Sᵀ before each chunk (fp32; kept = plan.kept_chunks)
  float* solved = nullptr;      // G x kept x C x dvp: U = (I + A)^{-1} (β⊙V − X) of each chunk
  float* adjoint = nullptr;     // G x Dk x dvp: ∂L/∂Sᵀ of each value head, carried backwards over the chunks
  float* state = nullptr;       // dvp x dkp: S (the checkpoint, untransposed; the fp32 path)
  float* adjoint_rows = nullptr;// dvp x dkp: ∂L/∂S (the adjoint, untransposed; the fp32 path)
  float* stacked = nullptr;     // 2C x dvp: [−dR; dO]
  float* grad_u = nullptr;      // C x dvp: dU
  float* solved_t = nullptr;    // dvp x C: Uᵀ (the fp32 path; the AMX path splits S, ∂L/∂S and Uᵀ as it transposes)
  float* products = nullptr;    // 2C x C: [dA; dP], then [β⊙dA⊙Γ; scale⊙dP⊙Γ]
  float* p_t = nullptr;         // C x C: Pᵀ, then (scale⊙dP⊙Γ)ᵀ
  float* key_mix = nullptr;     // C x C: dA' + dA'ᵀ
  float* w1 = nullptr;          // 2C x dkp: [−dR; dO] S
  float* key_decayed = nullptr; // C x dkp: e^{G_last − G_i} k_i
  float* u_adj = nullptr;       // C x dkp: U ∂L/∂S
  float* scaled_t = nullptr;    // dkp x 2C: [β⊙e^G⊙K; e^G⊙Q·scale]ᵀ
  float* value = nullptr;       // C x dvp: the chunk's v rows
  float* dq = nullptr;          // C x dkp accumulators (all value heads of the key head)
  float* dk = nullptr;          // C x dkp
  float* dbeta = nullptr;       // C
  float* dgate = nullptr;       // C: ∂L/∂G (G = cumsum of g in the chunk), then dg
  float* colsum = nullptr;      // C
  // The AMX path's bf16 operands (the fp32 ones are split into s.pass.split, one product at a time):
  uint16_t* qt16 = nullptr;     // dkp x C: Qᵀ (columns >= n zero), the D update's second product
  uint16_t* dout16 = nullptr;   // C x dvp: dO rows
  uint32_t* k_pairs = nullptr;  // C/2 x dkp: K's token pairs (the right operand of a product over tokens)
  uint32_t* q_pairs = nullptr;  // C/2 x dkp: Q's
  uint32_t* dout_pairs = nullptr;  // C/2 x dvp: dO's
  uint16_t* a_split = nullptr;  // 3 x C x max(dvp, C): a left operand's three parts
};

inline int64_t gdr_grad_carve(float* base, int64_t group, int64_t kept_chunks, int64_t dk, int64_t dkp, int64_t dvp,
                              GdrGradScratch* s) {
  constexpr int64_t C = kGdrChunk;
  GdrCarver c(base);
  float* pack = c.take(gdr_carve_pack(nullptr, dkp, &s->pack));  // (sizes first; pointers when there is a base)
  float* record = c.take(gdr_carve_record(nullptr, dkp, dvp, &s->record));
  float* pass = c.take(gdr_carve_pass(nullptr, dkp, dvp, &s->pass));
  float* decays = c.take(C * C);  // the pack scratch's Γ (GdrPackScratch::decays)
  if (base != nullptr) {
    gdr_carve_pack(pack, dkp, &s->pack);
    s->pack.decays = decays;
    gdr_carve_record(record, dkp, dvp, &s->record);
    gdr_carve_pass(pass, dkp, dvp, &s->pass);
  }
  s->checkpoints = c.take(group * kept_chunks * dk * dvp);
  s->solved = c.take(group * kept_chunks * C * dvp);
  s->adjoint = c.take(group * dk * dvp);
  s->state = c.take(dvp * dkp);
  s->adjoint_rows = c.take(dvp * dkp);
  s->stacked = c.take(2 * C * dvp);
  s->grad_u = c.take(C * dvp);
  s->solved_t = c.take(dvp * C);
  s->products = c.take(2 * C * C);
  s->p_t = c.take(C * C);
  s->key_mix = c.take(C * C);
  s->w1 = c.take(2 * C * dkp);
  s->key_decayed = c.take(C * dkp);
  s->u_adj = c.take(C * dkp);
  s->scaled_t = c.take(dkp * 2 * C);
  s->value = c.take(C * dvp);
  s->dq = c.take(C * dkp);
  s->dk = c.take(C * dkp);
  s->dbeta = c.take(C);
  s->dgate = c.take(C);
  s->colsum = c.take(C);
  s->qt16 = reinterpret_cast<uint16_t*>(c.take(dkp * C / 2));
  s->dout16 = reinterpret_cast<uint16_t*>(c.take(C * dvp / 2));
  s->k_pairs = reinterpret_cast<uint32_t*>(c.take(C / 2 * dkp));
  s->q_pairs = reinterpret_cast<uint32_t*>(c.take(C / 2 * dkp));
  s->dout_pairs = reinterpret_cast<uint32_t*>(c.take(C / 2 * dvp));
  s->a_split = reinterpret_cast<uint16_t*>(c.take(3 * C * std::max(dvp, C) / 2));
  return c.used();
}

// Runs items [begin, end) of the plan with one thread's scratch (plan.scratch_floats floats, 64-byte aligned).
using GdrGradRunItemsFn = void(const GdrGradPlan& plan, int64_t begin, int64_t end, float* scratch);
GdrGradRunItemsFn* select_gdr_grad_run_items(Isa isa);

}  // namespace txops

#endif  // TXOPS_OPS_GATED_DELTA_RULE_BACKWARD_H_
