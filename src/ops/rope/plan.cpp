// plan.cpp — planning the RoPE operators (see plan.h): row streams and groups from validated views, kernel
// choice per ISA, thread count, non-temporal stores; the run closure with its TXOPS_VERBOSE line.
#include "ops/rope/plan.h"

#include <cstdio>
#include <string>

#include "core/work_stealing.h"
#include "core/plan_record.h"
#include "core/streaming.h"
#include "core/verbose.h"

namespace txops {
namespace rope {

// Work below this many rotated channels per thread is not worth an OpenMP region (~2 us of fork/join).
constexpr int64_t kMinChannelsPerThread = 32 * 1024;

static const char* byte_ptr(const void* p, int64_t elements, DType dtype) {
  return static_cast<const char*>(p) + elements * static_cast<int64_t>(dtype_size(dtype));
}

// The stride the kernels step by along an outer dim: 0 for a dim of size 1, whose stride addresses nothing (any
// value is a valid view, e.g. 2^62: the row loops step past the last row and prefetch kPrefetchRows strides ahead).
static int64_t outer_stride(const TensorView& v, int d) { return v.shape[d] == 1 ? 0 : v.strides[d]; }

// The outer dims without those of extent 1, and with neighbours merged where every tensor steps across the inner
// one as one run (outer stride = inner stride x inner extent), right-aligned: the row loop's innermost run gets as
// long as the layout allows (a decode call (B, N, 1, D) runs N rows per run, not one). The rows and their order
// are unchanged, so are the bits.
static void collapse_outer_dims(RowStream* st) {
  if (st->rows() == 0) return;
  int64_t extent[kOuterDims], stride[kOuterDims][4];
  int n = 0;
  for (int d = 0; d < kOuterDims; ++d) {
    if (st->extent[d] == 1) continue;
    bool merge = n > 0;
    for (int t = 0; t < 4 && merge; ++t) merge = stride[n - 1][t] == st->stride[d][t] * st->extent[d];
    if (merge) {
      extent[n - 1] *= st->extent[d];
      for (int t = 0; t < 4; ++t) stride[n - 1][t] = st->stride[d][t];
      continue;
    }
    extent[n] = st->extent[d];
    for (int t = 0; t < 4; ++t) stride[n][t] = st->stride[d][t];
    ++n;
  }
  for (int d = 0; d < kOuterDims; ++d) {
    const int from = d - (kOuterDims - n);
    st->extent[d] = from >= 0 ? extent[from] : 1;
    for (int t = 0; t < 4; ++t) st->stride[d][t] = from >= 0 ? stride[from][t] : 0;
  }
}

void fill_row_stream(const TensorView& in, const TensorView& out, const TensorView& cos, const TensorView& sin,
                     int64_t first, RowStream* st) {
  const int last = in.ndim - 1;
  const int slot0 = kOuterDims - last;  // right-align the outer dims into the three slots
  for (int d = 0; d < last; ++d) {
    const int slot = slot0 + d;
    st->extent[slot] = in.shape[d];
    st->stride[slot][kIn] = outer_stride(in, d);
    st->stride[slot][kOut] = outer_stride(out, d);
    st->stride[slot][kCos] = outer_stride(cos, d);
    st->stride[slot][kSin] = outer_stride(sin, d);
  }
  st->step[kIn] = in.strides[last];
  st->step[kOut] = out.strides[last];
  st->step[kCos] = cos.strides[last];
  st->step[kSin] = sin.strides[last];
  st->in = byte_ptr(in.data, first * in.strides[last], in.dtype);
  st->out = const_cast<char*>(byte_ptr(out.data, first * out.strides[last], out.dtype));
  st->cos = cos.data;
  st->sin = sin.data;
  collapse_outer_dims(st);
}

// Group dims: cos's dims of size > 1 (the same for q and k, which differ only in N, a dim cos broadcasts);
// member dims: the others. Both are right-aligned into the three slots, in dim order.
static int count_group_dims(const TensorView& cos) {
  int groups = 0;
  for (int d = 0; d < cos.ndim - 1; ++d) groups += cos.shape[d] > 1 ? 1 : 0;
  return groups;
}

void fill_grad_side(const TensorView& in, const TensorView& out, const TensorView& x, const TensorView& cos,
                    int side_index, GradJob* job) {
  GradSide& side = job->sides[side_index];
  const int last = in.ndim - 1;
  const int group_dims = count_group_dims(cos);
  int group_slot = kOuterDims - group_dims, member_slot = kOuterDims - (last - group_dims);
  for (int d = 0; d < last; ++d) {
    if (cos.shape[d] > 1) {
      const int t = kGSide0 + 3 * side_index;
      job->group_stride[group_slot][t] = in.strides[d];
      job->group_stride[group_slot][t + 1] = out.strides[d];
      job->group_stride[group_slot][t + 2] = x.strides[d];
      ++group_slot;
    } else {
      side.member_extent[member_slot] = in.shape[d];
      side.member_stride[member_slot][0] = outer_stride(in, d);
      side.member_stride[member_slot][1] = outer_stride(out, d);
      side.member_stride[member_slot][2] = outer_stride(x, d);
      ++member_slot;
    }
  }
  side.in = in.data;
  side.out = out.data;
  side.x = x.data;
  side.step[0] = in.strides[last];
  side.step[1] = out.strides[last];
  side.step[2] = x.strides[last];
}

void fill_grad_groups(const TensorView& cos, const TensorView& sin, const TensorView& dcos, const TensorView& dsin,
                      GradJob* job) {
  const int last = cos.ndim - 1;
  int slot = kOuterDims - count_group_dims(cos);
  for (int d = 0; d < last; ++d) {
    if (cos.shape[d] <= 1) continue;
    job->group_extent[slot] = cos.shape[d];
    job->group_stride[slot][kGCos] = cos.strides[d];
    job->group_stride[slot][kGSin] = sin.strides[d];
    job->group_stride[slot][kGDcos] = dcos.strides[d];
    job->group_stride[slot][kGDsin] = dsin.strides[d];
    ++slot;
  }
  job->cos = cos.data;
  job->sin = sin.data;
  job->dcos = dcos.data;
  job->dsin = dsin.data;
  job->cs_step[0] = cos.strides[last];
  job->cs_step[1] = sin.strides[last];
  job->cs_step[2] = dcos.strides[last];
  job->cs_step[3] = dsin.strides[last];
}

// The shape a verbose line shows (RoPE tensors have rank <= 4); small, so the run closure stays cheap to copy.
struct LoggedShape {
  int ndim = 0;
  int64_t dims[4] = {};
  explicit LoggedShape(const TensorView& v) : ndim(v.ndim < 4 ? v.ndim : 4) {
    for (int d = 0; d < ndim; ++d) dims[d] = v.shape[d];
  }
  std::string str() const {
    std::string s = "(";
    for (int d = 0; d < ndim; ++d) s += (d ? ", " : "") + std::to_string(dims[d]);
    return s + ")";
  }
};

static std::string describe(const char* kernel, Isa isa, int threads, const RotationConfig& cfg,
                            const LoggedShape& shape_of) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "kernel=%s isa=%s threads=%d mode=%s %s shape=%s x=%s cos=%s%s", kernel,
                isa_name(isa), threads, rotary_mode_name(cfg.mode), cfg.backward ? "backward" : "forward",
                shape_of.str().c_str(), dtype_name(cfg.x_dtype), dtype_name(cfg.cs_dtype),
                cfg.stream_out ? " stores=streaming" : "");
  return buf;
}

Status plan_rows(const char* op_name, RowJob& job, uint64_t out_of_place_bytes, const TensorView& shape_of,
                 PreparedOp* op) {
  job.config.stream_out = out_of_place_bytes >= static_cast<uint64_t>(kStreamingOutputBytes);
  job.simd_rows = true;
  for (int i = 0; i < job.stream_count; ++i) {
    for (int t = 0; t < 4; ++t) job.simd_rows = job.simd_rows && job.streams[i].step[t] == 1;
  }
  Isa isa = Isa::kScalar;
  RowKernel* kernel = select_row_kernel(active_isa(), job.config, &isa);
  int64_t rows = 0;
  for (int i = 0; i < job.stream_count; ++i) rows += job.streams[i].rows();
  const int threads = plan_threads(rows * job.config.width, kMinChannelsPerThread);
  record_plan(isa, threads, job.simd_rows ? "rope_rows_simd" : "rope_rows_strided");
  op->workspace_bytes = 0;
  const LoggedShape shape(shape_of);
  const GrainSplit grains = split_evenly(rows, threads, grains_per_part());  // work stealing (core/work_stealing.h)
  op->run = [job, kernel, isa, threads, grains, op_name, shape](void*) -> Status {
    VerboseTimer timer(op_name, verbose() ? describe(job.simd_rows ? "rope_rows_simd" : "rope_rows_strided", isa,
                                                     threads, job.config, shape)
                                          : std::string());
    run_grains(grains, [&](int64_t, int64_t begin, int64_t end) { kernel(job, begin, end); });
    return Status();
  };
  return Status();
}

Status plan_grad_groups(const char* op_name, GradJob& job, uint64_t out_of_place_bytes, const TensorView& shape_of,
                        PreparedOp* op) {
  job.config.stream_out = out_of_place_bytes >= static_cast<uint64_t>(kStreamingOutputBytes);
  // interleave-half (RotaryPositionEmbeddingGrad only) reduces through the fp32 rows: no SIMD grad row for it
  job.simd_rows = job.cs_step[0] == 1 && job.cs_step[1] == 1 && job.config.mode != RotaryMode::kInterleaveHalf;
  for (const GradSide& side : job.sides) {
    for (int t = 0; t < 3; ++t) job.simd_rows = job.simd_rows && side.step[t] == 1;
  }
  Isa isa = Isa::kScalar;
  GradKernel* kernel = select_grad_kernel(active_isa(), job.config, &isa);
  const int64_t groups = job.groups();
  int64_t rows = 0;
  for (const GradSide& side : job.sides) rows += side.member_extent[0] * side.member_extent[1] * side.member_extent[2];
  const int threads = plan_threads(groups * (rows + 1) * job.config.width, kMinChannelsPerThread);
  record_plan(isa, threads, job.simd_rows ? "rope_grad_groups_simd" : "rope_grad_groups_strided");
  op->workspace_bytes = 0;
  const LoggedShape shape(shape_of);
  const GrainSplit grains = split_evenly(groups, threads, grains_per_part());
  op->run = [job, kernel, isa, threads, grains, op_name, shape](void*) -> Status {
    VerboseTimer timer(op_name, verbose() ? describe(job.simd_rows ? "rope_grad_groups_simd" : "rope_grad_groups_strided",
                                                     isa, threads, job.config, shape)
                                          : std::string());
    run_grains(grains, [&](int64_t, int64_t begin, int64_t end) { kernel(job, begin, end); });
    return Status();
  };
  return Status();
}

void plan_nothing(PreparedOp* op) {
  op->workspace_bytes = 0;
  op->run = [](void*) -> Status { return Status(); };
}

}  // namespace rope
}  // namespace txops
