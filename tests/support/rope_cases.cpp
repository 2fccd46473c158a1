// rope_cases.cpp — builds, runs and checks one RoPE problem against the fp64 reference (see rope_cases.h).
#include "support/rope_cases.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "core/tolerance.h"
#include "ops/rope/reference.h"

namespace txops {
namespace testing {
namespace {

std::string dtypes(DType x, DType cs) { return std::string(dtype_name(x)) + "/" + dtype_name(cs); }

}  // namespace

// Checks one output view against its reference under a tolerance row; "" when it passes.
std::string check_output(const char* name, const TensorView& y, const std::vector<double>& ref, const char* row) {
  const CompareReport r = compare_with_reference(y, ref, tolerance_for(row, y.dtype));
  if (r.passed) return "";
  return std::string(name) + " differs from the reference: " + r.describe(y);
}

// Guards intact and no byte outside the allowed elements changed; "" when both hold.
std::string check_bytes(const char* name, const GuardedTensor& t, const std::vector<uint8_t>& before,
                        const std::function<bool(const int64_t*)>& may_change) {
  if (!t.guards_intact()) return std::string(name) + ": a guard byte around the storage was overwritten";
  const std::string changed = t.unexpected_changes(before, may_change);
  return changed.empty() ? "" : std::string(name) + ": " + changed;
}

bool no_element(const int64_t*) { return false; }
bool every_element(const int64_t*) { return true; }

// cos/sin either at their own (broadcast) shape, or at `full` shape with stride 0 where `own` has size 1.
std::unique_ptr<GuardedTensor> make_cos_sin(std::mt19937* rng, DType dtype, const std::vector<int64_t>& own,
                                            const std::vector<int64_t>& full, bool stride0, ViewStyle style) {
  if (!stride0) return std::make_unique<GuardedTensor>(rng, dtype, own, style, -1.0, 1.0);
  std::vector<bool> broadcast(own.size());
  for (size_t a = 0; a < own.size(); ++a) broadcast[a] = own[a] == 1 && full[a] > 1;
  return std::make_unique<GuardedTensor>(rng, dtype, full, style, -1.0, 1.0, broadcast);
}

// The op's kernels were the active ISA's (core/plan_record.h; the per-ISA fixture has checked that the active
// ISA is the one the test is named for); "" when they were.
std::string check_plan() {
  const std::string err = plan_isa_error(active_isa());
  return err.empty() ? "" : "plan: " + err;
}

void append_bits(std::vector<uint64_t>* bits, const TensorView& v) {
  if (!bits) return;
  const std::vector<uint64_t> b = element_bits(v);
  bits->insert(bits->end(), b.begin(), b.end());
}

bool FailureBudget::check(const std::string& error, const std::string& what) {
  if (error.empty()) return true;
  ADD_FAILURE() << what << ": " << error;
  return --left_ > 0;
}

std::vector<std::pair<DType, DType>> dtype_pairings(bool any_pairing) {
  std::vector<std::pair<DType, DType>> out = {{DType::kF32, DType::kF32},  {DType::kF16, DType::kF16},
                                              {DType::kBF16, DType::kBF16}, {DType::kF16, DType::kF32},
                                              {DType::kBF16, DType::kF32}};
  if (any_pairing) {
    out.insert(out.end(), {{DType::kF32, DType::kF16}, {DType::kF32, DType::kBF16}, {DType::kF16, DType::kBF16},
                           {DType::kBF16, DType::kF16}});
  }
  return out;
}

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::kBSND: return "BSND";
    case Layout::kSBND: return "SBND";
    case Layout::kBNSD: return "BNSD";
    case Layout::kTND: return "TND";
  }
  return "?";
}
std::vector<Layout> all_layouts() { return {Layout::kBSND, Layout::kSBND, Layout::kBNSD, Layout::kTND}; }

std::string InterleaveRopeCase::describe() const {
  return "interleave_rope " + dtypes(x_dtype, cs_dtype) + " x " + shape_string({B, N, S, D}) + " cos " +
         shape_string({Bc, 1, Sc, D}) + (cs_stride0 ? " (stride-0 broadcast)" : "") + " x:" +
         view_style_name(x_style) + " cos:" + view_style_name(cs_style) +
         (in_place ? " in place" : std::string(" out:") + view_style_name(out_style)) + " isa " +
         isa_name(active_isa()) + " threads " + std::to_string(num_threads());
}

std::string PartialRotaryCase::describe() const {
  return std::string(backward ? "inplace_partial_rotary_mul_grad " : "inplace_partial_rotary_mul ") +
         rotary_mode_name(mode) + " " + dtypes(x_dtype, cs_dtype) + " x " + shape_string({B, S, N, D}) + " slice [" +
         std::to_string(start) + ", " + std::to_string(end) + ") cos " + shape_string({Bc, Sc, Nc, end - start}) +
         (cs_stride0 ? " (stride-0 broadcast)" : "") + " x:" + view_style_name(x_style) + " cos:" +
         view_style_name(cs_style) + " isa " + isa_name(active_isa()) + " threads " + std::to_string(num_threads());
}

std::string ApplyRotaryCase::describe() const {
  ApplyRotaryCase c = *this;
  return std::string(backward ? "apply_rotary_pos_emb_grad " : "apply_rotary_pos_emb ") + rotary_mode_name(mode) +
         " " + layout_name(layout) + " " + dtypes(q_dtype, cs_dtype) + " q " + shape_string(apply_q_shape(c, Nq)) +
         " k " + shape_string(apply_q_shape(c, Nk)) + " cos " + shape_string(apply_cos_shape(c)) +
         (backward && !with_qk ? " no q/k" : "") + " q:" + view_style_name(q_style) + " cos:" +
         view_style_name(cs_style) + " out:" + view_style_name(out_style) + " isa " + isa_name(active_isa()) +
         " threads " + std::to_string(num_threads());
}

std::vector<int64_t> apply_q_shape(const ApplyRotaryCase& c, int64_t n) {
  switch (c.layout) {
    case Layout::kBSND: return {c.B, c.S, n, c.D};
    case Layout::kSBND: return {c.S, c.B, n, c.D};
    case Layout::kBNSD: return {c.B, n, c.S, c.D};
    case Layout::kTND: return {c.B * c.S, n, c.D};
  }
  return {};
}

std::vector<int64_t> apply_cos_shape(const ApplyRotaryCase& c) {
  const int64_t bc = c.cos_batch_one ? 1 : c.B, dc = c.cos_dim > 0 ? c.cos_dim : c.D;
  switch (c.layout) {
    case Layout::kBSND: return {bc, c.S, 1, dc};
    case Layout::kSBND: return {c.S, bc, 1, dc};
    case Layout::kBNSD: return {bc, 1, c.S, dc};
    case Layout::kTND: return {c.B * c.S, 1, dc};
  }
  return {};
}

std::string run_case(const InterleaveRopeCase& c, std::vector<uint64_t>* bits) {
  std::mt19937 rng(c.seed);
  GuardedTensor x(&rng, c.x_dtype, {c.B, c.N, c.S, c.D}, c.x_style);
  auto cos = make_cos_sin(&rng, c.cs_dtype, {c.Bc, 1, c.Sc, c.D}, {c.B, 1, c.S, c.D}, c.cs_stride0, c.cs_style);
  auto sin = make_cos_sin(&rng, c.cs_dtype, {c.Bc, 1, c.Sc, c.D}, {c.B, 1, c.S, c.D}, c.cs_stride0, c.cs_style);
  std::unique_ptr<GuardedTensor> separate_out;
  if (!c.in_place) separate_out = std::make_unique<GuardedTensor>(&rng, c.x_dtype, x.shape(), c.out_style);
  const GuardedTensor& out = c.in_place ? x : *separate_out;
  std::vector<double> ref;
  reference::interleave_rope(x.view(), cos->view(), sin->view(), &ref);
  const auto x0 = x.snapshot(), cos0 = cos->snapshot(), sin0 = sin->snapshot(), out0 = out.snapshot();

  forget_plan();
  const Status st = interleave_rope(x.view(), cos->view(), sin->view(), out.view());
  if (!st.ok()) return "status " + std::to_string(static_cast<int>(st.code())) + ": " + st.message();
  std::string err = check_plan();
  if (err.empty()) err = check_output("out", out.view(), ref, "rope");
  if (err.empty()) err = check_bytes("out", out, out0, every_element);
  if (err.empty() && !c.in_place) err = check_bytes("x", x, x0, no_element);
  if (err.empty()) err = check_bytes("cos", *cos, cos0, no_element);
  if (err.empty()) err = check_bytes("sin", *sin, sin0, no_element);
  append_bits(bits, out.view());
  return err;
}

std::string run_case(const PartialRotaryCase& c, std::vector<uint64_t>* bits) {
  std::mt19937 rng(c.seed);
  const int64_t L = c.end - c.start;
  GuardedTensor x(&rng, c.x_dtype, {c.B, c.S, c.N, c.D}, c.x_style);
  auto cos = make_cos_sin(&rng, c.cs_dtype, {c.Bc, c.Sc, c.Nc, L}, {c.B, c.S, c.N, L}, c.cs_stride0, c.cs_style);
  auto sin = make_cos_sin(&rng, c.cs_dtype, {c.Bc, c.Sc, c.Nc, L}, {c.B, c.S, c.N, L}, c.cs_stride0, c.cs_style);
  std::vector<double> ref;
  reference::inplace_partial_rotary_mul(x.view(), cos->view(), sin->view(), c.mode, c.start, c.end, c.backward, &ref);
  const auto x0 = x.snapshot(), cos0 = cos->snapshot(), sin0 = sin->snapshot();

  forget_plan();
  const Status st = c.backward ? inplace_partial_rotary_mul_grad(x.view(), cos->view(), sin->view(), c.mode, c.start,
                                                                 c.end)
                               : inplace_partial_rotary_mul(x.view(), cos->view(), sin->view(), c.mode, c.start, c.end);
  if (!st.ok()) return "status " + std::to_string(static_cast<int>(st.code())) + ": " + st.message();
  // An empty slice plans no kernel at all.
  std::string err = L > 0 ? check_plan()
                          : (last_plan().plans == 0 ? "" : "plan: an empty slice planned " + describe(last_plan()));
  if (err.empty()) err = check_output("x", x.view(), ref, "rope");
  const int64_t start = c.start, end = c.end;
  if (err.empty())
    err = check_bytes("x (outside the slice)", x, x0,
                      [start, end](const int64_t* idx) { return idx[3] >= start && idx[3] < end; });
  if (err.empty()) err = check_bytes("cos", *cos, cos0, no_element);
  if (err.empty()) err = check_bytes("sin", *sin, sin0, no_element);
  append_bits(bits, x.view());
  return err;
}

std::string run_case(const ApplyRotaryCase& c, std::vector<uint64_t>* bits) {
  std::mt19937 rng(c.seed);
  GuardedTensor q(&rng, c.q_dtype, apply_q_shape(c, c.Nq), c.q_style);
  GuardedTensor k(&rng, c.q_dtype, apply_q_shape(c, c.Nk), c.q_style);
  GuardedTensor cos(&rng, c.cs_dtype, apply_cos_shape(c), c.cs_style, -1.0, 1.0);
  GuardedTensor sin(&rng, c.cs_dtype, apply_cos_shape(c), c.cs_style, -1.0, 1.0);
  const auto cos0 = cos.snapshot(), sin0 = sin.snapshot();

  if (!c.backward) {
    std::vector<double> ref_q, ref_k;
    reference::apply_rotary_pos_emb(q.view(), k.view(), cos.view(), sin.view(), c.layout, c.mode, &ref_q, &ref_k);
    const auto q0 = q.snapshot(), k0 = k.snapshot();
    forget_plan();
    const Status st = apply_rotary_pos_emb(q.view(), k.view(), cos.view(), sin.view(), c.layout, c.mode);
    if (!st.ok()) return "status " + std::to_string(static_cast<int>(st.code())) + ": " + st.message();
    std::string err = check_plan();
    if (err.empty()) err = check_output("query", q.view(), ref_q, "rope");
    if (err.empty()) err = check_output("key", k.view(), ref_k, "rope");
    // Channels at or beyond cos D stay untouched, bit for bit.
    const int last = q.view().ndim - 1;
    const int64_t rotated = apply_cos_shape(c).back();
    const auto rotated_channel = [last, rotated](const int64_t* idx) { return idx[last] < rotated; };
    if (err.empty()) err = check_bytes("query", q, q0, rotated_channel);
    if (err.empty()) err = check_bytes("key", k, k0, rotated_channel);
    if (err.empty()) err = check_bytes("cos", cos, cos0, no_element);
    if (err.empty()) err = check_bytes("sin", sin, sin0, no_element);
    append_bits(bits, q.view());
    append_bits(bits, k.view());
    return err;
  }

  GuardedTensor gq_embed(&rng, c.q_dtype, q.shape(), c.q_style);
  GuardedTensor gk_embed(&rng, c.q_dtype, k.shape(), c.q_style);
  GuardedTensor gq(&rng, c.q_dtype, q.shape(), c.out_style);
  GuardedTensor gk(&rng, c.q_dtype, k.shape(), c.out_style);
  GuardedTensor gcos(&rng, c.cs_dtype, cos.shape(), c.out_style);
  GuardedTensor gsin(&rng, c.cs_dtype, cos.shape(), c.out_style);
  std::vector<double> ref_gq, ref_gk, ref_gcos, ref_gsin;
  reference::apply_rotary_pos_emb_grad(gq_embed.view(), gk_embed.view(), cos.view(), sin.view(),
                                       c.with_qk ? q.ptr() : nullptr, c.with_qk ? k.ptr() : nullptr, c.mode, c.layout,
                                       &ref_gq, &ref_gk, &ref_gcos, &ref_gsin);
  const auto q0 = q.snapshot(), k0 = k.snapshot(), gqe0 = gq_embed.snapshot(), gke0 = gk_embed.snapshot();
  const auto gq0 = gq.snapshot(), gk0 = gk.snapshot(), gcos0 = gcos.snapshot(), gsin0 = gsin.snapshot();
  forget_plan();
  const Status st = apply_rotary_pos_emb_grad(
      gq_embed.view(), gk_embed.view(), cos.view(), sin.view(), c.with_qk ? q.ptr() : nullptr,
      c.with_qk ? k.ptr() : nullptr, c.mode, c.layout, gq.view(), gk.view(), c.with_qk ? gcos.ptr() : nullptr,
      c.with_qk ? gsin.ptr() : nullptr);
  if (!st.ok()) return "status " + std::to_string(static_cast<int>(st.code())) + ": " + st.message();
  std::string err = check_plan();
  if (err.empty()) err = check_output("gradQuery", gq.view(), ref_gq, "rope");
  if (err.empty()) err = check_output("gradKey", gk.view(), ref_gk, "rope");
  if (err.empty() && c.with_qk) err = check_output("gradCos", gcos.view(), ref_gcos, "rope_grad_cos_sin");
  if (err.empty() && c.with_qk) err = check_output("gradSin", gsin.view(), ref_gsin, "rope_grad_cos_sin");
  if (err.empty()) err = check_bytes("gradQuery", gq, gq0, every_element);
  if (err.empty()) err = check_bytes("gradKey", gk, gk0, every_element);
  const std::function<bool(const int64_t*)> grads_written =
      c.with_qk ? std::function<bool(const int64_t*)>(every_element) : std::function<bool(const int64_t*)>(no_element);
  if (err.empty()) err = check_bytes("gradCos", gcos, gcos0, grads_written);
  if (err.empty()) err = check_bytes("gradSin", gsin, gsin0, grads_written);
  if (err.empty()) err = check_bytes("query", q, q0, no_element);
  if (err.empty()) err = check_bytes("key", k, k0, no_element);
  if (err.empty()) err = check_bytes("gradQueryEmbed", gq_embed, gqe0, no_element);
  if (err.empty()) err = check_bytes("gradKeyEmbed", gk_embed, gke0, no_element);
  if (err.empty()) err = check_bytes("cos", cos, cos0, no_element);
  if (err.empty()) err = check_bytes("sin", sin, sin0, no_element);
  append_bits(bits, gq.view());
  append_bits(bits, gk.view());
  if (c.with_qk) {
    append_bits(bits, gcos.view());
    append_bits(bits, gsin.view());
  }
  return err;
}

}  // namespace testing
}  // namespace txops
