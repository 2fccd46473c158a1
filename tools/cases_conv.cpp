// cases_conv.cpp — `txops bench` cases of the causal conv at Qwen3-Next's shape (the linear-attention layers'
// conv over the mixed q/k/v projection: dim = 2·16·128 + 32·128 = 8192, K = 4, bf16): causal_conv1d_fn in
// qwen3-next-prefill (8192 tokens as one sequence and as 8, continuing from a state: the history rows are read)
// and causal_conv1d_update in qwen3-next-decode (64 sequences × 1 token on a cache of 256 lines). Memory-bound:
// bytes = x + y + weight + bias + the K-1 history rows read and the state rows written per sequence.
#include <algorithm>
#include <vector>

#include "bench_case.h"
#include "ops/causal_conv1d/reference.h"

namespace txops {
namespace bench {
namespace {

double tb(const HostTensor& t) { return static_cast<double>(t.bytes()); }

class CausalConvCase : public BenchCase {
 public:
  CausalConvCase(const CaseSpec& spec, const Dims& d) : update_(spec.op == "causal_conv1d_update") {
    const int64_t B = d.get("B"), dim = d.get("dim"), K = d.get("K");
    const int64_t L = update_ ? 1 : d.get("T") / B, lines = update_ ? d.get("lines") : B;
    const DType dt = spec.dtype;
    x_ = HostTensor(dt, {B, L, dim});
    y_ = HostTensor(dt, {B, L, dim});
    weight_ = HostTensor(dt, {K, dim});
    bias_ = HostTensor(dt, {dim});
    states_ = HostTensor(dt, {lines, K - 1, dim});
    states0_ = HostTensor(dt, {lines, K - 1, dim});
    fill_uniform(&x_, 71, -2, 2);
    fill_uniform(&weight_, 72, -1, 1);
    fill_uniform(&bias_, 73, -0.5f, 0.5f);
    fill_uniform(&states0_, 74, -2, 2);
    std::vector<int32_t> lines_of(static_cast<size_t>(B)), ones(static_cast<size_t>(B), 1);
    for (int64_t b = 0; b < B; ++b) lines_of[b] = static_cast<int32_t>((b * 97 + 5) % lines);  // distinct: lines >= B
    indices_ = int32_tensor(lines_of);
    per_sequence_ = int32_tensor(ones);  // prefill: continue from the state (mode 1); update: 1 accepted = offset 0
    reset();
    tokens = B * L;
    const double state_rows = 2.0 * B * (K - 1) * dim * dtype_size(dt);
    bytes = tb(x_) + tb(y_) + tb(weight_) + tb(bias_) + state_rows + tb(indices_) + (update_ ? 0 : tb(per_sequence_));
  }
  void compute_reference() override {
    reference::causal_conv1d(update_, x_.view, weight_.view, states0_.view, &bias_.view, nullptr, &indices_.view,
                             update_ ? nullptr : &per_sequence_.view, ConvActivation::kSilu, -1, &ref_y_,
                             &ref_states_);
  }
  void reset() override { states_.buffer.copy_from(states0_.buffer); }
  Status run() override {
    if (update_)
      return causal_conv1d_update(x_.view, weight_.view, states_.view, &bias_.view, nullptr, &indices_.view, nullptr,
                                  ConvActivation::kSilu, -1, y_.view);
    return causal_conv1d_fn(x_.view, weight_.view, states_.view, &bias_.view, nullptr, &indices_.view,
                            &per_sequence_.view, ConvActivation::kSilu, -1, y_.view);
  }
  std::vector<TensorView> outputs() const override { return {y_.view, states_.view}; }
  CheckResult check() override {
    CheckResult r;
    r.passed = true;
    accumulate_check("y", y_.view, ref_y_, "causal_conv1d", &r);
    accumulate_check("conv_states", states_.view, ref_states_, "causal_conv1d", &r);
    return r;
  }

 private:
  bool update_;
  HostTensor x_, y_, weight_, bias_, states_, states0_, indices_, per_sequence_;
  std::vector<double> ref_y_, ref_states_;
};

std::unique_ptr<BenchCase> make_conv_case(const CaseSpec& spec, const Dims& dims) {
  return std::unique_ptr<BenchCase>(new CausalConvCase(spec, dims));
}

}  // namespace

std::vector<CaseSpec> conv_suites(bool quick) {
  std::vector<CaseSpec> specs;
  const int64_t dim = quick ? 256 : 8192;
  for (const char* variant : {"one_sequence", "equal"}) {
    CaseSpec s;
    s.suite = "qwen3-next-prefill";
    s.op = "causal_conv1d_fn";
    s.variant = variant;
    s.kind = CaseKind::kConv;
    s.dtype = DType::kBF16;
    s.dims = Dims{{"T", quick ? 160 : 8192}, {"B", std::string(variant) == "equal" ? 8 : 1}, {"dim", dim}, {"K", 4}};
    s.make = make_conv_case;
    specs.push_back(s);
  }
  CaseSpec s;
  s.suite = "qwen3-next-decode";
  s.op = "causal_conv1d_update";
  s.kind = CaseKind::kConv;
  s.dtype = DType::kBF16;
  s.dims = quick ? Dims{{"B", 4}, {"dim", dim}, {"K", 4}, {"lines", 16}}
                 : Dims{{"B", 64}, {"dim", dim}, {"K", 4}, {"lines", 256}};
  s.make = make_conv_case;
  specs.push_back(s);
  return specs;
}

}  // namespace bench
}  // namespace txops
