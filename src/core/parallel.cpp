// parallel.cpp — OpenMP-backed parallel_for with static, balanced contiguous ranges, and the wait of parts that
// hand work to each other.
#include "core/parallel.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <limits>
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

namespace {

// One step of a spin-wait: a pause for the first 4096 steps, then a yield each, so that a team larger than the
// machine's cores still moves on.
void back_off(int* spins) {
  if ((*spins)++ < 4096) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else {
    std::this_thread::yield();
  }
}

}  // namespace

void wait_at_least(const std::atomic<int64_t>& counter, int64_t target) {
  for (int spins = 0; counter.load(std::memory_order_acquire) < target;) back_off(&spins);
}

// Role 0 sends even values, role 1 answers each with the next odd one until role 0 is done. Role 0 waits as long as
// it takes for role 1's first answer (a thread that was asleep wakes in its own time), plays two rounds untimed,
// then times `rounds` round trips together (no clock read between them). Where an answer takes more than 4096
// pauses (role 1 is not on a core of its own then: two threads on one core answer in scheduling turns, ~0.1 ms
// each) after budget_ns has passed, it gives up.
double CoreDistanceProbe::round_trip_ns(int role, int rounds, double budget_ns) {
  using Clock = std::chrono::steady_clock;
  if (role == 0) {
    wait_at_least(ball_.value, 1);
    const Clock::time_point start = Clock::now();
    auto overdue = [&]() { return std::chrono::duration<double, std::nano>(Clock::now() - start).count() > budget_ns; };
    bool answered = true;
    Clock::time_point t0 = start;
    for (int64_t i = 1; i <= kUntimedRounds + rounds && answered; ++i) {
      if (i == kUntimedRounds + 1) t0 = Clock::now();
      ball_.value.store(2 * i, std::memory_order_release);
      for (int spins = 0; ball_.value.load(std::memory_order_acquire) < 2 * i + 1;) {
        back_off(&spins);
        if (spins > 4096 && overdue()) {
          answered = false;
          break;
        }
      }
    }
    const double mean_ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / rounds;
    done_.value.store(1, std::memory_order_release);
    return answered ? mean_ns : std::numeric_limits<double>::infinity();
  }
  if (role == 1) {
    ball_.value.store(1, std::memory_order_release);
    int spins = 0;
    for (int64_t answered = 1; done_.value.load(std::memory_order_acquire) == 0;) {
      const int64_t ball = ball_.value.load(std::memory_order_acquire);
      if (ball > answered) {  // an even value from role 0
        answered = ball + 1;
        ball_.value.store(answered, std::memory_order_release);
        spins = 0;
      } else {
        back_off(&spins);
      }
    }
  }
  return 0.0;
}

bool CoreDistanceProbe::near(int role, int rounds, double near_ns) {
  // The budget: every round, the untimed ones too, at near_ns.
  const double ns = round_trip_ns(role, rounds, near_ns * static_cast<double>(rounds + kUntimedRounds));
  if (role == 0) verdict_.value.store(ns < near_ns ? 1 : 2, std::memory_order_release);
  wait_at_least(verdict_.value, 1);
  return verdict_.value.load(std::memory_order_acquire) == 1;
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
