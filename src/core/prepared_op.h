// prepared_op.h — what an operator's phase one produces: the workspace it needs and a closure that runs the
// validated, planned work. The aclnn layer wraps it in an executor; the C++ API runs it at once.
#ifndef TXOPS_CORE_PREPARED_OP_H_
#define TXOPS_CORE_PREPARED_OP_H_

#include <cstdint>
#include <functional>

#include "txops/txops.h"

namespace txops {

struct PreparedOp {
  uint64_t workspace_bytes = 0;
  std::function<Status(void* workspace)> run;
};

// Runs `op` with the calling thread's scratch workspace (the plain C++ API path).
Status run_prepared(const PreparedOp& op);

}  // namespace txops

#endif  // TXOPS_CORE_PREPARED_OP_H_
