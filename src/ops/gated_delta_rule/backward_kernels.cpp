// backward_kernels.cpp — the backward of the chunked gated delta rule in chunked (WY) form (Highway: AVX3, AVX2,
// SCALAR); README.md "Backward" has the derivation. Per (sequence, key head) item and each of its value heads, on
// the forward's chunk machinery (chunked_phase_one-inl.h: the grams A, P and the scaled rows; the GEMM tile):
//   1. checkpoint pass, chunks in order: X = β⊙e^G⊙K Sᵀ, U = (I + A)^{-1} (β⊙V − X), Sᵀ ← e^{G_n} Sᵀ + (Kᵀ⊙decay) U;
//      Sᵀ before each chunk and each chunk's U are kept (fp32). Given the forward's snapshots (the state after every
//      chunk), there is no such pass: step 2 stages each chunk's Sᵀ from them and computes its U, or reads it from
//      the forward's corrected values V' (the same rows) when those are given too;
//   2. chunks in reverse, D = ∂L/∂Sᵀ after the chunk (St = Sᵀ before it, γ = e^G, decay_i = e^{G_n − G_i}):
//      dU = Pᵀ dO + (decay⊙K) D                      dR = (I + A)^{-T} dU          (back substitution)
//      [dA; dP] = [−dR; dO] Uᵀ  (masked)              [−dR S; dO S] = [−dR; dO] S   (S = Stᵀ)
//      dq = scale (γ⊙(dO S) + (dP⊙Γ) K)               dv = β⊙dR
//      dk = (dA'+dA'ᵀ) K + (dP⊙Γ)ᵀ Q̃ − βγ⊙(dR S) + decay⊙(U Dᵀ),   dA' = β⊙dA⊙Γ
//      D ← e^{G_n} D + [β⊙γ⊙K; γ⊙Q̃]ᵀ [−dR; dO]
//      dβ and dG (the gradient of the in-chunk cumsum G, then dg = its reverse cumsum) from the row dot products
//      of the same products (README.md lists each term).
// dq and dk (shared by the value heads of a key head) are summed in fp32 scratch in head order and stored once per
// chunk; no item writes what another writes, so results do not depend on the thread count.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/gated_delta_rule/backward_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/cache_control.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/simd_convert-inl.h"
#include "core/simd_matrix_copy-inl.h"
#include "ops/gated_delta_rule/backward.h"
#include "ops/gated_delta_rule/backward_amx-inl.h"
#include "ops/gated_delta_rule/chunked_gemm-inl.h"
#include "ops/gated_delta_rule/chunked_phase_one-inl.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
// ChunkContext, PrepareChunk, SolveRows, LoadRow, Element, RowDifferences, ExpOf; DF, VF, Gemm, Triangle, C
using namespace gdr_chunk;

// count a multiple of the vector length; four accumulator chains (one chain made the 16K-element D·S of each chunk
// wait on the FMA latency).
HWY_INLINE float Dot(const float* a, const float* b, int64_t count) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  VF acc[4] = {hn::Zero(df), hn::Zero(df), hn::Zero(df), hn::Zero(df)};
  int64_t j = 0;
  for (; j + 4 * N <= count; j += 4 * N)
    for (int v = 0; v < 4; ++v) acc[v] = hn::MulAdd(hn::LoadU(df, a + j + v * N), hn::LoadU(df, b + j + v * N), acc[v]);
  for (; j < count; j += N) acc[0] = hn::MulAdd(hn::LoadU(df, a + j), hn::LoadU(df, b + j), acc[0]);
  return hn::GetLane(hn::SumOfLanes(df, hn::Add(hn::Add(acc[0], acc[1]), hn::Add(acc[2], acc[3]))));
}

template <class T>
T* At(const TensorView& v, int64_t i0, int64_t i1) {
  return static_cast<T*>(v.data) + i0 * v.strides[0] + i1 * v.strides[1];
}

// Columns [c0, c0 + NV vectors) of NR = −dR, where (I + A)ᵀ dR = dU: from the last row up,
// NR_i = −dU_i − Σ_{j>i} A_ji NR_j (A strictly lower, rows of the record's gram).
template <int NV>
HWY_INLINE void BackSolveColumns(int64_t n, int64_t c0, int64_t dvp, const float* gram, const float* du, float* nr) {
  const DF df;
  const size_t N = hn::Lanes(df);
  for (int64_t i = n - 1; i >= 0; --i) {
    VF acc[NV];
    for (int v = 0; v < NV; ++v) acc[v] = hn::Neg(hn::LoadU(df, du + i * dvp + c0 + v * N));
    for (int64_t j = i + 1; j < n; ++j) {
      const VF aji = hn::Set(df, gram[j * C + i]);
      for (int v = 0; v < NV; ++v) acc[v] = hn::NegMulAdd(aji, hn::LoadU(df, nr + j * dvp + c0 + v * N), acc[v]);
    }
    for (int v = 0; v < NV; ++v) hn::StoreU(acc[v], df, nr + i * dvp + c0 + v * N);
  }
}

void BackSolve(int64_t n, int64_t dvp, const float* gram, const float* du, float* nr) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(DF()));
  int64_t c = 0;
  for (; c + 8 * N <= dvp; c += 8 * N) BackSolveColumns<8>(n, c, dvp, gram, du, nr);
  if (c + 4 * N <= dvp) BackSolveColumns<4>(n, c, dvp, gram, du, nr), c += 4 * N;
  if (c + 2 * N <= dvp) BackSolveColumns<2>(n, c, dvp, gram, du, nr), c += 2 * N;
  if (c < dvp) BackSolveColumns<1>(n, c, dvp, gram, du, nr);
}

// The masks of the chunk's C x C products (rows of s.products: dA = −dR Uᵀ in [0, n), dP = dO Uᵀ in [n, 2n)),
// Γ_ij = e^{G_i − G_j} (as phase one's MaskWithDecay made them, ps.decays): rows [0, n) become dA' = β_i dA_ij Γ_ij
// (j < i), rows [n, 2n) scale·dP_ij Γ_ij (j <= i).
// Adds to dβ (Σ_j dA_ij Γ_ij k_i·k_j) and to dG the decays' terms: with Y = dA⊙A and Z = dP⊙P,
// dG_i += Σ_j (Y + Z)_ij − Σ_j (Y + Z)_ji.
void MaskProducts(int64_t n, float scale, const GdrGradScratch& s) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t np = (n + N - 1) / N * N;
  const GdrPackScratch& ps = s.pack;
  const float* gram = s.record.gram;
  std::fill(s.colsum, s.colsum + np, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    float* da = s.products + i * C;
    float* dp = s.products + (n + i) * C;
    const int64_t je = ZeroPastDiagonal(i, np, da, dp);  // past row i's diagonal every mask is zero
    const VF beta = hn::Set(df, ps.beta[i]), vscale = hn::Set(df, scale);
    VF row = hn::Zero(df), dbeta = hn::Zero(df);
    for (int64_t j = 0; j < je; j += N) {
      const VF gamma = hn::LoadU(df, ps.decays + i * C + j);  // (phase one's MaskWithDecay made them)
      const auto strict = hn::FirstN(df, static_cast<size_t>(i > j ? i - j : 0));
      const auto incl = hn::FirstN(df, static_cast<size_t>(i + 1 > j ? i + 1 - j : 0));
      const VF va = hn::LoadU(df, da + j), vp = hn::LoadU(df, dp + j);
      const VF y = hn::IfThenElseZero(strict, hn::Mul(va, hn::LoadU(df, gram + i * C + j)));
      const VF z = hn::IfThenElseZero(incl, hn::Mul(vp, hn::LoadU(df, gram + (n + i) * C + j)));
      const VF dag = hn::IfThenElseZero(strict, hn::Mul(va, gamma));
      // (the raw grams beyond the triangle are not computed: masked after the product)
      dbeta = hn::Add(dbeta, hn::IfThenElseZero(strict, hn::Mul(dag, hn::LoadU(df, ps.grams + i * C + j))));
      hn::StoreU(hn::Mul(dag, beta), df, da + j);
      hn::StoreU(hn::IfThenElseZero(incl, hn::Mul(hn::Mul(vp, gamma), vscale)), df, dp + j);
      const VF yz = hn::Add(y, z);
      row = hn::Add(row, yz);
      hn::StoreU(hn::Add(hn::LoadU(df, s.colsum + j), yz), df, s.colsum + j);
    }
    s.dgate[i] += hn::GetLane(hn::SumOfLanes(df, row));
    s.dbeta[i] += hn::GetLane(hn::SumOfLanes(df, dbeta));
  }
  for (int64_t i = 0; i < n; ++i) s.dgate[i] -= s.colsum[i];
}

// The checkpoint pass of chunk c of one value head: U into `solved`, the next checkpoint (when there is one).
// The AMX path computes X and the update as the forward's AMX path does (kernels_chunked.cpp StatePass), so U has
// the forward's V' bits.
void CheckpointChunk(const ChunkContext& cx, int64_t n, const GdrGradScratch& s, const float* st, float* solved,
                     float* st_next) {
  const int64_t dk = cx.p->key_dim, dvp = cx.dvp;
  const GdrChunkRecord& r = s.record;
#if TXOPS_GDR_AMX
  if (cx.amx) {
    gdr_amx::SplitPairs(st, dvp, dk, cx.dkp / 2, nullptr, dvp, s.pass.split);
    gdr_amx::XOnTiles(n, cx.dkp, r.kq16, r.row_scale, s.pass.split, dvp, s.pass.x, dvp);
  } else
#endif
  {
    Gemm(n, dvp, dk, r.scaled, cx.dkp, st, dvp, s.pass.x, dvp, false);  // X = β⊙e^G⊙K Sᵀ
  }
  GdrPassScratch into{s.pass.x, solved};
  SolveRows(n, 0, dvp, dvp, r, into);  // U
  if (st_next == nullptr) return;
  std::memcpy(st_next, st, static_cast<size_t>(dk * dvp) * sizeof(float));
#if TXOPS_GDR_AMX
  if (cx.amx) {
    gdr_amx::SplitPairs(solved, dvp, n, C / 2, r.decay, dvp, s.pass.split);
    gdr_amx::StateUpdateOnTiles(dk, n, r.kt16, s.pass.split, dvp, r.decay[C], st_next, dvp);
    return;
  }
#endif
  Gemm(dk, dvp, n, r.kt, C, solved, dvp, st_next, dvp, true, r.decay[C]);
}


#if TXOPS_GDR_AMX
// The AMX path's operands that depend only on the key head and chunk (made once for the value heads that share them):
// K's and Q's token pairs, and Qᵀ as bf16 (through s.scaled_t, which this path does not otherwise use).
void PackKeyOperands(int64_t n, int64_t dkp, const GdrGradScratch& s) {
  gdr_amx::PairRows(s.record.kq16, dkp, n, C / 2, dkp, s.k_pairs);
  gdr_amx::PairRows(s.record.kq16 + n * dkp, dkp, n, C / 2, dkp, s.q_pairs);
  TransposeKeys(n, dkp, s.pack.kq + n * dkp, s.scaled_t);
  Bf16BitsOfWidened(s.scaled_t, dkp * C, s.qt16);
}
#endif

// The reverse step of chunk [t0, t0 + n) of value head h (its record just prepared): reads St (the checkpoint) and U,
// updates the adjoint D (Dk x dvp, ∂L/∂Sᵀ) from after the chunk to before it, adds to the dq / dk accumulators and
// stores dv, dβ and (when asked for) dg.
template <class TA>
void ReverseChunk(const ChunkContext& cx, const GdrGradProblem& P, int64_t h, int64_t t0, int64_t n,
                  const GdrGradScratch& s, const float* st, const float* u, int64_t ldu, float* adj, bool stream) {
  const GdrProblem& p = *cx.p;
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t dk = p.key_dim, dv = p.value_dim, dkp = cx.dkp, dvp = cx.dvp, np = (n + N - 1) / N * N;
  const GdrPackScratch& ps = s.pack;
  const GdrChunkRecord& r = s.record;
  const float scale = p.scale, gamma_n = r.decay[C];
  float* nr = s.stacked;            // rows [0, n): −dR
  float* d_out = s.stacked + n * dvp;  // rows [n, 2n): dO
  for (int64_t i = 0; i < n; ++i) {
    LoadRow(Element<TA>(P.grad_out, t0 + i, h), P.grad_out.strides[2], dv, dvp, 1.0f, d_out + i * dvp);
    LoadRow(Element<TA>(p.value, t0 + i, h), p.value.strides[2], dv, dvp, 1.0f, s.value + i * dvp);
  }
  std::fill(s.dbeta, s.dbeta + n, 0.0f);
  std::fill(s.dgate, s.dgate + n, 0.0f);
  // S and ∂L/∂S untransposed (dv rows of dkp, columns >= Dk zero), Uᵀ (columns >= n zero), Pᵀ, the scaled rows'ᵀ.
  // (The AMX path splits S, ∂L/∂S and Uᵀ straight from Sᵀ, D and U: SplitPairsOfTranspose.)
  if (!cx.amx) {
    LoadMatrixF32(st, 1, dvp, dv, dk, s.state, dkp);
    LoadMatrixF32(adj, 1, dvp, dv, dk, s.adjoint_rows, dkp);
    for (int64_t v = 0; v < dv; ++v)
      for (int64_t c = dk; c < dkp; ++c) s.state[v * dkp + c] = s.adjoint_rows[v * dkp + c] = 0.0f;
    LoadMatrixF32(u, 1, ldu, dv, n, s.solved_t, C);
    for (int64_t v = 0; v < dv; ++v) std::fill(s.solved_t + v * C + n, s.solved_t + (v + 1) * C, 0.0f);
  }
  LoadMatrixF32(r.gram + n * C, 1, C, n, n, s.p_t, C);
  // dU = (decay⊙K) D + Pᵀ dO; h_i = U_i·((decay⊙K) D)_i feeds dG.
#if TXOPS_GDR_AMX
  // The AMX path (backward_amx-inl.h): every product on tiles, an fp32 operand split in three bf16 parts, a bf16 one
  // (K, Q, dO) as it is; the rows' scales applied to the products (decay, β⊙γ, γ·scale) where the fp32 path scales
  // an operand first. s.a_split holds one left operand's parts at a time, s.pass.split one right operand's.
  const bool amx = cx.amx;
  const int64_t rows32 = (n + 31) / 32 * 32, a_part = C * std::max(dvp, C);
  uint32_t* split = s.pass.split;
  // A split left operand: rows [0, n) x columns [0, valid_cols) of m (ld floats), depth columns.
  auto split_rows = [&](const float* m, int64_t ld, int64_t valid_cols, int64_t depth, int parts = 3) {
    gdr_amx::SplitRows(m, ld, n, valid_cols, rows32, depth, a_part, s.a_split, parts);
  };
  // out (n rows of cols floats) = the split left operand (depth dvp) times b, both fp32 matrices (dA = −dR Uᵀ, −dR S,
  // U ∂L/∂S): their two leading parts, ProductOnTiles' order 1 (a relative error of order 2^-16 per product; as fp32
  // GEMMs these three were a fifth of the backward). An operand split only for these needs no third part.
  auto two_fp32 = [&](const uint32_t* b, int64_t cols, float* out, Triangle tri = Triangle::kFull) {
    gdr_amx::ProductOnTiles(n, dvp, s.a_split, a_part, 2, b, dvp / 2 * cols, 2, cols, false, nullptr, out, cols, 1,
                            tri);
  };
  if (amx) {
    Bf16BitsOfWidened(d_out, n * dvp, s.dout16);
    std::fill(s.dout16 + n * dvp, s.dout16 + rows32 * dvp, uint16_t{0});
    gdr_amx::PairRows(s.dout16, dvp, n, C / 2, dvp, s.dout_pairs);
    gdr_amx::SplitPairs(adj, dvp, dk, dkp / 2, nullptr, dvp, split);
    gdr_amx::XOnTiles(n, dkp, r.kq16, r.decay, split, dvp, s.grad_u, dvp);  // decay ⊙ (K D)
  } else
#else
  constexpr bool amx = false;
#endif
  {
    LoadMatrixF32(r.scaled, 1, dkp, dk, 2 * n, s.scaled_t, 2 * C);
    for (int64_t i = 0; i < n; ++i) {
      const VF decay = hn::Set(df, r.decay[i]);
      for (int64_t j = 0; j < dkp; j += N)
        hn::StoreU(hn::Mul(hn::LoadU(df, ps.kq + i * dkp + j), decay), df, s.key_decayed + i * dkp + j);
    }
    Gemm(n, dvp, dk, s.key_decayed, dkp, adj, dvp, s.grad_u, dvp, false);
  }
  float h_sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float hi = Dot(u + i * ldu, s.grad_u + i * dvp, dvp);
    s.dgate[i] -= hi;
    h_sum += hi;
  }
  s.dgate[n - 1] += h_sum + gamma_n * Dot(adj, st, dk * dvp);
  if (!amx) Gemm(n, dvp, n, s.p_t, C, d_out, dvp, s.grad_u, dvp, true, 1.0f, Triangle::kUpperA);
#if TXOPS_GDR_AMX
  if (amx) {  // + Pᵀ dO
    split_rows(s.p_t, C, n, C);
    gdr_amx::ProductOnTiles(n, C, s.a_split, a_part, 3, s.dout_pairs, 0, 1, dvp, true, nullptr, s.grad_u, dvp, 2,
                            Triangle::kUpperA);
  }
#endif
  BackSolve(n, dvp, r.gram, s.grad_u, nr);
  // [dA; dP] = [−dR; dO] Uᵀ (lower triangles), masked; then the dk GEMMs' left operands.
#if TXOPS_GDR_AMX
  if (amx) {  // all C columns (the masks read the triangle); −dR's parts are kept for −dR S below
    split_rows(nr, dvp, dv, dvp, 2);
    gdr_amx::SplitPairsOfTranspose(u, ldu, n, dvp / 2, C, split);  // Uᵀ
    two_fp32(split, C, s.products, Triangle::kLowerC);
    gdr_amx::XOnTiles(n, dvp, s.dout16, nullptr, split, C, s.products + n * C, C, Triangle::kLowerC);
  } else
#endif
  {
    Gemm(n, np, dv, nr, dvp, s.solved_t, C, s.products, C, false, 1.0f, Triangle::kLowerC);
    Gemm(n, np, dv, d_out, dvp, s.solved_t, C, s.products + n * C, C, false, 1.0f, Triangle::kLowerC);
  }
  MaskProducts(n, scale, s);
  LoadMatrixF32(s.products, 1, C, n, n, s.key_mix, C);         // dA'ᵀ
  LoadMatrixF32(s.products + n * C, 1, C, n, n, s.p_t, C);     // (scale dP⊙Γ)ᵀ (Pᵀ is no longer needed)
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < i; ++j) s.key_mix[i * C + j] += s.products[i * C + j];
  // W1 = [−dR; dO] S, U ∂L/∂S.
#if TXOPS_GDR_AMX
  if (amx) {  // −dR S and dO S on tiles
    gdr_amx::SplitPairsOfTranspose(st, dvp, dk, dvp / 2, dkp, split);  // S
    two_fp32(split, dkp, s.w1);
    gdr_amx::XOnTiles(n, dvp, s.dout16, nullptr, split, dkp, s.w1 + n * dkp, dkp);
  } else
#endif
  {
    Gemm(2 * n, dkp, dv, s.stacked, dvp, s.state, dkp, s.w1, dkp, false);
  }
#if TXOPS_GDR_AMX
  if (amx) {
    split_rows(u, ldu, dv, dvp, 2);
    gdr_amx::SplitPairsOfTranspose(adj, dvp, dk, dvp / 2, dkp, split, 2);  // ∂L/∂S
    two_fp32(split, dkp, s.u_adj);
  } else
#endif
  {
    Gemm(n, dkp, dv, u, ldu, s.adjoint_rows, dkp, s.u_adj, dkp, false);
  }
  for (int64_t i = 0; i < n; ++i) {
    const float g = ps.gamma[i], b = ps.beta[i];
    const float* wk = s.w1 + i * dkp;        // −dR_i S
    const float* wq = s.w1 + (n + i) * dkp;  // dO_i S
    const float* k = ps.kq + i * dkp;
    const float* q = ps.kq + (n + i) * dkp;
    float* dq = s.dq + i * dkp;
    float* dkr = s.dk + i * dkp;
    const VF cq = hn::Set(df, scale * g), ck = hn::Set(df, b * g), cd = hn::Set(df, r.decay[i]);
    VF qdot = hn::Zero(df), kdot = hn::Zero(df);
    for (int64_t j = 0; j < dkp; j += N) {
      const VF vq = hn::LoadU(df, wq + j), vk = hn::LoadU(df, wk + j);
      hn::StoreU(hn::MulAdd(cq, vq, hn::LoadU(df, dq + j)), df, dq + j);
      hn::StoreU(hn::MulAdd(ck, vk, hn::MulAdd(cd, hn::LoadU(df, s.u_adj + i * dkp + j), hn::LoadU(df, dkr + j))),
                 df, dkr + j);
      qdot = hn::MulAdd(hn::LoadU(df, q + j), vq, qdot);
      kdot = hn::MulAdd(hn::LoadU(df, k + j), vk, kdot);
    }
    const float qd = hn::GetLane(hn::SumOfLanes(df, qdot)), kd = hn::GetLane(hn::SumOfLanes(df, kdot));
    s.dgate[i] += scale * g * qd + b * g * kd;
    s.dbeta[i] += g * kd - Dot(nr + i * dvp, s.value + i * dvp, dvp);
  }
  // dq += scale (dP⊙Γ) K; dk += (dA' + dA'ᵀ) K + (dP⊙Γ)ᵀ Q̃; D before the chunk.
#if TXOPS_GDR_AMX
  if (amx) {  // D ← e^{G_n} D + Kᵀ (β⊙γ⊙(−dR)) + Qᵀ (γ·scale⊙dO), the row scales r.row_scale
    split_rows(s.products + n * C, C, n, C);
    gdr_amx::ProductOnTiles(n, C, s.a_split, a_part, 3, s.k_pairs, 0, 1, dkp, true, nullptr, s.dq, dkp, 2,
                            Triangle::kLowerA);
    split_rows(s.key_mix, C, n, C);
    gdr_amx::ProductOnTiles(n, C, s.a_split, a_part, 3, s.k_pairs, 0, 1, dkp, true, nullptr, s.dk, dkp);
    split_rows(s.p_t, C, n, C);
    gdr_amx::ProductOnTiles(n, C, s.a_split, a_part, 3, s.q_pairs, 0, 1, dkp, true, nullptr, s.dk, dkp, 2,
                            Triangle::kUpperA);
    uint32_t* split_q = reinterpret_cast<uint32_t*>(s.a_split);
    gdr_amx::SplitPairs(nr, dvp, n, C / 2, r.row_scale, dvp, split);
    gdr_amx::SplitPairs(d_out, dvp, n, C / 2, r.row_scale + n, dvp, split_q);
    gdr_amx::StateUpdateOnTiles(dk, n, r.kt16, split, dvp, gamma_n, adj, dvp, s.qt16, split_q);
  } else
#endif
  {
    Gemm(n, dkp, n, s.products + n * C, C, ps.kq, dkp, s.dq, dkp, true, 1.0f, Triangle::kLowerA);
    Gemm(n, dkp, n, s.key_mix, C, ps.kq, dkp, s.dk, dkp, true);
    Gemm(n, dkp, n, s.p_t, C, ps.kq + n * dkp, dkp, s.dk, dkp, true, 1.0f, Triangle::kUpperA);
    Gemm(dk, dvp, 2 * n, s.scaled_t, 2 * C, s.stacked, dvp, adj, dvp, true, gamma_n);
  }
  // dv = β dR, dβ, dg = reverse cumsum of dG.
  float dg = 0.0f;
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t t = t0 + i;
    const float b = ps.beta[i];
    float* dv_row = s.grad_u + i * dvp;  // (dU is no longer needed)
    for (int64_t j = 0; j < dvp; ++j) dv_row[j] = -b * nr[i * dvp + j];
    PutRowF32(stream, dv_row, dv, At<TA>(P.grad_value, t, h), P.grad_value.strides[2]);
    StoreScalarF32(s.dbeta[i], At<TA>(P.grad_beta, t, h));
    dg += s.dgate[i];
    if (P.has_grad_g) *At<float>(P.grad_g, t, h) = dg;
  }
}

template <class TA, class TS>
void RunItem(const GdrGradPlan& plan, int64_t item, float* scratch) {
  const GdrGradProblem& P = plan.problem;
  const GdrProblem& p = P.fwd;
  const int64_t nk = p.num_key_heads, group = p.heads_per_key_head(), dv = p.value_dim, dk = p.key_dim;
  const int64_t dkp = plan.key_dim_padded, dvp = plan.value_dim_padded;
  const int64_t b = item / nk, hk = item % nk, h0 = hk * group;
  const int64_t length = p.seq_length(b), t_begin = p.seq_start[b], chunks = (length + C - 1) / C;
  GdrGradScratch s;
  gdr_grad_carve(scratch, group, plan.kept_chunks, dk, dkp, dvp, &s);
  ChunkContext cx;
  cx.p = &p;
  cx.dkp = dkp;
  cx.dvp = dvp;
  cx.ld = dvp;  // the checkpoints are Dk rows of dvp floats
  cx.amx = cx.bf16_dot = plan.amx && std::is_same<TA, hwy::bfloat16_t>::value;
  // With the forward's snapshots (P.has_checkpoints) one chunk's S and U are kept per value head (slot 0), staged
  // in the reverse pass; without them, every chunk's, from the checkpoint pass.
  const bool given = P.has_checkpoints;
  cx.scaled_values = !(given && P.has_corrected_values);  // with V' given, U is V': nothing is solved
  auto checkpoint = [&](int64_t gi, int64_t c) {
    return s.checkpoints + (gi * plan.kept_chunks + (given ? 0 : c)) * dk * dvp;
  };
  auto solved = [&](int64_t gi, int64_t c) { return s.solved + (gi * plan.kept_chunks + (given ? 0 : c)) * C * dvp; };
  auto adjoint = [&](int64_t gi) { return s.adjoint + gi * dk * dvp; };
  auto head = [&](const TensorView& v, int64_t h) { return static_cast<TS*>(v.data) + b * v.strides[0] + h * v.strides[1]; };
  // Sᵀ layout (Dk rows of dvp, columns >= Dv zero) for the state and the adjoint, from a (Dv, Dk) matrix of v.
  auto stage_from = [&](const auto* src, const TensorView& v, float* dst) {
    LoadMatrixF32(src, v.strides[3], v.strides[2], dk, dv, dst, dvp);
    for (int64_t c = 0; c < dk; ++c) std::fill(dst + c * dvp + dv, dst + (c + 1) * dvp, 0.0f);
  };
  auto stage = [&](const TensorView& v, int64_t h, float* dst) { stage_from(head(v, h), v, dst); };
  // A key-major snapshot whose Dk rows are contiguous runs of Dv = dvp floats is already Sᵀ as the reverse step
  // reads it (with V' given, nothing else reads the staged copy): it is used where it lies.
  const bool snapshot_in_place = given && P.has_corrected_values && dv == dvp && P.checkpoints.strides[2] == 1 &&
                                 P.checkpoints.strides[3] == dvp;
  // V' rows of Dv = dvp contiguous floats are U as the reverse step reads it (rows ldu floats apart): used in place.
  const bool corrected_in_place = P.has_corrected_values && dv == dvp && P.corrected_values.strides[2] == 1;
  // The forward's S before chunk c >= 1 of value head h: the snapshot after chunk c - 1.
  auto snapshot = [&](int64_t c, int64_t h) {
    const TensorView& v = P.checkpoints;
    return static_cast<const float*>(v.data) + (P.checkpoint_start[b] + c - 1) * v.strides[0] + h * v.strides[1];
  };
  // D after the sequence: ∂L/∂finalState (read before gradInitialState, which may be the same memory, is written).
  for (int64_t gi = 0; gi < group; ++gi) {
    if (P.has_grad_final_state) {
      stage(P.grad_final_state, h0 + gi, adjoint(gi));
    } else {
      std::fill(adjoint(gi), adjoint(gi) + dk * dvp, 0.0f);
    }
  }
  if (chunks > 0) {
    if (!given)
      for (int64_t gi = 0; gi < group; ++gi) stage(p.state_in, h0 + gi, checkpoint(gi, 0));
    // No software prefetch of the next step's rows, V' rows or snapshot: each way tried (all of it ahead of the step,
    // into L1 or L2, or a slice after each of eight stages, or only K, Q and V) ran 1-4 % slower than none (README.md,
    // "Speed, session 41").
    for (int64_t c = 0; c < (given ? 0 : chunks); ++c) {
      const int64_t t0 = t_begin + c * C, n = std::min(C, length - c * C);
      for (int64_t gi = 0; gi < group; ++gi) {
        PrepareChunk<TA>(cx, h0 + gi, t0, n, s.pack, s.record);
        CheckpointChunk(cx, n, s, checkpoint(gi, c), solved(gi, c), c + 1 < chunks ? checkpoint(gi, c + 1) : nullptr);
      }
    }
    for (int64_t c = chunks - 1; c >= 0; --c) {
      const int64_t t0 = t_begin + c * C, n = std::min(C, length - c * C);
      std::fill(s.dq, s.dq + n * dkp, 0.0f);
      std::fill(s.dk, s.dk + n * dkp, 0.0f);
      for (int64_t gi = 0; gi < group; ++gi) {
        PrepareChunk<TA>(cx, h0 + gi, t0, n, s.pack, s.record);
#if TXOPS_GDR_AMX
        if (cx.amx && gi == 0) PackKeyOperands(n, dkp, s);
#endif
        const float* st = checkpoint(gi, c);
        const float* u = solved(gi, c);
        int64_t ldu = dvp;
        if (given) {  // S from the forward; U its V' rows, or recomputed (the checkpoint pass's step, no update)
          if (c == 0) {
            stage(p.state_in, h0 + gi, checkpoint(gi, c));
          } else if (snapshot_in_place) {
            st = snapshot(c, h0 + gi);
          } else {
            stage_from(snapshot(c, h0 + gi), P.checkpoints, checkpoint(gi, c));
          }
          if (corrected_in_place) {
            u = Element<float>(P.corrected_values, t0, h0 + gi);
            ldu = P.corrected_values.strides[0];
          } else if (P.has_corrected_values) {
            const TensorView& v = P.corrected_values;
            for (int64_t i = 0; i < n; ++i)
              LoadRow(Element<float>(v, t0 + i, h0 + gi), v.strides[2], dv, dvp, 1.0f, solved(gi, c) + i * dvp);
          } else {
            CheckpointChunk(cx, n, s, checkpoint(gi, c), solved(gi, c), nullptr);
          }
        }
        ReverseChunk<TA>(cx, P, h0 + gi, t0, n, s, st, u, ldu, adjoint(gi), plan.stream_grads);
      }
      for (int64_t i = 0; i < n; ++i) {
        PutRowF32(plan.stream_grads, s.dq + i * dkp, dk, At<TA>(P.grad_query, t0 + i, hk), P.grad_query.strides[2]);
        PutRowF32(plan.stream_grads, s.dk + i * dkp, dk, At<TA>(P.grad_key, t0 + i, hk), P.grad_key.strides[2]);
      }
    }
  }
  // D before the sequence: ∂L/∂initialState.
  for (int64_t gi = 0; gi < group; ++gi) {
    const TensorView& v = P.grad_initial_state;
    StoreMatrixF32(adjoint(gi), dvp, dk, dv, head(v, h0 + gi), v.strides[3], v.strides[2]);
  }
  if (plan.stream_grads) hwy::FlushStream();
}

template <class TA, class TS>
void RunItemsTyped(const GdrGradPlan& plan, int64_t begin, int64_t end, float* scratch) {
  for (int64_t item = begin; item < end; ++item) RunItem<TA, TS>(plan, item, scratch);
}

template <class TS>
void RunItemsState(const GdrGradPlan& plan, int64_t begin, int64_t end, float* scratch) {
  switch (plan.problem.fwd.query.dtype) {
    case DType::kBF16: return RunItemsTyped<hwy::bfloat16_t, TS>(plan, begin, end, scratch);
    case DType::kF16: return RunItemsTyped<hwy::float16_t, TS>(plan, begin, end, scratch);
    default: return RunItemsTyped<float, TS>(plan, begin, end, scratch);
  }
}

}  // namespace

void GdrGradRunItems(const GdrGradPlan& plan, int64_t begin, int64_t end, float* scratch) {
  if (plan.problem.fwd.state_in.dtype == DType::kBF16) {
    RunItemsState<hwy::bfloat16_t>(plan, begin, end, scratch);
  } else {
    RunItemsState<float>(plan, begin, end, scratch);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace txops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/isa_dispatch.h"

namespace txops {
GdrGradRunItemsFn* select_gdr_grad_run_items(Isa isa) { return TXOPS_SELECT_KERNEL(isa, GdrGradRunItems); }
}  // namespace txops
#endif
