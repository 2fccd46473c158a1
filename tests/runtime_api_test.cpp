// runtime_api_test.cpp — the CANN runtime a real program uses, beyond runtime_test: repeatable executors
// (aclSetAclOpExecutorRepeatable / aclDestroyAclOpExecutor, run many times on data changed in place, one run at
// a time), events, aclrtMemcpyAsync / aclrtMemsetAsync, aclrtGetMemInfo, aclrtGetSocName, host-memory misuse,
// and the object API (aclScalar, aclFloatArray, aclBoolArray, aclTensorList, aclScalarList) with its live-object
// registry. Every misuse returns CANN's error code and a message, never a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_inplace_partial_rotary_mul.h"
#include "aclnnop/aclnn_interleave_rope.h"
#include "core/executor.h"
#include "core/status.h"

namespace {

std::string last_error() { return aclGetRecentErrMsg(); }

bool mentions(const std::string& text) { return last_error().find(text) != std::string::npos; }

aclTensor* make_f32(std::vector<float>* data, const std::vector<int64_t>& dims) {
  return aclCreateTensor(dims.data(), dims.size(), ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims.data(), dims.size(),
                         data->data());
}

void fill(std::mt19937* rng, std::vector<float>* v) {
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (float& x : *v) x = dist(*rng);
}

// ---- repeatable executors ----

// InterleaveRope x (2, 3, 4, 32) fp32, cos/sin (1, 1, 4, 32): one repeatable executor run three times, x
// rewritten in place before each run; each result equals a fresh (non-repeatable) call on the same x, bit for bit.
TEST(RepeatableExecutor, InterleaveRopeRunsThreeTimesOnDataChangedInPlace) {
  std::mt19937 rng(11);
  const std::vector<int64_t> x_dims = {2, 3, 4, 32}, cs_dims = {1, 1, 4, 32};
  std::vector<float> x(2 * 3 * 4 * 32), cos(4 * 32), sin(4 * 32), out(x.size()), fresh(x.size());
  fill(&rng, &cos);
  fill(&rng, &sin);
  aclTensor* xt = make_f32(&x, x_dims);
  aclTensor* ct = make_f32(&cos, cs_dims);
  aclTensor* st = make_f32(&sin, cs_dims);
  aclTensor* ot = make_f32(&out, x_dims);
  aclTensor* ft = make_f32(&fresh, x_dims);
  ASSERT_TRUE(xt && ct && st && ot && ft) << last_error();

  uint64_t ws = 0;
  aclOpExecutor* rep = nullptr;
  ASSERT_EQ(aclnnInterleaveRopeGetWorkspaceSize(xt, ct, st, ot, &ws, &rep), ACLNN_SUCCESS) << last_error();
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(rep), ACLNN_SUCCESS) << last_error();
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(rep), ACLNN_SUCCESS);  // again before any run: still fine
  std::vector<uint8_t> workspace(ws + 64);

  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  for (int run = 0; run < 3; ++run) {
    fill(&rng, &x);  // in place: same buffer the executor's tensors point at
    ASSERT_EQ(aclnnInterleaveRope(workspace.data(), ws, rep, stream), ACLNN_SUCCESS) << "run " << run << ": "
                                                                                    << last_error();
    uint64_t ws2 = 0;
    aclOpExecutor* once = nullptr;
    ASSERT_EQ(aclnnInterleaveRopeGetWorkspaceSize(xt, ct, st, ft, &ws2, &once), ACLNN_SUCCESS) << last_error();
    std::vector<uint8_t> workspace2(ws2 + 64);
    ASSERT_EQ(aclnnInterleaveRope(workspace2.data(), ws2, once, stream), ACLNN_SUCCESS) << last_error();
    EXPECT_EQ(std::memcmp(out.data(), fresh.data(), out.size() * sizeof(float)), 0) << "run " << run;
    // The fresh one was consumed by its run; the repeatable one was not.
    EXPECT_EQ(aclnnInterleaveRope(workspace2.data(), ws2, once, stream), ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(aclDestroyAclOpExecutor(once), ACLNN_ERR_PARAM_INVALID);
    EXPECT_TRUE(mentions("not live")) << last_error();
  }
  // Results change with x (the executor really read the new data each time).
  const std::vector<float> third = out;
  fill(&rng, &x);
  ASSERT_EQ(aclnnInterleaveRope(workspace.data(), ws, rep, stream), ACLNN_SUCCESS);
  EXPECT_NE(std::memcmp(out.data(), third.data(), out.size() * sizeof(float)), 0);

  EXPECT_EQ(aclSetAclOpExecutorRepeatable(rep), ACLNN_ERR_PARAM_INVALID);  // after it has run
  EXPECT_TRUE(mentions("already run")) << last_error();
  if (ws > 0) {  // phase-two checks still apply to a repeatable executor
    EXPECT_EQ(aclnnInterleaveRope(workspace.data(), ws - 1, rep, stream), ACLNN_ERR_PARAM_INVALID);
  }
  EXPECT_EQ(aclnnInterleaveRope(workspace.data(), ws, rep, stream), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyAclOpExecutor(rep), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyAclOpExecutor(rep), ACLNN_ERR_PARAM_INVALID);  // twice
  EXPECT_EQ(aclnnInterleaveRope(workspace.data(), ws, rep, stream), ACLNN_ERR_PARAM_INVALID);  // after destroy
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  for (aclTensor* t : {xt, ct, st, ot, ft}) EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

TEST(RepeatableExecutor, MisuseIsAnErrorCode) {
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(nullptr), ACLNN_ERR_INNER_NULLPTR);
  EXPECT_TRUE(mentions("aclSetAclOpExecutorRepeatable")) << last_error();
  EXPECT_EQ(aclDestroyAclOpExecutor(nullptr), ACLNN_ERR_INNER_NULLPTR);
  uint64_t fake[8] = {};
  auto* never_made = reinterpret_cast<aclOpExecutor*>(fake);
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(never_made), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyAclOpExecutor(never_made), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions("aclDestroyAclOpExecutor: executor is not live")) << last_error();

  // A live executor that never ran can be destroyed (either kind); then it is gone.
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  int runs = 0;
  auto count = [&runs](void*) {
    ++runs;
    return txops::Status();
  };
  ASSERT_EQ(txops::make_executor("aclnnTest", 0, count, &ws, &ex), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
  EXPECT_EQ(txops::run_executor("aclnnTest", nullptr, 0, ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(runs, 0);
  // A non-repeatable executor is consumed by its run: destroying it afterwards is an error.
  ASSERT_EQ(txops::make_executor("aclnnTest", 0, count, &ws, &ex), ACLNN_SUCCESS);
  EXPECT_EQ(txops::run_executor("aclnnTest", nullptr, 0, ex), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(runs, 1);
  // A repeatable one whose run failed stays live and reports each failure.
  ASSERT_EQ(txops::make_executor(
                "aclnnTest", 0, [](void*) { return txops::fail(txops::StatusCode::kRuntimeError, "boom"); }, &ws, &ex),
            ACLNN_SUCCESS);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
  EXPECT_EQ(txops::run_executor("aclnnTest", nullptr, 0, ex), ACLNN_ERR_RUNTIME_ERROR);
  EXPECT_EQ(txops::run_executor("aclnnTest", nullptr, 0, ex), ACLNN_ERR_RUNTIME_ERROR);
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
}

// A run of a repeatable executor that starts while another thread is running it is refused (one stream at a
// time), and so is destroying it mid-run; after the run both work.
TEST(RepeatableExecutor, ConcurrentRunIsRefused) {
  std::promise<void> entered, release;
  std::shared_future<void> release_f = release.get_future().share();
  std::atomic<bool> first{true};
  auto blocking = [&](void*) {
    if (first.exchange(false)) {
      entered.set_value();
      release_f.wait();
    }
    return txops::Status();
  };
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(txops::make_executor("aclnnTest", 0, blocking, &ws, &ex), ACLNN_SUCCESS);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
  std::future<aclnnStatus> other =
      std::async(std::launch::async, [ex] { return txops::run_executor("aclnnTest", nullptr, 0, ex); });
  entered.get_future().wait();
  EXPECT_EQ(txops::run_executor("aclnnTest", nullptr, 0, ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions("already running")) << last_error();
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions("running")) << last_error();
  release.set_value();
  EXPECT_EQ(other.get(), ACLNN_SUCCESS);
  EXPECT_EQ(txops::run_executor("aclnnTest", nullptr, 0, ex), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
}

// Two threads hammering one repeatable executor: every call succeeds or is refused as "already running", runs
// never overlap, and the successes are exactly the runs made.
TEST(RepeatableExecutor, TwoThreadsNeverOverlap) {
  std::atomic<int> inside{0}, overlaps{0}, runs{0};
  auto body = [&](void*) {
    if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
    runs.fetch_add(1);
    std::this_thread::yield();
    inside.fetch_sub(1);
    return txops::Status();
  };
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(txops::make_executor("aclnnTest", 0, body, &ws, &ex), ACLNN_SUCCESS);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
  std::atomic<int> ok{0}, refused{0}, other{0};
  auto hammer = [&] {
    for (int i = 0; i < 2000; ++i) {
      const aclnnStatus s = txops::run_executor("aclnnTest", nullptr, 0, ex);
      (s == ACLNN_SUCCESS ? ok : s == ACLNN_ERR_PARAM_INVALID ? refused : other).fetch_add(1);
    }
  };
  std::thread a(hammer), b(hammer);
  a.join();
  b.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(ok.load(), runs.load());
  EXPECT_EQ(ok.load() + refused.load(), 4000);
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
}

// ---- events ----

TEST(Events, RecordSynchronizeAndElapsedTime) {
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  aclrtEvent start = nullptr, end = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&start), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEventWithFlag(&end, ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC), ACL_SUCCESS);
  aclrtEventRecordedStatus recorded = ACL_EVENT_RECORDED_STATUS_COMPLETE;
  EXPECT_EQ(aclrtQueryEventStatus(start, &recorded), ACL_SUCCESS);
  EXPECT_EQ(recorded, ACL_EVENT_RECORDED_STATUS_NOT_READY);  // not recorded yet
  EXPECT_EQ(aclrtSynchronizeEvent(start), ACL_SUCCESS);      // nothing to wait for

  ASSERT_EQ(aclrtRecordEvent(start, stream), ACL_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(aclrtRecordEvent(end, stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeEvent(end), ACL_SUCCESS);
  EXPECT_EQ(aclrtQueryEventStatus(end, &recorded), ACL_SUCCESS);
  EXPECT_EQ(recorded, ACL_EVENT_RECORDED_STATUS_COMPLETE);
  aclrtEventStatus status = ACL_EVENT_STATUS_NOT_READY;
  EXPECT_EQ(aclrtQueryEvent(end, &status), ACL_SUCCESS);
  EXPECT_EQ(status, ACL_EVENT_STATUS_COMPLETE);
  float ms = -1.0f;
  ASSERT_EQ(aclrtEventElapsedTime(&ms, start, end), ACL_SUCCESS);
  EXPECT_GE(ms, 19.0f);
  EXPECT_LT(ms, 10000.0f);
  EXPECT_EQ(aclrtEventElapsedTime(&ms, start, start), ACL_SUCCESS);
  EXPECT_EQ(ms, 0.0f);
  EXPECT_EQ(aclrtStreamWaitEvent(stream, start), ACL_SUCCESS);
  EXPECT_EQ(aclrtStreamWaitEvent(nullptr, start), ACL_SUCCESS);  // default stream

  // Default stream, reset, record again.
  EXPECT_EQ(aclrtRecordEvent(start, nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetEvent(end, stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtQueryEvent(end, &status), ACL_SUCCESS);
  EXPECT_EQ(status, ACL_EVENT_STATUS_NOT_READY);
  EXPECT_EQ(aclrtEventElapsedTime(&ms, start, end), ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID);
  EXPECT_TRUE(mentions("endEvent has not been recorded")) << last_error();
  EXPECT_EQ(aclrtDestroyEvent(start), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(end), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

TEST(Events, MisuseIsAnErrorCode) {
  EXPECT_EQ(aclrtCreateEvent(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtCreateEventWithFlag(nullptr, ACL_EVENT_SYNC), ACL_ERROR_INVALID_PARAM);
  aclrtEvent e = nullptr;
  EXPECT_EQ(aclrtCreateEventWithFlag(&e, 0x4u), ACL_ERROR_INVALID_PARAM);  // not a flag
  EXPECT_TRUE(mentions("0x4")) << last_error();
  aclrtEvent a = nullptr, b = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&a), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&b), ACL_SUCCESS);
  float ms = 0;
  EXPECT_EQ(aclrtEventElapsedTime(&ms, a, b), ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID);  // neither recorded
  EXPECT_TRUE(mentions("startEvent")) << last_error();
  EXPECT_EQ(aclrtEventElapsedTime(nullptr, a, b), ACL_ERROR_INVALID_PARAM);
  aclrtEventStatus status;
  aclrtEventRecordedStatus recorded;
  EXPECT_EQ(aclrtQueryEvent(a, nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtQueryEventStatus(a, nullptr), ACL_ERROR_INVALID_PARAM);
  ASSERT_EQ(aclrtRecordEvent(b, nullptr), ACL_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(aclrtRecordEvent(a, nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclrtEventElapsedTime(&ms, a, b), ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL);  // end before start

  // A destroyed stream.
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtRecordEvent(a, s), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions("aclrtRecordEvent: stream is not live")) << last_error();
  EXPECT_EQ(aclrtResetEvent(a, s), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtStreamWaitEvent(s, a), ACL_ERROR_INVALID_PARAM);

  // A destroyed event, everywhere; and a foreign pointer.
  ASSERT_EQ(aclrtDestroyEvent(a), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(a), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions("aclrtDestroyEvent: event is not a live event")) << last_error();
  EXPECT_EQ(aclrtRecordEvent(a, nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtResetEvent(a, nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtQueryEvent(a, &status), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtQueryEventStatus(a, &recorded), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtSynchronizeEvent(a), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtStreamWaitEvent(nullptr, a), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtEventElapsedTime(&ms, a, b), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtEventElapsedTime(&ms, b, a), ACL_ERROR_INVALID_PARAM);
  int foreign = 0;
  EXPECT_EQ(aclrtRecordEvent(&foreign, nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtDestroyEvent(&foreign), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtDestroyEvent(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtDestroyEvent(b), ACL_SUCCESS);
}

// ---- async memory, memory info, SoC name, host memory ----

TEST(AsyncMemory, SameChecksAsTheSyncCallsAndALiveStream) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  void* d = nullptr;
  ASSERT_EQ(aclrtMalloc(&d, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::vector<uint8_t> src(64), dst(64, 0);
  for (int i = 0; i < 64; ++i) src[i] = static_cast<uint8_t>(3 * i);
  EXPECT_EQ(aclrtMemcpyAsync(d, 64, src.data(), 64, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpyAsync(dst.data(), 64, d, 64, ACL_MEMCPY_DEVICE_TO_HOST, nullptr), ACL_SUCCESS);
  EXPECT_EQ(src, dst);
  EXPECT_EQ(aclrtMemsetAsync(d, 64, 0x7F, 32, s), ACL_SUCCESS);
  EXPECT_EQ(static_cast<uint8_t*>(d)[31], 0x7F);
  EXPECT_EQ(static_cast<uint8_t*>(d)[32], src[32]);

  EXPECT_EQ(aclrtMemcpyAsync(d, 32, src.data(), 64, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions("aclrtMemcpyAsync: count must be <= destMax")) << last_error();
  std::vector<uint8_t> big(128);
  EXPECT_EQ(aclrtMemcpyAsync(d, 128, big.data(), 128, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions("aclrtMemcpyAsync: count must be <= the 64 bytes left")) << last_error();
  EXPECT_EQ(aclrtMemcpyAsync(d, 64, src.data(), 8, static_cast<aclrtMemcpyKind>(9), s), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemsetAsync(d, 16, 0, 64, s), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions("aclrtMemsetAsync: count must be <= maxCount")) << last_error();
  EXPECT_EQ(aclrtMemsetAsync(static_cast<char*>(d) + 60, 100, 0, 8, s), ACL_ERROR_INVALID_PARAM);  // past block
  EXPECT_EQ(aclrtMemsetAsync(nullptr, 8, 0, 8, s), ACL_ERROR_INVALID_PARAM);

  ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpyAsync(d, 64, src.data(), 64, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions("aclrtMemcpyAsync: stream is not live")) << last_error();
  EXPECT_EQ(aclrtMemsetAsync(d, 64, 0, 64, s), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(static_cast<uint8_t*>(d)[0], 0x7F);  // untouched by the refused calls
  EXPECT_EQ(aclrtFree(d), ACL_SUCCESS);
}

TEST(MemInfo, ReportsTheMachinesMemoryForEveryAttribute) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const size_t machine = static_cast<size_t>(pages) * static_cast<size_t>(page);
  for (int attr = ACL_DDR_MEM; attr <= ACL_MEM_P2P_HUGE1G; ++attr) {
    size_t free_bytes = 0, total = 0;
    ASSERT_EQ(aclrtGetMemInfo(static_cast<aclrtMemAttr>(attr), &free_bytes, &total), ACL_SUCCESS) << attr;
    EXPECT_GT(total, 0u);
    EXPECT_LE(total, machine);  // the machine's RAM, or a smaller cgroup limit
    EXPECT_GT(free_bytes, 0u);
    EXPECT_LE(free_bytes, total);
  }
  size_t free_bytes = 0, total = 0;
  EXPECT_EQ(aclrtGetMemInfo(static_cast<aclrtMemAttr>(18), &free_bytes, &total), ACL_ERROR_RT_INVALID_MEMORY_TYPE);
  EXPECT_TRUE(mentions("attr")) << last_error();
  EXPECT_EQ(aclrtGetMemInfo(static_cast<aclrtMemAttr>(-1), &free_bytes, &total), ACL_ERROR_RT_INVALID_MEMORY_TYPE);
  EXPECT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, nullptr, &total), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, nullptr), ACL_ERROR_INVALID_PARAM);
}

TEST(SocName, SaysTxopsOnTheCpuNotAnAscendChip) {
  const char* name = aclrtGetSocName();
  ASSERT_NE(name, nullptr);
  EXPECT_STREQ(name, "txops-cpu");
  EXPECT_NE(std::string(name).rfind("Ascend", 0), 0u);
}

TEST(HostMemory, MisuseIsAnErrorCode) {
  void* h = nullptr;
  void* d = nullptr;
  ASSERT_EQ(aclrtMallocHost(&h, 256), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&d, 256, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(d), ACL_ERROR_INVALID_PARAM);  // device pointer to FreeHost
  EXPECT_TRUE(mentions("aclrtFreeHost")) << last_error();
  EXPECT_EQ(aclrtFree(h), ACL_ERROR_INVALID_PARAM);  // host pointer to aclrtFree
  EXPECT_TRUE(mentions("aclrtFree")) << last_error();
  EXPECT_EQ(aclrtFreeHost(static_cast<char*>(h) + 8), ACL_ERROR_INVALID_PARAM);  // interior pointer
  int foreign = 0;
  EXPECT_EQ(aclrtFreeHost(&foreign), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtFreeHost(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMallocHost(nullptr, 8), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(aclrtMallocHost(&h, 0), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(h), ACL_SUCCESS);  // h is still the first block (the refused call left it)
  EXPECT_EQ(aclrtFreeHost(h), ACL_ERROR_INVALID_PARAM);  // double free
  EXPECT_TRUE(mentions("already freed")) << last_error();
  EXPECT_EQ(aclrtFree(d), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(d), ACL_ERROR_INVALID_PARAM);
}

// ---- objects: scalars, arrays, lists, and the live registry of tensors and int arrays ----

TEST(Objects, Scalars) {
  float f = 1.5f;
  double g = -2.0;
  int64_t i = 7;
  uint16_t h = aclFloatToFloat16(0.5f);
  bool b = true;
  for (auto [value, dtype] : std::vector<std::pair<void*, aclDataType>>{
           {&f, ACL_FLOAT}, {&g, ACL_DOUBLE}, {&i, ACL_INT64}, {&h, ACL_FLOAT16}, {&h, ACL_BF16}, {&b, ACL_BOOL}}) {
    aclScalar* s = aclCreateScalar(value, dtype);
    ASSERT_NE(s, nullptr) << last_error();
    EXPECT_EQ(aclDestroyScalar(s), ACLNN_SUCCESS);
    EXPECT_EQ(aclDestroyScalar(s), ACLNN_ERR_PARAM_INVALID);  // twice: detected exactly (registry)
    EXPECT_TRUE(mentions("aclDestroyScalar: the argument is not a live aclScalar")) << last_error();
  }
  EXPECT_EQ(aclCreateScalar(nullptr, ACL_FLOAT), nullptr);
  EXPECT_TRUE(mentions("value must not be null")) << last_error();
  EXPECT_EQ(aclCreateScalar(&f, static_cast<aclDataType>(13)), nullptr);  // ACL_STRING: not supported
  EXPECT_EQ(aclCreateScalar(&f, ACL_DT_UNDEFINED), nullptr);
  EXPECT_EQ(aclDestroyScalar(nullptr), ACLNN_SUCCESS);
  uint64_t fake[4] = {};
  EXPECT_EQ(aclDestroyScalar(reinterpret_cast<aclScalar*>(fake)), ACLNN_ERR_PARAM_INVALID);
}

TEST(Objects, FloatAndBoolArrays) {
  const float fv[3] = {1.0f, 2.0f, 3.0f};
  const bool bv[2] = {true, false};
  aclFloatArray* fa = aclCreateFloatArray(fv, 3);
  aclBoolArray* ba = aclCreateBoolArray(bv, 2);
  ASSERT_TRUE(fa && ba);
  uint64_t n = 0;
  EXPECT_EQ(aclGetFloatArraySize(fa, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(aclGetBoolArraySize(ba, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(aclGetFloatArraySize(fa, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetBoolArraySize(nullptr, &n), ACLNN_ERR_PARAM_NULLPTR);
  // The wrong kind of object is not live as that kind.
  EXPECT_EQ(aclGetBoolArraySize(reinterpret_cast<aclBoolArray*>(fa), &n), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyBoolArray(reinterpret_cast<aclBoolArray*>(fa)), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclGetFloatArraySize(fa, &n), ACLNN_SUCCESS);  // still live after the refused destroy
  EXPECT_EQ(aclDestroyFloatArray(fa), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyFloatArray(fa), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclGetFloatArraySize(fa, &n), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions("aclGetFloatArraySize: the argument is not a live aclFloatArray")) << last_error();
  EXPECT_EQ(aclDestroyBoolArray(ba), ACLNN_SUCCESS);
  EXPECT_EQ(aclGetBoolArraySize(ba, &n), ACLNN_ERR_PARAM_INVALID);
  // Empty arrays; null values with a size.
  aclFloatArray* empty = aclCreateFloatArray(nullptr, 0);
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(aclGetFloatArraySize(empty, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(aclDestroyFloatArray(empty), ACLNN_SUCCESS);
  EXPECT_EQ(aclCreateFloatArray(nullptr, 2), nullptr);
  EXPECT_EQ(aclCreateBoolArray(nullptr, 2), nullptr);
}

TEST(Objects, TensorListOwnsItsTensors) {
  std::vector<float> data(8);
  const std::vector<int64_t> dims = {2, 4};
  aclTensor* t0 = make_f32(&data, dims);
  aclTensor* t1 = make_f32(&data, dims);
  aclTensor* loose = make_f32(&data, dims);
  ASSERT_TRUE(t0 && t1 && loose);
  const aclTensor* items[3] = {t0, nullptr, t1};
  aclTensorList* list = aclCreateTensorList(items, 3);
  ASSERT_NE(list, nullptr) << last_error();
  uint64_t n = 0;
  EXPECT_EQ(aclGetTensorListSize(list, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(aclGetTensorListSize(list, nullptr), ACLNN_ERR_PARAM_NULLPTR);

  // An owned tensor cannot be destroyed on its own nor put in a second list; its introspection still works.
  EXPECT_EQ(aclDestroyTensor(t0), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions("belongs to a list")) << last_error();
  aclFormat format;
  EXPECT_EQ(aclGetFormat(t0, &format), ACLNN_SUCCESS);
  const aclTensor* again[2] = {loose, t1};
  EXPECT_EQ(aclCreateTensorList(again, 2), nullptr);
  EXPECT_TRUE(mentions("value[1] already belongs to another list")) << last_error();
  const aclTensor* twice[2] = {loose, loose};
  EXPECT_EQ(aclCreateTensorList(twice, 2), nullptr);
  EXPECT_TRUE(mentions("value[1] appears twice")) << last_error();
  EXPECT_EQ(aclCreateTensorList(nullptr, 2), nullptr);
  // The refused lists adopted nothing: `loose` is still free to destroy.
  EXPECT_EQ(aclDestroyTensor(loose), ACLNN_SUCCESS);
  const aclTensor* dead[1] = {loose};
  EXPECT_EQ(aclCreateTensorList(dead, 1), nullptr);
  EXPECT_TRUE(mentions("value[0] is not a live aclTensor")) << last_error();

  // Destroying the list destroys its tensors (CANN: "the aclTensors in the list need not be destroyed again").
  EXPECT_EQ(aclDestroyTensorList(list), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensor(t0), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclGetFormat(t1, &format), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyTensorList(list), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclGetTensorListSize(list, &n), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyTensorList(nullptr), ACLNN_SUCCESS);

  aclTensorList* empty = aclCreateTensorList(nullptr, 0);
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(aclGetTensorListSize(empty, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(aclDestroyTensorList(empty), ACLNN_SUCCESS);
}

TEST(Objects, ScalarListOwnsItsScalars) {
  float a = 1.0f, b = 2.0f;
  aclScalar* s0 = aclCreateScalar(&a, ACL_FLOAT);
  aclScalar* s1 = aclCreateScalar(&b, ACL_FLOAT);
  const aclScalar* items[2] = {s0, s1};
  aclScalarList* list = aclCreateScalarList(items, 2);
  ASSERT_NE(list, nullptr) << last_error();
  uint64_t n = 0;
  EXPECT_EQ(aclGetScalarListSize(list, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(aclDestroyScalar(s1), ACLNN_ERR_PARAM_INVALID);
  // A tensor list is not a scalar list.
  EXPECT_EQ(aclGetTensorListSize(reinterpret_cast<aclTensorList*>(list), &n), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyScalarList(list), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyScalar(s0), ACLNN_ERR_PARAM_INVALID);  // destroyed with the list
  EXPECT_EQ(aclDestroyScalarList(list), ACLNN_ERR_PARAM_INVALID);
}

TEST(Objects, DestroyedTensorsAndIntArraysAreDetectedEverywhere) {
  std::vector<float> data(2 * 3 * 4 * 32), c(4 * 32), s(4 * 32), out(data.size());
  aclTensor* t = make_f32(&data, {2, 3, 4, 32});
  // Made before t is destroyed, so none of them can take t's address.
  aclTensor* ct = make_f32(&c, {1, 1, 4, 32});
  aclTensor* st = make_f32(&s, {1, 1, 4, 32});
  aclTensor* ot = make_f32(&out, {2, 3, 4, 32});
  ASSERT_TRUE(t && ct && st && ot);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions("aclDestroyTensor: the argument is not a live aclTensor")) << last_error();
  int64_t* dims = nullptr;
  uint64_t n = 0;
  int64_t offset = 0;
  aclDataType dtype;
  EXPECT_EQ(aclGetViewShape(t, &dims, &n), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclGetViewStrides(t, &dims, &n), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclGetStorageShape(t, &dims, &n), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclGetViewOffset(t, &offset), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclGetDataType(t, &dtype), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclGetViewOffset(nullptr, &offset), ACLNN_ERR_PARAM_NULLPTR);

  // An operator given a destroyed tensor: 161002 from phase one.
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  EXPECT_EQ(aclnnInterleaveRopeGetWorkspaceSize(t, ct, st, ot, &ws, &ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions("x is not a live aclTensor")) << last_error();

  const int64_t v[2] = {0, 8};
  aclIntArray* a = aclCreateIntArray(v, 2);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(aclGetIntArraySize(a, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(aclDestroyIntArray(a), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyIntArray(a), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclGetIntArraySize(a, &n), ACLNN_ERR_PARAM_INVALID);
  // An operator given a destroyed int array: 161002 from phase one, its values never read.
  EXPECT_EQ(aclnnInplacePartialRotaryMulGetWorkspaceSize(ot, ct, st, 1, a, &ws, &ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions("partialSlice is not a live aclIntArray")) << last_error();
  for (aclTensor* x : {ct, st, ot}) EXPECT_EQ(aclDestroyTensor(x), ACLNN_SUCCESS);
}

}  // namespace
