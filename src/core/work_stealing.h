// work_stealing.h — fixed parts whose threads, once done with their own items, take what is left of the others'.
// Why: a static split waits for its slowest thread, and on a shared machine one thread may run at half speed for a
// whole call (a busy core, a vCPU the host shares with another guest). Which thread runs an item never changes what
// the item computes, so results stay bit-identical (items must be independent, as parallel.h asks of every part).
#ifndef TXOPS_CORE_WORK_STEALING_H_
#define TXOPS_CORE_WORK_STEALING_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/parallel.h"

namespace txops {

// Each part's items cut into grains: grain g is items [grain_start[g], grain_start[g + 1]), part k owns grains
// [part_grain[k], part_grain[k + 1]).
struct GrainSplit {
  std::vector<int64_t> grain_start;
  std::vector<int64_t> part_grain;
  int parts() const { return static_cast<int>(part_grain.size()) - 1; }
};

// Grains per part: 8, or TXOPS_GRAINS_PER_PART (tests and benchmarks; 1 keeps the static split).
int grains_per_part();

// Cuts every part of `part_start` (parts + 1 entries, as partition_by_cost makes them) into grains of about
// 1 / grains_per_part of the part's cost, cutting only before an item where may_cut(item) holds (and at the parts'
// bounds). One part, or grains_per_part <= 1, leaves each part one grain.
GrainSplit split_into_grains(const std::vector<int64_t>& part_start, const std::vector<int64_t>& costs,
                             int grains_per_part, const std::function<bool(int64_t item)>& may_cut);

// parallel_for's balanced parts of [0, n) (items of equal cost), each cut into grains_per_part balanced grains
// (one part: one grain). Planners make it once; run_grains runs it.
GrainSplit split_evenly(int64_t n, int parts, int grains_per_part);

// Hands out the grains: a part's own from the front, in order; once they are gone, the others' from the back.
class GrainQueue {
 public:
  explicit GrainQueue(const GrainSplit& split);
  // The next grain for the thread of `part`, or -1 when every grain is taken.
  int64_t next(int part);

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> bounds{0};  // (first grain not taken from the front) << 32 | (first taken from the back)
  };
  int64_t take(int part, bool front);
  std::vector<Slot> slots_;
};

// Calls fn(part, begin, end) once for every grain, on parallel_parts' threads (one per part while OpenMP gives them):
// `part` is the calling thread's own part (whose scratch it uses), [begin, end) the grain's items.
template <class Fn>
void run_grains(const GrainSplit& split, const Fn& fn) {
  const int parts = split.parts();
  if (parts <= 1) {  // inline, through parallel_for so that the team is recorded as for any part
    parallel_for(1, 1, [&](int64_t, int64_t) {
      for (size_t g = 0; g + 1 < split.grain_start.size(); ++g) fn(0, split.grain_start[g], split.grain_start[g + 1]);
    });
    return;
  }
  GrainQueue queue(split);
  parallel_parts(parts, parts, [&](int64_t part, int64_t, int64_t) {
    for (int64_t g; (g = queue.next(static_cast<int>(part))) >= 0;)
      fn(part, split.grain_start[g], split.grain_start[g + 1]);
  });
}

}  // namespace txops

#endif  // TXOPS_CORE_WORK_STEALING_H_
