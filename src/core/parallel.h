// parallel.h — static partitions over the thread pool (OpenMP underneath). Work item i always goes to
// the same code path whatever the thread count; kernels keep results independent of the partition
// (no cross-item accumulation in partition order), which makes outputs bit-identical across thread counts.
// work_stealing.h moves a part's remaining items to threads that are done with their own.
#ifndef TXOPS_CORE_PARALLEL_H_
#define TXOPS_CORE_PARALLEL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

namespace txops {

// Threads worth using for `work_items` items when each thread should get at least `min_items_per_thread`.
int plan_threads(int64_t work_items, int64_t min_items_per_thread);

// Contiguous ranges of items of near-equal total cost, one per thread: part_start gets threads + 1 entries, part k
// being [part_start[k], part_start[k+1]). Returns the largest part's cost.
int64_t partition_by_cost(const std::vector<int64_t>& costs, int threads, std::vector<int64_t>* part_start);

// Calls fn(begin, end) on `threads` threads over contiguous, balanced ranges of [0, n).
// threads <= 1 (or n <= 1) runs inline on the caller with no pool overhead.
void parallel_for(int threads, int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

// The number of threads in the calling parallel region's team (1 outside one). A kernel whose parts wait on each
// other checks it: parallel_for may get fewer threads than it asked for, and then runs several parts on one.
int parallel_team_size();

// Waits until `counter` >= target (acquire), spinning with a pause and yielding after a while, so that a team larger
// than the machine's cores still moves on.
void wait_at_least(const std::atomic<int64_t>& counter, int64_t target);

// Whether two threads of a parallel region's team hand data to each other cheaply. Called inside the region: the
// threads with role 0 and role 1 pass a cache line back and forth up to `rounds` times, the role-0 thread compares
// the mean round trip with `near_ns` and publishes the verdict, and every caller (roles above 1 only wait for it)
// gets that same verdict. Both role 0 and role 1 must call it, on threads of their own. On a virtual machine the
// host may run two vCPUs on far cores for the life of a process: a round trip of ~330 ns against ~60 ns on the
// Zen 4 VM of src/ops/gated_delta_rule/README.md ("Speed, session 36"), where data handed over cost several times
// more; and where the OS runs both threads on one core for a while, a round trip takes a scheduling turn.
// One object per measurement.
class CoreDistanceProbe {
 public:
  bool near(int role, int rounds, double near_ns);
  // The measurement alone: role 0 gets the mean round trip in ns of `rounds` timed round trips, or infinity where
  // role 1 stopped answering promptly once budget_ns had passed; role 1 answers until role 0 is done; both get 0
  // otherwise (`txops bench` reports it).
  double round_trip_ns(int role, int rounds, double budget_ns);

 private:
  struct alignas(64) Line {
    std::atomic<int64_t> value{0};
  };
  static constexpr int64_t kUntimedRounds = 2;  // played before the timed ones (a thread wakes in its own time)
  Line ball_, done_, verdict_;  // verdict_: 0 while unknown, then 1 (near) or 2 (far)
};

// [begin, end) of part `part` out of `parts` balanced parts of [0, n).
inline void balanced_range(int64_t n, int parts, int part, int64_t* begin, int64_t* end) {
  const int64_t base = n / parts, extra = n % parts;
  *begin = part * base + (part < extra ? part : extra);
  *end = *begin + base + (part < extra ? 1 : 0);
}

// Calls fn(part, begin, end) for parts 0..parts-1 (on up to `parts` threads), part k over the balanced range k
// of [0, n); parts whose range is empty are skipped. A part's index and range are fixed by `parts`, whatever
// number of threads OpenMP gives, so a part can own a scratch area.
template <class Fn>
void parallel_parts(int parts, int64_t n, const Fn& fn) {
  parallel_for(parts, parts, [&](int64_t part_begin, int64_t part_end) {
    for (int64_t part = part_begin; part < part_end; ++part) {
      int64_t begin, end;
      balanced_range(n, parts, static_cast<int>(part), &begin, &end);
      if (begin < end) fn(part, begin, end);
    }
  });
}

}  // namespace txops

#endif  // TXOPS_CORE_PARALLEL_H_
