// kernels.h — the interface between plan.cpp and the Highway kernels of the gated delta rule
// (kernels_recurrent.cpp, kernels_chunked.cpp): the plan a kernel runs, and the per-ISA entry points chosen
// with TXOPS_SELECT_KERNEL.
#ifndef TXOPS_OPS_GATED_DELTA_RULE_KERNELS_H_
#define TXOPS_OPS_GATED_DELTA_RULE_KERNELS_H_

#include <cstdint>
#include <vector>

#include "core/work_stealing.h"
#include "ops/gated_delta_rule/args.h"

namespace txops {

// Tokens packed (as fp32) per step of the row-fused recurrent kernel.
constexpr int64_t kGdrTokenBlock = 64;
// Tokens per chunk of the chunked prefill kernel.
constexpr int64_t kGdrChunk = 64;
// Widest value head the key-major decode kernel takes (its column sums live in two stack arrays of this size).
constexpr int64_t kGdrKeyMajorMaxValueDim = 512;

// How one ISA lays out a state row: Dk padded to a whole number of vectors; `register_rows` > 0 when a
// register-resident micro-kernel exists for that width (rows kept in registers across a token block).
struct GdrRowLayout {
  int64_t key_dim_padded = 0;
  int64_t vectors_per_row = 0;
  int register_rows = 0;  // 0: the generic in-memory row loop
  int64_t lanes = 1;      // fp32 lanes of a vector
  bool token_major = false;  // k and q of a token fit in registers next to a row (TokenMajorRows, OneTokenRows)
};

// How the chunked prefill kernel runs in parallel (GdrPlan::split).
enum class GdrSplit { kItems, kChunks, kColumns, kPipeline };

struct GdrPlan {
  GdrProblem problem;
  GdrRowLayout layout;
  int threads = 1;
  bool direct_state = false;       // decode: rows read/written straight from/to the pool (no fp32 staging)
  bool key_major_state = false;    // decode, one token per sequence, a pool whose v stride is 1 (its memory order
                                   // (P, Nv, Dk, Dv)): OneTokenKeyMajor straight on the pool
  bool prefill_one_token_direct = false;  // recurrent prefill: a sequence of one token goes straight from its
                                          // initial to its final state (both laid out for a one-token kernel)
  bool avx512_bf16 = false;        // decode: the AVX3 kernels (value-major rows, key-major columns) may round bf16
                                   // states with vcvtne2ps2bf16;
                                   // chunked prefill: bf16 grams with vdpbf16ps
  bool amx = false;                // chunked prefill: X = [K; Q] Sᵀ on AMX tiles (bf16 activations, Dk rounded to 16
                                   // a multiple of 32, a CPU and OS with AMX-BF16; chunked_amx-inl.h)
  bool chunked = false;            // prefill: the chunked kernel (kernels_chunked.cpp) instead of the recurrent one
  bool heads_only = false;         // decode with slot conflicts: items are heads, sequences run in order
  int64_t items = 0;               // (sequence, head) pairs, or heads when heads_only
  GrainSplit grains;               // one part of items per thread (partition_by_cost) cut into grains: items mode and
                                   // decode run them with work stealing
  int64_t scratch_floats = 0;      // per thread
  int64_t staged_heads = 1;        // chunked prefill, items mode: the heads of one sequence whose staged states a
                                   // thread keeps at once (their chunks run in turn), their states within L2
  // Chunked prefill: items mode (parallel over (sequence, head)), chunk mode (waves of chunks: phase one parallel
  // over chunks, the state pass over (item, Dv column block)), column mode (each (item, column block) on one
  // thread, phase one recomputed per block) or pipeline mode (each (item, column block) on one thread, the item's
  // blocks taking turns at phase one and handing the records over):
  GdrSplit split = GdrSplit::kItems;
  int64_t wave_chunks = 0;         // chunk mode: chunks of every item per wave (phase one of a wave runs in parallel)
  int64_t column_blocks = 1;       // chunk, column and pipeline mode: Dv column blocks per item in the state pass
  int64_t pipeline_slots = 0;      // pipeline mode: records per item in the ring its column blocks share
  double pipeline_near_ns = 0;     // pipeline mode: > 0, column mode instead where a cache line's round trip
                                   // between the threads of units 0 and 1 takes longer (0: always pipeline)
  int64_t shared_floats = 0;       // chunk mode: the staged state of every (item, column block), one wave's records;
                                   // pipeline mode: every item's ring of records
  int64_t snapshot_bytes = 0;      // decode with slot conflicts: start states copied before any write
};

// Per-ISA entry points (kernels_recurrent.cpp).
using GdrLayoutFn = GdrRowLayout(int64_t key_dim);
// Runs items [begin, end) of the plan; `scratch` holds plan.scratch_floats floats (64-byte aligned);
// `snapshot` the start states (heads_only plans) or null.
using GdrRunItemsFn = void(const GdrPlan& plan, int64_t begin, int64_t end, float* scratch, const void* snapshot);
// Copies the start state of every sequence into `snapshot` (B, Nv, Dv, Dk) in the pool's dtype, for [begin, end)
// of the B * Nv (sequence, head) pairs.
using GdrSnapshotFn = void(const GdrPlan& plan, int64_t begin, int64_t end, void* snapshot);

GdrLayoutFn* select_gdr_layout(Isa isa);
GdrRunItemsFn* select_gdr_run_items(Isa isa);
GdrSnapshotFn* select_gdr_snapshot(Isa isa);

// The chunked prefill kernel (kernels_chunked.cpp): runs the whole plan (it makes its own parallel regions).
// `thread_scratch` holds plan.threads areas of `scratch_bytes` (64-byte aligned, plan.scratch_floats floats each);
// `shared` holds plan.shared_floats floats (chunk mode), 64-byte aligned. Sizes: chunked_layout.h.
using GdrChunkedRunFn = void(const GdrPlan& plan, char* thread_scratch, int64_t scratch_bytes, float* shared);
GdrChunkedRunFn* select_gdr_chunked_run(Isa isa);

}  // namespace txops

#endif  // TXOPS_OPS_GATED_DELTA_RULE_KERNELS_H_
