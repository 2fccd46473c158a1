// cases_rope_family.cpp — bench cases of CANN's general RoPE operators: llama3-8b-rotary
// (RotaryPositionEmbedding and its Grad with and without x, prefill and decode, BSND half mode, cos (B or 1, S,
// 1, D): B for decode) and vllm-rope-cache (RopeWithSinCosCache in place on query and key as vLLM calls it: decode
// 256 tokens, prefill 8192 tokens, a Qwen2-VL mrope prefill; Nq 32 / Nk 8 (mrope 28 / 4), head 128, a cache of
// 32768 positions), each in bf16, fp16 and fp32.
// Bytes counted (each tensor once): inputs at their own (broadcast) size plus outputs; in place, the updated tensor
// counts as read + written; the cache op reads one cache row per token (positions are random: mostly distinct).
#include <algorithm>
#include <random>

#include "aclnnop/aclnn_rope_with_sin_cos_cache.h"
#include "bench_case.h"
#include "ops/rope/reference.h"

namespace txops {
namespace bench {
namespace {

double bytes_of(const HostTensor& t) { return static_cast<double>(t.bytes()); }

// ---- RotaryPositionEmbedding(Grad): x (B, S, N, D), cos (B or 1, S, 1, D); half mode. ----
class RotaryCase : public BenchCase {
 public:
  RotaryCase(const CaseSpec& spec, const Dims& d, bool backward)
      : backward_(backward), with_x_(spec.variant == "with_x") {
    const int64_t B = d.get("B"), S = d.get("S"), N = d.get("N"), D = d.get("D");
    const DType dt = spec.dtype;
    const int64_t Bc = S == 1 ? B : 1;
    in_ = HostTensor(dt, {B, S, N, D});
    out_ = HostTensor(dt, {B, S, N, D});
    cos_ = HostTensor(dt, {Bc, S, 1, D});
    sin_ = HostTensor(dt, {Bc, S, 1, D});
    fill_uniform(&in_, 51, -1, 1);
    fill_cos_sin(&cos_, &sin_, 52);
    bytes = bytes_of(in_) + bytes_of(out_) + bytes_of(cos_) + bytes_of(sin_);
    if (with_x_) {
      x_ = HostTensor(dt, {B, S, N, D});
      dcos_ = HostTensor(dt, {Bc, S, 1, D});
      dsin_ = HostTensor(dt, {Bc, S, 1, D});
      fill_uniform(&x_, 53, -1, 1);
      bytes += bytes_of(x_) + bytes_of(dcos_) + bytes_of(dsin_);
    }
  }
  void compute_reference() override {
    if (backward_) {
      reference::rotary_position_embedding_grad(in_.view, cos_.view, sin_.view, with_x_ ? &x_.view : nullptr,
                                                RotaryMode::kHalf, &ref_out_, &ref_dcos_, &ref_dsin_);
    } else {
      reference::rotary_position_embedding(in_.view, cos_.view, sin_.view, RotaryMode::kHalf, nullptr, &ref_out_);
    }
  }
  Status run() override {
    if (!backward_) return rotary_position_embedding(in_.view, cos_.view, sin_.view, RotaryMode::kHalf, out_.view);
    return rotary_position_embedding_grad(in_.view, cos_.view, sin_.view, with_x_ ? &x_.view : nullptr,
                                          RotaryMode::kHalf, out_.view, with_x_ ? &dcos_.view : nullptr,
                                          with_x_ ? &dsin_.view : nullptr);
  }
  std::vector<TensorView> outputs() const override {
    if (with_x_) return {out_.view, dcos_.view, dsin_.view};
    return {out_.view};
  }
  CheckResult check() override {
    CheckResult r;
    r.passed = true;
    accumulate_check(backward_ ? "dx" : "out", out_.view, ref_out_, "rope", &r);
    if (with_x_) {
      accumulate_check("dcos", dcos_.view, ref_dcos_, "rope_grad_cos_sin", &r);
      accumulate_check("dsin", dsin_.view, ref_dsin_, "rope_grad_cos_sin", &r);
    }
    return r;
  }

 private:
  bool backward_, with_x_;
  HostTensor in_, out_, cos_, sin_, x_, dcos_, dsin_;
  std::vector<double> ref_out_, ref_dcos_, ref_dsin_;
};

// ---- RopeWithSinCosCache in place: query (T, Nq*D), key (T, Nk*D), cache (P, D), positions (T,) or (3, T). ----
class SinCosCacheCase : public BenchCase {
 public:
  SinCosCacheCase(const CaseSpec& spec, const Dims& d) : mrope_(spec.variant == "mrope") {
    const int64_t T = d.get("T"), Nq = d.get("Nq"), Nk = d.get("Nk"), D = d.get("D"), P = d.get("P");
    const DType dt = spec.dtype;
    head_size_ = D;
    q_ = HostTensor(dt, {T, Nq * D});
    k_ = HostTensor(dt, {T, Nk * D});
    q0_ = HostTensor(dt, {T, Nq * D});
    k0_ = HostTensor(dt, {T, Nk * D});
    cache_ = HostTensor(dt, {P, D});
    fill_uniform(&q0_, 61, -1, 1);
    fill_uniform(&k0_, 62, -1, 1);
    fill_cos_sin_cache(&cache_, 63);
    if (mrope_) section_ = {16, 24, 24};  // Qwen2-VL
    const int64_t rows = mrope_ ? 3 : 1;
    positions_ = HostTensor(DType::kI64, mrope_ ? std::vector<int64_t>{rows, T} : std::vector<int64_t>{T});
    std::mt19937_64 rng(64);
    int64_t* p = static_cast<int64_t*>(positions_.view.data);
    for (int64_t i = 0; i < rows * T; ++i) p[i] = static_cast<int64_t>(rng() % static_cast<uint64_t>(P));
    reset();
    bytes = 2 * bytes_of(q_) + 2 * bytes_of(k_) + bytes_of(positions_) +
            static_cast<double>(rows * T * D) * dtype_size(dt);
    acl_positions_.reset(new AclView(positions_));
    acl_q_.reset(new AclView(q_));
    acl_k_.reset(new AclView(k_));
    acl_cache_.reset(new AclView(cache_));
  }
  void compute_reference() override {
    reference::rope_with_sin_cos_cache(positions_.view, q0_.view, k0_.view, cache_.view, section_.data(),
                                       static_cast<int64_t>(section_.size()), head_size_, true, 0, &ref_q_, &ref_k_);
  }
  void reset() override {
    q_.buffer.copy_from(q0_.buffer);
    k_.buffer.copy_from(k0_.buffer);
  }
  Status run() override {
    return rope_with_sin_cos_cache(positions_.view, q_.view, k_.view, cache_.view, section_.data(),
                                   static_cast<int64_t>(section_.size()), head_size_, true, 0, q_.view, k_.view);
  }
  bool has_aclnn() const override { return !mrope_; }
  Status run_aclnn() override {
    uint64_t ws = 0;
    aclOpExecutor* exec = nullptr;
    aclnnStatus st = aclnnRopeWithSinCosCacheGetWorkspaceSize(acl_positions_->get(), acl_q_->get(), acl_k_->get(),
                                                              acl_cache_->get(), nullptr, head_size_, true,
                                                              acl_q_->get(), acl_k_->get(), &ws, &exec);
    if (st != ACLNN_SUCCESS) return acl_status(st);
    return acl_status(aclnnRopeWithSinCosCache(workspace_.get(ws), ws, exec, nullptr));
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
  bool mrope_;
  int64_t head_size_ = 0;
  std::vector<int64_t> section_;
  HostTensor q_, k_, q0_, k0_, cache_, positions_;
  std::unique_ptr<AclView> acl_positions_, acl_q_, acl_k_, acl_cache_;
  Workspace workspace_;
  std::vector<double> ref_q_, ref_k_;
};

}  // namespace

std::vector<CaseSpec> rope_family_suites(bool quick) {
  std::vector<CaseSpec> specs;
  for (DType dt : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (const char* variant : {"prefill", "decode"}) {
      CaseSpec s;
      s.suite = "llama3-8b-rotary";
      s.op = "rotary_position_embedding";
      s.variant = variant;
      s.dtype = dt;
      const bool prefill = std::string(variant) == "prefill";
      if (prefill) {
        s.dims = quick ? Dims{{"B", 1}, {"S", 64}, {"N", 4}, {"D", 128}} : Dims{{"B", 1}, {"S", 8192}, {"N", 32}, {"D", 128}};
      } else {
        s.dims = quick ? Dims{{"B", 4}, {"S", 1}, {"N", 4}, {"D", 128}} : Dims{{"B", 64}, {"S", 1}, {"N", 32}, {"D", 128}};
      }
      s.make = [](const CaseSpec& spec, const Dims& dims) {
        return std::unique_ptr<BenchCase>(new RotaryCase(spec, dims, false));
      };
      specs.push_back(s);
    }
    for (int prefill = 0; prefill < 2; ++prefill) {
      for (const char* variant : {"with_x", "no_x"}) {
        CaseSpec s;
        s.suite = "llama3-8b-rotary";
        s.op = "rotary_position_embedding_grad";
        s.variant = variant;
        s.dtype = dt;
        if (prefill) {
          s.dims = quick ? Dims{{"B", 1}, {"S", 64}, {"N", 4}, {"D", 128}} : Dims{{"B", 1}, {"S", 8192}, {"N", 32}, {"D", 128}};
        } else {
          s.dims = quick ? Dims{{"B", 4}, {"S", 1}, {"N", 4}, {"D", 128}} : Dims{{"B", 64}, {"S", 1}, {"N", 32}, {"D", 128}};
        }
        s.make = [](const CaseSpec& spec, const Dims& dims) {
          return std::unique_ptr<BenchCase>(new RotaryCase(spec, dims, true));
        };
        specs.push_back(s);
      }
    }
    for (const char* variant : {"decode", "prefill", "mrope"}) {
      CaseSpec s;
      s.suite = "vllm-rope-cache";
      s.op = "rope_with_sin_cos_cache";
      s.variant = variant;
      s.dtype = dt;
      const std::string v = variant;
      const int64_t T = quick ? 32 : (v == "decode" ? 256 : v == "prefill" ? 8192 : 4096);
      const int64_t Nq = v == "mrope" ? 28 : 32, Nk = v == "mrope" ? 4 : 8;
      s.dims = quick ? Dims{{"T", T}, {"Nq", 4}, {"Nk", 2}, {"D", 128}, {"P", 512}}
                     : Dims{{"T", T}, {"Nq", Nq}, {"Nk", Nk}, {"D", 128}, {"P", 32768}};
      if (v == "decode") s.overhead_dims = Dims{{"T", 1}, {"Nq", 1}, {"Nk", 1}, {"D", 128}, {"P", 16}};
      s.make = [](const CaseSpec& spec, const Dims& dims) {
        return std::unique_ptr<BenchCase>(new SinCosCacheCase(spec, dims));
      };
      specs.push_back(s);
    }
  }
  return specs;
}

}  // namespace bench
}  // namespace txops
