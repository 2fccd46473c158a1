// aclnn_inplace_partial_rotary_mul.cpp — aclnnInplacePartialRotaryMul and its Grad: aclTensor -> TensorView,
// partialSlice -> {start, end}, then the op's phase one. Both directions share the conversion.
#include "aclnnop/aclnn_inplace_partial_rotary_mul.h"
#include "aclnnop/aclnn_inplace_partial_rotary_mul_grad.h"

#include "core/executor.h"
#include "ops/rope/prepare.h"
#include "runtime/acl_tensor.h"

using namespace txops;

static constexpr const char* kForward = "aclnnInplacePartialRotaryMul";
static constexpr const char* kBackward = "aclnnInplacePartialRotaryMulGrad";

static aclnnStatus phase_one(const char* api, bool backward, aclTensor* xRef, const aclTensor* cos,
                             const aclTensor* sin, int64_t rotaryMode, const aclIntArray* partialSlice,
                             uint64_t* workspaceSize, aclOpExecutor** executor) {
  TensorView xv, cv, sv;
  Status st = tensor_to_view(xRef, backward ? "dyRef" : "xRef", &xv);
  if (st.ok()) st = tensor_to_view(cos, "cos", &cv);
  if (st.ok()) st = tensor_to_view(sin, "sin", &sv);
  if (st.ok()) st = check_phase_one_outputs(workspaceSize, executor);
  uint64_t slice_len = 0;
  const int64_t* slice = nullptr;
  if (st.ok()) st = int_array_to_values(partialSlice, "partialSlice", &slice, &slice_len);
  PreparedOp op;
  if (st.ok()) {
    st = backward ? prepare_inplace_partial_rotary_mul_grad(xv, cv, sv, rotaryMode, slice, slice_len, &op)
                  : prepare_inplace_partial_rotary_mul(xv, cv, sv, rotaryMode, slice, slice_len, &op);
  }
  if (!st.ok()) return report(api, st);
  return make_executor(api, op.workspace_bytes, std::move(op.run), workspaceSize, executor);
}

aclnnStatus aclnnInplacePartialRotaryMulGetWorkspaceSize(aclTensor* xRef, const aclTensor* cos, const aclTensor* sin,
                                                         int64_t rotaryMode, const aclIntArray* partialSlice,
                                                         uint64_t* workspaceSize, aclOpExecutor** executor) {
  return phase_one(kForward, false, xRef, cos, sin, rotaryMode, partialSlice, workspaceSize, executor);
}

aclnnStatus aclnnInplacePartialRotaryMul(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                         aclrtStream /*stream*/) {
  return run_executor(kForward, workspace, workspaceSize, executor);
}

aclnnStatus aclnnInplacePartialRotaryMulGradGetWorkspaceSize(aclTensor* dyRef, const aclTensor* cos,
                                                             const aclTensor* sin, int64_t rotaryMode,
                                                             const aclIntArray* partialSlice,
                                                             uint64_t* workspaceSize, aclOpExecutor** executor) {
  return phase_one(kBackward, true, dyRef, cos, sin, rotaryMode, partialSlice, workspaceSize, executor);
}

aclnnStatus aclnnInplacePartialRotaryMulGrad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                             aclrtStream /*stream*/) {
  return run_executor(kBackward, workspace, workspaceSize, executor);
}
