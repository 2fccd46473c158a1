// bench_runner.h — `txops bench`: selecting cases, running the same-run probes, timing each case on each
// thread count (warm-up, adaptive repetitions, min and median), checking it against the fp64 reference,
// printing progress (stderr), the table and the "N passed, N failed" line (stdout), and the JSON records.
#ifndef TXOPS_TOOLS_BENCH_RUNNER_H_
#define TXOPS_TOOLS_BENCH_RUNNER_H_

#include <string>
#include <vector>

#include "txops/txops.h"

namespace txops {
namespace bench {

struct BenchOptions {
  std::string op;                 // empty: all
  std::string suite;              // empty: all
  std::string shape;              // KEY=VALUE[,KEY=VALUE...]: override those dims; cases lacking a key are skipped
  bool has_dtype = false;
  DType dtype = DType::kBF16;
  std::vector<int> threads{1, 2};
  int reps = 0;                   // 0: adaptive
  std::string json;               // empty: no JSON
  bool quick = false;
  bool list = false;              // print the selected cases and exit
  bool cold = false;              // evict the last-level cache before every timed call of a large case
};

// Returns the process exit code: 0 iff every selected case passed (2 on a usage error).
int run_bench(const BenchOptions& options);

}  // namespace bench
}  // namespace txops

#endif  // TXOPS_TOOLS_BENCH_RUNNER_H_
