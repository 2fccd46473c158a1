// cases_rope.cpp — the RoPE suites of docs/measurement.md as bench cases: llama3-8b-train
// (ApplyRotaryPosEmbGrad), llama3-8b-decode (ApplyRotaryPosEmbV2), deepseek-v3-mla (InterleaveRope) and
// deepseek-v3-partial (InplacePartialRotaryMul and its Grad), each in bf16, fp16 and fp32.
// Bytes counted (each tensor once): every input the op reads (cos and sin at their own, broadcast size) plus
// every output it writes; for in-place ops the updated tensor counts as read + written; for the partial ops
// only the slice [start, end) of x is read and written.
#include <algorithm>
#include <cstring>

#include "aclnnop/aclnn_apply_rotary_pos_emb_v2.h"
#include "aclnnop/aclnn_interleave_rope.h"
#include "bench_case.h"
#include "ops/rope/reference.h"

namespace txops {
namespace bench {

namespace {

double tensor_bytes(const HostTensor& t) { return static_cast<double>(t.bytes()); }

// ---- ApplyRotaryPosEmbGrad, BSND, half mode; with or without q/k (then gradCos / gradSin too). ----
class RopeGradCase : public BenchCase {
 public:
  RopeGradCase(const CaseSpec& spec, const Dims& d) : with_qk_(spec.variant == "with_qk") {
    const int64_t B = d.get("B"), S = d.get("S"), Nq = d.get("Nq"), Nk = d.get("Nk"), D = d.get("D");
    const DType dt = spec.dtype;
    gq_embed_ = HostTensor(dt, {B, S, Nq, D});
    gk_embed_ = HostTensor(dt, {B, S, Nk, D});
    cos_ = HostTensor(dt, {1, S, 1, D});
    sin_ = HostTensor(dt, {1, S, 1, D});
    gq_ = HostTensor(dt, {B, S, Nq, D});
    gk_ = HostTensor(dt, {B, S, Nk, D});
    fill_uniform(&gq_embed_, 11, -1, 1);
    fill_uniform(&gk_embed_, 12, -1, 1);
    fill_cos_sin(&cos_, &sin_, 13);
    bytes = tensor_bytes(gq_embed_) + tensor_bytes(gk_embed_) + tensor_bytes(cos_) + tensor_bytes(sin_) +
            tensor_bytes(gq_) + tensor_bytes(gk_);
    if (with_qk_) {
      q_ = HostTensor(dt, {B, S, Nq, D});
      k_ = HostTensor(dt, {B, S, Nk, D});
      gcos_ = HostTensor(dt, {1, S, 1, D});
      gsin_ = HostTensor(dt, {1, S, 1, D});
      fill_uniform(&q_, 14, -1, 1);
      fill_uniform(&k_, 15, -1, 1);
      bytes += tensor_bytes(q_) + tensor_bytes(k_) + tensor_bytes(gcos_) + tensor_bytes(gsin_);
    }
  }
  void compute_reference() override {
    reference::apply_rotary_pos_emb_grad(gq_embed_.view, gk_embed_.view, cos_.view, sin_.view, qp(), kp(),
                                         RotaryMode::kHalf, Layout::kBSND, &ref_gq_, &ref_gk_, &ref_gcos_,
                                         &ref_gsin_);
  }
  Status run() override {
    return apply_rotary_pos_emb_grad(gq_embed_.view, gk_embed_.view, cos_.view, sin_.view, qp(), kp(),
                                     RotaryMode::kHalf, Layout::kBSND, gq_.view, gk_.view,
                                     with_qk_ ? &gcos_.view : nullptr, with_qk_ ? &gsin_.view : nullptr);
  }
  std::vector<TensorView> outputs() const override {
    if (with_qk_) return {gq_.view, gk_.view, gcos_.view, gsin_.view};
    return {gq_.view, gk_.view};
  }
  CheckResult check() override {
    CheckResult r;
    r.passed = true;
    accumulate_check("grad_query", gq_.view, ref_gq_, "rope", &r);
    accumulate_check("grad_key", gk_.view, ref_gk_, "rope", &r);
    if (with_qk_) {
      accumulate_check("grad_cos", gcos_.view, ref_gcos_, "rope_grad_cos_sin", &r);
      accumulate_check("grad_sin", gsin_.view, ref_gsin_, "rope_grad_cos_sin", &r);
    }
    return r;
  }

 private:
  const TensorView* qp() const { return with_qk_ ? &q_.view : nullptr; }
  const TensorView* kp() const { return with_qk_ ? &k_.view : nullptr; }
  bool with_qk_;
  HostTensor gq_embed_, gk_embed_, cos_, sin_, q_, k_, gq_, gk_, gcos_, gsin_;
  std::vector<double> ref_gq_, ref_gk_, ref_gcos_, ref_gsin_;
};

// ---- ApplyRotaryPosEmbV2 (in place on q and k), BSND, half mode, cos (B, S, 1, D). ----
class RopeV2Case : public BenchCase {
 public:
  RopeV2Case(const CaseSpec& spec, const Dims& d) {
    const int64_t B = d.get("B"), S = d.get("S"), Nq = d.get("Nq"), Nk = d.get("Nk"), D = d.get("D");
    const DType dt = spec.dtype;
    q_ = HostTensor(dt, {B, S, Nq, D});
    k_ = HostTensor(dt, {B, S, Nk, D});
    q0_ = HostTensor(dt, {B, S, Nq, D});
    k0_ = HostTensor(dt, {B, S, Nk, D});
    cos_ = HostTensor(dt, {B, S, 1, D});
    sin_ = HostTensor(dt, {B, S, 1, D});
    fill_uniform(&q0_, 21, -1, 1);
    fill_uniform(&k0_, 22, -1, 1);
    fill_cos_sin(&cos_, &sin_, 23);
    reset();
    bytes = 2 * tensor_bytes(q_) + 2 * tensor_bytes(k_) + tensor_bytes(cos_) + tensor_bytes(sin_);
    acl_q_.reset(new AclView(q_));
    acl_k_.reset(new AclView(k_));
    acl_cos_.reset(new AclView(cos_));
    acl_sin_.reset(new AclView(sin_));
  }
  void compute_reference() override {
    reference::apply_rotary_pos_emb(q0_.view, k0_.view, cos_.view, sin_.view, Layout::kBSND, RotaryMode::kHalf,
                                    &ref_q_, &ref_k_);
  }
  void reset() override {
    q_.buffer.copy_from(q0_.buffer);
    k_.buffer.copy_from(k0_.buffer);
  }
  Status run() override {
    return apply_rotary_pos_emb(q_.view, k_.view, cos_.view, sin_.view, Layout::kBSND, RotaryMode::kHalf);
  }
  bool has_aclnn() const override { return true; }
  Status run_aclnn() override {
    uint64_t ws = 0;
    aclOpExecutor* exec = nullptr;
    static char mode[] = "half";
    aclnnStatus st = aclnnApplyRotaryPosEmbV2GetWorkspaceSize(acl_q_->get(), acl_k_->get(), acl_cos_->get(),
                                                              acl_sin_->get(), 1, mode, &ws, &exec);
    if (st != ACLNN_SUCCESS) return acl_status(st);
    return acl_status(aclnnApplyRotaryPosEmbV2(workspace_.get(ws), ws, exec, nullptr));
  }
  std::vector<TensorView> outputs() const override { return {q_.view, k_.view}; }
  CheckResult check() override {
    CheckResult r;
    r.passed = true;
    accumulate_check("query", q_.view, ref_q_, "rope", &r);
    accumulate_check("key", k_.view, ref_k_, "rope", &r);
    return r;
  }

 private:
  HostTensor q_, k_, q0_, k0_, cos_, sin_;
  std::unique_ptr<AclView> acl_q_, acl_k_, acl_cos_, acl_sin_;
  Workspace workspace_;
  std::vector<double> ref_q_, ref_k_;
};

// ---- InterleaveRope: x, out (B, N, S, D), cos (Bc, 1, S, D) with Bc = B for decode (S = 1), else 1. ----
class InterleaveRopeCase : public BenchCase {
 public:
  InterleaveRopeCase(const CaseSpec& spec, const Dims& d) {
    const int64_t B = d.get("B"), N = d.get("N"), S = d.get("S"), D = d.get("D");
    const int64_t Bc = S == 1 ? B : 1;
    const DType dt = spec.dtype;
    x_ = HostTensor(dt, {B, N, S, D});
    out_ = HostTensor(dt, {B, N, S, D});
    cos_ = HostTensor(dt, {Bc, 1, S, D});
    sin_ = HostTensor(dt, {Bc, 1, S, D});
    fill_uniform(&x_, 31, -1, 1);
    fill_cos_sin(&cos_, &sin_, 32);
    bytes = tensor_bytes(x_) + tensor_bytes(out_) + tensor_bytes(cos_) + tensor_bytes(sin_);
    acl_x_.reset(new AclView(x_));
    acl_out_.reset(new AclView(out_));
    acl_cos_.reset(new AclView(cos_));
    acl_sin_.reset(new AclView(sin_));
  }
  void compute_reference() override { reference::interleave_rope(x_.view, cos_.view, sin_.view, &ref_); }
  void reset() override { std::memset(out_.buffer.data(), 0, out_.bytes()); }
  Status run() override { return interleave_rope(x_.view, cos_.view, sin_.view, out_.view); }
  bool has_aclnn() const override { return true; }
  Status run_aclnn() override {
    uint64_t ws = 0;
    aclOpExecutor* exec = nullptr;
    aclnnStatus st =
        aclnnInterleaveRopeGetWorkspaceSize(acl_x_->get(), acl_cos_->get(), acl_sin_->get(), acl_out_->get(), &ws, &exec);
    if (st != ACLNN_SUCCESS) return acl_status(st);
    return acl_status(aclnnInterleaveRope(workspace_.get(ws), ws, exec, nullptr));
  }
  std::vector<TensorView> outputs() const override { return {out_.view}; }
  CheckResult check() override {
    CheckResult r;
    r.passed = true;
    accumulate_check("out", out_.view, ref_, "rope", &r);
    return r;
  }

 private:
  HostTensor x_, out_, cos_, sin_;
  std::unique_ptr<AclView> acl_x_, acl_out_, acl_cos_, acl_sin_;
  Workspace workspace_;
  std::vector<double> ref_;
};

// ---- InplacePartialRotaryMul(Grad): x (B, S, N, D), slice [lo, hi), cos (1, S, 1, hi - lo). ----
class PartialRotaryCase : public BenchCase {
 public:
  PartialRotaryCase(const CaseSpec& spec, const Dims& d, bool backward, RotaryMode mode)
      : backward_(backward), mode_(mode), lo_(d.get("lo")), hi_(d.get("hi")) {
    const int64_t B = d.get("B"), S = d.get("S"), N = d.get("N"), D = d.get("D");
    const DType dt = spec.dtype;
    x_ = HostTensor(dt, {B, S, N, D});
    x0_ = HostTensor(dt, {B, S, N, D});
    cos_ = HostTensor(dt, {1, S, 1, hi_ - lo_});
    sin_ = HostTensor(dt, {1, S, 1, hi_ - lo_});
    fill_uniform(&x0_, 41, -1, 1);
    fill_cos_sin(&cos_, &sin_, 42, mode_);
    reset();
    const double slice_bytes = static_cast<double>(B * S * N * (hi_ - lo_)) * dtype_size(dt);
    bytes = 2 * slice_bytes + tensor_bytes(cos_) + tensor_bytes(sin_);
    slice_rows = static_cast<size_t>(B * S * N);
    slice_row_bytes = static_cast<size_t>(D) * dtype_size(dt);
    slice_lo = static_cast<size_t>(lo_) * dtype_size(dt);
    slice_hi = static_cast<size_t>(hi_) * dtype_size(dt);
  }
  void compute_reference() override {
    reference::inplace_partial_rotary_mul(x0_.view, cos_.view, sin_.view, mode_, lo_, hi_, backward_, &ref_);
  }
  void reset() override { x_.buffer.copy_from(x0_.buffer); }
  Status run() override {
    return backward_ ? inplace_partial_rotary_mul_grad(x_.view, cos_.view, sin_.view, mode_, lo_, hi_)
                     : inplace_partial_rotary_mul(x_.view, cos_.view, sin_.view, mode_, lo_, hi_);
  }
  std::vector<TensorView> outputs() const override { return {x_.view}; }
  CheckResult check() override {
    CheckResult r;
    r.passed = true;
    accumulate_check(backward_ ? "dy" : "x", x_.view, ref_, "rope", &r);
    return r;
  }

 private:
  bool backward_;
  RotaryMode mode_;
  int64_t lo_, hi_;
  HostTensor x_, x0_, cos_, sin_;
  std::vector<double> ref_;
};

template <class Case>
std::unique_ptr<BenchCase> make_case(const CaseSpec& spec, const Dims& dims) {
  return std::unique_ptr<BenchCase>(new Case(spec, dims));
}

}  // namespace

std::vector<CaseSpec> rope_suites(bool quick) {
  std::vector<CaseSpec> specs;
  const DType dtypes[] = {DType::kBF16, DType::kF16, DType::kF32};
  for (DType dt : dtypes) {
    for (const char* variant : {"with_qk", "no_qk"}) {
      CaseSpec s;
      s.suite = "llama3-8b-train";
      s.op = "apply_rotary_pos_emb_grad";
      s.variant = variant;
      s.dtype = dt;
      s.dims = quick ? Dims{{"B", 1}, {"S", 64}, {"Nq", 4}, {"Nk", 2}, {"D", 128}}
                     : Dims{{"B", 1}, {"S", 8192}, {"Nq", 32}, {"Nk", 8}, {"D", 128}};
      s.make = make_case<RopeGradCase>;
      specs.push_back(s);
    }
    {
      CaseSpec s;
      s.suite = "llama3-8b-decode";
      s.op = "apply_rotary_pos_emb";
      s.variant = "half";
      s.dtype = dt;
      s.dims = quick ? Dims{{"B", 4}, {"S", 1}, {"Nq", 4}, {"Nk", 2}, {"D", 128}}
                     : Dims{{"B", 64}, {"S", 1}, {"Nq", 32}, {"Nk", 8}, {"D", 128}};
      s.overhead_dims = Dims{{"B", 1}, {"S", 1}, {"Nq", 1}, {"Nk", 1}, {"D", 128}};
      s.make = make_case<RopeV2Case>;
      specs.push_back(s);
    }
    for (int prefill = 0; prefill < 2; ++prefill) {
      CaseSpec s;
      s.suite = "deepseek-v3-mla";
      s.op = "interleave_rope";
      s.variant = prefill ? "prefill" : "decode";
      s.dtype = dt;
      if (prefill)
        s.dims = quick ? Dims{{"B", 1}, {"N", 4}, {"S", 64}, {"D", 64}}
                       : Dims{{"B", 1}, {"N", 128}, {"S", 4096}, {"D", 64}};
      else
        s.dims = quick ? Dims{{"B", 4}, {"N", 8}, {"S", 1}, {"D", 64}}
                       : Dims{{"B", 32}, {"N", 128}, {"S", 1}, {"D", 64}};
      if (!prefill) s.overhead_dims = Dims{{"B", 1}, {"N", 1}, {"S", 1}, {"D", 64}};
      s.make = make_case<InterleaveRopeCase>;
      specs.push_back(s);
    }
    for (int backward = 0; backward < 2; ++backward) {
      for (RotaryMode mode :
           {RotaryMode::kHalf, RotaryMode::kInterleave, RotaryMode::kQuarter, RotaryMode::kInterleaveHalf}) {
        CaseSpec s;
        s.suite = "deepseek-v3-partial";
        s.op = backward ? "inplace_partial_rotary_mul_grad" : "inplace_partial_rotary_mul";
        s.variant = std::string("mode=") + rotary_mode_name(mode);
        s.dtype = dt;
        s.dims = quick ? Dims{{"B", 1}, {"S", 32}, {"N", 2}, {"D", 192}, {"lo", 128}, {"hi", 192}}
                       : Dims{{"B", 4}, {"S", 4096}, {"N", 16}, {"D", 192}, {"lo", 128}, {"hi", 192}};
        s.make = [backward, mode](const CaseSpec& spec, const Dims& dims) {
          return std::unique_ptr<BenchCase>(new PartialRotaryCase(spec, dims, backward != 0, mode));
        };
        specs.push_back(s);
      }
    }
  }
  return specs;
}

}  // namespace bench
}  // namespace txops
