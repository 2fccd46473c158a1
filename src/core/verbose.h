// verbose.h — TXOPS_VERBOSE=1 logging: one line per operator call on stderr, e.g.
//   txops: interleave_rope kernel=rope_rows_interleave_half isa=avx512 threads=2 shape=(1, 128, 4096, 64) bf16 time=412.3us
#ifndef TXOPS_CORE_VERBOSE_H_
#define TXOPS_CORE_VERBOSE_H_

#include <chrono>
#include <string>

#include "txops/txops.h"

namespace txops {

void verbose_log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Times a scope when verbose() is on and prints "txops: <op> <details> time=..us" at its end.
class VerboseTimer {
 public:
  VerboseTimer(const char* op, std::string details);  // details are only built by callers when verbose()
  ~VerboseTimer();

 private:
  const char* op_;
  std::string details_;
  bool on_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace txops

#endif  // TXOPS_CORE_VERBOSE_H_
