// status.cpp — formatted failures and the thread-local recent-error string.
#include "core/status.h"

#include <cstdarg>
#include <cstdio>

namespace txops {

Status fail(StatusCode code, const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  return Status(code, buf);
}

Status with_prefix(const char* prefix, Status status) {
  if (status.ok()) return status;
  return Status(status.code(), std::string(prefix) + ": " + status.message());
}

namespace {
thread_local std::string g_recent_error;
}

void set_recent_error(const std::string& message) { g_recent_error = message; }
const char* recent_error() { return g_recent_error.c_str(); }

}  // namespace txops
