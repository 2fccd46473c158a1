// work_stealing.cpp — grains of fixed parts, and the queue that hands them out (work_stealing.h).
#include "core/work_stealing.h"

#include <algorithm>
#include <cstdlib>

namespace txops {

int grains_per_part() {
  const char* env = std::getenv("TXOPS_GRAINS_PER_PART");  // read at every plan, as the other planners' knobs
  const int n = env != nullptr ? std::atoi(env) : 8;
  return n < 1 ? 1 : n;
}

GrainSplit split_into_grains(const std::vector<int64_t>& part_start, const std::vector<int64_t>& costs,
                             int grains_per_part, const std::function<bool(int64_t)>& may_cut) {
  GrainSplit split;
  const int parts = static_cast<int>(part_start.size()) - 1;
  split.part_grain.push_back(0);
  for (int k = 0; k < parts; ++k) {
    const int64_t begin = part_start[k], end = part_start[k + 1];
    int64_t part_cost = 0;
    for (int64_t i = begin; i < end; ++i) part_cost += costs[i];
    const bool cut = parts > 1 && grains_per_part > 1;
    const int64_t target = cut ? (part_cost + grains_per_part - 1) / grains_per_part : part_cost + 1;
    if (begin < end) split.grain_start.push_back(begin);
    int64_t grain_cost = 0;
    for (int64_t i = begin; i < end; ++i) {
      if (grain_cost >= target && may_cut(i)) {
        split.grain_start.push_back(i);
        grain_cost = 0;
      }
      grain_cost += costs[i];
    }
    split.part_grain.push_back(static_cast<int64_t>(split.grain_start.size()));
  }
  split.grain_start.push_back(part_start.empty() ? 0 : part_start.back());
  return split;
}

GrainSplit split_evenly(int64_t n, int parts, int grains_per_part) {
  GrainSplit split;
  split.part_grain.push_back(0);
  for (int k = 0; k < parts; ++k) {
    int64_t begin, end;
    balanced_range(n, parts, k, &begin, &end);
    const int64_t length = end - begin;
    const int grains = parts > 1 ? static_cast<int>(std::min<int64_t>(grains_per_part, length)) : (length > 0 ? 1 : 0);
    for (int g = 0; g < grains; ++g) {
      int64_t grain_begin, grain_end;
      balanced_range(length, grains, g, &grain_begin, &grain_end);
      split.grain_start.push_back(begin + grain_begin);
    }
    split.part_grain.push_back(static_cast<int64_t>(split.grain_start.size()));
  }
  split.grain_start.push_back(n);
  return split;
}

GrainQueue::GrainQueue(const GrainSplit& split) : slots_(static_cast<size_t>(split.parts())) {
  for (int k = 0; k < split.parts(); ++k) {
    const uint64_t front = static_cast<uint64_t>(split.part_grain[k]);
    const uint64_t back = static_cast<uint64_t>(split.part_grain[k + 1]);
    slots_[k].bounds.store(front << 32 | back, std::memory_order_relaxed);
  }
}

int64_t GrainQueue::take(int part, bool front) {
  std::atomic<uint64_t>& bounds = slots_[part].bounds;
  uint64_t old = bounds.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t first = old >> 32, last = old & 0xFFFFFFFFu;
    if (first >= last) return -1;
    const uint64_t next = front ? (first + 1) << 32 | last : first << 32 | (last - 1);
    // A grain's results are published by the parallel region's closing barrier; the claim only has to be exclusive.
    if (bounds.compare_exchange_weak(old, next, std::memory_order_relaxed))
      return static_cast<int64_t>(front ? first : last - 1);
  }
}

int64_t GrainQueue::next(int part) {
  const int parts = static_cast<int>(slots_.size());
  int64_t grain = take(part, true);
  for (int i = 1; grain < 0 && i < parts; ++i) grain = take((part + i) % parts, false);
  return grain;
}

}  // namespace txops
