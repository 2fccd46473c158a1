// probes.h — same-run machine limits that `txops bench` divides by: a STREAM-like memory bandwidth probe
// (copy with ordinary stores, copy with non-temporal stores, triad) and a compute peak probe (fp32 FMA with
// enough independent accumulators, plus the bf16 dot product vdpbf16ps and AMX bf16 tiles where the CPU has
// them). Each runs on a given thread count, the same count as the op it is compared with.
#ifndef TXOPS_TOOLS_PROBES_H_
#define TXOPS_TOOLS_PROBES_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "bench_util.h"

namespace txops {
namespace bench {

class CacheEvictor;

struct BandwidthProbe {
  int threads = 1;
  size_t array_bytes = 0;   // size of each array
  double copy_gbps = 0;     // (read + write) / time, ordinary stores (write-allocate not counted)
  double copy_nt_gbps = 0;  // same, non-temporal (streaming) stores
  double triad_gbps = 0;    // a = b + s*c: (2 reads + 1 write) / time
  double limit_gbps() const { return copy_nt_gbps > copy_gbps ? copy_nt_gbps : copy_gbps; }
};

struct ComputeProbe {
  int threads = 1;
  std::string isa;               // the vector width used: "avx512", "avx2" or "scalar"
  double fma_gflops = 0;         // fp32 FMA, 2 FLOPs per lane per instruction
  double bf16_dot_gflops = 0;    // vdpbf16ps, 4 FLOPs per fp32 lane per instruction; 0 when unavailable
  double amx_bf16_gflops = 0;    // AMX TDPBF16PS, 16 x 16 x 32 x 2 FLOPs per instruction; 0 when unavailable
};

// Arrays of `array_bytes` each (pick far larger than the last-level cache); best of `passes` passes.
BandwidthProbe probe_bandwidth(int threads, size_t array_bytes, int passes);
// Array size the bench uses: 8x the last-level cache, at least 64 MiB, at most 512 MiB.
size_t default_probe_array_bytes();

// The memory pattern of an op that updates a slice of every row in place (InplacePartialRotaryMul(Grad)): bytes
// [lo, hi) of each of `rows` rows of `row_bytes` read and written back, rows split over `threads` in balanced ranges
// of 64-row blocks (as the copy probe splits its arrays); GB/s of the slice bytes read + written (2 x rows x (hi -
// lo) / time), best of `passes` after a warm-up pass, on a buffer of rows x row_bytes, each pass run twice: with
// the hardware prefetchers alone and with the slices prefetched into L2 rows ahead (the faster counts). What the
// memory system moves for it is whole lines (and what the prefetchers add around them), so this can be well below
// the copy probe.
// With `evictor`, the caches are evicted before every pass (the op's own cold timing, --cold).
double probe_slice(int threads, size_t rows, size_t row_bytes, size_t lo, size_t hi, int passes,
                   CacheEvictor* evictor = nullptr);

// Reads a buffer of 1.5x the last-level cache (at least 16 MiB, at most 1 GiB), one load per 64-byte line, on the
// calling thread: what a case wrote or read before is then out of the caches, and its next call reads its tensors
// from DRAM, as on a machine whose last-level cache they do not fit (txops bench --cold).
class CacheEvictor {
 public:
  CacheEvictor();
  void evict();
  size_t bytes() const { return buffer_.bytes(); }

 private:
  Buffer buffer_;
};

// Median wall time of an empty parallel region on `threads` threads (the fork/join cost every multi-threaded
// call pays; on an oversubscribed machine it includes waiting for a core).
double probe_parallel_region(int threads, int reps);

// The median over 9 batches of the mean round trip (s) of a cache line passed `rounds` times between threads 0 and 1
// of a team of `threads` (0 when the team is smaller than two): CoreDistanceProbe's measurement (core/parallel.h),
// which the GDR prefill's pipeline mode decides by. What every hand-over of data between two cores costs.
// On a virtual machine it depends on where the host runs the vCPUs, and can change several-fold from one process
// to the next (src/ops/gated_delta_rule/README.md, "Speed, session 36").
double probe_core_round_trip(int threads, int rounds);

// Each measurement runs about `seconds_per_pass`; best of `passes`.
ComputeProbe probe_compute(int threads, double seconds_per_pass, int passes);

// ---- kernels (probe_kernels.cpp, compiled per ISA with target attributes). [begin, end) in floats. ----
enum class ProbeIsa { kScalar, kAvx2, kAvx512 };
ProbeIsa probe_isa();  // the widest the CPU has, capped by txops' active ISA
void copy_stores(float* dst, const float* src, size_t begin, size_t end, ProbeIsa isa);
void copy_streaming(float* dst, const float* src, size_t begin, size_t end, ProbeIsa isa);
void triad(float* a, const float* b, const float* c, float s, size_t begin, size_t end, ProbeIsa isa);
// Bytes [lo, hi) of rows [row_begin, row_end), row_bytes apart, loaded and stored back xor `key` (probe_slice);
// ahead > 0: each row's slice prefetched into L2 that many rows before it is reached.
void slice_rmw(char* base, size_t row_bytes, size_t lo, size_t hi, size_t row_begin, size_t row_end, uint64_t key,
               ProbeIsa isa, size_t ahead);
// Runs `iterations` rounds of independent FMAs (or vdpbf16ps); returns FLOPs done. The sink defeats dead-code
// elimination.
double fma_loop(long iterations, ProbeIsa isa, float* sink);
double bf16_dot_loop(long iterations, float* sink);  // requires AVX512_BF16
double amx_bf16_loop(long iterations, float* sink);  // requires AMX-BF16 granted (core/amx.h)

}  // namespace bench
}  // namespace txops

#endif  // TXOPS_TOOLS_PROBES_H_
