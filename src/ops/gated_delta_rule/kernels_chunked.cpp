// kernels_chunked.cpp — the chunked prefill kernel of the gated delta rule (Highway: AVX3, AVX2, SCALAR).
// Why: it turns the token recurrence into small GEMMs (64 x 128 x 128 and the like) run by a register-blocked
// micro-kernel (chunked_gemm-inl.h), the alternative to the row-fused recurrent kernel; plan.cpp picks.
// Per (sequence, value head), chunks of n <= kGdrChunk tokens, S0 the state before the chunk (kept transposed,
// St = S0ᵀ, Dk x Dv fp32), G = cumsum(g) in double restarted per chunk, Γ_ij = exp(G_i - G_j) (j <= i only).
// Phase one of a chunk (PrepareChunk; independent of the state, so any chunk can run on any thread):
//   A = strictly_lower(β⊙(K Kᵀ)⊙Γ),  P = lower(Q·scale Kᵀ ⊙ Γ), the scaled rows and Kᵀ   -> a chunk record
// The state pass (StatePass; sequential over the chunks of one (sequence, head); the Dv columns are independent):
//   X  = [β⊙e^G⊙K ; e^G⊙Q·scale] St                  (one GEMM, 2n x Dk x Dv)
//   V' = (I + A)^{-1} (β⊙V - X_top)                   (forward substitution; equals U - W S0ᵀ of the spec)
//   O  = X_bottom + P V'
//   St ← exp(G_last) St + (Kᵀ ⊙ exp(G_last - G)) V'   (the decays folded into the columns of Kᵀ in phase one)
// Three drivers: items mode (each thread owns whole (sequence, head) items and runs both phases per chunk in its
// scratch), chunk mode (waves of chunks: phase one of every chunk of the wave in parallel over chunks, then the
// state pass in parallel over (item, Dv column block)) and column mode (each (item, column block) on one thread,
// which runs phase one itself: twice the phase-one work for two blocks, but no barriers and no records read from
// another core). All run the same two functions on the same data, and a column block's arithmetic is that of the
// whole row (chunked_gemm-inl.h), so the bits do not depend on the mode or the thread count. All arithmetic is fp32
// (inputs widened exactly); outputs and final states are rounded once.
// Serving options (args.h): the start state may be a pool row or zero, the final state goes to a pool row, and
// the state after every checkpoint_every tokens is stored as a snapshot (the staged fp32 state, rounded only when
// the snapshots are bf16); training: the corrected values V' of every token are stored too (the backward's U).
// Derivation and measurements: README.md ("Chunked algorithm").
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/gated_delta_rule/kernels_chunked.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/cache_control.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "core/plan_record.h"
#include "core/prefetch.h"
#include "core/simd_convert-inl.h"
#include "core/simd_matrix_copy-inl.h"
#include "ops/gated_delta_rule/chunked_gemm-inl.h"
#include "ops/gated_delta_rule/chunked_phase_one-inl.h"
#include "ops/gated_delta_rule/chunked_layout.h"
#include "ops/gated_delta_rule/chunked_amx-inl.h"
#include "ops/gated_delta_rule/kernels.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
// ChunkContext, PrepareChunk, SolveRows (chunked_phase_one-inl.h); DF, VF, Gemm, Triangle, C
using namespace gdr_chunk;

// Columns [c0, c1) of the chunk's V' rows (w.vp, rows dvp apart) into correctedValues (T, Nv, Dv) fp32: runs
// streamed past the caches where the rows are contiguous and vector-aligned (the backward reads them, much later;
// the drivers fence once per work unit, FlushStream, before their barrier).
void StoreCorrectedValues(const GdrProblem& p, int64_t h, int64_t t0, int64_t n, const GdrPassScratch& w,
                          int64_t dvp, int64_t c0, int64_t c1) {
  const TensorView& v = p.corrected_values;
  const int64_t c_end = std::min(c1, p.value_dim), stride = v.strides[2];
  if (c_end <= c0) return;
  for (int64_t i = 0; i < n; ++i) {
    float* dst = static_cast<float*>(v.data) + (t0 + i) * v.strides[0] + h * v.strides[1];
    StreamRowF32(w.vp + i * dvp + c0, c_end - c0, dst + c0 * stride, stride);
  }
}

// The chunk of tokens [t0, t0 + n) of head h on columns [c0, c1) of its staged state st (Dk rows of cx.ld floats,
// dvp of them used; transposed):
// updates those columns of st and writes those columns of the chunk's outputs.
template <class TA>
void StatePass(const ChunkContext& cx, int64_t h, int64_t t0, int64_t n, const GdrChunkRecord& r,
               const GdrPassScratch& w, float* st, int64_t c0, int64_t c1) {
  const GdrProblem& p = *cx.p;
  const int64_t dk = p.key_dim, dvp = cx.dvp, ld = cx.ld, cols = c1 - c0;
#if TXOPS_GDR_AMX
  if (cx.amx) {  // X = row_scale ⊙ ([K; Q] Sᵀ) on AMX tiles (chunked_amx-inl.h)
    gdr_amx::SplitPairs(st + c0, ld, dk, cx.dkp / 2, nullptr, cols, w.split);
    gdr_amx::XOnTiles(2 * n, cx.dkp, r.kq16, r.row_scale, w.split, cols, w.x + c0, dvp);
  } else
#endif
  {
    Gemm(2 * n, cols, dk, r.scaled, cx.dkp, st + c0, ld, w.x + c0, dvp, false);  // X = [βe^G K; e^G Q] Sᵀ
  }
  SolveRows(n, c0, c1, dvp, r, w);
  if (p.has_corrected_values) StoreCorrectedValues(p, h, t0, n, w, dvp, c0, c1);
  Gemm(n, cols, n, r.gram + n * C, C, w.vp + c0, dvp, w.x + n * dvp + c0, dvp, true, 1.0f,
       Triangle::kLowerA);                                                    // O = X_bottom + P V'
#if TXOPS_GDR_AMX
  if (cx.amx) {  // Sᵀ = e^{G_last} Sᵀ + Kᵀ (decay ⊙ V') on AMX tiles
    gdr_amx::SplitPairs(w.vp + c0, dvp, n, C / 2, r.decay, cols, w.split);
    gdr_amx::StateUpdateOnTiles(dk, n, r.kt16, w.split, cols, r.decay[C], st + c0, ld);
  } else
#endif
  {
    Gemm(dk, cols, n, r.kt, C, w.vp + c0, dvp, st + c0, ld, true, r.decay[C]);  // Sᵀ = e^{G_last} Sᵀ + (Kᵀ⊙decay) V'
  }
  const int64_t c_end = std::min(c1, p.value_dim), stride = p.out.strides[2];
  if (c_end <= c0) return;
  for (int64_t i = 0; i < n; ++i) {
    TA* dst = static_cast<TA*>(p.out.data) + (t0 + i) * p.out.strides[0] + h * p.out.strides[1];
    StoreRowF32(w.x + (n + i) * dvp + c0, c_end - c0, dst + c0 * stride, stride);
  }
}

// ---- staging the states ----

template <class TS>
TS* StateHead(const TensorView& v, int64_t b, int64_t h) {
  return static_cast<TS*>(v.data) + b * v.strides[0] + h * v.strides[1];
}

// Columns [c0, c1) of st = S0ᵀ of (b, h) in fp32, rows ld apart (columns >= Dv zero): the row read_slot[b] of
// initialState, or zeros for a sequence that starts from the zero state.
template <class TS>
void StageColumns(const GdrProblem& p, int64_t ld, int64_t b, int64_t h, int64_t c0, int64_t c1, float* st) {
  const int64_t dv = p.value_dim, r_end = std::min(c1, dv);
  if (p.read_slot[b] < 0) {
    for (int64_t c = 0; c < p.key_dim; ++c)
      for (int64_t r = c0; r < c1; ++r) st[c * ld + r] = 0.0f;
    return;
  }
  const TS* in = StateHead<TS>(p.state_in, p.read_slot[b], h);
  if (r_end > c0)  // (core/simd_matrix_copy-inl.h: a value-major state moves in 8 x 8 register tiles)
    LoadMatrixF32(in + c0 * p.state_in.strides[2], p.state_in.strides[3], p.state_in.strides[2], p.key_dim,
                  r_end - c0, st + c0, ld);
  for (int64_t c = 0; c < p.key_dim; ++c)
    for (int64_t r = std::max(c0, dv); r < c1; ++r) st[c * ld + r] = 0.0f;
}

// Columns [c0, c1) of st (Sᵀ, rows ld apart) rounded into row `row` of `dst` (finalState or the snapshots), head h.
template <class TD>
void StoreColumnsTo(const GdrProblem& p, int64_t ld, const TensorView& dst, int64_t row, int64_t h, int64_t c0,
                    int64_t c1, const float* st) {
  TD* out = StateHead<TD>(dst, row, h);
  const int64_t r_end = std::min(c1, p.value_dim);
  if (r_end > c0)
    StoreMatrixF32(st + c0, ld, p.key_dim, r_end - c0, out + c0 * dst.strides[2], dst.strides[3], dst.strides[2]);
}

// The final Sᵀ of (b, h) into finalState.
template <class TS>
void StoreColumns(const GdrProblem& p, int64_t ld, int64_t b, int64_t h, int64_t c0, int64_t c1, const float* st) {
  StoreColumnsTo<TS>(p, ld, p.state_out, p.final_slot[b], h, c0, c1, st);
}

// Columns [c0, c1) of st into an fp32 snapshot in key-major memory order (dst.strides[2] == 1, the layout the
// backward's forward_checkpoints read fastest): each Sᵀ row is a run, streamed past the caches where the address
// is vector-aligned (nothing reads it before the backward; the drivers fence once per work unit). The same values
// as StoreColumnsTo<float>.
void StreamKeyMajorColumns(const GdrProblem& p, int64_t ld, const TensorView& dst, int64_t row, int64_t h,
                           int64_t c0, int64_t c1, const float* st) {
  float* out = StateHead<float>(dst, row, h);
  const int64_t r_end = std::min(c1, p.value_dim);
  if (r_end <= c0) return;
  for (int64_t k = 0; k < p.key_dim; ++k) StreamRowF32(st + k * ld + c0, r_end - c0, out + k * dst.strides[3] + c0, 1);
}

// After the chunk of sequence b that ends at token offset `end`: its snapshot, when one falls there.
void StoreSnapshot(const GdrProblem& p, int64_t ld, int64_t b, int64_t end, int64_t h, int64_t c0, int64_t c1,
                   const float* st) {
  const int64_t row = p.checkpoint_row(b, end);
  if (row < 0) return;
  if (p.checkpoints.dtype == DType::kF32 && p.checkpoints.strides[2] == 1) {
    StreamKeyMajorColumns(p, ld, p.checkpoints, row, h, c0, c1, st);
  } else if (p.checkpoints.dtype == DType::kBF16) {
    StoreColumnsTo<hwy::bfloat16_t>(p, ld, p.checkpoints, row, h, c0, c1, st);
  } else {
    StoreColumnsTo<float>(p, ld, p.checkpoints, row, h, c0, c1, st);
  }
}

// ---- items mode: a thread owns whole (sequence, head) items ----

// Prefetches the rows of q, k, v that the chunk of head h reads (one head ahead: its rows are in other cache
// lines of the pages just used, which the hardware prefetchers do not fetch). SequenceHeads also prefetches the
// next head's staged state (evicted to L3 by the other heads' chunks since its last use): 124.8 against 128.4 ms
// (best of 6 alternating runs, Nv = 32, T = 2048, 1 thread, Zen 3). The row prefetches were dropped by GCC from
// about session 12 to 40 (core/prefetch.h); live again, AMX runs 3-7 % faster (README.md "Speed, session 41").
template <class TA>
void PrefetchChunk(const GdrProblem& p, int64_t h, int64_t t0, int64_t n) {
  const int64_t hk = h / p.heads_per_key_head();
  const bool new_key_head = h % p.heads_per_key_head() == 0;
  if (new_key_head && p.key.strides[2] == 1 && p.query.strides[2] == 1) {
    PrefetchRows<TA>(p.key, t0, n, hk, p.key_dim);
    PrefetchRows<TA>(p.query, t0, n, hk, p.key_dim);
  }
  PrefetchRows<TA>(p.value, t0, n, h, p.value_dim);
}

// Value heads [h_begin, h_end) of sequence b, state columns [c0, c1) (column mode: a block; else all): stage each
// S0ᵀ, run the chunks in order (chunks outermost, heads inside, so a chunk's rows of q, k, v, out, which all heads
// share a few pages with, are read while hot), store the final states. `scratch` holds a pack scratch, one record,
// a pass scratch, then the staged states.
template <class TA, class TS>
void SequenceHeads(const ChunkContext& cx, int64_t b, int64_t h_begin, int64_t h_end, float* scratch, int64_t c0,
                   int64_t c1) {
  const GdrProblem& p = *cx.p;
  GdrPackScratch s;
  GdrChunkRecord r;
  GdrPassScratch w;
  float* cursor = scratch + gdr_carve_pack(scratch, cx.dkp, &s);
  cursor += gdr_carve_record(cursor, cx.dkp, cx.dvp, &r);
  float* staged = cursor + gdr_carve_pass(cursor, cx.dkp, cx.dvp, &w);
  const int64_t state_floats = gdr_staged_state_floats(p.key_dim, cx.ld);
  for (int64_t h = h_begin; h < h_end; ++h)
    StageColumns<TS>(p, cx.ld, b, h, c0, c1, staged + (h - h_begin) * state_floats);
  const int64_t t_begin = p.seq_start[b], t_end = p.seq_start[b + 1];
  for (int64_t t0 = t_begin; t0 < t_end; t0 += C) {
    const int64_t n = std::min(C, t_end - t0);
    for (int64_t h = h_begin; h < h_end; ++h) {
      if (h + 1 < h_end) {
        PrefetchChunk<TA>(p, h + 1, t0, n);
        const char* next_state = reinterpret_cast<const char*>(staged + (h + 1 - h_begin) * state_floats);
        PrefetchBytes(next_state, p.key_dim * cx.ld * 4);
      } else if (t0 + C < t_end) {  // the next chunk's rows of the first head
        PrefetchChunk<TA>(p, h_begin, t0 + C, std::min(C, t_end - t0 - C));
      }
      PrepareChunk<TA>(cx, h, t0, n, s, r);
      StatePass<TA>(cx, h, t0, n, r, w, staged + (h - h_begin) * state_floats, c0, c1);
      StoreSnapshot(p, cx.ld, b, t0 + n - t_begin, h, c0, c1, staged + (h - h_begin) * state_floats);
    }
  }
  for (int64_t h = h_begin; h < h_end; ++h)
    StoreColumns<TS>(p, cx.ld, b, h, c0, c1, staged + (h - h_begin) * state_floats);
  hwy::FlushStream();  // the streamed snapshots and V', before the caller's barrier
}

// Items [begin, end) of B x Nv (sequence-major), grouped by sequence, at most `heads` at a time.
template <class TA, class TS>
void RunItems(const ChunkContext& cx, int64_t begin, int64_t end, int64_t heads, float* scratch) {
  const int64_t nv = cx.p->num_value_heads;
  for (int64_t item = begin; item < end;) {
    const int64_t b = item / nv, h_begin = item % nv;
    const int64_t h_end = std::min(nv, h_begin + std::min(heads, end - item));
    SequenceHeads<TA, TS>(cx, b, h_begin, h_end, scratch, 0, cx.dvp);
    item += h_end - h_begin;
  }
}

// ---- chunk and column modes: items split into Dv column blocks ----

int64_t ChunkCount(const GdrProblem& p, int64_t b) { return (p.seq_length(b) + C - 1) / C; }

// Columns [c0, c1) of column block `block` of `blocks`: whole 16-column groups.
void BlockColumns(const ChunkContext& cx, int64_t blocks, int64_t block, int64_t* c0, int64_t* c1) {
  balanced_range(cx.dvp / 16, static_cast<int>(blocks), static_cast<int>(block), c0, c1);
  *c0 *= 16;
  *c1 *= 16;
}

// Stages (store = false) or stores the states of units [0, items x blocks): unit u is item u / blocks, column
// block u % blocks, staged in its own area staged + u * state_floats (plan.cpp: no two threads' columns share a
// cache line).
template <class TS>
void StageOrStoreUnits(const GdrPlan& plan, const ChunkContext& cx, float* staged, bool store) {
  const GdrProblem& p = *cx.p;
  const int64_t nv = p.num_value_heads, blocks = plan.column_blocks;
  const int64_t state_floats = gdr_staged_state_floats(p.key_dim, cx.ld);
  parallel_parts(plan.threads, p.batch * nv * blocks, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      int64_t c0, c1;
      BlockColumns(cx, blocks, u % blocks, &c0, &c1);
      const int64_t b = u / blocks / nv, h = u / blocks % nv;
      if (store)
        StoreColumns<TS>(p, cx.ld, b, h, c0, c1, staged + u * state_floats);
      else
        StageColumns<TS>(p, cx.ld, b, h, c0, c1, staged + u * state_floats);
    }
  });
}

template <class TA, class TS>
void RunWaves(const GdrPlan& plan, const ChunkContext& cx, char* thread_scratch, int64_t scratch_bytes,
              float* shared) {
  const GdrProblem& p = *cx.p;
  const int64_t nv = p.num_value_heads, items = p.batch * nv, blocks = plan.column_blocks;
  const int64_t state_floats = gdr_staged_state_floats(p.key_dim, cx.ld);
  GdrChunkRecord probe;
  const int64_t record_floats = gdr_carve_record(nullptr, cx.dkp, cx.dvp, &probe);
  float* staged = shared;
  float* records = shared + items * blocks * state_floats;
  auto record = [&](int64_t slot) {
    GdrChunkRecord r;
    gdr_carve_record(records + slot * record_floats, cx.dkp, cx.dvp, &r);
    return r;
  };
  StageOrStoreUnits<TS>(plan, cx, staged, false);
  int64_t max_chunks = 0;
  for (int64_t b = 0; b < p.batch; ++b) max_chunks = std::max(max_chunks, ChunkCount(p, b));
  std::vector<int64_t> unit_item, unit_chunk, first_slot(static_cast<size_t>(items)), active;
  for (int64_t w0 = 0; w0 < max_chunks; w0 += plan.wave_chunks) {
    const int64_t w1 = w0 + plan.wave_chunks;
    unit_item.clear();
    unit_chunk.clear();
    active.clear();
    for (int64_t item = 0; item < items; ++item) {
      const int64_t chunks = ChunkCount(p, item / nv);
      first_slot[item] = static_cast<int64_t>(unit_item.size());
      if (chunks > w0) active.push_back(item);
      for (int64_t c = w0; c < std::min(w1, chunks); ++c) {
        unit_item.push_back(item);
        unit_chunk.push_back(c);
      }
    }
    // Phase one of every chunk of the wave.
    parallel_parts(plan.threads, static_cast<int64_t>(unit_item.size()), [&](int64_t part, int64_t begin, int64_t end) {
      GdrPackScratch s;
      gdr_carve_pack(reinterpret_cast<float*>(thread_scratch + part * scratch_bytes), cx.dkp, &s);
      for (int64_t u = begin; u < end; ++u) {
        const int64_t b = unit_item[u] / nv, t0 = p.seq_start[b] + unit_chunk[u] * C;
        PrepareChunk<TA>(cx, unit_item[u] % nv, t0, std::min(C, p.seq_start[b + 1] - t0), s, record(u));
      }
    });
    // The state pass of the wave, per (active item, column block).
    parallel_parts(plan.threads, static_cast<int64_t>(active.size()) * blocks, [&](int64_t part, int64_t begin,
                                                                            int64_t end) {
      GdrPackScratch s;
      GdrPassScratch w;
      float* base = reinterpret_cast<float*>(thread_scratch + part * scratch_bytes);
      gdr_carve_pass(base + gdr_carve_pack(nullptr, cx.dkp, &s), cx.dkp, cx.dvp, &w);
      for (int64_t u = begin; u < end; ++u) {
        const int64_t item = active[u / blocks], b = item / nv;
        int64_t c0, c1;
        BlockColumns(cx, blocks, u % blocks, &c0, &c1);
        float* st = staged + (item * blocks + u % blocks) * state_floats;
        for (int64_t c = w0; c < std::min(w1, ChunkCount(p, b)); ++c) {
          const int64_t t0 = p.seq_start[b] + c * C;
          const int64_t n = std::min(C, p.seq_start[b + 1] - t0);
          StatePass<TA>(cx, item % nv, t0, n, record(first_slot[item] + c - w0), w, st, c0, c1);
          StoreSnapshot(p, cx.ld, b, t0 + n - p.seq_start[b], item % nv, c0, c1, st);
        }
      }
      hwy::FlushStream();  // the streamed snapshots and V', before the barrier
    });
  }
  StageOrStoreUnits<TS>(plan, cx, staged, true);
}

// Column mode: one parallel region; each (item, column block) runs as items mode runs one head, on its columns
// only (phase one into the thread's own record, the state staged in the thread's scratch).
template <class TA, class TS>
void RunColumnBlocks(const GdrPlan& plan, const ChunkContext& cx, char* thread_scratch, int64_t scratch_bytes) {
  const int64_t nv = cx.p->num_value_heads, blocks = plan.column_blocks;
  parallel_parts(plan.threads, cx.p->batch * nv * blocks, [&](int64_t part, int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      int64_t c0, c1;
      BlockColumns(cx, blocks, u % blocks, &c0, &c1);
      const int64_t b = u / blocks / nv, h = u / blocks % nv;
      SequenceHeads<TA, TS>(cx, b, h, h + 1, reinterpret_cast<float*>(thread_scratch + part * scratch_bytes), c0,
                            c1);
    }
  });
}

// ---- pipeline mode: the column blocks of an item share its phase one ----

// A counter on a cache line of its own (the threads of an item poll them).
struct alignas(64) PipelineCounter {
  std::atomic<int64_t> value{0};
};

// Each (item, column block) runs on a thread of its own, its chunks in order as in column mode, but the item's
// blocks share phase one: block k makes the records of chunks k, k + blocks, ... into a ring of plan.pipeline_slots
// records per item, at most `blocks` chunks ahead of its own state pass, and every block's state pass reads them.
// Per item: ready[slot] holds the chunk whose record the slot holds (published with release), finished[k] the
// chunks block k's state pass is done with; a slot is refilled once every block has finished its previous chunk.
// No block waits on a chunk it has not made itself or that its maker has not reached, so the team cannot lock; it
// needs every unit on a thread of its own, and where OpenMP gives a smaller team the units run in column mode
// instead (phase one per block). So they do where the plan asks for near cores only and the threads of units 0
// and 1 are far apart: a cache line's round trip over plan.pipeline_near_ns (150 ns; the mean of 8; ~60 ns near,
// ~330 ns far on the Zen 4 VM, where handing the records over made pipeline mode twice as slow as on near cores and
// slower than column mode: README.md "Speed, session 36"). Same functions on the same data: the bits of items mode.
template <class TA, class TS>
void RunPipeline(const GdrPlan& plan, const ChunkContext& cx, char* thread_scratch, int64_t scratch_bytes,
                 float* shared) {
  const GdrProblem& p = *cx.p;
  const int64_t nv = p.num_value_heads, blocks = plan.column_blocks, slots = plan.pipeline_slots;
  const int64_t items = p.batch * nv, units = items * blocks;
  GdrChunkRecord probe;
  const int64_t record_floats = gdr_carve_record(nullptr, cx.dkp, cx.dvp, &probe);
  std::vector<PipelineCounter> ready(static_cast<size_t>(items * slots)), finished(static_cast<size_t>(units));
  for (PipelineCounter& r : ready) r.value.store(-1, std::memory_order_relaxed);
  CoreDistanceProbe distance;
  bool handed_over = false;  // part 0's answer, which every thread of a whole team shares
  parallel_parts(plan.threads, units, [&](int64_t part, int64_t begin, int64_t end) {
    float* scratch = reinterpret_cast<float*>(thread_scratch + part * scratch_bytes);
    // The same answer on every thread of the team (a unit per part where the team is whole: part k has unit k).
    bool concurrent = parallel_team_size() >= plan.threads && units <= plan.threads;
    if (concurrent && plan.pipeline_near_ns > 0 && units >= 2)
      concurrent = distance.near(static_cast<int>(begin), 8, plan.pipeline_near_ns);
    if (part == 0) handed_over = concurrent;
    for (int64_t u = begin; u < end; ++u) {
      int64_t c0, c1;
      const int64_t item = u / blocks, block = u % blocks, b = item / nv, h = item % nv;
      BlockColumns(cx, blocks, block, &c0, &c1);
      if (!concurrent) {
        SequenceHeads<TA, TS>(cx, b, h, h + 1, scratch, c0, c1);
        continue;
      }
      GdrPackScratch s;
      GdrChunkRecord own;  // column mode's record: not used here
      GdrPassScratch w;
      float* cursor = scratch + gdr_carve_pack(scratch, cx.dkp, &s);
      cursor += gdr_carve_record(cursor, cx.dkp, cx.dvp, &own);
      float* st = cursor + gdr_carve_pass(cursor, cx.dkp, cx.dvp, &w);
      StageColumns<TS>(p, cx.ld, b, h, c0, c1, st);
      PipelineCounter* rd = ready.data() + item * slots;
      PipelineCounter* fin = finished.data() + item * blocks;
      auto record = [&](int64_t chunk) {
        GdrChunkRecord r;
        gdr_carve_record(shared + (item * slots + chunk % slots) * record_floats, cx.dkp, cx.dvp, &r);
        return r;
      };
      const int64_t chunks = ChunkCount(p, b), t_begin = p.seq_start[b], t_end = p.seq_start[b + 1];
      int64_t next = block;  // the next chunk whose record this block makes
      for (int64_t c = 0; c < chunks; ++c) {
        for (; next < chunks && next <= c + blocks; next += blocks) {
          for (int64_t k = 0; k < blocks; ++k) wait_at_least(fin[k].value, next - slots + 1);
          const int64_t t0 = t_begin + next * C;
          PrepareChunk<TA>(cx, h, t0, std::min(C, t_end - t0), s, record(next));
          rd[next % slots].value.store(next, std::memory_order_release);
        }
        wait_at_least(rd[c % slots].value, c);
        const int64_t t0 = t_begin + c * C, n = std::min(C, t_end - t0);
        StatePass<TA>(cx, h, t0, n, record(c), w, st, c0, c1);
        StoreSnapshot(p, cx.ld, b, t0 + n - t_begin, h, c0, c1, st);
        fin[block].value.store(c + 1, std::memory_order_release);
      }
      StoreColumns<TS>(p, cx.ld, b, h, c0, c1, st);
      hwy::FlushStream();  // the streamed snapshots and V', before the barrier
    }
  });
  record_pipeline_handover(handed_over);
}

template <class TA, class TS>
void RunTyped(const GdrPlan& plan, char* thread_scratch, int64_t scratch_bytes, float* shared) {
  ChunkContext cx;
  cx.p = &plan.problem;
  cx.dkp = gdr_pad16(plan.problem.key_dim);
  cx.dvp = gdr_pad16(plan.problem.value_dim);
  cx.ld = gdr_state_row_stride(cx.dvp);
  cx.bf16_dot = plan.avx512_bf16 && std::is_same<TA, hwy::bfloat16_t>::value;
  cx.amx = plan.amx && cx.bf16_dot;
  cx.fp32_keys = !cx.amx;  // the AMX forward reads only the bf16 [K; Q] and Kᵀ (PackKeysBf16)
  if (plan.split == GdrSplit::kChunks) return RunWaves<TA, TS>(plan, cx, thread_scratch, scratch_bytes, shared);
  if (plan.split == GdrSplit::kColumns) return RunColumnBlocks<TA, TS>(plan, cx, thread_scratch, scratch_bytes);
  if (plan.split == GdrSplit::kPipeline) return RunPipeline<TA, TS>(plan, cx, thread_scratch, scratch_bytes, shared);
  run_grains(plan.grains, [&](int64_t part, int64_t begin, int64_t end) {
    RunItems<TA, TS>(cx, begin, end, plan.staged_heads,
                     reinterpret_cast<float*>(thread_scratch + part * scratch_bytes));
  });
}

template <class TS>
void RunState(const GdrPlan& plan, char* thread_scratch, int64_t scratch_bytes, float* shared) {
  switch (plan.problem.query.dtype) {
    case DType::kBF16: return RunTyped<hwy::bfloat16_t, TS>(plan, thread_scratch, scratch_bytes, shared);
    case DType::kF16: return RunTyped<hwy::float16_t, TS>(plan, thread_scratch, scratch_bytes, shared);
    default: return RunTyped<float, TS>(plan, thread_scratch, scratch_bytes, shared);
  }
}

}  // namespace

void GdrChunkedRun(const GdrPlan& plan, char* thread_scratch, int64_t scratch_bytes, float* shared) {
  if (plan.problem.state_in.dtype == DType::kBF16) {
    RunState<hwy::bfloat16_t>(plan, thread_scratch, scratch_bytes, shared);
  } else {
    RunState<float>(plan, thread_scratch, scratch_bytes, shared);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace txops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/isa_dispatch.h"

namespace txops {
GdrChunkedRunFn* select_gdr_chunked_run(Isa isa) { return TXOPS_SELECT_KERNEL(isa, GdrChunkedRun); }
}  // namespace txops
#endif
