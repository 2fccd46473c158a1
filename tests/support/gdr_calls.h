// gdr_calls.h — the arguments of the two gated-delta-rule operators as plain views, and one call of each op
// through the C++ API or through the aclnn two-phase API (aclCreateTensor, GetWorkspaceSize, workspace,
// run), so validation cases can be written once and checked on both paths.
#ifndef TXOPS_TESTS_SUPPORT_GDR_CALLS_H_
#define TXOPS_TESTS_SUPPORT_GDR_CALLS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "aclnn/acl_meta.h"
#include "support/gdr_problem.h"

namespace gdrtest {

// A view with data == nullptr stands for a null tensor (aclnn: a null aclTensor*).
struct PrefillArgs {
  TensorView query, key, value, beta, initial_state, actual_seq_lengths, g, out, final_state;
  bool has_g = true;
  float scale = 0.5f;
};
struct DecodeArgs {
  TensorView query, key, value, beta, state, actual_seq_lengths, ssm_state_indices, g, gk, num_accepted_tokens, out;
  bool has_g = true, has_gk = false, has_num_accepted = false;
  float scale = 0.5f;
};

PrefillArgs prefill_args(PrefillProblem* problem);
DecodeArgs decode_args(DecodeProblem* problem);  // runs in place on problem->pool (copy pool_before first)

txops::Status call_cpp(const PrefillArgs& a);
txops::Status call_cpp(const DecodeArgs& a);

// Outcome of an aclnn call: the code of the first phase that failed (or success), the recent error
// message when it failed, and the workspace size phase one asked for.
struct AclnnOutcome {
  aclnnStatus status = 0;
  std::string message;
  uint64_t workspace_size = 0;
};
// Both phases with a workspace of the size asked for (or of `workspace_shortfall` bytes less, when > 0).
AclnnOutcome call_aclnn(const PrefillArgs& a, uint64_t workspace_shortfall = 0);
AclnnOutcome call_aclnn(const DecodeArgs& a, uint64_t workspace_shortfall = 0);

// An aclTensor over a view's memory (storage = the elements the view spans); null for a null view.
// `format` lets a test pass a non-ND format.
class AclTensor {
 public:
  explicit AclTensor(const TensorView& view, aclFormat format = ACL_FORMAT_ND);
  ~AclTensor();
  AclTensor(const AclTensor&) = delete;
  AclTensor& operator=(const AclTensor&) = delete;
  aclTensor* get() const { return tensor_; }

 private:
  aclTensor* tensor_ = nullptr;
};

// Fresh zeroed storage for a mutated view (a different dtype or shape), kept alive by the owner.
class Scratch {
 public:
  // A contiguous view of `shape` and `dtype` over new zeroed memory (at least 64 bytes, never null).
  TensorView make(DType dtype, std::vector<int64_t> shape);
  // The same view re-typed / re-shaped, with its bytes copied where they fit.
  TensorView retype(const TensorView& view, DType dtype);
  TensorView reshape(const TensorView& view, std::vector<int64_t> shape);

 private:
  std::vector<std::vector<uint8_t>> buffers_;
};

// True when `message` names `param` as a whole word (delimited by non-identifier characters).
bool names_parameter(const std::string& message, const std::string& param);

}  // namespace gdrtest

#endif  // TXOPS_TESTS_SUPPORT_GDR_CALLS_H_
