// concurrency_test.cpp — the aclnn C API from many threads at once, on one shared runtime (aclInit once for the
// binary, every tensor in aclrtMalloc'd memory):
//   * 8 caller threads run all seven operators, several iterations each, on their own data (shapes, dtypes and
//     modes differ per caller; the larger shapes partition over several pool threads); about a third of the
//     executors are made (phase one) on one caller and run (phase two) on the next. Every result equals, bit for
//     bit, the same call made serially beforehand.
//   * aclrtMalloc / aclrtFree from 8 threads at once, with foreign pointers refused while others allocate, then
//     double frees refused and blocks freed by several threads at once (exactly one free succeeds).
//   * aclGetRecentErrMsg is per thread: one thread's failures never change the message another thread reads.
//   * the executor registry under contention: every thread runs every executor of a round; each executor runs
//     exactly once, the others get 161002 "not live".
// Worker threads record what they saw; assertions are made on the main thread after join. Built into the
// ThreadSanitizer run too (make test-tsan; see the Makefile), where the pool is LLVM's libomp with Archer.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_apply_rotary_pos_emb_grad.h"
#include "aclnnop/aclnn_apply_rotary_pos_emb_v2.h"
#include "aclnnop/aclnn_chunk_gated_delta_rule.h"
#include "aclnnop/aclnn_inplace_partial_rotary_mul.h"
#include "aclnnop/aclnn_inplace_partial_rotary_mul_grad.h"
#include "aclnnop/aclnn_interleave_rope.h"
#include "aclnnop/aclnn_recurrent_gated_delta_rule.h"
#include "core/dtype.h"
#include "support/gdr_problem.h"
#include "txops/txops.h"

namespace {

using txops::DType;

constexpr int kCallers = 8;
constexpr int kOps = 7;
constexpr int kIterations = 4;
constexpr int kPoolThreads = 3;  // per call, unless TXOPS_NUM_THREADS says otherwise

// aclInit once for the whole binary; every test shares the runtime.
class AclRuntime : public ::testing::Environment {
 public:
  void SetUp() override { ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << aclGetRecentErrMsg(); }
  void TearDown() override { EXPECT_EQ(aclFinalize(), ACL_SUCCESS) << aclGetRecentErrMsg(); }
};
::testing::Environment* const g_runtime = ::testing::AddGlobalTestEnvironment(new AclRuntime);

// The pool size for a test: kPoolThreads unless TXOPS_NUM_THREADS is set (then the environment's); restored after.
class PoolThreads {
 public:
  PoolThreads() : saved_(txops::num_threads()) {
    const char* env = std::getenv("TXOPS_NUM_THREADS");
    if (env == nullptr || *env == '\0') txops::set_num_threads(kPoolThreads);
  }
  ~PoolThreads() { txops::set_num_threads(saved_); }
  PoolThreads(const PoolThreads&) = delete;
  PoolThreads& operator=(const PoolThreads&) = delete;

 private:
  int saved_;
};

// A reusable barrier for `count` threads (C++17 has no std::barrier).
class Barrier {
 public:
  explicit Barrier(int count) : count_(count) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const int generation = generation_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != generation; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  const int count_;
  int arrived_ = 0, generation_ = 0;
};

// Runs body(thread_index) on `count` std::threads that start together; joins them.
void run_threads(int count, const std::function<void(int)>& body) {
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < count; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      body(t);
    });
  }
  go.store(true, std::memory_order_release);
  for (std::thread& th : threads) th.join();
}

// ---- operator calls on aclrtMalloc'd memory -----------------------------------------------------------------
// aclrtMalloc'd bytes that reset() brings back to their initial contents (inputs; outputs start zeroed).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::vector<uint8_t> initial) : initial_(std::move(initial)) {
    if (aclrtMalloc(&ptr_, std::max<size_t>(initial_.size(), 1), ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
      ptr_ = nullptr;
    }
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) aclrtFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* ptr() const { return ptr_; }
  bool reset() const {
    return initial_.empty() || aclrtMemcpy(ptr_, initial_.size(), initial_.data(), initial_.size(),
                                           ACL_MEMCPY_HOST_TO_DEVICE) == ACL_SUCCESS;
  }
  void append_bytes(std::vector<uint8_t>* out) const {
    const size_t at = out->size();
    out->resize(at + initial_.size());
    if (!initial_.empty()) {
      aclrtMemcpy(out->data() + at, initial_.size(), ptr_, initial_.size(), ACL_MEMCPY_DEVICE_TO_HOST);
    }
  }

 private:
  std::vector<uint8_t> initial_;
  void* ptr_ = nullptr;
};

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

std::vector<uint8_t> random_values(DType dtype, const std::vector<int64_t>& shape, std::mt19937* rng, float lo = -1.f,
                                   float hi = 1.f) {
  std::vector<uint8_t> bytes(static_cast<size_t>(numel(shape)) * txops::dtype_size(dtype));
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < numel(shape); ++i) txops::store_f32(bytes.data(), dtype, i, dist(*rng));
  return bytes;
}

std::vector<uint8_t> zeros(DType dtype, const std::vector<int64_t>& shape) {
  return std::vector<uint8_t>(static_cast<size_t>(numel(shape)) * txops::dtype_size(dtype), 0);
}

using RunFn = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);

// One operator call with its own device buffers. The owning thread calls reset(), phase_one() and release();
// phase_two() only touches the executor and a workspace it allocates, so any thread may run it.
class OpCall {
 public:
  OpCall(std::string label, RunFn run) : label_(std::move(label)), run_(run) {}
  virtual ~OpCall() { release(); }
  OpCall(const OpCall&) = delete;
  OpCall& operator=(const OpCall&) = delete;

  const std::string& label() const { return label_; }
  bool reset() const {
    bool ok = true;
    for (const auto& b : buffers_) ok = b->reset() && ok;
    return ok;
  }
  // Fresh aclTensors over the buffers, then the op's GetWorkspaceSize.
  aclnnStatus phase_one(uint64_t* workspace_size, aclOpExecutor** executor) {
    release();
    return get_workspace_size(workspace_size, executor);
  }
  // The op's run with an aclrtMalloc'd workspace of exactly the size asked for.
  aclnnStatus phase_two(uint64_t workspace_size, aclOpExecutor* executor) const {
    void* workspace = nullptr;
    if (workspace_size > 0 && aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
      return ACLNN_ERR_RUNTIME_ERROR;
    }
    const aclnnStatus status = run_(workspace, workspace_size, executor, nullptr);
    if (workspace != nullptr) aclrtFree(workspace);
    return status;
  }
  // Destroys the aclTensors of the last phase one (kept until its phase two has finished, as CANN requires).
  void release() {
    for (aclTensor* t : tensors_) aclDestroyTensor(t);
    tensors_.clear();
  }
  // Every buffer's bytes (inputs updated in place included), in order.
  std::vector<uint8_t> result() const {
    std::vector<uint8_t> bytes;
    for (const auto& b : buffers_) b->append_bytes(&bytes);
    return bytes;
  }

 protected:
  virtual aclnnStatus get_workspace_size(uint64_t* workspace_size, aclOpExecutor** executor) = 0;

  int add_buffer(std::vector<uint8_t> initial) {
    buffers_.push_back(std::make_unique<DeviceBuffer>(std::move(initial)));
    return static_cast<int>(buffers_.size()) - 1;
  }
  struct Tensor {
    int buffer;
    DType dtype;
    std::vector<int64_t> shape;
  };
  // A buffer holding `shape` elements of `dtype` (random in [lo, hi], or zeros).
  Tensor random_tensor(DType dtype, std::vector<int64_t> shape, std::mt19937* rng, float lo = -1.f, float hi = 1.f) {
    return Tensor{add_buffer(random_values(dtype, shape, rng, lo, hi)), dtype, shape};
  }
  Tensor zero_tensor(DType dtype, std::vector<int64_t> shape) {
    return Tensor{add_buffer(zeros(dtype, shape)), dtype, shape};
  }
  Tensor host_tensor(const gdrtest::HostTensor& h) { return Tensor{add_buffer(h.bytes), h.dtype, h.shape}; }
  // A contiguous aclTensor over the whole buffer; null for a null Tensor (buffer < 0).
  aclTensor* acl(const Tensor& t) {
    if (t.buffer < 0) return nullptr;
    const int64_t storage = numel(t.shape);
    aclTensor* tensor = aclCreateTensor(t.shape.data(), t.shape.size(), static_cast<aclDataType>(t.dtype), nullptr,
                                        0, ACL_FORMAT_ND, &storage, 1, buffers_[t.buffer]->ptr());
    if (tensor != nullptr) tensors_.push_back(tensor);
    return tensor;
  }

 private:
  std::string label_;
  RunFn run_;
  std::vector<std::unique_ptr<DeviceBuffer>> buffers_;
  std::vector<aclTensor*> tensors_;
};

// Per caller: the activation dtype, whether its shapes are the large ones (several pool threads), a mode index.
struct CallerStyle {
  DType dtype;
  DType cos_dtype;
  bool large;
  int mode;
  uint32_t seed;
};
CallerStyle style_of(int caller, uint32_t salt = 0) {
  static const DType kDtypes[3] = {DType::kF32, DType::kF16, DType::kBF16};
  const DType dtype = kDtypes[caller % 3];
  return CallerStyle{dtype, caller % 2 == 0 ? dtype : DType::kF32, caller % 2 == 0, caller,
                     1000u + 17u * static_cast<uint32_t>(caller) + salt};
}
std::string caller_label(const char* op, int caller) {
  return std::string(op) + " (caller " + std::to_string(caller) + ")";
}
char* rotary_mode_string(int mode) {
  static char half[] = "half", interleave[] = "interleave", quarter[] = "quarter";
  char* modes[3] = {half, interleave, quarter};
  return modes[mode % 3];
}

// x, out (B, N, S, D); cos, sin (1, 1, S, D).
class InterleaveRopeCall final : public OpCall {
 public:
  explicit InterleaveRopeCall(const CallerStyle& s, std::string label) : OpCall(std::move(label), aclnnInterleaveRope) {
    std::mt19937 rng(s.seed);
    const int64_t B = s.large ? 4 : 1, N = s.large ? 8 : 3, S = s.large ? 64 : 12, D = 64;
    x_ = random_tensor(s.dtype, {B, N, S, D}, &rng);
    cos_ = random_tensor(s.cos_dtype, {1, 1, S, D}, &rng);
    sin_ = random_tensor(s.cos_dtype, {1, 1, S, D}, &rng);
    out_ = zero_tensor(s.dtype, {B, N, S, D});
  }

 private:
  aclnnStatus get_workspace_size(uint64_t* ws, aclOpExecutor** exec) override {
    return aclnnInterleaveRopeGetWorkspaceSize(acl(x_), acl(cos_), acl(sin_), acl(out_), ws, exec);
  }
  Tensor x_, cos_, sin_, out_;
};

// xRef / dyRef (B, S, N, 128) rotated in place over the slice [32, 96); cos, sin (1, S, 1, 64).
class PartialRotaryMulCall final : public OpCall {
 public:
  PartialRotaryMulCall(const CallerStyle& s, bool grad, std::string label)
      : OpCall(std::move(label), grad ? aclnnInplacePartialRotaryMulGrad : aclnnInplacePartialRotaryMul),
        grad_(grad), mode_(s.mode % 4) {
    std::mt19937 rng(s.seed + (grad ? 1 : 2));
    const int64_t B = s.large ? 4 : 1, S = s.large ? 64 : 8, N = s.large ? 8 : 3, D = 128;
    x_ = random_tensor(s.dtype, {B, S, N, D}, &rng);
    cos_ = random_tensor(s.cos_dtype, {1, S, 1, 64}, &rng);
    sin_ = random_tensor(s.cos_dtype, {1, S, 1, 64}, &rng);
  }

 private:
  aclnnStatus get_workspace_size(uint64_t* ws, aclOpExecutor** exec) override {
    const int64_t slice_values[2] = {32, 96};
    aclIntArray* slice = aclCreateIntArray(slice_values, 2);
    const aclnnStatus st =
        grad_ ? aclnnInplacePartialRotaryMulGradGetWorkspaceSize(acl(x_), acl(cos_), acl(sin_), mode_, slice, ws, exec)
              : aclnnInplacePartialRotaryMulGetWorkspaceSize(acl(x_), acl(cos_), acl(sin_), mode_, slice, ws, exec);
    aclDestroyIntArray(slice);  // phase one copies what it needs
    return st;
  }
  bool grad_;
  int64_t mode_;
  Tensor x_, cos_, sin_;
};

// BSND: queryRef (B, S, 8, 64), keyRef (B, S, 2, 64) in place; cos, sin (1, S, 1, 64).
class ApplyRotaryPosEmbCall final : public OpCall {
 public:
  ApplyRotaryPosEmbCall(const CallerStyle& s, std::string label)
      : OpCall(std::move(label), aclnnApplyRotaryPosEmbV2), mode_(rotary_mode_string(s.mode)) {
    std::mt19937 rng(s.seed + 3);
    const int64_t B = s.large ? 4 : 1, S = s.large ? 64 : 10, D = 64;
    q_ = random_tensor(s.dtype, {B, S, 8, D}, &rng);
    k_ = random_tensor(s.dtype, {B, S, 2, D}, &rng);
    cos_ = random_tensor(s.cos_dtype, {1, S, 1, D}, &rng);
    sin_ = random_tensor(s.cos_dtype, {1, S, 1, D}, &rng);
  }

 private:
  aclnnStatus get_workspace_size(uint64_t* ws, aclOpExecutor** exec) override {
    return aclnnApplyRotaryPosEmbV2GetWorkspaceSize(acl(q_), acl(k_), acl(cos_), acl(sin_), 1, mode_, ws, exec);
  }
  char* mode_;
  Tensor q_, k_, cos_, sin_;
};

// BSND backward: gradients of query (B, S, 8, 64) and key (B, S, 2, 64), with gradCos / gradSin (1, S, 1, 64).
class ApplyRotaryPosEmbGradCall final : public OpCall {
 public:
  ApplyRotaryPosEmbGradCall(const CallerStyle& s, std::string label)
      : OpCall(std::move(label), aclnnApplyRotaryPosEmbGrad), mode_(rotary_mode_string(s.mode + 1)) {
    std::mt19937 rng(s.seed + 4);
    const int64_t B = s.large ? 4 : 1, S = s.large ? 64 : 10, D = 64;
    gqe_ = random_tensor(s.dtype, {B, S, 8, D}, &rng);
    gke_ = random_tensor(s.dtype, {B, S, 2, D}, &rng);
    cos_ = random_tensor(s.cos_dtype, {1, S, 1, D}, &rng);
    sin_ = random_tensor(s.cos_dtype, {1, S, 1, D}, &rng);
    q_ = random_tensor(s.dtype, {B, S, 8, D}, &rng);
    k_ = random_tensor(s.dtype, {B, S, 2, D}, &rng);
    gq_ = zero_tensor(s.dtype, {B, S, 8, D});
    gk_ = zero_tensor(s.dtype, {B, S, 2, D});
    gcos_ = zero_tensor(s.cos_dtype, {1, S, 1, D});
    gsin_ = zero_tensor(s.cos_dtype, {1, S, 1, D});
  }

 private:
  aclnnStatus get_workspace_size(uint64_t* ws, aclOpExecutor** exec) override {
    return aclnnApplyRotaryPosEmbGradGetWorkspaceSize(acl(gqe_), acl(gke_), acl(cos_), acl(sin_), acl(q_), acl(k_),
                                                      mode_, 1, acl(gq_), acl(gk_), acl(gcos_), acl(gsin_), ws, exec);
  }
  char* mode_;
  Tensor gqe_, gke_, cos_, sin_, q_, k_, gq_, gk_, gcos_, gsin_;
};

// Prefill: 2 key heads, 4 value heads, Dk = Dv = 64, sequences of caller-specific lengths (valid inputs from
// gdrtest::PrefillProblem, copied to device memory).
class ChunkGatedDeltaRuleCall final : public OpCall {
 public:
  ChunkGatedDeltaRuleCall(const CallerStyle& s, std::string label)
      : OpCall(std::move(label), aclnnChunkGatedDeltaRule) {
    gdrtest::PrefillConfig c;
    const int32_t extra = static_cast<int32_t>(s.mode);
    c.lengths = s.large ? std::vector<int32_t>{96 + extra, 40, 7} : std::vector<int32_t>{17 + extra};
    c.nk = 2, c.nv = 4, c.dk = 64, c.dv = 64;
    c.act = s.dtype == DType::kF16 ? DType::kF16 : DType::kBF16;
    c.seed = s.seed + 5;
    gdrtest::PrefillProblem p(c);
    scale_ = p.scale();
    q_ = host_tensor(p.q), k_ = host_tensor(p.k), v_ = host_tensor(p.v), beta_ = host_tensor(p.beta);
    s0_ = host_tensor(p.initial_state), lengths_ = host_tensor(p.lengths), g_ = host_tensor(p.g);
    out_ = host_tensor(p.out), s1_ = host_tensor(p.final_state);  // zeroed
  }

 private:
  aclnnStatus get_workspace_size(uint64_t* ws, aclOpExecutor** exec) override {
    return aclnnChunkGatedDeltaRuleGetWorkspaceSize(acl(q_), acl(k_), acl(v_), acl(beta_), acl(s0_), acl(lengths_),
                                                    acl(g_), scale_, acl(out_), acl(s1_), ws, exec);
  }
  float scale_;
  Tensor q_, k_, v_, beta_, s0_, lengths_, g_, out_, s1_;
};

// Decode in place on a state pool: large callers run 8 one-token sequences (32 items: several pool threads),
// the others 3 sequences of 1-3 tokens with gk and numAcceptedTokens.
class RecurrentGatedDeltaRuleCall final : public OpCall {
 public:
  RecurrentGatedDeltaRuleCall(const CallerStyle& s, std::string label)
      : OpCall(std::move(label), aclnnRecurrentGatedDeltaRule) {
    gdrtest::DecodeConfig c;
    if (s.large) {
      c.lengths.assign(8, 1);
      c.state_indices = {7, 2, 5, 0, 3, 6, 1, 4};
      c.num_slots = 9;
      c.dk = 64, c.dv = 64;
    } else {
      c.lengths = {1, 3, 2};
      c.state_indices = {3, 0, 1, 2, 5, 6};
      c.accepted = {1, 2, 1};
      c.num_slots = 8;
      c.with_gk = true;
      c.dk = 32, c.dv = 48;
    }
    c.nk = 2, c.nv = 4;
    c.act = s.dtype == DType::kF16 ? DType::kF16 : DType::kBF16;
    c.seed = s.seed + 6;
    gdrtest::DecodeProblem p(c);
    scale_ = p.scale();
    q_ = host_tensor(p.q), k_ = host_tensor(p.k), v_ = host_tensor(p.v), beta_ = host_tensor(p.beta);
    pool_ = host_tensor(p.pool_before), lengths_ = host_tensor(p.lengths), indices_ = host_tensor(p.indices);
    g_ = host_tensor(p.g);
    gk_ = c.with_gk ? host_tensor(p.gk) : Tensor{-1, DType::kF32, {}};
    accepted_ = c.accepted.empty() ? Tensor{-1, DType::kI32, {}} : host_tensor(p.accepted);
    out_ = host_tensor(p.out);
  }

 private:
  aclnnStatus get_workspace_size(uint64_t* ws, aclOpExecutor** exec) override {
    return aclnnRecurrentGatedDeltaRuleGetWorkspaceSize(acl(q_), acl(k_), acl(v_), acl(beta_), acl(pool_),
                                                        acl(lengths_), acl(indices_), acl(g_), acl(gk_),
                                                        acl(accepted_), scale_, acl(out_), ws, exec);
  }
  float scale_;
  Tensor q_, k_, v_, beta_, pool_, lengths_, indices_, g_, gk_, accepted_, out_;
};

// The seven operator calls of one caller (the order is the op index the tests use).
std::vector<std::unique_ptr<OpCall>> calls_for(int caller, uint32_t salt = 0) {
  const CallerStyle s = style_of(caller, salt);
  std::vector<std::unique_ptr<OpCall>> calls;
  calls.push_back(std::make_unique<InterleaveRopeCall>(s, caller_label("aclnnInterleaveRope", caller)));
  calls.push_back(std::make_unique<PartialRotaryMulCall>(s, false, caller_label("aclnnInplacePartialRotaryMul", caller)));
  calls.push_back(
      std::make_unique<PartialRotaryMulCall>(s, true, caller_label("aclnnInplacePartialRotaryMulGrad", caller)));
  calls.push_back(std::make_unique<ApplyRotaryPosEmbCall>(s, caller_label("aclnnApplyRotaryPosEmbV2", caller)));
  calls.push_back(std::make_unique<ApplyRotaryPosEmbGradCall>(s, caller_label("aclnnApplyRotaryPosEmbGrad", caller)));
  calls.push_back(std::make_unique<ChunkGatedDeltaRuleCall>(s, caller_label("aclnnChunkGatedDeltaRule", caller)));
  calls.push_back(
      std::make_unique<RecurrentGatedDeltaRuleCall>(s, caller_label("aclnnRecurrentGatedDeltaRule", caller)));
  return calls;
}

// The call run start to end on this thread: its result bytes, or "" in *error.
std::vector<uint8_t> run_serially(OpCall* call, std::string* error) {
  uint64_t ws = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus st = call->reset() ? call->phase_one(&ws, &executor) : ACLNN_ERR_RUNTIME_ERROR;
  if (st == 0) st = call->phase_two(ws, executor);
  call->release();
  if (st != 0) {
    *error = call->label() + ": status " + std::to_string(st) + ": " + aclGetRecentErrMsg();
    return {};
  }
  return call->result();
}

// The pool threads a call's plan used, from its TXOPS_VERBOSE line ("... threads=N ..."); 0 when none printed.
int planned_threads(OpCall* call) {
  txops::set_verbose(true);
  ::testing::internal::CaptureStderr();
  std::string error;
  run_serially(call, &error);
  const std::string log = ::testing::internal::GetCapturedStderr();
  txops::set_verbose(false);
  const size_t at = log.find(" threads=");
  return at == std::string::npos ? 0 : std::atoi(log.c_str() + at + 9);
}

// ---- all seven operators from 8 callers at once ---------------------------------------------------------------
// An executor made by one caller, run by the next; the runner reports back to the owner.
struct Caller;
struct Job {
  const OpCall* call;
  aclOpExecutor* executor;
  uint64_t workspace_size;
  Caller* owner;
  aclnnStatus* status;  // the owner's slot for the run's status
};
struct Caller {
  std::mutex mutex;
  std::condition_variable cv;  // a job arrived, or one of this caller's handed-off calls finished
  std::deque<Job> inbox;
  int finished = 0;            // this caller's handed-off calls finished (this iteration)
};

// Whether caller c hands its call of op o in iteration it to the next caller (about a third of the calls).
bool handed_off(int c, int it, int o) { return (c + it + o) % 3 == 0; }

TEST(Concurrency, AllOperatorsFromEightCallersMatchSerialBits) {
  PoolThreads pool;
  std::vector<std::vector<std::unique_ptr<OpCall>>> calls;
  for (int c = 0; c < kCallers; ++c) calls.push_back(calls_for(c));

  // Serially first: the bits every concurrent run must reproduce, and the pool threads each plan uses.
  std::vector<std::vector<std::vector<uint8_t>>> expected(kCallers, std::vector<std::vector<uint8_t>>(kOps));
  std::vector<int> most_threads(kOps, 0);
  for (int c = 0; c < kCallers; ++c) {
    for (int o = 0; o < kOps; ++o) {
      std::string error;
      expected[c][o] = run_serially(calls[c][o].get(), &error);
      ASSERT_EQ(error, "");
      ASSERT_EQ(expected[c][o], run_serially(calls[c][o].get(), &error)) << calls[c][o]->label() << " not repeatable";
      most_threads[o] = std::max(most_threads[o], planned_threads(calls[c][o].get()));
    }
  }
  for (int o = 0; o < kOps; ++o) {
    std::printf("  [info] %s: up to %d pool threads per call\n", calls[0][o]->label().c_str(), most_threads[o]);
    if (txops::num_threads() > 1) EXPECT_GE(most_threads[o], 2) << calls[0][o]->label() << " never ran in parallel";
  }

  std::vector<Caller> callers(kCallers);
  std::vector<std::vector<std::string>> failures(kCallers);
  std::vector<int> jobs_run(kCallers, 0);
  run_threads(kCallers, [&](int c) {
    Caller& me = callers[c];
    Caller& next = callers[(c + 1) % kCallers];
    const int prev = (c + kCallers - 1) % kCallers;
    int expected_jobs = 0;
    for (int it = 0; it < kIterations; ++it)
      for (int o = 0; o < kOps; ++o) expected_jobs += handed_off(prev, it, o) ? 1 : 0;
    auto fail = [&](const std::string& what) { failures[c].push_back(what); };
    auto check = [&](int o, aclnnStatus st, int it) {
      OpCall* call = calls[c][o].get();
      const std::string where = call->label() + " iteration " + std::to_string(it);
      if (st != 0) {
        fail(where + ": status " + std::to_string(st));
      } else if (call->result() != expected[c][o]) {
        fail(where + ": result differs from the serial run");
      }
      call->release();
    };
    // Runs the executors other callers handed over; `block` waits for one when none is queued.
    auto serve = [&](std::unique_lock<std::mutex>& lock) {
      while (!me.inbox.empty()) {
        const Job job = me.inbox.front();
        me.inbox.pop_front();
        lock.unlock();
        const aclnnStatus st = job.call->phase_two(job.workspace_size, job.executor);
        {
          std::lock_guard<std::mutex> owner_lock(job.owner->mutex);
          *job.status = st;
          ++job.owner->finished;
        }
        job.owner->cv.notify_all();
        ++jobs_run[c];
        lock.lock();
      }
    };
    for (int it = 0; it < kIterations; ++it) {
      std::vector<aclnnStatus> handed_status(kOps, -1);
      int handed = 0;
      for (int k = 0; k < kOps; ++k) {
        const int o = (k + c) % kOps;  // callers start on different ops
        OpCall* call = calls[c][o].get();
        uint64_t ws = 0;
        aclOpExecutor* executor = nullptr;
        if (!call->reset()) fail(call->label() + ": reset failed");
        const aclnnStatus st = call->phase_one(&ws, &executor);
        if (st != 0) {
          fail(call->label() + ": phase one status " + std::to_string(st) + ": " + aclGetRecentErrMsg());
          call->release();
        } else if (handed_off(c, it, o)) {
          {
            std::lock_guard<std::mutex> lock(next.mutex);
            next.inbox.push_back(Job{call, executor, ws, &me, &handed_status[o]});
          }
          next.cv.notify_all();
          ++handed;
        } else {
          check(o, call->phase_two(ws, executor), it);
        }
        std::unique_lock<std::mutex> lock(me.mutex);
        serve(lock);
      }
      {  // this caller's handed-off calls must finish before their results are read and the buffers reset
        std::unique_lock<std::mutex> lock(me.mutex);
        for (;;) {
          serve(lock);
          if (me.finished == handed) break;
          me.cv.wait(lock);
        }
        me.finished = 0;
      }
      for (int o = 0; o < kOps; ++o)
        if (handed_off(c, it, o)) check(o, handed_status[o], it);
    }
    std::unique_lock<std::mutex> lock(me.mutex);
    for (;;) {  // the previous caller may still hand over executors
      serve(lock);
      if (jobs_run[c] == expected_jobs) break;
      me.cv.wait(lock);
    }
  });
  int total_jobs = 0;
  for (int c = 0; c < kCallers; ++c) {
    for (const std::string& f : failures[c]) ADD_FAILURE() << f;
    total_jobs += jobs_run[c];
  }
  std::printf("  [info] %d callers x %d ops x %d iterations, %d executors run by another caller than made them\n",
              kCallers, kOps, kIterations, total_jobs);
  EXPECT_GT(total_jobs, 0);
}

// ---- the executor registry under contention ---------------------------------------------------------------------
// Each round: the main thread makes one executor per operator (phase one), then 8 threads each try to run every
// one of them (phase two, in thread-specific orders). Exactly one run of each executor succeeds and writes the
// serial bits; every other attempt gets 161002 with the message naming the executor as not live.
TEST(Concurrency, ExecutorRunConcurrentlyRunsExactlyOnce) {
  PoolThreads pool;
  const std::vector<std::unique_ptr<OpCall>> calls = calls_for(1, 7);  // the small shapes
  std::vector<std::vector<uint8_t>> expected(kOps);
  for (int o = 0; o < kOps; ++o) {
    std::string error;
    expected[o] = run_serially(calls[o].get(), &error);
    ASSERT_EQ(error, "");
  }
  constexpr int kRounds = 12;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<aclOpExecutor*> executors(kOps, nullptr);
    std::vector<uint64_t> ws(kOps, 0);
    for (int o = 0; o < kOps; ++o) {
      ASSERT_TRUE(calls[o]->reset());
      ASSERT_EQ(calls[o]->phase_one(&ws[o], &executors[o]), 0) << aclGetRecentErrMsg();
    }
    std::vector<std::vector<aclnnStatus>> status(kCallers, std::vector<aclnnStatus>(kOps, -1));
    std::vector<std::vector<std::string>> message(kCallers, std::vector<std::string>(kOps));
    run_threads(kCallers, [&](int t) {
      for (int k = 0; k < kOps; ++k) {
        const int o = (round % 2 == 0) ? (k + t) % kOps : (kOps - 1 - k + t) % kOps;
        status[t][o] = calls[o]->phase_two(ws[o], executors[o]);
        if (status[t][o] != 0) message[t][o] = aclGetRecentErrMsg();
      }
    });
    for (int o = 0; o < kOps; ++o) {
      int successes = 0;
      for (int t = 0; t < kCallers; ++t) {
        if (status[t][o] == 0) {
          ++successes;
          continue;
        }
        EXPECT_EQ(status[t][o], ACLNN_ERR_PARAM_INVALID) << calls[o]->label() << " thread " << t;
        EXPECT_NE(message[t][o].find("not live"), std::string::npos) << message[t][o];
      }
      EXPECT_EQ(successes, 1) << calls[o]->label() << " round " << round;
      EXPECT_EQ(calls[o]->result(), expected[o]) << calls[o]->label() << " round " << round;
      calls[o]->release();
    }
  }
}

// ---- the runtime's memory registry ------------------------------------------------------------------------------
// Stage one: every thread allocates and frees blocks of many sizes (some 2 MiB+, the huge-page path), writing and
// checking its own pattern, and meanwhile frees foreign pointers (its stack, the inside of its own live block, a
// new[] block, a live aclrtMallocHost block, null), which must all be refused without disturbing anything.
// Stage two (after a barrier; nobody allocates, so no freed address can be handed out again): every thread frees
// its blocks, each twice (the second free refused), and all threads free the same shared blocks at once: exactly
// one free of each succeeds.
TEST(Concurrency, MallocFreeFromManyThreads) {
  constexpr int kRounds = 3, kStepsPerRound = 300, kShared = 16;
  Barrier barrier(kCallers);
  std::vector<void*> shared(kShared, nullptr);
  std::vector<std::vector<int>> shared_wins(kRounds, std::vector<int>(kShared, 0));
  std::mutex wins_mutex;
  std::vector<std::vector<std::string>> failures(kCallers);
  run_threads(kCallers, [&](int t) {
    auto fail = [&](const std::string& what) {
      if (failures[t].size() < 20) failures[t].push_back(what);
    };
    std::mt19937 rng(77 + t);
    struct Block {
      uint8_t* p;
      size_t size;
      uint8_t tag;
    };
    std::vector<Block> live;
    int stack_value = 0;
    std::unique_ptr<uint8_t[]> heap(new uint8_t[256]);
    void* host = nullptr;
    if (aclrtMallocHost(&host, 512) != ACL_SUCCESS) fail("aclrtMallocHost failed");
    auto check_block = [&](const Block& b) {
      if (b.p[0] != b.tag || b.p[b.size / 2] != b.tag || b.p[b.size - 1] != b.tag) fail("block pattern overwritten");
    };
    auto refuse = [&](void* p, const char* what) {
      const aclError st = aclrtFree(p);
      if (st == ACL_SUCCESS) {
        fail(std::string("aclrtFree accepted ") + what);
      } else if (std::string(aclGetRecentErrMsg()).find("aclrtFree") == std::string::npos) {
        fail(std::string("aclrtFree of ") + what + ": message " + aclGetRecentErrMsg());
      }
    };
    for (int round = 0; round < kRounds; ++round) {
      if (t == 0) {  // the shared blocks of this round, made before the first barrier
        for (void*& p : shared)
          if (aclrtMalloc(&p, 1 + rng() % 4096, ACL_MEM_MALLOC_NORMAL_ONLY) != ACL_SUCCESS) p = nullptr;
      }
      barrier.wait();
      for (int step = 0; step < kStepsPerRound; ++step) {
        const unsigned r = rng();
        if (live.size() < 12 || r % 3 != 0) {
          const size_t size = step % 97 == 0 ? (size_t{2} << 20) + r % 4096 : 1 + r % 20000;
          void* p = nullptr;
          if (aclrtMalloc(&p, size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS || p == nullptr) {
            fail("aclrtMalloc failed: " + std::string(aclGetRecentErrMsg()));
            continue;
          }
          const uint8_t tag = static_cast<uint8_t>(t * 31 + step);
          std::memset(p, tag, size);
          live.push_back(Block{static_cast<uint8_t*>(p), size, tag});
        } else {
          const size_t i = r % live.size();
          check_block(live[i]);
          if (aclrtFree(live[i].p) != ACL_SUCCESS) fail("aclrtFree of a live block refused: " + std::string(aclGetRecentErrMsg()));
          live[i] = live.back();
          live.pop_back();
        }
        switch (step % 6) {  // foreign pointers, refused while the others allocate and free
          case 0: refuse(&stack_value, "a stack address"); break;
          case 1:
            if (!live.empty()) refuse(live.back().p + (live.back().size > 64 ? 64 : 1), "the inside of a live block");
            break;
          case 2: refuse(heap.get(), "a new[] block"); break;
          case 3: refuse(host, "an aclrtMallocHost block"); break;
          case 4: refuse(nullptr, "null"); break;
          default:
            if (!live.empty() && aclrtFreeHost(live.back().p) == ACL_SUCCESS) fail("aclrtFreeHost accepted device memory");
            break;
        }
      }
      barrier.wait();  // stage two: frees only
      for (const Block& b : live) {
        check_block(b);
        if (aclrtFree(b.p) != ACL_SUCCESS) fail("aclrtFree of a live block refused: " + std::string(aclGetRecentErrMsg()));
        refuse(b.p, "a block freed before (double free)");
      }
      live.clear();
      for (int k = 0; k < kShared; ++k) {
        void* p = shared[(k + t * 5) % kShared];
        if (p == nullptr) continue;
        if (aclrtFree(p) == ACL_SUCCESS) {
          std::lock_guard<std::mutex> lock(wins_mutex);
          ++shared_wins[round][(k + t * 5) % kShared];
        }
      }
      barrier.wait();  // every free of the shared blocks is done before thread 0 allocates the next ones
    }
    if (host != nullptr && aclrtFreeHost(host) != ACL_SUCCESS) fail("aclrtFreeHost of a live host block refused");
  });
  for (int t = 0; t < kCallers; ++t)
    for (const std::string& f : failures[t]) ADD_FAILURE() << "thread " << t << ": " << f;
  for (int round = 0; round < kRounds; ++round)
    for (int k = 0; k < kShared; ++k)
      EXPECT_EQ(shared_wins[round][k], 1) << "shared block " << k << " round " << round << ": frees that succeeded";
}

// ---- aclGetRecentErrMsg is per thread ----------------------------------------------------------------------------
// Each round, every thread fails a call with a message only it can produce (a value unique to the thread in it),
// then — after a barrier, while the odd (then the even) threads keep failing with new messages — the others read
// theirs again, many times: the text (and the buffer the pointer shows) is still their own.
TEST(Concurrency, RecentErrorMessageIsPerThread) {
  constexpr int kRounds = 6, kReads = 200;
  Barrier barrier(kCallers);
  std::vector<std::vector<std::string>> failures(kCallers);
  run_threads(kCallers, [&](int t) {
    auto fail = [&](const std::string& what) {
      if (failures[t].size() < 20) failures[t].push_back(what);
    };
    void* block = nullptr;
    if (aclrtMalloc(&block, 4096, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) fail("aclrtMalloc failed");
    std::vector<uint8_t> src(4096);
    std::vector<uint8_t> x_bytes(static_cast<size_t>(2 * 3 * 4 * 8) * 4), cs_bytes(static_cast<size_t>(4 * 8) * 4);
    // A failure whose message carries `value` (unique to this thread and round); returns the message.
    auto fail_with = [&](int kind, int value) -> std::string {
      switch (kind % 4) {
        case 0:
          if (aclrtSetDevice(value) == ACL_SUCCESS) fail("aclrtSetDevice accepted a bad device");
          break;
        case 1:
          if (aclrtMemcpy(block, static_cast<size_t>(value), src.data(), static_cast<size_t>(value) + 1,
                          ACL_MEMCPY_HOST_TO_DEVICE) == ACL_SUCCESS)
            fail("aclrtMemcpy accepted count > destMax");
          break;
        case 2: {
          const int64_t dims[4] = {2, 3, 4, 8}, cs_dims[4] = {1, 4, 1, 8}, storage = 2 * 3 * 4 * 8, cs_storage = 32;
          aclTensor* x = aclCreateTensor(dims, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, &storage, 1, x_bytes.data());
          aclTensor* c = aclCreateTensor(cs_dims, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, &cs_storage, 1,
                                         cs_bytes.data());
          const int64_t slice_values[2] = {0, 8};
          aclIntArray* slice = aclCreateIntArray(slice_values, 2);
          uint64_t ws = 0;
          aclOpExecutor* exec = nullptr;
          if (aclnnInplacePartialRotaryMulGetWorkspaceSize(x, c, c, value, slice, &ws, &exec) == 0)
            fail("rotaryMode " + std::to_string(value) + " accepted");
          aclDestroyIntArray(slice);
          aclDestroyTensor(c);
          aclDestroyTensor(x);
          break;
        }
        default: {
          const int64_t dims[1] = {value + 1}, storage = value;
          if (aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, &storage, 1, x_bytes.data()) != nullptr)
            fail("aclCreateTensor accepted a view outside its storage");
          break;
        }
      }
      return aclGetRecentErrMsg();
    };
    for (int round = 0; round < kRounds; ++round) {
      const int value = 1000 + 100 * round + t;
      const std::string mine = fail_with(round + t, value);
      if (mine.find(std::to_string(value)) == std::string::npos) fail("message without its value: " + mine);
      const char* pointer = aclGetRecentErrMsg();
      barrier.wait();  // every thread has its own message now
      for (int phase = 0; phase < 2; ++phase) {
        if (t % 2 == phase) {  // keep failing, with messages of other values
          for (int i = 0; i < kReads / 10; ++i) fail_with(round + t + i, 5000 + 100 * i + t);
        } else {
          for (int i = 0; i < kReads; ++i) {
            if (mine != aclGetRecentErrMsg() || mine != pointer) {
              fail("round " + std::to_string(round) + ": message became \"" + aclGetRecentErrMsg() + "\", was \"" +
                   mine + "\"");
              break;
            }
            std::this_thread::yield();
          }
        }
        barrier.wait();
        if (t % 2 == phase) {  // this thread's own later failures did change its message; make it `mine` again
          fail_with(round + t, value);
          if (mine != aclGetRecentErrMsg()) fail("the same failure gave another message: " + std::string(aclGetRecentErrMsg()));
          pointer = aclGetRecentErrMsg();
        }
        barrier.wait();
      }
    }
    if (block != nullptr) aclrtFree(block);
  });
  for (int t = 0; t < kCallers; ++t)
    for (const std::string& f : failures[t]) ADD_FAILURE() << "thread " << t << ": " << f;
}

}  // namespace
