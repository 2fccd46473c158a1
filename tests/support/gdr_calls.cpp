// gdr_calls.cpp — see gdr_calls.h: one gated-delta-rule call through the C++ API or the aclnn API.
#include "support/gdr_calls.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "aclnnop/aclnn_chunk_gated_delta_rule.h"
#include "aclnnop/aclnn_recurrent_gated_delta_rule.h"

namespace gdrtest {

PrefillArgs prefill_args(PrefillProblem* p) {
  PrefillArgs a;
  a.query = p->q.view(), a.key = p->k.view(), a.value = p->v.view(), a.beta = p->beta.view();
  a.initial_state = p->initial_state.view(), a.actual_seq_lengths = p->lengths.view(), a.g = p->g.view();
  a.out = p->out.view(), a.final_state = p->final_state.view();
  a.has_g = p->config.with_g;
  a.scale = p->scale();
  return a;
}

DecodeArgs decode_args(DecodeProblem* p) {
  DecodeArgs a;
  a.query = p->q.view(), a.key = p->k.view(), a.value = p->v.view(), a.beta = p->beta.view();
  a.state = p->pool.view(), a.actual_seq_lengths = p->lengths.view(), a.ssm_state_indices = p->indices.view();
  a.g = p->g.view(), a.gk = p->gk.view(), a.num_accepted_tokens = p->accepted.view(), a.out = p->out.view();
  a.has_g = p->config.with_g, a.has_gk = p->config.with_gk, a.has_num_accepted = !p->config.accepted.empty();
  a.scale = p->scale();
  return a;
}

txops::Status call_cpp(const PrefillArgs& a) {
  return txops::chunk_gated_delta_rule(a.query, a.key, a.value, a.beta, a.initial_state, a.actual_seq_lengths,
                                       a.has_g ? &a.g : nullptr, a.scale, a.out, a.final_state);
}

txops::Status call_cpp(const DecodeArgs& a) {
  return txops::recurrent_gated_delta_rule(a.query, a.key, a.value, a.beta, a.state, a.actual_seq_lengths,
                                           a.ssm_state_indices, a.has_g ? &a.g : nullptr, a.has_gk ? &a.gk : nullptr,
                                           a.has_num_accepted ? &a.num_accepted_tokens : nullptr, a.scale, a.out);
}

// ---- aclnn ------------------------------------------------------------------------------------------------
AclTensor::AclTensor(const TensorView& v, aclFormat format) {
  if (v.data == nullptr) return;
  int64_t span = 1;  // elements from the first to the last one the view reaches, inclusive (strides >= 0)
  bool empty = false;
  for (int d = 0; d < v.ndim; ++d) {
    if (v.shape[d] == 0) empty = true;
    span += (v.shape[d] - 1) * v.strides[d];
  }
  const int64_t storage = empty ? 0 : span;
  tensor_ = aclCreateTensor(v.shape, static_cast<uint64_t>(v.ndim), static_cast<aclDataType>(v.dtype), v.strides,
                            0, format, &storage, 1, v.data);
}

AclTensor::~AclTensor() {
  if (tensor_) aclDestroyTensor(tensor_);
}

namespace {

// Phase two with a workspace of (asked - shortfall) bytes; a failing phase two leaves the executor live,
// so it is then run once more with the full size to release it.
AclnnOutcome run_phase_two(aclnnStatus (*run)(void*, uint64_t, aclOpExecutor*, aclrtStream), uint64_t size,
                           aclOpExecutor* executor, uint64_t shortfall) {
  AclnnOutcome outcome;
  outcome.workspace_size = size;
  std::vector<uint8_t> workspace(size);  // exactly the size asked for: AddressSanitizer sees any overrun
  void* base = size ? workspace.data() : nullptr;
  const uint64_t given = shortfall > 0 && size >= shortfall ? size - shortfall : size;
  outcome.status = run(base, given, executor, nullptr);
  if (outcome.status != 0) {
    outcome.message = aclGetRecentErrMsg();
    if (given != size) run(base, size, executor, nullptr);
  }
  return outcome;
}

}  // namespace

AclnnOutcome call_aclnn(const PrefillArgs& a, uint64_t workspace_shortfall) {
  AclTensor q(a.query), k(a.key), v(a.value), beta(a.beta), s0(a.initial_state), lens(a.actual_seq_lengths);
  AclTensor g(a.has_g ? a.g : TensorView()), out(a.out), s1(a.final_state);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus st = aclnnChunkGatedDeltaRuleGetWorkspaceSize(q.get(), k.get(), v.get(), beta.get(), s0.get(),
                                                                  lens.get(), g.get(), a.scale, out.get(), s1.get(),
                                                                  &size, &executor);
  if (st != 0) return AclnnOutcome{st, aclGetRecentErrMsg(), 0};
  return run_phase_two(aclnnChunkGatedDeltaRule, size, executor, workspace_shortfall);
}

AclnnOutcome call_aclnn(const DecodeArgs& a, uint64_t workspace_shortfall) {
  AclTensor q(a.query), k(a.key), v(a.value), beta(a.beta), state(a.state), lens(a.actual_seq_lengths);
  AclTensor idx(a.ssm_state_indices), g(a.has_g ? a.g : TensorView()), gk(a.has_gk ? a.gk : TensorView());
  AclTensor acc(a.has_num_accepted ? a.num_accepted_tokens : TensorView()), out(a.out);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus st = aclnnRecurrentGatedDeltaRuleGetWorkspaceSize(
      q.get(), k.get(), v.get(), beta.get(), state.get(), lens.get(), idx.get(), g.get(), gk.get(), acc.get(),
      a.scale, out.get(), &size, &executor);
  if (st != 0) return AclnnOutcome{st, aclGetRecentErrMsg(), 0};
  return run_phase_two(aclnnRecurrentGatedDeltaRule, size, executor, workspace_shortfall);
}

// ---- Scratch ------------------------------------------------------------------------------------------------
TensorView Scratch::make(DType dtype, std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  const size_t bytes = std::max<size_t>(64, static_cast<size_t>(n) * std::max<size_t>(1, txops::dtype_size(dtype)));
  buffers_.emplace_back(bytes, 0);
  return TensorView::make(buffers_.back().data(), dtype, static_cast<int32_t>(shape.size()), shape.data(), nullptr);
}

static size_t contiguous_bytes(const TensorView& v) { return static_cast<size_t>(v.numel()) * txops::dtype_size(v.dtype); }

TensorView Scratch::retype(const TensorView& view, DType dtype) {
  TensorView fresh = make(dtype, std::vector<int64_t>(view.shape, view.shape + view.ndim));
  std::memcpy(fresh.data, view.data, std::min(contiguous_bytes(view), contiguous_bytes(fresh)));
  return fresh;
}

TensorView Scratch::reshape(const TensorView& view, std::vector<int64_t> shape) {
  TensorView fresh = make(view.dtype, std::move(shape));
  std::memcpy(fresh.data, view.data, std::min(contiguous_bytes(view), contiguous_bytes(fresh)));
  return fresh;
}

bool names_parameter(const std::string& message, const std::string& param) {
  auto is_ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t pos = message.find(param); pos != std::string::npos; pos = message.find(param, pos + 1)) {
    const bool left = pos == 0 || !is_ident(message[pos - 1]);
    const size_t end = pos + param.size();
    const bool right = end == message.size() || !is_ident(message[end]);
    if (left && right) return true;
  }
  return false;
}

}  // namespace gdrtest
