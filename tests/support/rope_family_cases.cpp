// rope_family_cases.cpp — builds, runs and checks one RotaryPositionEmbedding(V2 / Grad) or RopeWithSinCosCache
// problem against the fp64 reference (see rope_family_cases.h).
#include "support/rope_family_cases.h"

#include <algorithm>
#include <memory>
#include <random>

#include "core/dtype.h"
#include "ops/rope/reference.h"

namespace txops {
namespace testing {
namespace {

std::string status_error(const Status& st) {
  return "status " + std::to_string(static_cast<int>(st.code())) + ": " + st.message();
}

std::vector<int64_t> cos_shape_of(const RotaryEmbeddingCase& c) {
  return c.cos_shape.empty() ? c.x_shape : c.cos_shape;
}

// cos/sin for a case: own (broadcast) shape, or x's shape with stride 0 on the broadcast dims.
std::unique_ptr<GuardedTensor> make_case_cos(std::mt19937* rng, const RotaryEmbeddingCase& c) {
  const std::vector<int64_t> own = cos_shape_of(c);
  if (c.cs_stride0 && own.size() == c.x_shape.size()) {
    return make_cos_sin(rng, c.cs_dtype, own, c.x_shape, true, c.cs_style);
  }
  return make_cos_sin(rng, c.cs_dtype, own, own, false, c.cs_style);
}

// A (D, D) rotate matrix: a random signed permutation, plus a second entry of 0.5 in every fourth column.
void fill_rotate(std::mt19937* rng, const TensorView& m) {
  const int64_t d = m.shape[0];
  std::vector<int64_t> perm(static_cast<size_t>(d));
  for (int64_t i = 0; i < d; ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), *rng);
  for (int64_t i = 0; i < d; ++i) {
    for (int64_t j = 0; j < d; ++j) store_f32(m.data, m.dtype, i * m.strides[0] + j * m.strides[1], 0.0f);
  }
  for (int64_t j = 0; j < d; ++j) {
    const float sign = ((*rng)() & 1u) ? 1.0f : -1.0f;
    store_f32(m.data, m.dtype, perm[j] * m.strides[0] + j * m.strides[1], sign);
    if (j % 4 == 0) store_f32(m.data, m.dtype, ((perm[j] + 1) % d) * m.strides[0] + j * m.strides[1], 0.5f);
  }
}

// Positions in plain storage: (T,) or (m, T), optionally with padded strides; values random in [0, max_pos).
struct Positions {
  std::vector<int64_t> storage64;
  std::vector<int32_t> storage32;
  TensorView view;
};

void make_positions(std::mt19937* rng, const SinCosCacheCase& c, Positions* p) {
  const int64_t rows = c.section.empty() ? 1 : static_cast<int64_t>(c.section.size());
  const int64_t step = c.positions_strided ? 2 : 1, row_stride = c.tokens * step + (c.positions_strided ? 3 : 0);
  const size_t n = static_cast<size_t>(rows * row_stride + 1);
  std::uniform_int_distribution<int64_t> pick(0, c.max_pos - 1);
  void* data = nullptr;
  if (c.positions_dtype == DType::kI32) {
    p->storage32.assign(n, -1);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t t = 0; t < c.tokens; ++t) p->storage32[r * row_stride + t * step] = static_cast<int32_t>(pick(*rng));
    }
    data = p->storage32.data();
  } else {
    p->storage64.assign(n, -1);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t t = 0; t < c.tokens; ++t) p->storage64[r * row_stride + t * step] = pick(*rng);
    }
    data = p->storage64.data();
  }
  if (c.section.empty()) {
    p->view = TensorView(data, c.positions_dtype, {c.tokens}, {step});
  } else {
    p->view = TensorView(data, c.positions_dtype, {rows, c.tokens}, {row_stride, step});
  }
}

std::string run_forward(const RotaryEmbeddingCase& c, std::vector<uint64_t>* bits) {
  std::mt19937 rng(c.seed);
  GuardedTensor x(&rng, c.x_dtype, c.x_shape, c.x_style);
  auto cos = make_case_cos(&rng, c);
  auto sin = make_case_cos(&rng, c);
  const int64_t d = c.x_shape.back();
  std::unique_ptr<GuardedTensor> rotate;
  if (c.with_rotate) {
    rotate = std::make_unique<GuardedTensor>(&rng, c.x_dtype, std::vector<int64_t>{d, d}, c.cs_style);
    fill_rotate(&rng, rotate->view());
  }
  std::unique_ptr<GuardedTensor> separate_out;
  if (!c.in_place) separate_out = std::make_unique<GuardedTensor>(&rng, c.x_dtype, x.shape(), c.out_style);
  const GuardedTensor& out = c.in_place ? x : *separate_out;
  std::vector<double> ref;
  reference::rotary_position_embedding(x.view(), cos->view(), sin->view(), c.mode,
                                       rotate ? rotate->ptr() : nullptr, &ref);
  const auto x0 = x.snapshot(), cos0 = cos->snapshot(), sin0 = sin->snapshot(), out0 = out.snapshot();
  const auto rot0 = rotate ? rotate->snapshot() : std::vector<uint8_t>();
  forget_plan();
  const Status st = rotary_position_embedding(x.view(), cos->view(), sin->view(), c.mode, out.view(),
                                              rotate ? rotate->ptr() : nullptr);
  if (!st.ok()) return status_error(st);
  std::string err;
  if (c.with_rotate) {
    const PlanRecord r = last_plan();
    if (r.plans == 0 || std::string(r.kernel) != "rope_rows_matrix") err = "plan: " + describe(r);
  } else {
    err = check_plan();
  }
  if (err.empty()) err = check_output("out", out.view(), ref, "rope");
  if (err.empty()) err = check_bytes("out", out, out0, every_element);
  if (err.empty() && !c.in_place) err = check_bytes("x", x, x0, no_element);
  if (err.empty()) err = check_bytes("cos", *cos, cos0, no_element);
  if (err.empty()) err = check_bytes("sin", *sin, sin0, no_element);
  if (err.empty() && rotate) err = check_bytes("rotate", *rotate, rot0, no_element);
  append_bits(bits, out.view());
  return err;
}

std::string run_backward(const RotaryEmbeddingCase& c, std::vector<uint64_t>* bits) {
  std::mt19937 rng(c.seed);
  GuardedTensor dy(&rng, c.x_dtype, c.x_shape, c.x_style);
  GuardedTensor x(&rng, c.x_dtype, c.x_shape, c.x_style);
  auto cos = make_case_cos(&rng, c);
  auto sin = make_case_cos(&rng, c);
  std::unique_ptr<GuardedTensor> separate_dx;
  if (!c.in_place) separate_dx = std::make_unique<GuardedTensor>(&rng, c.x_dtype, dy.shape(), c.out_style);
  const GuardedTensor& dx = c.in_place ? dy : *separate_dx;
  GuardedTensor dcos(&rng, c.cs_dtype, cos_shape_of(c), c.out_style);
  GuardedTensor dsin(&rng, c.cs_dtype, cos_shape_of(c), c.out_style);
  std::vector<double> ref_dx, ref_dcos, ref_dsin;
  reference::rotary_position_embedding_grad(dy.view(), cos->view(), sin->view(), c.with_x ? x.ptr() : nullptr,
                                            c.mode, &ref_dx, &ref_dcos, &ref_dsin);
  const auto dy0 = dy.snapshot(), x0 = x.snapshot(), cos0 = cos->snapshot(), sin0 = sin->snapshot();
  const auto dx0 = dx.snapshot(), dcos0 = dcos.snapshot(), dsin0 = dsin.snapshot();
  forget_plan();
  const Status st = rotary_position_embedding_grad(dy.view(), cos->view(), sin->view(), c.with_x ? x.ptr() : nullptr,
                                                   c.mode, dx.view(), c.with_x ? dcos.ptr() : nullptr,
                                                   c.with_x ? dsin.ptr() : nullptr);
  if (!st.ok()) return status_error(st);
  std::string err = check_plan();
  if (err.empty()) err = check_output("dx", dx.view(), ref_dx, "rope");
  if (err.empty() && c.with_x) err = check_output("dcos", dcos.view(), ref_dcos, "rope_grad_cos_sin");
  if (err.empty() && c.with_x) err = check_output("dsin", dsin.view(), ref_dsin, "rope_grad_cos_sin");
  if (err.empty()) err = check_bytes("dx", dx, dx0, every_element);
  const auto written = c.with_x ? every_element : no_element;
  if (err.empty()) err = check_bytes("dcos", dcos, dcos0, written);
  if (err.empty()) err = check_bytes("dsin", dsin, dsin0, written);
  if (err.empty() && !c.in_place) err = check_bytes("dy", dy, dy0, no_element);
  if (err.empty()) err = check_bytes("x", x, x0, no_element);
  if (err.empty()) err = check_bytes("cos", *cos, cos0, no_element);
  if (err.empty()) err = check_bytes("sin", *sin, sin0, no_element);
  append_bits(bits, dx.view());
  if (c.with_x) {
    append_bits(bits, dcos.view());
    append_bits(bits, dsin.view());
  }
  return err;
}

}  // namespace

std::string RotaryEmbeddingCase::describe() const {
  return std::string(backward ? "rotary_position_embedding_grad " : "rotary_position_embedding ") +
         rotary_mode_name(mode) + " " + dtype_name(x_dtype) + "/" + dtype_name(cs_dtype) + " x " +
         shape_string(x_shape) + " cos " + shape_string(cos_shape_of(*this)) + (cs_stride0 ? " (stride 0)" : "") +
         (with_rotate ? " rotate" : "") + (backward && !with_x ? " no x" : "") + (in_place ? " in place" : "") +
         " x:" + view_style_name(x_style) + " cos:" + view_style_name(cs_style) + " out:" +
         view_style_name(out_style) + " isa " + isa_name(active_isa()) + " threads " + std::to_string(num_threads());
}

std::string SinCosCacheCase::describe() const {
  std::string sec = "[";
  for (size_t i = 0; i < section.size(); ++i) sec += (i ? "," : "") + std::to_string(section[i]);
  sec += "]";
  return std::string("rope_with_sin_cos_cache ") + (neox ? "neox " : "gptj ") + dtype_name(x_dtype) + "/" +
         dtype_name(cache_dtype) + " pos " + dtype_name(positions_dtype) + (positions_strided ? " strided" : "") +
         " T " + std::to_string(tokens) + " Nq " + std::to_string(nq) + " Nk " + std::to_string(nk) + " hs " +
         std::to_string(head_size) + " rd " + std::to_string(rotary_dim) + " max_pos " + std::to_string(max_pos) +
         (section.empty() ? "" : " mrope " + sec + " cacheMode " + std::to_string(cache_mode)) +
         (in_place ? " in place" : "") + " q:" + view_style_name(x_style) + " cache:" +
         view_style_name(cache_style) + " out:" + view_style_name(out_style) + " isa " + isa_name(active_isa()) +
         " threads " + std::to_string(num_threads());
}

std::string run_case(const RotaryEmbeddingCase& c, std::vector<uint64_t>* bits) {
  return c.backward ? run_backward(c, bits) : run_forward(c, bits);
}

std::string run_case(const SinCosCacheCase& c, std::vector<uint64_t>* bits) {
  std::mt19937 rng(c.seed);
  Positions positions;
  make_positions(&rng, c, &positions);
  GuardedTensor q(&rng, c.x_dtype, {c.tokens, c.nq * c.head_size}, c.x_style);
  GuardedTensor k(&rng, c.x_dtype, {c.tokens, c.nk * c.head_size}, c.x_style);
  GuardedTensor cache(&rng, c.cache_dtype, {c.max_pos, c.rotary_dim}, c.cache_style, -1.0, 1.0);
  std::unique_ptr<GuardedTensor> q_sep, k_sep;
  if (!c.in_place) {
    q_sep = std::make_unique<GuardedTensor>(&rng, c.x_dtype, q.shape(), c.out_style);
    k_sep = std::make_unique<GuardedTensor>(&rng, c.x_dtype, k.shape(), c.out_style);
  }
  const GuardedTensor& q_out = c.in_place ? q : *q_sep;
  const GuardedTensor& k_out = c.in_place ? k : *k_sep;
  std::vector<double> ref_q, ref_k;
  const int64_t sections = static_cast<int64_t>(c.section.size());
  reference::rope_with_sin_cos_cache(positions.view, q.view(), k.view(), cache.view(), c.section.data(), sections,
                                     c.head_size, c.neox, c.cache_mode, &ref_q, &ref_k);
  const auto q0 = q.snapshot(), k0 = k.snapshot(), cache0 = cache.snapshot();
  const auto qo0 = q_out.snapshot(), ko0 = k_out.snapshot();
  forget_plan();
  const Status st = rope_with_sin_cos_cache(positions.view, q.view(), k.view(), cache.view(), c.section.data(),
                                            sections, c.head_size, c.neox, c.cache_mode, q_out.view(), k_out.view());
  if (!st.ok()) return status_error(st);
  std::string err = check_plan();
  if (err.empty()) err = check_output("queryOut", q_out.view(), ref_q, "rope");
  if (err.empty()) err = check_output("keyOut", k_out.view(), ref_k, "rope");
  if (err.empty()) err = check_bytes("queryOut", q_out, qo0, every_element);
  if (err.empty()) err = check_bytes("keyOut", k_out, ko0, every_element);
  if (err.empty() && !c.in_place) err = check_bytes("queryIn", q, q0, no_element);
  if (err.empty() && !c.in_place) err = check_bytes("keyIn", k, k0, no_element);
  if (err.empty()) err = check_bytes("cosSinCache", cache, cache0, no_element);
  append_bits(bits, q_out.view());
  append_bits(bits, k_out.view());
  return err;
}

std::vector<uint16_t> bf16_with_special_values(size_t count, uint32_t seed) {
  static const uint16_t specials[] = {0x7FC0, 0xFFC0, 0x7F81, 0xFF81, 0x7FFF, 0x7F80, 0xFF80, 0x0000, 0x8000,
                                      0x0001, 0x807F, 0x3F80, 0x3FFF, 0x7F7F, 0xFF7F, 0x0080, 0xBF80, 0x4049};
  std::vector<uint16_t> v(count);
  uint32_t state = seed;
  for (uint16_t& e : v) {
    const uint32_t r = (state = state * 1664525u + 1013904223u) >> 8;
    e = r % 4 == 0 ? specials[(r >> 2) % (sizeof(specials) / sizeof(specials[0]))]
                   : static_cast<uint16_t>(0x3C00 + (r >> 4) % 0x0800);
  }
  return v;
}

}  // namespace testing
}  // namespace txops
