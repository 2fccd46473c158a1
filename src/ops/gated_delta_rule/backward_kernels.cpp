// backward_kernels.cpp — the backward of the chunked gated delta rule (Highway: AVX3, AVX2, SCALAR); README.md
// "Backward" has the derivation. Per (sequence, key head) item and each of its value heads:
//   1. checkpoints: the forward recurrence, row by row, keeping the fp32 state before every chunk of 64 tokens;
//   2. chunks in reverse order: the chunk's per-token states recomputed from its checkpoint (rows kept in scratch),
//      then the reverse sweep over its tokens carrying D = ∂L/∂S backwards.
// Rows i of S and of D are independent (row i of S_t depends on row i of S_{t-1} only; row i of D_{t-1} on row i
// of D_t only), so both passes run rows (blocks of rows token-major) and only dq, dk, dβ, dg sum over rows;
// they are accumulated in a fixed order (rows, then value heads in head order) in fp32 scratch, so results do not
// depend on the thread count. For token t of row i (D including the output term, w = D·k_t):
//   dk_t += u_i D + b S_{t-1},   D ← α D + b k_t   (b = −β α w),   dg_t += S_{t-1}·D,
//   then for token t−1 in the same pass: dq_{t-1} += scale dO_{t-1,i} S_{t-1},  D += dO_{t-1,i} q̃_{t-1},
//   w ← D·k_{t-1};   and per token dv_t[i] = β w,  dβ_t += (v_i − p_i) w.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/gated_delta_rule/backward_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>

#include "core/simd_convert-inl.h"
#include "ops/gated_delta_rule/backward.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

constexpr int64_t C = kGdrChunk;
HWY_INLINE float Reduce(DF df, VF v) { return hn::GetLane(hn::SumOfLanes(df, v)); }
// The sum of A accumulators (pairwise, fixed order), reduced.
template <int A>
HWY_INLINE float Reduce(DF df, const VF (&acc)[A]) {
  static_assert(A == 1 || A == 2 || A == 4, "1, 2 or 4 accumulators");
  if constexpr (A == 1) return Reduce(df, acc[0]);
  if constexpr (A == 2) return Reduce(df, hn::Add(acc[0], acc[1]));
  if constexpr (A == 4) return Reduce(df, hn::Add(hn::Add(acc[0], acc[1]), hn::Add(acc[2], acc[3])));
}

// (strided row loads and stores: LoadRowF32 / StoreRowF32 of core/simd_convert-inl.h)
template <class T>
T* At(const TensorView& v, int64_t i0, int64_t i1) {
  return static_cast<T*>(v.data) + i0 * v.strides[0] + i1 * v.strides[1];
}
template <class T>
T* At(const TensorView& v, int64_t i0, int64_t i1, int64_t i2) {
  return static_cast<T*>(v.data) + i0 * v.strides[0] + i1 * v.strides[1] + i2 * v.strides[2];
}

// The chunk's k rows and (with_query) scale·q rows of key head hk, tokens [t0, t0 + n).
template <class TA>
void PackKeyHead(const GdrProblem& p, int64_t hk, int64_t t0, int64_t n, int64_t dkp, bool with_query,
                 const GdrGradScratch& s) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const VF scale = hn::Set(df, p.scale);
  for (int64_t i = 0; i < n; ++i) {
    LoadRowF32(At<const TA>(p.key, t0 + i, hk), p.key.strides[2], p.key_dim, dkp, s.key + i * dkp);
    if (!with_query) continue;
    float* q = s.query + i * dkp;
    LoadRowF32(At<const TA>(p.query, t0 + i, hk), p.query.strides[2], p.key_dim, dkp, q);
    for (int64_t j = 0; j < dkp; j += N) hn::StoreU(hn::Mul(hn::LoadU(df, q + j), scale), df, q + j);
  }
}

// The chunk's v rows, β, exp(g) and (with_grad) dO rows of value head h.
template <class TA>
void PackValueHead(const GdrGradProblem& P, int64_t h, int64_t t0, int64_t n, bool with_grad,
                   const GdrGradScratch& s) {
  const GdrProblem& p = P.fwd;
  const int64_t dv = p.value_dim;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = t0 + i;
    LoadRowF32(At<const TA>(p.value, t, h), p.value.strides[2], dv, dv, s.value + i * dv);
    s.beta[i] = LoadScalarF32(At<const TA>(p.beta, t, h));
    s.alpha[i] = p.has_g ? std::exp(*At<const float>(p.g, t, h)) : 1.0f;
    if (with_grad) LoadRowF32(At<const TA>(P.grad_out, t, h), P.grad_out.strides[2], dv, dv, s.grad_out + i * dv);
  }
}

// Row passes run token-major over a block of up to kGdrGradMaxRows rows: for each token, every row of the block in
// turn. A row's pass for token t needs its own dot product from token t±1, so one row alone is a chain of
// dependent reductions; the rows of a block are independent, so the out-of-order core overlaps one row's reduction
// with the next row's pass (the forward's TokenMajorRows does the same), and the token's shared vectors (k, q, the
// dq and dk accumulators) are reused by every row of the block while they are in L1.

// Forward through the chunk's tokens [0, n) for rows row0 .. row0 + rows − 1 of one value head, from s0_head's
// rows:  p = α (S_{t-1}·k_t),  e = v_i − p,  S_t = α S_{t-1} + β e k_t  (the dot product of the next token taken in
// the same pass, in A accumulators). kKeep: row r's state after token t goes to states[(r C + t) dkp ...] and e
// to err[r C + t]; otherwise the rows end in end_head's rows (updated in place).
template <int A, bool kKeep>
HWY_NOINLINE void ForwardBlock(const GdrGradScratch& s, int64_t n, int64_t dkp, int64_t dv, int64_t row0,
                               int64_t rows, const float* s0_head, float* end_head) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  float dot[kGdrGradMaxRows];
  for (int64_t r = 0; r < rows; ++r) {
    const float* s0 = s0_head + (row0 + r) * dkp;
    VF acc[A];
    for (int a = 0; a < A; ++a) acc[a] = hn::Zero(df);
    for (int64_t j = 0; j < dkp; j += A * N)
      for (int a = 0; a < A; ++a)
        acc[a] = hn::MulAdd(hn::LoadU(df, s0 + j + a * N), hn::LoadU(df, s.key + j + a * N), acc[a]);
    dot[r] = Reduce<A>(df, acc);
  }
  for (int64_t t = 0; t < n; ++t) {
    const float alpha = s.alpha[t], beta = s.beta[t];
    const float* kt = s.key + t * dkp;
    const float* kn = t + 1 < n ? kt + dkp : nullptr;
    const VF va = hn::Set(df, alpha);
    for (int64_t r = 0; r < rows; ++r) {
      const float e = s.value[t * dv + row0 + r] - alpha * dot[r];
      if (kKeep) s.err[r * C + t] = e;
      const VF u = hn::Set(df, beta * e);
      float* end_row = kKeep ? nullptr : end_head + (row0 + r) * dkp;
      const float* in = t == 0 ? s0_head + (row0 + r) * dkp : (kKeep ? s.states + (r * C + t - 1) * dkp : end_row);
      float* out = kKeep ? s.states + (r * C + t) * dkp : end_row;
      if (t + 1 < n) {
        VF acc[A];
        for (int a = 0; a < A; ++a) acc[a] = hn::Zero(df);
        for (int64_t j = 0; j < dkp; j += A * N) {
          for (int a = 0; a < A; ++a) {
            const int64_t x = j + a * N;
            const VF v = hn::MulAdd(u, hn::LoadU(df, kt + x), hn::Mul(va, hn::LoadU(df, in + x)));
            hn::StoreU(v, df, out + x);
            acc[a] = hn::MulAdd(v, hn::LoadU(df, kn + x), acc[a]);
          }
        }
        dot[r] = Reduce<A>(df, acc);
      } else {
        for (int64_t j = 0; j < dkp; j += N)
          hn::StoreU(hn::MulAdd(u, hn::LoadU(df, kt + j), hn::Mul(va, hn::LoadU(df, in + j))), df, out + j);
      }
    }
  }
}

// The reverse sweep over the chunk's tokens for rows row0 .. row0 + rows − 1 of one value head, after
// ForwardBlock<A, true> kept their states. s0_head: the head's state before the chunk; adj_head: its D rows, ∂L/∂S
// after the chunk on entry (without the chunk's outputs), before it on return. Adds to the chunk's dq, dk, dβ, dg
// accumulators and writes dv.
template <int A>
HWY_NOINLINE void BackwardBlock(const GdrGradScratch& s, int64_t n, int64_t dkp, int64_t dv, int64_t row0,
                                int64_t rows, float scale, const float* s0_head, float* adj_head) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  float w[kGdrGradMaxRows];
  {  // the chunk's last token: D += dO q̃ᵀ, w = D·k, dq += scale dO S_t
    const int64_t te = n - 1;
    const float* q = s.query + te * dkp;
    const float* k = s.key + te * dkp;
    float* dq = s.dq + te * dkp;
    for (int64_t r = 0; r < rows; ++r) {
      const float d_out = s.grad_out[te * dv + row0 + r];
      const VF cd = hn::Set(df, d_out), cq = hn::Set(df, scale * d_out);
      float* adj = adj_head + (row0 + r) * dkp;
      const float* st = s.states + (r * C + te) * dkp;
      VF acc[A];
      for (int a = 0; a < A; ++a) acc[a] = hn::Zero(df);
      for (int64_t j = 0; j < dkp; j += A * N) {
        for (int a = 0; a < A; ++a) {
          const int64_t x = j + a * N;
          const VF d = hn::MulAdd(cd, hn::LoadU(df, q + x), hn::LoadU(df, adj + x));
          hn::StoreU(d, df, adj + x);
          acc[a] = hn::MulAdd(d, hn::LoadU(df, k + x), acc[a]);
          hn::StoreU(hn::MulAdd(cq, hn::LoadU(df, st + x), hn::LoadU(df, dq + x)), df, dq + x);
        }
      }
      w[r] = Reduce<A>(df, acc);
    }
  }
  for (int64_t t = n - 1; t >= 0; --t) {
    const float alpha = s.alpha[t], beta = s.beta[t];
    const VF va = hn::Set(df, alpha);
    const float* kt = s.key + t * dkp;
    float* dk = s.dk + t * dkp;
    const float* q1 = t > 0 ? s.query + (t - 1) * dkp : nullptr;  // token t − 1
    const float* k1 = t > 0 ? s.key + (t - 1) * dkp : nullptr;
    float* dq1 = t > 0 ? s.dq + (t - 1) * dkp : nullptr;
    float dbeta = 0, dg = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const float e = s.err[r * C + t];
      s.dv[t * dv + row0 + r] = beta * w[r];
      dbeta += e * w[r];
      const VF a_u = hn::Set(df, beta * e), b_w = hn::Set(df, -beta * alpha * w[r]);
      const float* sp = t > 0 ? s.states + (r * C + t - 1) * dkp : s0_head + (row0 + r) * dkp;  // S_{t-1}
      float* adj = adj_head + (row0 + r) * dkp;
      VF g_acc[A];
      for (int a = 0; a < A; ++a) g_acc[a] = hn::Zero(df);
      if (t > 0) {
        const float d_out = s.grad_out[(t - 1) * dv + row0 + r];
        const VF cd = hn::Set(df, d_out), cq = hn::Set(df, scale * d_out);
        VF w_acc[A];
        for (int a = 0; a < A; ++a) w_acc[a] = hn::Zero(df);
        for (int64_t j = 0; j < dkp; j += A * N) {
          for (int a = 0; a < A; ++a) {
            const int64_t x = j + a * N;
            const VF d = hn::LoadU(df, adj + x), sj = hn::LoadU(df, sp + x);
            hn::StoreU(hn::MulAdd(b_w, sj, hn::MulAdd(a_u, d, hn::LoadU(df, dk + x))), df, dk + x);
            VF dn = hn::MulAdd(b_w, hn::LoadU(df, kt + x), hn::Mul(va, d));
            g_acc[a] = hn::MulAdd(sj, dn, g_acc[a]);
            hn::StoreU(hn::MulAdd(cq, sj, hn::LoadU(df, dq1 + x)), df, dq1 + x);
            dn = hn::MulAdd(cd, hn::LoadU(df, q1 + x), dn);
            w_acc[a] = hn::MulAdd(dn, hn::LoadU(df, k1 + x), w_acc[a]);
            hn::StoreU(dn, df, adj + x);
          }
        }
        w[r] = Reduce<A>(df, w_acc);
      } else {
        for (int64_t j = 0; j < dkp; j += A * N) {
          for (int a = 0; a < A; ++a) {
            const int64_t x = j + a * N;
            const VF d = hn::LoadU(df, adj + x), sj = hn::LoadU(df, sp + x);
            hn::StoreU(hn::MulAdd(b_w, sj, hn::MulAdd(a_u, d, hn::LoadU(df, dk + x))), df, dk + x);
            const VF dn = hn::MulAdd(b_w, hn::LoadU(df, kt + x), hn::Mul(va, d));
            g_acc[a] = hn::MulAdd(sj, dn, g_acc[a]);
            hn::StoreU(dn, df, adj + x);
          }
        }
      }
      dg += Reduce<A>(df, g_acc);
    }
    s.dbeta[t] += dbeta;
    s.dg[t] += dg;
  }
}

// Accumulators per dot product: the most of 4, 2, 1 that divides the vectors of a padded row.
int AccumulatorsFor(int64_t dkp) {
  const int64_t vectors = dkp / static_cast<int64_t>(hn::Lanes(DF()));
  return vectors % 4 == 0 ? 4 : (vectors % 2 == 0 ? 2 : 1);
}

// Rows [0, Dv) of one value head in blocks of kGdrGradMaxRows, with A accumulators per dot product.
// kCheckpoint: the checkpoint pass (rows from s0_head to other_head); else the chunk's recompute and reverse sweep
// (other_head: the D rows).
template <bool kCheckpoint, int A>
void AllRowsA(const GdrGradScratch& s, int64_t n, int64_t dkp, int64_t dv, float scale, const float* s0_head,
              float* other_head) {
  for (int64_t row0 = 0; row0 < dv; row0 += kGdrGradMaxRows) {
    const int64_t rows = std::min(kGdrGradMaxRows, dv - row0);
    if (kCheckpoint) {
      ForwardBlock<A, false>(s, n, dkp, dv, row0, rows, s0_head, other_head);
    } else {
      ForwardBlock<A, true>(s, n, dkp, dv, row0, rows, s0_head, nullptr);
      BackwardBlock<A>(s, n, dkp, dv, row0, rows, scale, s0_head, other_head);
    }
  }
}

template <bool kCheckpoint>
void AllRows(const GdrGradScratch& s, int64_t n, int64_t dkp, int64_t dv, float scale, const float* s0_head,
             float* other_head) {
  switch (AccumulatorsFor(dkp)) {
    case 4: return AllRowsA<kCheckpoint, 4>(s, n, dkp, dv, scale, s0_head, other_head);
    case 2: return AllRowsA<kCheckpoint, 2>(s, n, dkp, dv, scale, s0_head, other_head);
    default: return AllRowsA<kCheckpoint, 1>(s, n, dkp, dv, scale, s0_head, other_head);
  }
}

template <class TA, class TS>
void RunItem(const GdrGradPlan& plan, int64_t item, float* scratch) {
  const GdrGradProblem& P = plan.problem;
  const GdrProblem& p = P.fwd;
  const int64_t nk = p.num_key_heads, group = p.heads_per_key_head(), dv = p.value_dim, dk = p.key_dim;
  const int64_t dkp = plan.key_dim_padded, b = item / nk, hk = item % nk, h0 = hk * group;
  const int64_t length = p.seq_length(b), t_begin = p.seq_start[b], chunks = (length + C - 1) / C;
  GdrGradScratch s;
  gdr_grad_carve(scratch, group, plan.max_chunks, dv, dkp, &s);
  auto boundary = [&](int64_t gi, int64_t c) { return s.boundary + (gi * plan.max_chunks + c) * dv * dkp; };
  auto adjoint = [&](int64_t gi) { return s.adjoint + gi * dv * dkp; };
  auto state_row = [&](const TensorView& v, int64_t h, int64_t i) {
    return static_cast<TS*>(v.data) + b * v.strides[0] + h * v.strides[1] + i * v.strides[2];
  };

  // D after the sequence: ∂L/∂finalState (read before gradInitialState, which may be the same memory, is written).
  for (int64_t gi = 0; gi < group; ++gi)
    for (int64_t i = 0; i < dv; ++i) {
      float* row = adjoint(gi) + i * dkp;
      if (P.has_grad_final_state) {
        LoadRowF32(state_row(P.grad_final_state, h0 + gi, i), P.grad_final_state.strides[3], dk, dkp, row);
      } else {
        std::fill(row, row + dkp, 0.0f);
      }
    }
  if (chunks > 0) {
    for (int64_t gi = 0; gi < group; ++gi)
      for (int64_t i = 0; i < dv; ++i)
        LoadRowF32(state_row(p.state_in, h0 + gi, i), p.state_in.strides[3], dk, dkp, boundary(gi, 0) + i * dkp);
    // 1. Checkpoints: the state before each chunk.
    for (int64_t c = 0; c + 1 < chunks; ++c) {
      const int64_t t0 = t_begin + c * C;
      PackKeyHead<TA>(p, hk, t0, C, dkp, false, s);
      for (int64_t gi = 0; gi < group; ++gi) {
        PackValueHead<TA>(P, h0 + gi, t0, C, false, s);
        AllRows<true>(s, C, dkp, dv, p.scale, boundary(gi, c), boundary(gi, c + 1));
      }
    }
    // 2. Chunks in reverse: recompute the chunk's states, sweep its tokens backwards.
    for (int64_t c = chunks - 1; c >= 0; --c) {
      const int64_t t0 = t_begin + c * C, n = std::min(C, length - c * C);
      PackKeyHead<TA>(p, hk, t0, n, dkp, true, s);
      std::fill(s.dq, s.dq + n * dkp, 0.0f);
      std::fill(s.dk, s.dk + n * dkp, 0.0f);
      for (int64_t gi = 0; gi < group; ++gi) {
        const int64_t h = h0 + gi;
        PackValueHead<TA>(P, h, t0, n, true, s);
        std::fill(s.dbeta, s.dbeta + n, 0.0f);
        std::fill(s.dg, s.dg + n, 0.0f);
        AllRows<false>(s, n, dkp, dv, p.scale, boundary(gi, c), adjoint(gi));
        for (int64_t i = 0; i < n; ++i) {
          const int64_t t = t0 + i;
          StoreRowF32(s.dv + i * dv, dv, At<TA>(P.grad_value, t, h), P.grad_value.strides[2]);
          StoreScalarF32(s.dbeta[i], At<TA>(P.grad_beta, t, h));
          if (P.has_grad_g) *At<float>(P.grad_g, t, h) = s.dg[i];
        }
      }
      for (int64_t i = 0; i < n; ++i) {
        StoreRowF32(s.dq + i * dkp, dk, At<TA>(P.grad_query, t0 + i, hk), P.grad_query.strides[2]);
        StoreRowF32(s.dk + i * dkp, dk, At<TA>(P.grad_key, t0 + i, hk), P.grad_key.strides[2]);
      }
    }
  }
  // D before the sequence: ∂L/∂initialState.
  for (int64_t gi = 0; gi < group; ++gi)
    for (int64_t i = 0; i < dv; ++i)
      StoreRowF32(adjoint(gi) + i * dkp, dk, state_row(P.grad_initial_state, h0 + gi, i),
                  P.grad_initial_state.strides[3]);
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
