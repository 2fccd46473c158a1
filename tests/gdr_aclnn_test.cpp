// gdr_aclnn_test.cpp — the aclnn two-phase path of both gated-delta-rule ops: aclCreateTensor (including an
// offset, padded view), GetWorkspaceSize, a workspace of exactly the size asked for, run; results equal the
// C++ API's bytes and match the fp64 oracle; a workspace one byte short is refused with 161002; the prefill's
// pipeline mode on three threads, forced and the planner's (run under ThreadSanitizer).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "aclnnop/aclnn_chunk_gated_delta_rule.h"
#include "support/gdr_calls.h"
#include "support/gdr_layouts.h"

namespace gdrtest {
namespace {

using txops::DType;

PrefillConfig prefill_config(int64_t dk, int64_t dv, std::vector<int32_t> lengths) {
  PrefillConfig c;
  c.lengths = std::move(lengths);
  c.nk = 2, c.nv = 4, c.dk = dk, c.dv = dv;
  return c;
}

DecodeConfig decode_config(int64_t dk, int64_t dv) {
  DecodeConfig c;
  c.lengths = {1, 3, 2};
  c.state_indices = {3, 0, 1, 2, 5, 6};
  c.accepted = {1, 2, 1};
  c.num_slots = 8;
  c.nk = 2, c.nv = 4, c.dk = dk, c.dv = dv;
  c.with_gk = true;
  return c;
}

TEST(GdrAclnn, PrefillTwoPhaseMatchesCppApiAndOracle) {
  for (const PrefillConfig& c : {prefill_config(64, 48, {130, 0, 7}), prefill_config(128, 128, {256})}) {
    SCOPED_TRACE(c.describe());
    PrefillProblem p(c);
    std::vector<double> out_ref, state_ref;
    p.reference(&out_ref, &state_ref);
    const AclnnOutcome outcome = call_aclnn(prefill_args(&p));
    ASSERT_EQ(outcome.status, 0) << outcome.message;
    std::printf("  [info] aclnnChunkGatedDeltaRule workspace for %s: %llu bytes\n", c.describe().c_str(),
                static_cast<unsigned long long>(outcome.workspace_size));
    EXPECT_TRUE(matches_reference("gdr_out", p.out.view(), out_ref, "aclnn out", nullptr));
    EXPECT_TRUE(matches_reference("gdr_state", p.final_state.view(), state_ref, "aclnn finalState", nullptr));
    const std::vector<uint8_t> out_aclnn = p.out.bytes, state_aclnn = p.final_state.bytes;
    ASSERT_TRUE(p.run().ok());
    EXPECT_TRUE(p.out.bytes == out_aclnn) << "aclnn and C++ API outputs differ";
    EXPECT_TRUE(p.final_state.bytes == state_aclnn) << "aclnn and C++ API final states differ";
  }
}

// Pipeline mode (the column blocks of one head hand phase one's records to each other through atomic counters) on
// three threads, through the two-phase path: the oracle's result and the 1-thread bits. This binary runs under
// ThreadSanitizer (Makefile, test-tsan), which checks the hand-over.
TEST(GdrAclnn, PrefillPipelineModeOnThreeThreads) {
  PrefillConfig c = prefill_config(64, 96, {7 * 64 + 5});
  c.nk = 1, c.nv = 1;
  PrefillProblem p(c);
  std::vector<double> out_ref, state_ref;
  p.reference(&out_ref, &state_ref);
  PrefillKernelScope kernel("chunked");
  std::vector<uint8_t> out_one, state_one;
  {
    ScopedThreads one(1);
    ASSERT_TRUE(p.run().ok());
    out_one = p.out.bytes, state_one = p.final_state.bytes;
  }
  ScopedEnv split("TXOPS_GDR_SPLIT", "pipeline");
  ScopedThreads three(3);
  const std::string log = verbose_log(p);
  EXPECT_NE(log.find("mode=pipeline(3 column blocks)"), std::string::npos) << log;
  std::fill(p.out.bytes.begin(), p.out.bytes.end(), 0xCD);
  const AclnnOutcome outcome = call_aclnn(prefill_args(&p));
  ASSERT_EQ(outcome.status, 0) << outcome.message;
  EXPECT_TRUE(matches_reference("gdr_out", p.out.view(), out_ref, "pipeline out", nullptr));
  EXPECT_TRUE(matches_reference("gdr_state", p.final_state.view(), state_ref, "pipeline finalState", nullptr));
  EXPECT_TRUE(p.out.bytes == out_one) << "pipeline mode on 3 threads differs from 1 thread";
  EXPECT_TRUE(p.final_state.bytes == state_one) << "pipeline mode's final state differs from 1 thread";
  // The planner's own pipeline mode first measures how far apart the cores of units 0 and 1 are (unit 2 waits for
  // the verdict): near, the hand-over above; far, column mode. The same bits both ways.
  ScopedEnv planner("TXOPS_GDR_SPLIT", nullptr);
  for (const char* near_ns : {"1e9", "1e-9"}) {
    SCOPED_TRACE(std::string("TXOPS_GDR_NEAR_NS=") + near_ns);
    ScopedEnv near("TXOPS_GDR_NEAR_NS", near_ns);
    const std::string planned = verbose_log(p);
    EXPECT_NE(planned.find("mode=pipeline(3 column blocks)"), std::string::npos) << planned;
    std::fill(p.out.bytes.begin(), p.out.bytes.end(), 0xCD);
    const AclnnOutcome run = call_aclnn(prefill_args(&p));
    ASSERT_EQ(run.status, 0) << run.message;
    EXPECT_TRUE(p.out.bytes == out_one) << "the planner's pipeline mode differs from 1 thread";
    EXPECT_TRUE(p.final_state.bytes == state_one) << "the planner's pipeline mode: final state differs";
  }
}

TEST(GdrAclnn, DecodeTwoPhaseMatchesCppApiAndOracle) {
  for (const DecodeConfig& c : {decode_config(16, 24), decode_config(128, 128)}) {
    SCOPED_TRACE(c.describe());
    DecodeProblem p(c);
    std::vector<double> out_ref, pool_ref;
    p.reference(&out_ref, &pool_ref);
    p.pool = p.pool_before;
    const AclnnOutcome outcome = call_aclnn(decode_args(&p));
    ASSERT_EQ(outcome.status, 0) << outcome.message;
    std::printf("  [info] aclnnRecurrentGatedDeltaRule workspace for %s: %llu bytes\n", c.describe().c_str(),
                static_cast<unsigned long long>(outcome.workspace_size));
    EXPECT_TRUE(matches_reference("gdr_out", p.out.view(), out_ref, "aclnn decode out", nullptr));
    EXPECT_TRUE(matches_reference("gdr_state", p.pool.view(), pool_ref, "aclnn stateRef", nullptr));
    const std::vector<uint8_t> out_aclnn = p.out.bytes, pool_aclnn = p.pool.bytes;
    ASSERT_TRUE(p.run().ok());
    EXPECT_TRUE(p.out.bytes == out_aclnn) << "aclnn and C++ API outputs differ";
    EXPECT_TRUE(p.pool.bytes == pool_aclnn) << "aclnn and C++ API pools differ";
  }
}

// A workspace one byte short of what phase one asked for is refused (and the op writes nothing).
TEST(GdrAclnn, WorkspaceTooSmallIsRefused) {
  int checked = 0;
  for (const PrefillConfig& c : {prefill_config(64, 48, {130, 0, 7}), prefill_config(128, 128, {256})}) {
    PrefillProblem p(c);
    const AclnnOutcome full = call_aclnn(prefill_args(&p));
    ASSERT_EQ(full.status, 0) << full.message;
    if (full.workspace_size == 0) continue;
    std::fill(p.out.bytes.begin(), p.out.bytes.end(), 0);
    const AclnnOutcome short_by_one = call_aclnn(prefill_args(&p), 1);
    EXPECT_EQ(short_by_one.status, 161002) << c.describe();
    EXPECT_EQ(short_by_one.message.rfind("aclnnChunkGatedDeltaRule: ", 0), 0u) << short_by_one.message;
    EXPECT_TRUE(names_parameter(short_by_one.message, "workspaceSize")) << short_by_one.message;
    ++checked;
  }
  for (const DecodeConfig& c : {decode_config(16, 24), decode_config(128, 128)}) {
    DecodeProblem p(c);
    p.pool = p.pool_before;
    const AclnnOutcome full = call_aclnn(decode_args(&p));
    ASSERT_EQ(full.status, 0) << full.message;
    if (full.workspace_size == 0) continue;
    const AclnnOutcome short_by_one = call_aclnn(decode_args(&p), 1);
    EXPECT_EQ(short_by_one.status, 161002) << c.describe();
    EXPECT_EQ(short_by_one.message.rfind("aclnnRecurrentGatedDeltaRule: ", 0), 0u) << short_by_one.message;
    ++checked;
  }
  std::printf("  [info] %d of 4 shapes asked for a workspace (the others need none, so cannot be short)\n", checked);
}

// aclCreateTensor with an offset and padded strides: the op reads and writes only the view's elements.
TEST(GdrAclnn, OffsetAndPaddedTensors) {
  PrefillProblem p(prefill_config(32, 16, {70, 5}));
  std::vector<double> out_ref, state_ref;
  p.reference(&out_ref, &state_ref);
  PaddedTensor q(p.q, 2, 7), k(p.k, 1, 1), v(p.v, 3, 2), out(p.out, 4, 9), s1(p.final_state, 1, 3);
  PrefillArgs a = prefill_args(&p);
  a.query = q.view, a.key = k.view, a.value = v.view, a.out = out.view, a.final_state = s1.view;
  // Through aclCreateTensor: the storage starts `offset` elements before the view.
  auto acl_with_offset = [](const PaddedTensor& t) {
    const size_t elem = txops::dtype_size(t.view.dtype);
    const int64_t storage_elems = static_cast<int64_t>(t.storage.size() / elem);
    return aclCreateTensor(t.view.shape, static_cast<uint64_t>(t.view.ndim), static_cast<aclDataType>(t.view.dtype),
                           t.view.strides, t.offset, ACL_FORMAT_ND, &storage_elems, 1,
                           const_cast<uint8_t*>(t.storage.data()));
  };
  aclTensor *tq = acl_with_offset(q), *tk = acl_with_offset(k), *tv = acl_with_offset(v),
            *tout = acl_with_offset(out), *ts1 = acl_with_offset(s1);
  AclTensor beta(a.beta), s0(a.initial_state), lengths(a.actual_seq_lengths), g(a.g);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(aclnnChunkGatedDeltaRuleGetWorkspaceSize(tq, tk, tv, beta.get(), s0.get(), lengths.get(), g.get(),
                                                     a.scale, tout, ts1, &size, &executor),
            0)
      << aclGetRecentErrMsg();
  std::vector<uint8_t> workspace(size);
  EXPECT_EQ(aclnnChunkGatedDeltaRule(size ? workspace.data() : nullptr, size, executor, nullptr), 0)
      << aclGetRecentErrMsg();
  EXPECT_TRUE(matches_reference("gdr_out", out.view, out_ref, "offset out", nullptr));
  EXPECT_TRUE(matches_reference("gdr_state", s1.view, state_ref, "offset finalState", nullptr));
  EXPECT_TRUE(out.outside_untouched());
  EXPECT_TRUE(s1.outside_untouched());
  for (aclTensor* t : {tq, tk, tv, tout, ts1}) aclDestroyTensor(t);
}

}  // namespace
}  // namespace gdrtest
