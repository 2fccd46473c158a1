// rope_cases.h — one RoPE problem per struct, and a runner that builds its guarded random tensors, computes the
// fp64 reference, runs the fast op (txops:: C++ API) under the current ISA / thread settings, and checks:
// the status is ok, the kernels the planner chose are the active ISA's (core/plan_record.h), every output is
// within the tolerance table's "rope" / "rope_grad_cos_sin" row, no byte outside the output views (guards,
// padding, untouched slice channels, inputs) changed. The runners return "" on success or a one-line description
// of the first failure, and optionally the outputs' bit patterns (for the thread-count bit-identity tests); the
// plan record stays readable after a runner returns (support/isa_threads.h: ran_on_threads).
#ifndef TXOPS_TESTS_SUPPORT_ROPE_CASES_H_
#define TXOPS_TESTS_SUPPORT_ROPE_CASES_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "support/rope_test_util.h"
#include "txops/txops.h"

namespace txops {
namespace testing {

// aclnnInterleaveRope: x, out (B, N, S, D); cos/sin (Bc, 1, Sc, D).
struct InterleaveRopeCase {
  DType x_dtype = DType::kF32, cs_dtype = DType::kF32;
  int64_t B = 2, N = 3, S = 5, D = 64, Bc = 2, Sc = 5;
  ViewStyle x_style = ViewStyle::kContiguous, cs_style = ViewStyle::kContiguous, out_style = ViewStyle::kContiguous;
  bool cs_stride0 = false;  // cos/sin given at full (B, 1, S, D) size with stride 0 on the broadcast axes
  bool in_place = false;    // out is x itself
  uint32_t seed = 1;
  std::string describe() const;
};

// aclnnInplacePartialRotaryMul(Grad): x (B, S, N, D), slice [start, end), cos/sin (Bc, Sc, Nc, end - start).
struct PartialRotaryCase {
  DType x_dtype = DType::kF32, cs_dtype = DType::kF32;
  int64_t B = 2, S = 3, N = 5, D = 64, Bc = 1, Sc = 3, Nc = 1;
  int64_t start = 0, end = 64;
  RotaryMode mode = RotaryMode::kHalf;
  bool backward = false;
  ViewStyle x_style = ViewStyle::kContiguous, cs_style = ViewStyle::kContiguous;
  bool cs_stride0 = false;
  uint32_t seed = 1;
  std::string describe() const;
};

// aclnnApplyRotaryPosEmbV2 (forward) / aclnnApplyRotaryPosEmbGrad (backward). Shapes from the layout:
// BSND q (B,S,Nq,D) cos (Bc,S,1,Dc); SBND q (S,B,Nq,D) cos (S,Bc,1,Dc); BNSD q (B,Nq,S,D) cos (Bc,1,S,Dc);
// TND q (T=B*S,Nq,D) cos (T,1,Dc). Bc = cos_batch_one ? 1 : B. Dc = cos_dim (0 means D).
struct ApplyRotaryCase {
  DType q_dtype = DType::kF32, cs_dtype = DType::kF32;
  Layout layout = Layout::kBSND;
  RotaryMode mode = RotaryMode::kHalf;
  int64_t B = 2, S = 3, Nq = 5, Nk = 2, D = 64, cos_dim = 0;
  bool cos_batch_one = false;
  bool backward = false;
  bool with_qk = true;  // backward: pass query and key, check gradCos / gradSin
  ViewStyle q_style = ViewStyle::kContiguous, cs_style = ViewStyle::kContiguous, out_style = ViewStyle::kContiguous;
  uint32_t seed = 1;
  std::string describe() const;
};

std::string run_case(const InterleaveRopeCase& c, std::vector<uint64_t>* bits = nullptr);
std::string run_case(const PartialRotaryCase& c, std::vector<uint64_t>* bits = nullptr);
std::string run_case(const ApplyRotaryCase& c, std::vector<uint64_t>* bits = nullptr);

// Shapes of the Apply case's tensors (exposed for the adjoint and aclnn tests).
std::vector<int64_t> apply_q_shape(const ApplyRotaryCase& c, int64_t n);
std::vector<int64_t> apply_cos_shape(const ApplyRotaryCase& c);

// Pieces the RoPE runners share (rope_cases.cpp, rope_family_cases.cpp); each returns "" when the check passes.
// One output against its reference under a tolerance-table row ("rope", "rope_grad_cos_sin").
std::string check_output(const char* name, const TensorView& y, const std::vector<double>& ref, const char* row);
// Guards intact and no byte outside the elements `may_change` allows changed.
std::string check_bytes(const char* name, const GuardedTensor& t, const std::vector<uint8_t>& before,
                        const std::function<bool(const int64_t*)>& may_change);
bool no_element(const int64_t*);     // may_change predicates
bool every_element(const int64_t*);
// cos/sin at their own (broadcast) shape, or at `full` shape with stride 0 where `own` has size 1.
std::unique_ptr<GuardedTensor> make_cos_sin(std::mt19937* rng, DType dtype, const std::vector<int64_t>& own,
                                            const std::vector<int64_t>& full, bool stride0, ViewStyle style);
// The op's kernels were the active ISA's (core/plan_record.h).
std::string check_plan();
void append_bits(std::vector<uint64_t>* bits, const TensorView& v);

// Records a failed case as a gtest failure; after `limit` failures it returns false so that a sweep can stop
// early instead of printing thousands of lines when a whole op is broken.
class FailureBudget {
 public:
  explicit FailureBudget(int limit = 8) : left_(limit) {}
  bool check(const std::string& error, const std::string& what);  // true: keep going
 private:
  int left_;
};

// Runs case `c` with 1, 2, 3 and 4 threads and expects every output bit-identical to the 1-thread run. Each count
// is its own partition: ran_on_threads checks that the plan split the work that many ways and OpenMP ran that
// many threads (whatever the core count: support/isa_threads.h). Then a 3-thread plan on a team of one thread,
// which takes the other parts' grains (core/work_stealing.h). False when the budget says stop.
template <class Case>
bool expect_bit_identical_for_one_to_four_threads(const Case& c, FailureBudget* budget) {
  std::vector<uint64_t> first;
  for (int threads = 1; threads <= 4; ++threads) {
    ScopedThreads scoped_threads(threads);
    std::vector<uint64_t> bits;
    if (!budget->check(run_case(c, &bits), c.describe())) return false;
    EXPECT_TRUE(ran_on_threads(threads)) << c.describe();
    if (threads == 1) first = bits;
    EXPECT_TRUE(bits == first) << c.describe() << ": outputs differ from the 1-thread result";
  }
  {  // a 3-way plan on a team of one thread: it runs its own grains, then takes every other part's from the back
    ScopedThreads scoped_threads(3);
    ScopedTeamOfOne team_of_one;
    std::vector<uint64_t> bits;
    if (!budget->check(run_case(c, &bits), c.describe() + " (3 parts, one thread)")) return false;
    EXPECT_TRUE(bits == first) << c.describe() << ": 3 parts on one thread differ from the 1-thread result";
  }
  return true;
}

// The dtype pairings (activations, cos/sin) the ops accept: same dtype, and fp32 cos/sin with 16-bit
// activations; `any_pairing` adds the others (InplacePartialRotaryMul accepts any pairing).
std::vector<std::pair<DType, DType>> dtype_pairings(bool any_pairing);

const char* layout_name(Layout layout);
std::vector<Layout> all_layouts();

}  // namespace testing
}  // namespace txops

#endif  // TXOPS_TESTS_SUPPORT_ROPE_CASES_H_
