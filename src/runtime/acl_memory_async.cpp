// acl_memory_async.cpp — aclrtMemcpyAsync / aclrtMemsetAsync. Work runs synchronously on the CPU, so the Async
// forms are the synchronous calls (same checks: counts against destMax/maxCount and against the aclrtMalloc /
// aclrtMallocHost block a pointer lies in) after checking the stream is live or the default (null) one; the
// copy or fill is done when they return, which a later aclrtSynchronizeStream can only confirm.
#include <cstring>
#include <string>

#include "acl/acl.h"
#include "core/status.h"
#include "runtime/acl_streams.h"

namespace {

// The synchronous call's message names itself; say which call the caller made.
aclError renamed(aclError code, const char* sync_api, const char* async_api) {
  if (code == ACL_SUCCESS) return code;
  const std::string message = txops::recent_error();
  const size_t n = std::strlen(sync_api);
  if (message.compare(0, n, sync_api) == 0 && message.size() > n && message[n] == ':') {
    txops::set_recent_error(async_api + message.substr(n));
  }
  return code;
}

}  // namespace

extern "C" {

aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
  if (!txops::stream_is_live_or_default(stream)) {
    txops::set_recent_error("aclrtMemcpyAsync: stream is not live (destroyed, or not made by aclrtCreateStream)");
    return ACL_ERROR_INVALID_PARAM;
  }
  return renamed(aclrtMemcpy(dst, destMax, src, count, kind), "aclrtMemcpy", "aclrtMemcpyAsync");
}

aclError aclrtMemsetAsync(void* devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
  if (!txops::stream_is_live_or_default(stream)) {
    txops::set_recent_error("aclrtMemsetAsync: stream is not live (destroyed, or not made by aclrtCreateStream)");
    return ACL_ERROR_INVALID_PARAM;
  }
  return renamed(aclrtMemset(devPtr, maxCount, value, count), "aclrtMemset", "aclrtMemsetAsync");
}

}  // extern "C"
