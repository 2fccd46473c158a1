// plan.cpp — phase one of both gated-delta-rule operators: validate, then plan (ISA kernel, row layout,
// partition of the (sequence, value head) items over threads weighted by their tokens, workspace = per-thread
// fp32 scratch + the chunk-mode records and states + the decode start-state snapshot when slots conflict),
// producing a PreparedOp whose run() executes the plan (TXOPS_VERBOSE names the kernel and the mode).
// Prefill chooses the chunked or the recurrent kernel per shape (README.md, "Kernels"), and for the chunked
// kernel items mode, chunk mode (parallel over chunks) or column mode by the balance of the items over the threads;
// TXOPS_GDR_KERNEL and TXOPS_GDR_SPLIT override the choices for tests and benchmarks.
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "core/amx.h"
#include "core/parallel.h"
#include "core/plan_record.h"
#include "core/status.h"
#include "core/verbose.h"
#include "core/work_stealing.h"
#include "ops/gated_delta_rule/chunked_layout.h"
#include "ops/gated_delta_rule/kernels.h"
#include "ops/gated_delta_rule/prepare.h"

namespace txops {
namespace {

constexpr int64_t kAlign = 64;
// Items mode of the chunked prefill: the staged fp32 states one thread keeps at once (GdrPlan::staged_heads).
constexpr int64_t kStagedStatesBytes = 320 << 10;

int64_t align_up(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// (sequence, head) items a thread should get at least: a decode item is small (one state streamed once).
int64_t work_items_min(const GdrProblem& p) { return p.decode ? 8 : 1; }

// The kernel family the plan runs (README.md, "Kernels").
const char* kernel_name(const GdrPlan& plan) {
  if (plan.problem.decode) {
    if (plan.key_major_state) return "gdr_decode_key_major_pool";
    if (plan.direct_state && plan.layout.register_rows == 0) return "gdr_decode_pool_wide_rows";
    if (plan.direct_state) return plan.layout.token_major ? "gdr_decode_pool_rows" : "gdr_decode_pool_rows_in_registers";
    return plan.layout.register_rows > 0 ? "gdr_decode_staged_rows_in_registers" : "gdr_decode_staged_generic";
  }
  if (plan.chunked) return "gdr_prefill_chunked";
  if (plan.layout.token_major) return "gdr_prefill_token_major_rows";
  return plan.layout.register_rows > 0 ? "gdr_prefill_rows_in_registers" : "gdr_prefill_generic_rows";
}

PreparedOp make_op(std::shared_ptr<GdrPlan> plan, Isa isa, const char* op_name) {
  record_plan(compiled_isa(isa), plan->threads, kernel_name(*plan));
  GdrRunItemsFn* run_items = plan->chunked ? nullptr : select_gdr_run_items(isa);
  GdrChunkedRunFn* run_chunked = plan->chunked ? select_gdr_chunked_run(isa) : nullptr;
  GdrSnapshotFn* snapshot_fn = select_gdr_snapshot(isa);
  const int64_t scratch_bytes = align_up(plan->scratch_floats * static_cast<int64_t>(sizeof(float)));
  const int64_t shared_bytes = align_up(plan->shared_floats * static_cast<int64_t>(sizeof(float)));
  PreparedOp op;
  op.workspace_bytes =
      static_cast<uint64_t>(kAlign + scratch_bytes * plan->threads + shared_bytes + align_up(plan->snapshot_bytes));
  op.run = [plan, run_items, run_chunked, snapshot_fn, scratch_bytes, shared_bytes, isa,
            op_name](void* workspace) -> Status {
    std::string details;
    if (verbose()) {
      const GdrProblem& p = plan->problem;
      char mode[64] = "";
      if (plan->chunked && plan->split == GdrSplit::kChunks)
        std::snprintf(mode, sizeof(mode), " mode=chunks(waves of %" PRId64 ", %" PRId64 " column blocks)",
                      plan->wave_chunks, plan->column_blocks);
      else if (plan->chunked && plan->split == GdrSplit::kColumns)
        std::snprintf(mode, sizeof(mode), " mode=columns(%" PRId64 " column blocks)", plan->column_blocks);
      else if (plan->chunked && plan->split == GdrSplit::kPipeline)
        std::snprintf(mode, sizeof(mode), " mode=pipeline(%" PRId64 " column blocks)", plan->column_blocks);
      else if (plan->chunked)
        std::snprintf(mode, sizeof(mode), " mode=items(%" PRId64 " head%s at a time)", plan->staged_heads,
                      plan->staged_heads == 1 ? "" : "s");
      if (plan->amx) std::strncat(mode, " x=amx", sizeof(mode) - std::strlen(mode) - 1);
      char buf[320];
      std::snprintf(buf, sizeof(buf),
                    "kernel=%s%s isa=%s threads=%d T=%" PRId64 " B=%" PRId64 " Nk=%" PRId64 " Nv=%" PRId64
                    " Dk=%" PRId64 " Dv=%" PRId64 " %s state=%s%s",
                    kernel_name(*plan), mode, isa_name(isa), plan->threads, p.num_tokens, p.batch, p.num_key_heads,
                    p.num_value_heads, p.key_dim, p.value_dim, dtype_name(p.query.dtype),
                    dtype_name(p.state_in.dtype), plan->heads_only ? " slot-conflicts:heads-only" : "");
      details = buf;
    }
    VerboseTimer timer(op_name, std::move(details));
    char* base = static_cast<char*>(workspace);
    base += (kAlign - reinterpret_cast<uintptr_t>(base) % kAlign) % kAlign;
    const GdrPlan& pl = *plan;
    if (run_chunked != nullptr) {
      run_chunked(pl, base, scratch_bytes, reinterpret_cast<float*>(base + scratch_bytes * pl.threads));
      return Status();
    }
    char* snapshot = pl.snapshot_bytes > 0 ? base + scratch_bytes * pl.threads + shared_bytes : nullptr;
    if (snapshot != nullptr) {
      parallel_parts(pl.threads, pl.problem.batch * pl.problem.num_value_heads,
                     [&](int64_t, int64_t begin, int64_t end) { snapshot_fn(pl, begin, end, snapshot); });
    }
    // Parts are fixed by the plan (not by how many threads OpenMP gives); each owns one scratch area, and its
    // thread runs the grains of other parts too once its own are done (core/work_stealing.h).
    run_grains(pl.grains, [&](int64_t part, int64_t begin, int64_t end) {
      run_items(pl, begin, end, reinterpret_cast<float*>(base + scratch_bytes * part), snapshot);
    });
    return Status();
  };
  return op;
}

// The cost of each item in token units, for the partition: its tokens plus a share for staging its state
// (prefill), or its tokens plus one (decode). Heads-only decode items (heads) cost the same.
std::vector<int64_t> item_costs(const GdrPlan& plan) {
  const GdrProblem& p = plan.problem;
  std::vector<int64_t> costs(static_cast<size_t>(plan.items), 1);
  if (plan.heads_only) return costs;
  const int64_t stage_cost = p.decode ? 1 : 16;
  for (int64_t item = 0; item < plan.items; ++item) costs[item] = p.seq_length(item / p.num_value_heads) + stage_cost;
  return costs;
}

// Chunk mode (parallel over chunks), column and pipeline mode (parallel over Dv column blocks) for the chunked
// kernel: TXOPS_GDR_SPLIT=chunks|columns|pipeline|items forces one (pipeline where every (item, column block) gets a
// thread of its own, else chunks); otherwise the items are split further when items mode would leave the threads
// more than 20 % out of balance (few or unequal items), the staged states fit in 64 MiB and there are at least two
// chunks: where every (item, column block) gets a thread of its own, the threads get as much work and at least 90 %
// of them one, column mode on the AMX path when an item has at most two blocks, else pipeline mode; otherwise chunk
// mode.
void plan_chunk_mode(GdrPlan* plan, int64_t items_mode_largest, int64_t total_cost) {
  const GdrProblem& p = plan->problem;
  const int max_threads = num_threads();
  const int64_t dkp = gdr_pad16(p.key_dim), dvp = gdr_pad16(p.value_dim);
  const int64_t state_floats = gdr_staged_state_floats(p.key_dim, gdr_state_row_stride(dvp));
  const int64_t items = plan->items, threads = max_threads, groups = dvp / 16;
  // Column blocks: the fewest that split items x blocks over the threads at least 90 % evenly (else the best).
  int64_t blocks = 1;
  double best_eff = 0.0;
  for (int64_t b = std::min(groups, (threads + items - 1) / items); b <= groups; ++b) {
    const int64_t units = items * b;
    const double eff = static_cast<double>(units) / (threads * ((units + threads - 1) / threads));
    if (eff > best_eff + 1e-9) blocks = b, best_eff = eff;
    if (eff >= 0.9) break;
  }
  int64_t chunks = 0, fewest = INT64_MAX, most = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t c = (p.seq_length(b) + kGdrChunk - 1) / kGdrChunk;
    chunks += c * p.num_value_heads;
    fewest = std::min(fewest, c);
    most = std::max(most, c);
  }
  const char* env = std::getenv("TXOPS_GDR_SPLIT");
  if (env != nullptr && std::strcmp(env, "chunks") == 0) {
    plan->split = GdrSplit::kChunks;
  } else if (env != nullptr && std::strcmp(env, "columns") == 0) {
    plan->split = GdrSplit::kColumns;
  } else if (env != nullptr && std::strcmp(env, "pipeline") == 0) {
    plan->split = items * blocks <= threads ? GdrSplit::kPipeline : GdrSplit::kChunks;
  } else if (env == nullptr || std::strcmp(env, "items") != 0) {
    const bool split = max_threads > 1 && chunks >= 2 && items * blocks * state_floats * 4 <= (int64_t{64} << 20) &&
                       items_mode_largest * max_threads > total_cost * 6 / 5;
    // Column mode repeats phase one per block: it pays where phase one is cheap beside the state pass (the AMX
    // path: one head on two threads 3.6 against 3.85 ms in chunk mode), not on the fp32 paths (6.97 against 6.54
    // ms without AMX, 8.51 against 8.32 on AVX2; README.md "Speed, session 24"). Measured with two blocks only:
    // with more, phase one's repeats grow and chunk mode keeps them spread. Where every (item, block) has a thread
    // of its own, the fp32 paths take pipeline mode: no barriers, phase one made once (README.md "Speed, session
    // 28": one head on two threads, AVX2 8.43-8.62 against 8.89-9.34 ms in chunk mode; without AMX 6.74-6.81
    // against 7.48-7.85), where the AMX path's column mode still wins (3.20-3.50 against 3.66-4.20 ms). Both need
    // every (item, block) on a thread of its own, as much work for each, and at most a tenth of the threads idle.
    // Pipeline mode hands every record to another core: where the team's cores are far apart (a VM's vCPUs on
    // far host cores) it runs as column mode instead, measured per call (README.md "Speed, session 36").
    const bool own_threads = items * blocks <= threads && best_eff >= 0.9 && fewest == most;
    if (split && plan->amx && blocks <= 2 && own_threads)
      plan->split = GdrSplit::kColumns;
    else if (split)
      plan->split = own_threads ? GdrSplit::kPipeline : GdrSplit::kChunks;
    if (plan->split == GdrSplit::kPipeline) {
      const char* near = std::getenv("TXOPS_GDR_NEAR_NS");  // tests: 1e-9 takes column mode, 1e9 pipeline mode
      plan->pipeline_near_ns = near != nullptr ? std::atof(near) : 150.0;
    }
  }
  if (plan->split == GdrSplit::kItems) return;
  plan->threads = max_threads;
  plan->column_blocks = blocks;
  GdrPackScratch s;
  GdrChunkRecord r;
  GdrPassScratch w;
  const int64_t record_floats = gdr_carve_record(nullptr, dkp, dvp, &r);
  // Every (item, column block) stages its state in an area of its own: blocks of one row in one area put two
  // threads' columns in neighbouring cache lines, which the prefetchers then moved back and forth (one head on two
  // threads: 4.55 -> 3.80 ms, README.md "Speed, session 24").
  plan->scratch_floats = gdr_carve_pack(nullptr, dkp, &s) + gdr_carve_pass(nullptr, dkp, dvp, &w);
  if (plan->split == GdrSplit::kColumns || plan->split == GdrSplit::kPipeline) {
    // items mode's scratch for one head: a record (column mode's, and pipeline mode's when OpenMP gives a smaller
    // team) and one staged state
    plan->scratch_floats += record_floats + state_floats;
    if (plan->split == GdrSplit::kColumns) return;
    // Pipeline mode: blocks take turns at phase one, each at most `blocks` chunks ahead of its own state pass; a
    // ring of 2 * blocks + 2 records per item keeps the makers from waiting on the readers of the slots they refill.
    plan->pipeline_slots = 2 * blocks + 2;
    plan->shared_floats = items * plan->pipeline_slots * record_floats;
    return;
  }
  plan->shared_floats = items * blocks * state_floats;
  // Waves: about 4 chunks per thread for phase one, at most 32 per item, records within 16 MiB.
  int64_t wave = std::min<int64_t>(32, (4 * threads + items - 1) / items);
  wave = std::max<int64_t>(1, std::min(wave, (int64_t{16} << 20) / (4 * record_floats * items)));
  plan->wave_chunks = wave;
  plan->shared_floats += items * wave * record_floats;
}

void plan_common(GdrPlan* plan, Isa isa) {
  const GdrProblem& p = plan->problem;
  plan->layout = select_gdr_layout(isa)(p.key_dim);
  const int64_t dkp = plan->layout.key_dim_padded, dv = p.value_dim, tb = kGdrTokenBlock;
  auto rounded = [](int64_t f) { return (f + 15) / 16 * 16; };
  plan->threads = plan_threads(plan->items, work_items_min(p));
  const std::vector<int64_t> costs = item_costs(*plan);
  std::vector<int64_t> part_start;
  const int64_t largest = partition_by_cost(costs, plan->threads, &part_start);
  // Grains start at a key head's first value head (GQA: the value heads of a key head share its packing).
  const int64_t nv = p.num_value_heads, group = p.heads_per_key_head();
  const bool heads_only = plan->heads_only;
  plan->grains = split_into_grains(part_start, costs, grains_per_part(), [=](int64_t item) {
    return (heads_only ? item : item % nv) % group == 0;
  });
  // Prefill stages the fp32 states of every head a thread owns in one sequence (at most Nv, at most its items).
  int64_t most_items = 0;
  for (int k = 0; k < plan->threads; ++k)
    most_items = std::max(most_items, part_start[k + 1] - part_start[k]);
  const int64_t staged_heads = p.decode ? 1 : std::min(most_items, p.num_value_heads);
  if (plan->chunked) {
    const int64_t dkp16 = gdr_pad16(p.key_dim), dvp16 = gdr_pad16(dv);
    const int64_t state_floats = gdr_staged_state_floats(p.key_dim, gdr_state_row_stride(dvp16));
    // Items mode runs a sequence's chunks for a few heads at a time (chunks outer, heads inner): as many as keep
    // their staged states within kStagedStatesBytes, so that they stay in L2 beside the chunk's record and rows from
    // one chunk to the next (all 32 of Qwen3-Next's, 2.3 MiB, did not; README.md "Speed, session 40"); a whole
    // number of key heads' value heads, which share a chunk's packing, and at least one key head's.
    const int64_t ratio = p.heads_per_key_head();
    const int64_t fit = kStagedStatesBytes / (state_floats * static_cast<int64_t>(sizeof(float)));
    plan->staged_heads = std::max<int64_t>(1, std::min(staged_heads, std::max(ratio, fit / ratio * ratio)));
    GdrPackScratch s;
    GdrChunkRecord r;
    GdrPassScratch w;
    plan->scratch_floats = gdr_carve_pack(nullptr, dkp16, &s) + gdr_carve_record(nullptr, dkp16, dvp16, &r) +
                           gdr_carve_pass(nullptr, dkp16, dvp16, &w) + plan->staged_heads * state_floats;
    int64_t total_cost = 0;
    for (int64_t c : costs) total_cost += c;
    plan_chunk_mode(plan, largest, total_cost);
  } else {
    plan->scratch_floats = 5 * rounded(tb * dkp) + 2 * rounded(tb * dv) + 3 * rounded(tb) + staged_heads * dv * dkp;
  }
}

// Whether OneTokenKeyMajor can run on `state` in place: key-major (v stride 1; transformers' and fla's order) with
// Dv a whole number of vectors, at most kGdrKeyMajorMaxValueDim.
bool key_major_kernel_fits(const GdrPlan& plan, const TensorView& state) {
  const int64_t dv = plan.problem.value_dim;
  return state.strides[2] == 1 && state.strides[3] != 1 && dv % plan.layout.lanes == 0 &&
         dv <= kGdrKeyMajorMaxValueDim;
}

// Whether the one-token kernels (OneTokenStraight) can read state_in and write state_out in place of staging:
// both key-major as above, or both value-major with unpadded rows and a one-token row kernel for that width.
bool one_token_kernel_fits(const GdrPlan& plan) {
  const GdrProblem& p = plan.problem;
  const TensorView &in = p.state_in, &out = p.state_out;
  if (key_major_kernel_fits(plan, in) && key_major_kernel_fits(plan, out)) return true;
  return in.strides[3] == 1 && out.strides[3] == 1 && plan.layout.key_dim_padded == p.key_dim &&
         (plan.layout.token_major || plan.layout.register_rows == 0);
}

// Prefill kernel choice. TXOPS_GDR_KERNEL=chunked|recurrent forces one (tests, benchmarks); otherwise (unset,
// "auto", anything else) the measured rule of README.md "Kernels": chunked on AVX2 and AVX3 when the sequences
// average at least one chunk (shorter ones are dominated by staging the state, which the recurrent kernel does
// faster). The rule reads the shape only, never the thread count, so the bits do not depend on the threads;
// chunk mode (parallel over chunks) then needs the chunked kernel.
bool choose_chunked(const GdrProblem& p, Isa isa) {
  if (p.kernel == GdrKernel::kChunked || p.checkpoint_every > 0 || p.has_corrected_values)
    return true;  // only it writes snapshots and V'
  if (p.kernel == GdrKernel::kRecurrent) return false;
  const char* env = std::getenv("TXOPS_GDR_KERNEL");
  if (env != nullptr && std::strcmp(env, "chunked") == 0) return true;
  if (env != nullptr && std::strcmp(env, "recurrent") == 0) return false;
  return isa != Isa::kScalar && p.num_tokens >= kGdrChunk * p.batch;
}

}  // namespace

Status prepare_chunk_gated_delta_rule(const TensorView& query, const TensorView& key, const TensorView& value,
                                      const TensorView& beta, const TensorView& initial_state,
                                      const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                                      const TensorView& out, const TensorView& final_state,
                                      const GdrPrefillOptions& options, PreparedOp* op) {
  auto plan = std::make_shared<GdrPlan>();
  Status st = validate_chunk_gated_delta_rule(query, key, value, beta, initial_state, actual_seq_lengths, g, scale,
                                              out, final_state, options, &plan->problem);
  if (!st.ok()) return st;
  const Isa isa = active_isa();
  plan->items = plan->problem.batch * plan->problem.num_value_heads;
  plan->chunked = choose_chunked(plan->problem, isa);
  plan->avx512_bf16 = plan->chunked && isa == Isa::kAvx512 && cpu_has_avx512_bf16();
  plan->amx = plan->avx512_bf16 && plan->problem.query.dtype == DType::kBF16 &&
              gdr_pad16(plan->problem.key_dim) % 32 == 0 && amx_bf16_usable();
  plan_common(plan.get(), isa);  // after amx: column mode is for the AMX path
  plan->prefill_one_token_direct = !plan->chunked && one_token_kernel_fits(*plan);
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
  // Rows straight from/to the pool: register rows for up to a token block per sequence, or (rows wider than the
  // register budget) the two-pass wide-row kernel for one token per sequence.
  const bool token_fits = plan->layout.register_rows > 0 ? longest <= kGdrTokenBlock : longest <= 1;
  plan->direct_state = plan->layout.key_dim_padded == p.key_dim && p.state_in.strides[3] == 1 && token_fits;
  // A key-major pool is read in place by OneTokenKeyMajor for one token per sequence; the start-state snapshot of
  // slot conflicts is value-major, so those plans stage instead.
  plan->key_major_state = !plan->direct_state && key_major_kernel_fits(*plan, p.state_in) && longest <= 1 &&
                          !p.slot_conflict;
  plan->avx512_bf16 = isa == Isa::kAvx512 && cpu_has_avx512_bf16();
  *op = make_op(std::move(plan), isa, "recurrent_gated_delta_rule");
  return Status();
}

}  // namespace txops
