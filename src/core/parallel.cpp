// parallel.cpp — OpenMP-backed parallel_for with static, balanced contiguous ranges, and the wait of parts that
// hand work to each other.
#include "core/parallel.h"

#include <omp.h>

#include <algorithm>
#include <thread>

#include "core/plan_record.h"
#include "txops/txops.h"

namespace txops {

int plan_threads(int64_t work_items, int64_t min_items_per_thread) {
  const int max_threads = num_threads();
  if (min_items_per_thread < 1) min_items_per_thread = 1;
  const int64_t useful = work_items / min_items_per_thread;
  if (useful <= 1) return 1;
  return useful < max_threads ? static_cast<int>(useful) : max_threads;
}

void parallel_for(int threads, int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (threads > n) threads = static_cast<int>(n);
  if (threads <= 1) {
    record_parallel_team(1);
    fn(0, n);
    return;
  }
  int team = 0;  // the team OpenMP really gave (for tests: core/plan_record.h)
#pragma omp parallel num_threads(threads)
  {
    const int parts = omp_get_num_threads();
    if (omp_get_thread_num() == 0) team = parts;
    int64_t begin, end;
    balanced_range(n, parts, omp_get_thread_num(), &begin, &end);
    if (begin < end) fn(begin, end);
  }
  record_parallel_team(team);
}

int parallel_team_size() { return omp_get_num_threads(); }

void wait_at_least(const std::atomic<int64_t>& counter, int64_t target) {
  for (int spins = 0; counter.load(std::memory_order_acquire) < target; ++spins) {
    if (spins < 4096) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::yield();
    }
  }
}

int64_t partition_by_cost(const std::vector<int64_t>& costs, int threads, std::vector<int64_t>* part_start) {
  const int64_t n = static_cast<int64_t>(costs.size());
  std::vector<int64_t> prefix(static_cast<size_t>(n) + 1, 0);
  for (int64_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + costs[i];
  part_start->assign(static_cast<size_t>(threads) + 1, n);
  (*part_start)[0] = 0;
  int64_t largest = 0;
  for (int k = 1; k <= threads; ++k) {
    int64_t end = n;
    if (k < threads) {  // the boundary nearest to k/threads of the total cost
      const int64_t target = prefix[n] * k / threads;
      end = std::lower_bound(prefix.begin(), prefix.end(), target) - prefix.begin();
      if (end > 0 && target - prefix[end - 1] < prefix[end] - target) --end;
      end = std::max(end, (*part_start)[k - 1]);
    }
    (*part_start)[k] = end;
    largest = std::max(largest, prefix[end] - prefix[(*part_start)[k - 1]]);
  }
  return largest;
}

}  // namespace txops
