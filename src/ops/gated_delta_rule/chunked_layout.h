// chunked_layout.h — the memory of the chunked prefill kernel, shared by the planner (sizes) and the kernels
// (pointers): a thread's packing scratch, a chunk record (what phase one of a chunk hands to the state pass),
// a thread's state-pass scratch, a staged state. One carve function per block, used both ways (with a null base
// it only counts), so the sizes the plan reserves and the pointers the kernels use cannot disagree.
#ifndef TXOPS_OPS_GATED_DELTA_RULE_CHUNKED_LAYOUT_H_
#define TXOPS_OPS_GATED_DELTA_RULE_CHUNKED_LAYOUT_H_

#include <algorithm>
#include <cstdint>

#include "ops/gated_delta_rule/kernels.h"

namespace txops {

inline int64_t gdr_pad16(int64_t n) { return (n + 15) / 16 * 16; }

// Hands out 64-byte aligned arrays (when the base is) from a float cursor; with a null base it only counts.
class GdrCarver {
 public:
  explicit GdrCarver(float* base) : base_(base) {}
  float* take(int64_t floats) {
    float* at = base_ == nullptr ? nullptr : base_ + used_;
    used_ += gdr_pad16(floats);
    return at;
  }
  int64_t used() const { return used_; }

 private:
  float* base_;
  int64_t used_ = 0;
};

// Phase one's packing scratch (one per thread). C = kGdrChunk; dkp, dvp: Dk, Dv rounded up to 16.
struct GdrPackScratch {
  float* kq = nullptr;       // 2C x dkp: K rows [0, n), Q rows [n, 2n), widened inputs
  float* beta = nullptr;     // C
  float* gamma = nullptr;    // C: e^G
  double* cum = nullptr;     // C: G = cumsum(g), restarted per chunk
  uint16_t* kq16 = nullptr;  // 2C x dkp: [K; Q] as bf16 bits (vdpbf16ps grams)
  uint16_t* kt16 = nullptr;  // dkp/2 x C x 2: Kᵀ in column pairs, the vdpbf16ps operand layout
  float* kt = nullptr;       // dkp x C: Kᵀ (columns >= n zero)
  float* grams = nullptr;    // 2C x C: [K; Q] Kᵀ before the masks (lower triangle and the 16-column tiles it hits)
  float* decays = nullptr;   // C x C or absent: Γ_ij = e^{G_i − G_j} as the masks made it (j up to row i's diagonal
                             // vector), kept for the backward's MaskProducts (its own scratch; the forward keeps none)
  // kq, kt and grams hold the key head `key_head`'s chunk at token `key_t0` (value heads of one key head share them).
  int64_t key_head = -1, key_t0 = -1;
  // The AMX path: the record whose bf16 [K; Q] and Kᵀ (GdrChunkRecord::kq16, kt16) hold that chunk's (made for an
  // earlier value head; the same record in items mode and the backward, which the next value head then keeps).
  // From contiguous bf16 rows (PackKeysBf16) they are made there directly and kq16 above is not used.
  const uint16_t* record_operands = nullptr;
};

inline int64_t gdr_carve_pack(float* base, int64_t dkp, GdrPackScratch* s) {
  constexpr int64_t C = kGdrChunk;
  GdrCarver c(base);
  s->kq = c.take(2 * C * dkp);
  s->beta = c.take(C);
  s->gamma = c.take(C);
  s->cum = reinterpret_cast<double*>(c.take(2 * C));
  s->kq16 = reinterpret_cast<uint16_t*>(c.take(C * dkp));
  s->kt16 = reinterpret_cast<uint16_t*>(c.take(C * dkp));
  s->kt = c.take(dkp * C);
  s->grams = c.take(2 * C * C);
  s->key_head = s->key_t0 = -1;
  return c.used();
}

// One chunk after phase one: everything the sequential state pass reads (n <= C tokens).
struct GdrChunkRecord {
  float* scaled = nullptr;  // 2C x dkp: β⊙e^G⊙K rows [0, n), e^G⊙Q·scale rows [n, 2n)
  float* kt = nullptr;      // dkp x C: Kᵀ, column j scaled by decay[j] (columns >= n zero)
  float* bv = nullptr;      // C x dvp: β⊙V
  float* gram = nullptr;    // 2C x C: A rows [0, n), P rows [n, 2n)
  float* decay = nullptr;   // C + 1: e^{G_last - G_i} (0 for i >= n), then e^{G_last} at [C]
  // The AMX path (GdrPlan::amx): X = row_scale ⊙ ([K; Q] Sᵀ) with the bf16 rows themselves.
  uint16_t* kq16 = nullptr;  // 2C x dkp: [K; Q] as bf16 bits
  float* row_scale = nullptr;  // 2C: β⊙e^G for rows [0, n), e^G·scale for rows [n, 2n)
  uint16_t* kt16 = nullptr;  // dkp x C: Kᵀ as bf16 bits (columns >= n zero)
};

inline int64_t gdr_carve_record(float* base, int64_t dkp, int64_t dvp, GdrChunkRecord* r) {
  constexpr int64_t C = kGdrChunk;
  GdrCarver c(base);
  r->scaled = c.take(2 * C * dkp);
  r->kt = c.take(dkp * C);
  r->bv = c.take(C * dvp);
  r->gram = c.take(2 * C * C);
  r->decay = c.take(C + 1);
  r->kq16 = reinterpret_cast<uint16_t*>(c.take(C * dkp));
  r->row_scale = c.take(2 * C);
  r->kt16 = reinterpret_cast<uint16_t*>(c.take(dkp * C / 2));
  return c.used();
}

// The state pass's scratch (one per thread); a column block [c0, c1) uses those columns of each array.
struct GdrPassScratch {
  float* x = nullptr;   // 2C x dvp: X = [β⊙e^G⊙K ; e^G⊙Q·scale] Sᵀ, then O in rows [n, 2n)
  float* vp = nullptr;  // C x dvp: V'
  uint32_t* split = nullptr;  // the AMX path: Sᵀ's columns, then decay⊙V', as three bf16 parts in row pairs
};

inline int64_t gdr_carve_pass(float* base, int64_t dkp, int64_t dvp, GdrPassScratch* s) {
  constexpr int64_t C = kGdrChunk;
  GdrCarver c(base);
  s->x = c.take(2 * C * dvp);
  s->vp = c.take(C * dvp);
  s->split = reinterpret_cast<uint32_t*>(c.take(3 * std::max(dkp, C) / 2 * dvp));
  return c.used();
}

// The row stride of a staged state Sᵀ (Dk rows of dvp columns, fp32): dvp, or dvp + 16 when a row is an even number
// of 64-byte lines longer than the GEMM's 64-column panel. At dvp = 128 the rows of a panel otherwise fall on half
// the L1 sets, 16 lines per set against 12 ways, and the X = [K; Q] Sᵀ tile ran at 150-160 GFLOP/s in cache
// instead of 174-185 (AVX-512; dev/gdr/gemm_bench.cpp): an odd number of lines per row spreads them over all sets.
inline int64_t gdr_state_row_stride(int64_t dvp) { return dvp > 64 && (dvp / 16) % 2 == 0 ? dvp + 16 : dvp; }

// A staged state: Sᵀ in fp32, Dk rows `row_stride` floats apart (gdr_state_row_stride).
inline int64_t gdr_staged_state_floats(int64_t key_dim, int64_t row_stride) {
  return gdr_pad16(key_dim * row_stride);
}

}  // namespace txops

#endif  // TXOPS_OPS_GATED_DELTA_RULE_CHUNKED_LAYOUT_H_
