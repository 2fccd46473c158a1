// verbose.cpp — stderr logging for TXOPS_VERBOSE.
#include "core/verbose.h"

#include <cstdarg>
#include <cstdio>

namespace txops {

void verbose_log(const char* fmt, ...) {
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  std::fprintf(stderr, "txops: %s\n", buf);
}

VerboseTimer::VerboseTimer(const char* op, std::string details)
    : op_(op), details_(std::move(details)), on_(verbose()) {
  if (on_) start_ = std::chrono::steady_clock::now();
}

VerboseTimer::~VerboseTimer() {
  if (!on_) return;
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start_).count();
  verbose_log("%s %s time=%.1fus", op_, details_.c_str(), us);
}

}  // namespace txops
