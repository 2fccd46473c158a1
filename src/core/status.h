// status.h — building failing Statuses with a formatted one-line message, and the thread-local
// "recent error" that aclGetRecentErrMsg() returns.
#ifndef TXOPS_CORE_STATUS_H_
#define TXOPS_CORE_STATUS_H_

#include <string>

#include "txops/txops.h"

namespace txops {

// fail(StatusCode::kTilingError, "cos dim %d (N) must be 1, got %lld", 1, n)
Status fail(StatusCode code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// "prefix: message" for a failed status; an ok status is returned unchanged.
Status with_prefix(const char* prefix, Status status);

// Thread-local last error message (what aclGetRecentErrMsg returns).
void set_recent_error(const std::string& message);
const char* recent_error();

}  // namespace txops

#endif  // TXOPS_CORE_STATUS_H_
