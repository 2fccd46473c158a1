// bench_case.cpp — helpers every bench case shares: judging an output against the fp64 reference with the
// shared tolerance table, turning a failed status into a failed check, hashing outputs for the thread-count
// bit-identity check, and the aclTensor / workspace pieces of the two-phase aclnn path.
#include "bench_case.h"

#include <algorithm>
#include <cstring>

namespace txops {
namespace bench {

void accumulate_check(const char* name, const TensorView& y, const std::vector<double>& ref,
                      const std::string& tolerance_row, CheckResult* result) {
  if (ref.empty() || static_cast<int64_t>(ref.size()) != y.numel()) {
    result->passed = false;
    result->message = std::string(name) + ": reference has " + std::to_string(ref.size()) + " values, expected " +
                      std::to_string(y.numel());
    return;
  }
  const CompareReport r = compare_with_reference(y, ref, tolerance_for(tolerance_row, y.dtype));
  result->max_err = std::max(result->max_err, r.max_rel_err);
  if (!r.passed && result->passed) {
    result->passed = false;
    result->message = std::string(name) + " out of tolerance: " + r.describe(y);
  }
}

CheckResult failed_run(const Status& status) {
  CheckResult r;
  r.passed = false;
  r.message = status.message().empty() ? "status " + std::to_string(static_cast<int>(status.code())) : status.message();
  return r;
}

uint64_t hash_outputs(const std::vector<TensorView>& views) {
  uint64_t h = 0x6A09E667F3BCC908ull;
  for (const TensorView& v : views) {
    const size_t bytes = static_cast<size_t>(v.numel()) * dtype_size(v.dtype);
    const unsigned char* p = static_cast<const unsigned char*>(v.data);
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      h = (h ^ w) * 0x100000001B3ull;
      h ^= h >> 29;
    }
    for (; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  }
  return h;
}

AclView::AclView(const HostTensor& t) {
  std::vector<int64_t> dims(t.view.shape, t.view.shape + t.view.ndim);
  tensor_ = aclCreateTensor(dims.data(), dims.size(), static_cast<aclDataType>(t.view.dtype), nullptr, 0,
                            ACL_FORMAT_ND, dims.data(), dims.size(), t.view.data);
}

void* Workspace::get(uint64_t bytes) {
  if (bytes == 0) return nullptr;
  if (buffer.bytes() < bytes) buffer = Buffer(bytes);
  return buffer.data();
}

Status acl_status(aclnnStatus code) {
  if (code == ACLNN_SUCCESS) return Status();
  return Status(static_cast<StatusCode>(code), aclGetRecentErrMsg());
}

}  // namespace bench
}  // namespace txops
