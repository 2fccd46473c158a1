// gdr_validation_test.cpp — one case per rule of docs/gated_delta_rule.md for both operators, each run
// through the C++ API and the aclnn API: the status code (prefill: null 161001, dtype/format 161002, shape or
// constraint 561002, sequence lengths 161002; decode: null 161001, everything else 161002), a one-line
// message with the API prefix that names the parameter; TXOPS_COMPAT=cann limits via set_compat_mode.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "aclnnop/aclnn_chunk_gated_delta_rule.h"
#include "aclnnop/aclnn_recurrent_gated_delta_rule.h"
#include "support/gdr_calls.h"

namespace gdrtest {
namespace {

using txops::DType;
using txops::StatusCode;

constexpr StatusCode kNull = StatusCode::kNullptr, kInvalid = StatusCode::kParamInvalid,
                     kTiling = StatusCode::kTilingError;

template <class Args>
struct Rule {
  const char* what;
  std::function<void(Args*, Scratch*)> mutate;
  StatusCode code;
  std::vector<std::string> params;  // the message must name one of these
};

bool names_any(const std::string& message, const std::vector<std::string>& params) {
  for (const std::string& p : params)
    if (names_parameter(message, p)) return true;
  return false;
}

// Runs `args` (already broken by the rule) through both APIs and checks code, prefix and parameter name.
template <class Args>
void expect_rejected(const Rule<Args>& rule, const Args& args, const std::string& cpp_prefix,
                     const std::string& aclnn_prefix) {
  SCOPED_TRACE(rule.what);
  const txops::Status st = call_cpp(args);
  EXPECT_EQ(static_cast<int>(st.code()), static_cast<int>(rule.code)) << st.message();
  EXPECT_EQ(st.message().rfind(cpp_prefix, 0), 0u) << st.message();
  EXPECT_TRUE(names_any(st.message(), rule.params)) << "message does not name the parameter: " << st.message();
  EXPECT_EQ(st.message().find('\n'), std::string::npos) << st.message();
  if (rule.code != kNull) EXPECT_NE(st.message().find("got"), std::string::npos) << "no value: " << st.message();

  const AclnnOutcome outcome = call_aclnn(args);
  EXPECT_EQ(static_cast<int>(outcome.status), static_cast<int>(rule.code)) << outcome.message;
  EXPECT_EQ(outcome.message.rfind(aclnn_prefix, 0), 0u) << outcome.message;
  EXPECT_TRUE(names_any(outcome.message, rule.params)) << "message does not name the parameter: " << outcome.message;
}

// ---- prefill --------------------------------------------------------------------------------------------------
// T = 5 (lengths 3, 2), Nk = 2, Nv = 4, Dk = 4, Dv = 6, bf16 activations, fp32 state, with g.
PrefillConfig base_prefill() {
  PrefillConfig c;
  c.lengths = {3, 2};
  c.nk = 2, c.nv = 4, c.dk = 4, c.dv = 6;
  return c;
}

using PrefillRule = Rule<PrefillArgs>;
const std::vector<std::string> kQuery = {"query"}, kKey = {"key"}, kValue = {"value"}, kBeta = {"beta"},
                               kOut = {"out"}, kG = {"g", "gOptional"},
                               kInitial = {"initialState", "initial_state"},
                               kFinal = {"finalState", "final_state"},
                               kLengths = {"actualSeqLengths", "actual_seq_lengths"},
                               kHeads = {"query", "key", "value"};

std::vector<PrefillRule> prefill_rules() {
  const int64_t T = 5, B = 2, Nk = 2, Nv = 4, Dk = 4, Dv = 6;
  std::vector<PrefillRule> r;
  auto null = [](TensorView PrefillArgs::*member) {
    return [member](PrefillArgs* a, Scratch*) { (a->*member).data = nullptr; };
  };
  auto retype = [](TensorView PrefillArgs::*member, DType d) {
    return [member, d](PrefillArgs* a, Scratch* s) { a->*member = s->retype(a->*member, d); };
  };
  auto reshape = [](TensorView PrefillArgs::*member, std::vector<int64_t> shape) {
    return [member, shape](PrefillArgs* a, Scratch* s) { a->*member = s->reshape(a->*member, shape); };
  };
  // null required tensors
  r.push_back({"query null", null(&PrefillArgs::query), kNull, kQuery});
  r.push_back({"key null", null(&PrefillArgs::key), kNull, kKey});
  r.push_back({"value null", null(&PrefillArgs::value), kNull, kValue});
  r.push_back({"beta null", null(&PrefillArgs::beta), kNull, kBeta});
  r.push_back({"initialState null", null(&PrefillArgs::initial_state), kNull, kInitial});
  r.push_back({"actualSeqLengths null", null(&PrefillArgs::actual_seq_lengths), kNull, kLengths});
  r.push_back({"out null", null(&PrefillArgs::out), kNull, kOut});
  r.push_back({"finalState null", null(&PrefillArgs::final_state), kNull, kFinal});
  // dtypes
  r.push_back({"query int32", retype(&PrefillArgs::query, DType::kI32), kInvalid, kQuery});
  r.push_back({"query fp64", retype(&PrefillArgs::query, DType::kF64), kInvalid, kQuery});
  r.push_back({"key fp16 vs query bf16", retype(&PrefillArgs::key, DType::kF16), kInvalid, kKey});
  r.push_back({"value fp32 vs query bf16", retype(&PrefillArgs::value, DType::kF32), kInvalid, kValue});
  r.push_back({"beta fp32 vs query bf16", retype(&PrefillArgs::beta, DType::kF32), kInvalid, kBeta});
  r.push_back({"out fp16 vs query bf16", retype(&PrefillArgs::out, DType::kF16), kInvalid, kOut});
  r.push_back({"initialState/finalState fp16",
               [](PrefillArgs* a, Scratch* s) {
                 a->initial_state = s->retype(a->initial_state, DType::kF16);
                 a->final_state = s->retype(a->final_state, DType::kF16);
               },
               kInvalid, {"initialState", "initial_state", "finalState", "final_state"}});
  r.push_back({"finalState bf16 vs initialState fp32", retype(&PrefillArgs::final_state, DType::kBF16), kInvalid,
               kFinal});
  r.push_back({"actualSeqLengths int64", retype(&PrefillArgs::actual_seq_lengths, DType::kI64), kInvalid, kLengths});
  r.push_back({"g bf16", retype(&PrefillArgs::g, DType::kBF16), kInvalid, kG});
  // shapes and constraints
  r.push_back({"query 2-D", reshape(&PrefillArgs::query, {T, Nk * Dk}), kTiling, kQuery});
  r.push_back({"key Dk differs", reshape(&PrefillArgs::key, {T, Nk, Dk + 1}), kTiling, kKey});
  r.push_back({"key Nk differs", reshape(&PrefillArgs::key, {T, 1, Dk}), kTiling, kKey});
  r.push_back({"value T differs", reshape(&PrefillArgs::value, {T + 1, Nv, Dv}), kTiling, kValue});
  r.push_back({"beta (T, Nv + 1)", reshape(&PrefillArgs::beta, {T, Nv + 1}), kTiling, kBeta});
  r.push_back({"beta 3-D", reshape(&PrefillArgs::beta, {T, Nv, 1}), kTiling, kBeta});
  r.push_back({"out Dv differs", reshape(&PrefillArgs::out, {T, Nv, Dv + 1}), kTiling, kOut});
  r.push_back({"g (T, Nv + 1)", reshape(&PrefillArgs::g, {T, Nv + 1}), kTiling, kG});
  r.push_back({"initialState B + 1", reshape(&PrefillArgs::initial_state, {B + 1, Nv, Dv, Dk}), kTiling,
               {"initialState", "initial_state", "actualSeqLengths", "actual_seq_lengths"}});
  r.push_back({"initialState (B, Nv, Dk, Dv)", reshape(&PrefillArgs::initial_state, {B, Nv, Dk, Dv}), kTiling,
               kInitial});
  r.push_back({"finalState Nv + 1", reshape(&PrefillArgs::final_state, {B, Nv + 1, Dv, Dk}), kTiling, kFinal});
  r.push_back({"actualSeqLengths 2-D", reshape(&PrefillArgs::actual_seq_lengths, {B, 1}), kTiling, kLengths});
  r.push_back({"Nv % Nk != 0 (Nk = 3, Nv = 4)",
               [=](PrefillArgs* a, Scratch* s) {
                 a->query = s->reshape(a->query, {T, 3, Dk});
                 a->key = s->reshape(a->key, {T, 3, Dk});
               },
               kTiling, kHeads});
  r.push_back({"Dk = 257",
               [=](PrefillArgs* a, Scratch* s) {
                 a->query = s->make(DType::kBF16, {T, Nk, 257});
                 a->key = s->make(DType::kBF16, {T, Nk, 257});
                 a->initial_state = s->make(DType::kF32, {B, Nv, Dv, 257});
                 a->final_state = s->make(DType::kF32, {B, Nv, Dv, 257});
               },
               kTiling, {"query", "key", "initialState", "initial_state"}});
  r.push_back({"Dv = 257",
               [=](PrefillArgs* a, Scratch* s) {
                 a->value = s->make(DType::kBF16, {T, Nv, 257});
                 a->out = s->make(DType::kBF16, {T, Nv, 257});
                 a->initial_state = s->make(DType::kF32, {B, Nv, 257, Dk});
                 a->final_state = s->make(DType::kF32, {B, Nv, 257, Dk});
               },
               kTiling, {"value", "out", "initialState", "initial_state"}});
  r.push_back({"T = 0",
               [=](PrefillArgs* a, Scratch* s) {
                 a->query = s->make(DType::kBF16, {0, Nk, Dk});
                 a->key = s->make(DType::kBF16, {0, Nk, Dk});
                 a->value = s->make(DType::kBF16, {0, Nv, Dv});
                 a->out = s->make(DType::kBF16, {0, Nv, Dv});
                 a->beta = s->make(DType::kBF16, {0, Nv});
                 a->g = s->make(DType::kF32, {0, Nv});
                 a->actual_seq_lengths = s->make(DType::kI32, {B});  // zeros: sum = 0 = T
               },
               kTiling, {"query", "key", "value"}});
  r.push_back({"B = 0",
               [=](PrefillArgs* a, Scratch* s) {
                 a->actual_seq_lengths = s->make(DType::kI32, {0});
                 a->initial_state = s->make(DType::kF32, {0, Nv, Dv, Dk});
                 a->final_state = s->make(DType::kF32, {0, Nv, Dv, Dk});
               },
               kTiling, {"actualSeqLengths", "actual_seq_lengths", "initialState", "initial_state"}});
  // host-visible sequence lengths
  r.push_back({"sum of lengths 4 != T 5",
               [](PrefillArgs* a, Scratch*) { static_cast<int32_t*>(a->actual_seq_lengths.data)[1] = 1; }, kInvalid,
               kLengths});
  r.push_back({"negative length (-1, 6)",
               [](PrefillArgs* a, Scratch*) {
                 static_cast<int32_t*>(a->actual_seq_lengths.data)[0] = -1;
                 static_cast<int32_t*>(a->actual_seq_lengths.data)[1] = 6;
               },
               kInvalid, kLengths});
  return r;
}

TEST(GdrValidation, PrefillBaseCaseIsAccepted) {
  PrefillProblem p(base_prefill());
  const txops::Status st = call_cpp(prefill_args(&p));
  EXPECT_TRUE(st.ok()) << st.message();
  const AclnnOutcome outcome = call_aclnn(prefill_args(&p));
  EXPECT_EQ(outcome.status, 0) << outcome.message;
}

TEST(GdrValidation, PrefillRules) {
  for (const PrefillRule& rule : prefill_rules()) {
    PrefillProblem p(base_prefill());
    PrefillArgs args = prefill_args(&p);
    Scratch scratch;
    rule.mutate(&args, &scratch);
    expect_rejected(rule, args, "txops::chunk_gated_delta_rule: ", "aclnnChunkGatedDeltaRule: ");
  }
}

// int32 lengths whose sum wraps around to T in 32-bit arithmetic: 2 * (2^31 - 1) + 7 = 2^32 + 5.
TEST(GdrValidation, PrefillLengthSumOverflowIsRejected) {
  PrefillConfig c = base_prefill();
  c.lengths = {3, 1, 1};
  PrefillProblem p(c);
  p.lengths.ints()[0] = 2147483647;
  p.lengths.ints()[1] = 2147483647;
  p.lengths.ints()[2] = 7;
  const PrefillRule rule{"lengths summing to T modulo 2^32", nullptr, kInvalid, kLengths};
  expect_rejected(rule, prefill_args(&p), "txops::chunk_gated_delta_rule: ", "aclnnChunkGatedDeltaRule: ");
}

// CANN's narrower limits under TXOPS_COMPAT=cann; the same calls pass in txops mode.
TEST(GdrValidation, PrefillCompatCannLimits) {
  struct Case { const char* what; PrefillConfig config; StatusCode code; std::vector<std::string> params; };
  std::vector<Case> cases;
  PrefillConfig c = base_prefill();
  c.act = DType::kF16;
  cases.push_back({"fp16 activations", c, kInvalid, {"query", "key", "value", "beta", "out"}});
  c.act = DType::kF32;
  cases.push_back({"fp32 activations", c, kInvalid, {"query", "key", "value", "beta", "out"}});
  c = base_prefill();
  c.dk = 192;
  cases.push_back({"Dk = 192", c, kTiling, {"query", "key"}});
  c = base_prefill();
  c.dv = 136;
  cases.push_back({"Dv = 136", c, kTiling, {"value"}});
  c = base_prefill();
  c.nk = 1, c.nv = 72, c.dk = 2, c.dv = 2;
  cases.push_back({"Nv = 72", c, kTiling, {"value", "beta"}});
  c.nk = 65, c.nv = 65;
  cases.push_back({"Nk = Nv = 65", c, kTiling, {"query", "key", "value", "beta"}});
  for (const Case& k : cases) {
    SCOPED_TRACE(k.config.describe());
    {
      ScopedCompat cann(txops::Compat::kCann);
      PrefillProblem p(k.config);
      expect_rejected(PrefillRule{k.what, nullptr, k.code, k.params}, prefill_args(&p),
                      "txops::chunk_gated_delta_rule: ", "aclnnChunkGatedDeltaRule: ");
    }
    ScopedCompat txops_mode(txops::Compat::kTxops);
    PrefillProblem p(k.config);
    const txops::Status st = p.run();
    EXPECT_TRUE(st.ok()) << "txops mode must accept " << k.what << ": " << st.message();
  }
  // What CANN accepts stays accepted in cann mode: bf16, Dk = Dv = 128, Nk = Nv = 64, bf16 or fp32 state.
  ScopedCompat cann(txops::Compat::kCann);
  for (DType state : {DType::kBF16, DType::kF32}) {
    c = base_prefill();
    c.dk = 128, c.dv = 128, c.state = state;
    PrefillProblem p(c);
    EXPECT_TRUE(p.run().ok()) << c.describe();
  }
  c = base_prefill();
  c.nk = 64, c.nv = 64, c.dk = 2, c.dv = 2;
  PrefillProblem p(c);
  EXPECT_TRUE(p.run().ok()) << c.describe();
}

// ---- decode -----------------------------------------------------------------------------------------------------
// T = 3 (lengths 2, 1), 4 slots, indices {0, 3, 1}, accepted {2, 1}, Nk = 2, Nv = 4, Dk = 4, Dv = 6, g and gk.
DecodeConfig base_decode() {
  DecodeConfig c;
  c.lengths = {2, 1};
  c.state_indices = {0, 3, 1};
  c.accepted = {2, 1};
  c.num_slots = 4;
  c.nk = 2, c.nv = 4, c.dk = 4, c.dv = 6;
  c.with_gk = true;
  return c;
}

using DecodeRule = Rule<DecodeArgs>;
const std::vector<std::string> kState = {"stateRef", "state"},
                               kIndices = {"ssmStateIndices", "ssm_state_indices"},
                               kAccepted = {"numAcceptedTokens", "num_accepted_tokens"}, kGk = {"gk"};

std::vector<DecodeRule> decode_rules() {
  const int64_t T = 3, B = 2, S = 4, Nk = 2, Nv = 4, Dk = 4, Dv = 6;
  std::vector<DecodeRule> r;
  auto null = [](TensorView DecodeArgs::*member) {
    return [member](DecodeArgs* a, Scratch*) { (a->*member).data = nullptr; };
  };
  auto retype = [](TensorView DecodeArgs::*member, DType d) {
    return [member, d](DecodeArgs* a, Scratch* s) { a->*member = s->retype(a->*member, d); };
  };
  auto reshape = [](TensorView DecodeArgs::*member, std::vector<int64_t> shape) {
    return [member, shape](DecodeArgs* a, Scratch* s) { a->*member = s->reshape(a->*member, shape); };
  };
  auto set_int = [](TensorView DecodeArgs::*member, int64_t index, int32_t value) {
    return [member, index, value](DecodeArgs* a, Scratch*) { static_cast<int32_t*>((a->*member).data)[index] = value; };
  };
  r.push_back({"query null", null(&DecodeArgs::query), kNull, kQuery});
  r.push_back({"key null", null(&DecodeArgs::key), kNull, kKey});
  r.push_back({"value null", null(&DecodeArgs::value), kNull, kValue});
  r.push_back({"beta null", null(&DecodeArgs::beta), kNull, kBeta});
  r.push_back({"stateRef null", null(&DecodeArgs::state), kNull, kState});
  r.push_back({"actualSeqLengths null", null(&DecodeArgs::actual_seq_lengths), kNull, kLengths});
  r.push_back({"ssmStateIndices null", null(&DecodeArgs::ssm_state_indices), kNull, kIndices});
  r.push_back({"out null", null(&DecodeArgs::out), kNull, kOut});
  r.push_back({"query int32", retype(&DecodeArgs::query, DType::kI32), kInvalid, kQuery});
  r.push_back({"key fp16 vs query bf16", retype(&DecodeArgs::key, DType::kF16), kInvalid, kKey});
  r.push_back({"value fp32 vs query bf16", retype(&DecodeArgs::value, DType::kF32), kInvalid, kValue});
  r.push_back({"beta fp16 vs query bf16", retype(&DecodeArgs::beta, DType::kF16), kInvalid, kBeta});
  r.push_back({"out fp32 vs query bf16", retype(&DecodeArgs::out, DType::kF32), kInvalid, kOut});
  r.push_back({"stateRef fp16", retype(&DecodeArgs::state, DType::kF16), kInvalid, kState});
  r.push_back({"g bf16", retype(&DecodeArgs::g, DType::kBF16), kInvalid, kG});
  r.push_back({"gk bf16", retype(&DecodeArgs::gk, DType::kBF16), kInvalid, kGk});
  r.push_back({"actualSeqLengths int64", retype(&DecodeArgs::actual_seq_lengths, DType::kI64), kInvalid, kLengths});
  r.push_back({"ssmStateIndices int64", retype(&DecodeArgs::ssm_state_indices, DType::kI64), kInvalid, kIndices});
  r.push_back({"numAcceptedTokens int64", retype(&DecodeArgs::num_accepted_tokens, DType::kI64), kInvalid,
               kAccepted});
  r.push_back({"query 2-D", reshape(&DecodeArgs::query, {T, Nk * Dk}), kInvalid, kQuery});
  r.push_back({"key Dk differs", reshape(&DecodeArgs::key, {T, Nk, Dk + 1}), kInvalid, kKey});
  r.push_back({"value T differs", reshape(&DecodeArgs::value, {T + 1, Nv, Dv}), kInvalid, kValue});
  r.push_back({"beta (T, Nv + 1)", reshape(&DecodeArgs::beta, {T, Nv + 1}), kInvalid, kBeta});
  r.push_back({"out Dv differs", reshape(&DecodeArgs::out, {T, Nv, Dv + 1}), kInvalid, kOut});
  r.push_back({"stateRef Dk differs", reshape(&DecodeArgs::state, {S, Nv, Dv, Dk + 1}), kInvalid, kState});
  r.push_back({"stateRef Nv differs", reshape(&DecodeArgs::state, {S, Nv + 1, Dv, Dk}), kInvalid, kState});
  r.push_back({"g (T, Nv + 1)", reshape(&DecodeArgs::g, {T, Nv + 1}), kInvalid, kG});
  r.push_back({"gk (T, Nv, Dk + 1)", reshape(&DecodeArgs::gk, {T, Nv, Dk + 1}), kInvalid, kGk});
  r.push_back({"ssmStateIndices (T + 1)", reshape(&DecodeArgs::ssm_state_indices, {T + 1}), kInvalid, kIndices});
  r.push_back({"numAcceptedTokens (B + 1)", reshape(&DecodeArgs::num_accepted_tokens, {B + 1}), kInvalid,
               kAccepted});
  r.push_back({"Nv % Nk != 0 (Nk = 3, Nv = 4)",
               [=](DecodeArgs* a, Scratch* s) {
                 a->query = s->reshape(a->query, {T, 3, Dk});
                 a->key = s->reshape(a->key, {T, 3, Dk});
               },
               kInvalid, kHeads});
  r.push_back({"Dk = 513",
               [=](DecodeArgs* a, Scratch* s) {
                 a->query = s->make(DType::kBF16, {T, Nk, 513});
                 a->key = s->make(DType::kBF16, {T, Nk, 513});
                 a->gk = s->make(DType::kF32, {T, Nv, 513});
                 a->state = s->make(DType::kF32, {S, Nv, Dv, 513});
               },
               kInvalid, {"query", "key", "stateRef", "state"}});
  r.push_back({"ssmStateIndices -1", set_int(&DecodeArgs::ssm_state_indices, 1, -1), kInvalid, kIndices});
  r.push_back({"ssmStateIndices == BlockNum", set_int(&DecodeArgs::ssm_state_indices, 2, 4), kInvalid, kIndices});
  r.push_back({"numAcceptedTokens 0", set_int(&DecodeArgs::num_accepted_tokens, 1, 0), kInvalid, kAccepted});
  r.push_back({"numAcceptedTokens 3 > L 2", set_int(&DecodeArgs::num_accepted_tokens, 0, 3), kInvalid, kAccepted});
  r.push_back({"sum of lengths 2 != T 3", set_int(&DecodeArgs::actual_seq_lengths, 0, 1), kInvalid, kLengths});
  return r;
}

TEST(GdrValidation, DecodeBaseCaseIsAccepted) {
  DecodeProblem p(base_decode());
  const txops::Status st = call_cpp(decode_args(&p));
  EXPECT_TRUE(st.ok()) << st.message();
  const AclnnOutcome outcome = call_aclnn(decode_args(&p));
  EXPECT_EQ(outcome.status, 0) << outcome.message;
}

TEST(GdrValidation, DecodeRules) {
  for (const DecodeRule& rule : decode_rules()) {
    DecodeProblem p(base_decode());
    DecodeArgs args = decode_args(&p);
    Scratch scratch;
    rule.mutate(&args, &scratch);
    expect_rejected(rule, args, "txops::recurrent_gated_delta_rule: ", "aclnnRecurrentGatedDeltaRule: ");
  }
}

TEST(GdrValidation, DecodeCompatCannLimits) {
  ScopedCompat cann(txops::Compat::kCann);
  DecodeConfig c = base_decode();
  c.act = DType::kF16;
  DecodeProblem fp16(c);
  expect_rejected(DecodeRule{"fp16 activations in cann mode", nullptr, kInvalid,
                             {"query", "key", "value", "beta", "out"}},
                  decode_args(&fp16), "txops::recurrent_gated_delta_rule: ", "aclnnRecurrentGatedDeltaRule: ");
  c = base_decode();
  c.lengths = {9};
  c.state_indices = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  c.accepted = {};
  c.num_slots = 9;
  DecodeProblem long_sequence(c);
  expect_rejected(DecodeRule{"L = 9 > 8 in cann mode", nullptr, kInvalid, kLengths}, decode_args(&long_sequence),
                  "txops::recurrent_gated_delta_rule: ", "aclnnRecurrentGatedDeltaRule: ");
  c = base_decode();  // T = 3 > BlockNum = 2 (txops allows it: the indices are checked instead)
  c.num_slots = 2;
  c.state_indices = {0, 1, 0};
  c.accepted = {};
  c.lengths = {1, 2};
  DecodeProblem few_slots(c);
  expect_rejected(DecodeRule{"T 3 > BlockNum 2 in cann mode", nullptr, kInvalid, {"query", "stateRef"}},
                  decode_args(&few_slots), "txops::recurrent_gated_delta_rule: ", "aclnnRecurrentGatedDeltaRule: ");
  c = base_decode();  // an empty sequence (txops allows it)
  c.lengths = {0, 3};
  c.accepted = {};
  DecodeProblem empty_sequence(c);
  expect_rejected(DecodeRule{"L = 0 in cann mode", nullptr, kInvalid, kLengths}, decode_args(&empty_sequence),
                  "txops::recurrent_gated_delta_rule: ", "aclnnRecurrentGatedDeltaRule: ");
  c = base_decode();
  c.nk = 1, c.nv = 257, c.dk = 2, c.dv = 2;
  DecodeProblem many_heads(c);
  expect_rejected(DecodeRule{"Nv = 257 > 256 in cann mode", nullptr, kInvalid, {"value", "beta", "stateRef", "state"}},
                  decode_args(&many_heads), "txops::recurrent_gated_delta_rule: ", "aclnnRecurrentGatedDeltaRule: ");
  c = base_decode();  // CANN's own head-dim limit is accepted: Dk = Dv = 512 (fp32 state pool: 8 MiB)
  c.nk = 1, c.nv = 2, c.dk = 512, c.dv = 512;
  DecodeProblem widest(c);
  const txops::Status st = widest.run();
  EXPECT_TRUE(st.ok()) << c.describe() << ": " << st.message();
}

// ---- aclnn-only rules ----------------------------------------------------------------------------------------------
TEST(GdrValidation, AclnnFormatAndOutParams) {
  PrefillProblem p(base_prefill());
  const PrefillArgs a = prefill_args(&p);
  AclTensor q_nz(a.query, ACL_FORMAT_FRACTAL_NZ);
  AclTensor q(a.query), k(a.key), v(a.value), beta(a.beta), s0(a.initial_state), lens(a.actual_seq_lengths),
      g(a.g), out(a.out), s1(a.final_state);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(aclnnChunkGatedDeltaRuleGetWorkspaceSize(q_nz.get(), k.get(), v.get(), beta.get(), s0.get(), lens.get(),
                                                     g.get(), a.scale, out.get(), s1.get(), &size, &executor),
            161002);
  EXPECT_TRUE(names_parameter(aclGetRecentErrMsg(), "query")) << aclGetRecentErrMsg();
  EXPECT_EQ(aclnnChunkGatedDeltaRuleGetWorkspaceSize(q.get(), k.get(), v.get(), beta.get(), s0.get(), lens.get(),
                                                     g.get(), a.scale, out.get(), s1.get(), nullptr, &executor),
            161001);
  EXPECT_EQ(aclnnChunkGatedDeltaRuleGetWorkspaceSize(q.get(), k.get(), v.get(), beta.get(), s0.get(), lens.get(),
                                                     g.get(), a.scale, out.get(), s1.get(), &size, nullptr),
            161001);

  DecodeProblem d(base_decode());
  const DecodeArgs da = decode_args(&d);
  AclTensor dq(da.query), dk(da.key), dv(da.value), db(da.beta), state_nz(da.state, ACL_FORMAT_NCHW),
      dl(da.actual_seq_lengths), di(da.ssm_state_indices), dg(da.g), dgk(da.gk), dacc(da.num_accepted_tokens),
      dout(da.out);
  EXPECT_EQ(aclnnRecurrentGatedDeltaRuleGetWorkspaceSize(dq.get(), dk.get(), dv.get(), db.get(), state_nz.get(),
                                                         dl.get(), di.get(), dg.get(), dgk.get(), dacc.get(),
                                                         da.scale, dout.get(), &size, &executor),
            161002);
  EXPECT_TRUE(names_parameter(aclGetRecentErrMsg(), "stateRef")) << aclGetRecentErrMsg();
}

}  // namespace
}  // namespace gdrtest
