// causal_conv1d_test.cpp — causal_conv1d_fn (prefill) and causal_conv1d_update (decode, speculative tokens)
// against the fp64 oracle, each test once per ISA (those this CPU lacks are SKIPPED, named): sweeps of dtypes,
// K, dims around the vector width and the channel block, fixed-batch and varlen sequences (empty ones included),
// state lengths, initial-state modes, cache indices with skipped sequences, bias, activation; channel-first
// strided views (transformers' layouts) and offset views; the states compared exactly (they are copies), lines
// the call does not own byte-identical; prefill then update equals one longer prefill; bit-identical results
// for 1..4 threads; large shapes (every block of the channel-contiguous path, streaming stores) and NaN / inf
// inputs give the staged path's bits. Validation has its own file section at the end.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "aclnnop/aclnn_causal_conv1d_fn.h"
#include "aclnnop/aclnn_causal_conv1d_update.h"
#include "ops/causal_conv1d/reference.h"
#include "support/rope_acl_util.h"
#include "support/gdr_problem.h"

namespace convtest {
namespace {

using gdrtest::HostTensor;
using gdrtest::InputGenerator;
using txops::ConvActivation;
using txops::DType;
using txops::Status;
using txops::TensorView;

TXOPS_ISA_TEST_SUITE(CausalConv1dOnIsa);

// One call's inputs (contiguous host tensors; views may be re-strided by a test).
struct Case {
  bool update = false;
  DType dtype = DType::kBF16;
  int64_t batch = 2, length = 5, dim = 16, width = 4, state_len = 3, lines = 4;
  std::vector<int32_t> varlen;       // non-empty: 2-D x with these lengths (query_start_loc)
  std::vector<int32_t> indices;      // cache_indices (empty: none)
  std::vector<int32_t> per_sequence; // initial_state_mode / num_accepted_tokens (empty: none)
  bool bias = true;
  ConvActivation activation = ConvActivation::kSilu;
  int64_t null_block_id = -1;
  uint32_t seed = 1;

  std::string describe() const {
    std::string s = std::string(update ? "update" : "fn") + " " + txops::dtype_name(dtype) + " B=" +
                    std::to_string(batch) + " L=" + std::to_string(length) + " dim=" + std::to_string(dim) +
                    " K=" + std::to_string(width) + " S=" + std::to_string(state_len);
    if (!varlen.empty()) s += " varlen";
    if (!indices.empty()) s += " indices";
    if (!per_sequence.empty()) s += update ? " accepted" : " modes";
    return s + (bias ? " bias" : "") + (activation == ConvActivation::kSilu ? " silu" : " none");
  }
};

struct Tensors {
  HostTensor x, weight, states, bias, y, qsl, indices, per_sequence;
  int64_t tokens = 0;
};

HostTensor ints(const std::vector<int32_t>& values) {
  HostTensor t(DType::kI32, {static_cast<int64_t>(values.size())});
  std::memcpy(t.bytes.data(), values.data(), values.size() * sizeof(int32_t));
  return t;
}

Tensors make_tensors(const Case& c) {
  Tensors t;
  InputGenerator gen(c.seed);
  std::vector<int64_t> x_shape = {c.batch, c.length, c.dim};
  if (!c.varlen.empty()) {
    std::vector<int32_t> starts(1, 0);
    for (int32_t n : c.varlen) starts.push_back(starts.back() + n);
    t.qsl = ints(starts);
    x_shape = {starts.back(), c.dim};
  }
  t.x = HostTensor(c.dtype, x_shape);
  t.y = HostTensor(c.dtype, x_shape);
  t.weight = HostTensor(c.dtype, {c.width, c.dim});
  t.states = HostTensor(c.dtype, {c.lines, c.state_len, c.dim});
  t.bias = HostTensor(c.dtype, {c.dim});
  gen.uniform(&t.x, -2, 2);
  gen.uniform(&t.weight, -1, 1);
  gen.uniform(&t.states, -2, 2);
  gen.uniform(&t.bias, -0.5, 0.5);
  gen.uniform(&t.y, 7, 8);  // garbage the call must overwrite
  if (!c.indices.empty()) t.indices = ints(c.indices);
  if (!c.per_sequence.empty()) t.per_sequence = ints(c.per_sequence);
  t.tokens = t.x.numel() / c.dim;
  return t;
}

struct Views {
  TensorView x, weight, states, bias, y, qsl, indices, per_sequence;
};

Views views_of(const Case& c, const Tensors& t) {
  Views v{t.x.view(), t.weight.view(), t.states.view(), t.bias.view(), t.y.view(), {}, {}, {}};
  if (!c.varlen.empty()) v.qsl = t.qsl.view();
  if (!c.indices.empty()) v.indices = t.indices.view();
  if (!c.per_sequence.empty()) v.per_sequence = t.per_sequence.view();
  return v;
}

Status call(const Case& c, const Views& v) {
  const TensorView* bias = c.bias ? &v.bias : nullptr;
  const TensorView* qsl = c.varlen.empty() ? nullptr : &v.qsl;
  const TensorView* indices = c.indices.empty() ? nullptr : &v.indices;
  const TensorView* per_sequence = c.per_sequence.empty() ? nullptr : &v.per_sequence;
  if (c.update)
    return txops::causal_conv1d_update(v.x, v.weight, v.states, bias, qsl, indices, per_sequence, c.activation,
                                       c.null_block_id, v.y);
  return txops::causal_conv1d_fn(v.x, v.weight, v.states, bias, qsl, indices, per_sequence, c.activation,
                                 c.null_block_id, v.y);
}

// Element values of a view, row-major over its logical shape.
std::vector<double> values(const TensorView& v) {
  std::vector<double> out(static_cast<size_t>(v.numel()));
  std::vector<int64_t> idx(static_cast<size_t>(v.ndim), 0);
  for (size_t flat = 0; flat < out.size(); ++flat) {
    int64_t offset = 0;
    for (int d = 0; d < v.ndim; ++d) offset += idx[d] * v.strides[d];
    out[flat] = txops::load_f64(v.data, v.dtype, offset);
    for (int d = v.ndim - 1; d >= 0 && ++idx[d] == v.shape[d]; --d) idx[d] = 0;
  }
  return out;
}

// Runs `c` on views `v` (any strides) and checks y and the states against the oracle run on the same views
// before the call.
void check(const Case& c, const Views& v) {
  SCOPED_TRACE(c.describe() + " isa=" + txops::isa_name(txops::active_isa()));
  std::vector<double> y_ref, states_ref;
  txops::reference::causal_conv1d(c.update, v.x, v.weight, v.states, c.bias ? &v.bias : nullptr,
                                  c.varlen.empty() ? nullptr : &v.qsl, c.indices.empty() ? nullptr : &v.indices,
                                  c.per_sequence.empty() ? nullptr : &v.per_sequence, c.activation, c.null_block_id,
                                  &y_ref, &states_ref);
  const Status st = call(c, v);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(gdrtest::matches_reference("causal_conv1d", v.y, y_ref, c.describe(), nullptr));
  const std::vector<double> states = values(v.states);
  ASSERT_EQ(states.size(), states_ref.size());
  for (size_t i = 0; i < states.size(); ++i)
    ASSERT_TRUE(states[i] == states_ref[i] || (std::isnan(states[i]) && std::isnan(states_ref[i])))
        << "state element " << i << ": " << states[i] << " != " << states_ref[i];
}

void check(const Case& c) {
  Tensors t = make_tensors(c);
  check(c, views_of(c, t));
}

TEST_P(CausalConv1dOnIsa, PrefillSweep) {
  for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32})
    for (int64_t width : {2, 3, 4})
      for (int64_t dim : {1, 7, 8, 16, 63, 64, 65, 130}) {
        Case c;
        c.dtype = dtype, c.width = width, c.dim = dim, c.state_len = width - 1, c.batch = 2, c.length = 6;
        c.per_sequence = {1, 0};
        c.seed = static_cast<uint32_t>(dim * 7 + width);
        check(c);
      }
}

TEST_P(CausalConv1dOnIsa, PrefillSequencesStatesAndOptions) {
  Case base;
  base.dim = 40;
  for (int64_t length : {1, 2, 3, 9}) {  // shorter and longer than K-1 and than the state
    for (int64_t state_len : {3, 6}) {
      Case c = base;
      c.length = length, c.state_len = state_len, c.per_sequence = {1, 1};
      check(c);
    }
  }
  Case varlen = base;  // ragged, an empty sequence, lines permuted, one skipped
  varlen.varlen = {4, 0, 1, 11}, varlen.batch = 4, varlen.lines = 6, varlen.indices = {5, 2, -1, 0};
  varlen.per_sequence = {1, 1, 0, 0};
  check(varlen);
  varlen.null_block_id = 2;  // a null id that is a valid line number: sequence 1 is skipped instead
  varlen.indices = {5, 2, 3, 0};
  check(varlen);
  Case plain = base;  // no bias, no activation, no modes (zero history)
  plain.bias = false, plain.activation = ConvActivation::kNone;
  check(plain);
}

TEST_P(CausalConv1dOnIsa, UpdateDecodeAndSpeculative) {
  for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32})
    for (int64_t width : {2, 3, 4})
      for (int64_t dim : {8, 65}) {
        Case c;  // one token per sequence
        c.update = true, c.dtype = dtype, c.width = width, c.dim = dim, c.length = 1, c.state_len = width - 1;
        c.batch = 3, c.lines = 5, c.indices = {4, -1, 1};
        check(c);
        Case spec = c;  // 3 draft tokens per sequence from accepted-token offsets
        spec.length = 3, spec.state_len = width - 1 + 3, spec.indices = {2, 0, 3};
        spec.per_sequence = {0, 1, 3};
        check(spec);
        Case varlen = spec;  // the same, varlen
        varlen.varlen = {3, 1, 2}, varlen.per_sequence = {2, 0, 1};
        check(varlen);
      }
}

// transformers' layouts: x and y channel-first (B, dim, L) seen as (B, L, dim); conv states (B, dim, S) seen as
// (B, S, dim); weight (dim, K) seen as (K, dim); and an offset view of a larger buffer.
TEST_P(CausalConv1dOnIsa, StridedViews) {
  for (bool update : {false, true}) {
    Case c;
    c.update = update, c.batch = 2, c.length = update ? 1 : 7, c.dim = 24, c.width = 4, c.state_len = 4;
    c.lines = 2, c.per_sequence = update ? std::vector<int32_t>{} : std::vector<int32_t>{1, 0};
    Tensors t = make_tensors(c);
    HostTensor xt(c.dtype, {c.batch, c.dim, c.length}), yt(c.dtype, {c.batch, c.dim, c.length});
    HostTensor st(c.dtype, {c.lines, c.dim, c.state_len}), wt(c.dtype, {c.dim, c.width});
    InputGenerator gen(9);
    gen.uniform(&xt, -2, 2), gen.uniform(&yt, 5, 6), gen.uniform(&st, -2, 2), gen.uniform(&wt, -1, 1);
    Views v = views_of(c, t);
    const int64_t xs[3] = {c.dim * c.length, 1, c.length}, ss[3] = {c.dim * c.state_len, 1, c.state_len};
    const int64_t ws[2] = {1, c.width};
    v.x = TensorView::make(xt.bytes.data(), c.dtype, 3, t.x.shape.data(), xs);
    v.y = TensorView::make(yt.bytes.data(), c.dtype, 3, t.y.shape.data(), xs);
    v.states = TensorView::make(st.bytes.data(), c.dtype, 3, t.states.shape.data(), ss);
    v.weight = TensorView::make(wt.bytes.data(), c.dtype, 2, t.weight.shape.data(), ws);
    check(c, v);
    // an offset window of a bigger state buffer: lines 1..2 of 4, rows 1..S of S+2
    HostTensor big(c.dtype, {4, c.state_len + 2, c.dim});
    gen.uniform(&big, -2, 2);
    const std::vector<uint8_t> before = big.bytes;
    const int64_t es = static_cast<int64_t>(txops::dtype_size(c.dtype));
    const int64_t bs[3] = {(c.state_len + 2) * c.dim, c.dim, 1};
    v.states = TensorView::make(big.bytes.data() + ((c.state_len + 2) * c.dim + c.dim) * es, c.dtype, 3,
                                t.states.shape.data(), bs);
    check(c, v);
    for (int64_t row = 0; row < c.state_len + 2; ++row) {  // line 0 and line 3 and the outer rows: untouched
      for (int64_t line : {int64_t{0}, int64_t{3}}) {
        const size_t at = static_cast<size_t>(((line * (c.state_len + 2) + row) * c.dim) * es);
        ASSERT_EQ(0, std::memcmp(big.bytes.data() + at, before.data() + at, static_cast<size_t>(c.dim * es)));
      }
    }
  }
}

// The three code paths (channel-contiguous rows, token-contiguous channels, staged) on the same values give the
// same bits: x and y as (B, L, dim), as channel-first (B, dim, L) views, and with every element two apart.
TEST_P(CausalConv1dOnIsa, LayoutsGiveTheSameBits) {
  for (bool update : {false, true}) {
    Case c;
    c.update = update, c.dtype = DType::kBF16, c.batch = 2, c.length = update ? 1 : 37, c.dim = 29, c.width = 4;
    c.state_len = 3, c.lines = 2, c.per_sequence = update ? std::vector<int32_t>{} : std::vector<int32_t>{1, 0};
    Tensors base = make_tensors(c);
    ASSERT_TRUE(call(c, views_of(c, base)).ok());
    const std::vector<double> y_rows = values(base.y.view()), states_rows = values(base.states.view());
    for (int layout = 0; layout < 2; ++layout) {
      SCOPED_TRACE(layout == 0 ? "channel-first" : "every other element");
      Tensors t = make_tensors(c);  // the same values (same seed)
      const int64_t B = c.batch, L = c.length, D = c.dim, es = 2;
      const int64_t step = layout == 0 ? 1 : 2;
      HostTensor xs(c.dtype, {B * L * D * step}), ys(c.dtype, {B * L * D * step});
      const int64_t shape[3] = {B, L, D};
      const int64_t cf[3] = {D * L, 1, L}, spread[3] = {L * D * 2, D * 2, 2};
      const int64_t* strides = layout == 0 ? cf : spread;
      Views v = views_of(c, t);
      v.x = TensorView::make(xs.bytes.data(), c.dtype, 3, shape, strides);
      v.y = TensorView::make(ys.bytes.data(), c.dtype, 3, shape, strides);
      for (int64_t b = 0; b < B; ++b)  // copy x's values into the strided layout
        for (int64_t l = 0; l < L; ++l)
          for (int64_t d = 0; d < D; ++d)
            std::memcpy(xs.bytes.data() + (b * strides[0] + l * strides[1] + d * strides[2]) * es,
                        t.x.bytes.data() + ((b * L + l) * D + d) * es, es);
      ASSERT_TRUE(call(c, v).ok());
      EXPECT_EQ(values(v.y), y_rows);
      EXPECT_EQ(values(t.states.view()), states_rows);
    }
  }
}

// x's values copied into a layout with every element two apart (the staged path), and that call's y bytes
// gathered back into row-major order: the reference bits for the channel-contiguous path.
// `edit` (if any) changes the inputs first, as it did for the call being checked.
std::vector<uint8_t> staged_y_bytes(const Case& c, const std::function<void(Tensors*)>& edit = {}) {
  Tensors t = make_tensors(c);
  if (edit) edit(&t);
  const int64_t rows = t.tokens, D = c.dim, es = static_cast<int64_t>(txops::dtype_size(c.dtype));
  HostTensor xs(c.dtype, {rows * D * 2}), ys(c.dtype, {rows * D * 2});
  const int64_t shape3[3] = {c.batch, c.length, D}, strides3[3] = {c.length * D * 2, D * 2, 2};
  const int64_t shape2[2] = {rows, D}, strides2[2] = {D * 2, 2};
  Views v = views_of(c, t);
  const bool flat = !c.varlen.empty();
  v.x = TensorView::make(xs.bytes.data(), c.dtype, flat ? 2 : 3, flat ? shape2 : shape3, flat ? strides2 : strides3);
  v.y = TensorView::make(ys.bytes.data(), c.dtype, flat ? 2 : 3, flat ? shape2 : shape3, flat ? strides2 : strides3);
  for (int64_t i = 0; i < rows * D; ++i) std::memcpy(xs.bytes.data() + 2 * i * es, t.x.bytes.data() + i * es, es);
  EXPECT_TRUE(call(c, v).ok());
  std::vector<uint8_t> y(static_cast<size_t>(rows * D * es));
  for (int64_t i = 0; i < rows * D; ++i) std::memcpy(y.data() + i * es, ys.bytes.data() + 2 * i * es, es);
  return y;
}

// Shapes past every block of the channel-contiguous path: several 256-channel accumulator blocks and rows wider
// than one item (kConvRowChunk), split into two items with a partial vector group at the end, token chunks of 128
// with a sequence shorter than the window, a state longer than K-1, and an output of more than 4 MiB (streaming
// stores).
TEST_P(CausalConv1dOnIsa, LargeShapesMatchTheOracleAndTheStagedPath) {
  for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32})
    for (ConvActivation act : {ConvActivation::kSilu, ConvActivation::kNone}) {
      if (dtype != DType::kBF16 && act == ConvActivation::kNone) continue;
      Case c;
      c.dtype = dtype, c.activation = act, c.batch = 2, c.dim = 8221, c.width = 4, c.state_len = 5, c.lines = 3;
      c.varlen = {515, 2}, c.indices = {2, 0}, c.per_sequence = {1, 1}, c.seed = 11;
      Tensors t = make_tensors(c);
      check(c, views_of(c, t));
      if (dtype == DType::kBF16) EXPECT_EQ(t.y.bytes, staged_y_bytes(c)) << "channel-contiguous vs staged";
    }
}

// Case c run with `edit` applied to its inputs: its bf16 y equals the staged path's bit for bit; `each(i, bits)` then
// sees every element of y.
void expect_staged_bits(const Case& c, const std::function<void(Tensors*)>& edit,
                        const std::function<void(int64_t, uint16_t)>& each) {
  Tensors t = make_tensors(c);
  edit(&t);
  ASSERT_TRUE(call(c, views_of(c, t)).ok());
  const std::vector<uint8_t> staged = staged_y_bytes(c, edit);
  for (int64_t i = 0; i < c.length * c.dim; ++i) {
    uint16_t a, b;
    std::memcpy(&a, t.y.bytes.data() + 2 * i, 2);
    std::memcpy(&b, staged.data() + 2 * i, 2);
    ASSERT_EQ(a, b) << "element " << i;
    each(i, a);
  }
}

// NaN and infinity in bf16 x, weights and bias: the channel-contiguous path (its bf16 pair stores round without
// the NaN test) writes the same bits as the staged path, and every NaN it writes is quiet.
TEST_P(CausalConv1dOnIsa, NaNAndInfinityGiveTheStagedPathsBits) {
  Case c;
  c.dtype = DType::kBF16, c.batch = 1, c.length = 23, c.dim = 77, c.width = 4, c.state_len = 3, c.lines = 1;
  c.per_sequence = {1};
  for (ConvActivation act : {ConvActivation::kSilu, ConvActivation::kNone}) {
    c.activation = act;
    const uint16_t specials[4] = {0x7F81, 0xFFC1, 0x7F80, 0xFF80};  // signaling and quiet NaN (payloads), +-inf
    auto poke = [](HostTensor* h, int64_t i, uint16_t bits) { std::memcpy(h->bytes.data() + 2 * i, &bits, 2); };
    auto add_specials = [&](Tensors* u) {
      for (int64_t i = 0; i < 40; ++i) poke(&u->x, (i * 97) % (c.length * c.dim), specials[i % 4]);
      poke(&u->weight, 5, specials[0]);
      poke(&u->bias, 9, specials[2]);
    };
    int nans = 0;
    expect_staged_bits(c, add_specials, [&](int64_t i, uint16_t a) {
      if ((a & 0x7F80) == 0x7F80 && (a & 0x7F) != 0) {
        ++nans;
        EXPECT_NE(0, a & 0x40) << "signaling NaN written at " << i;
      }
    });
    EXPECT_GT(nans, 0);
  }
}

// SiLU where e^-v leaves fp32's range: x and the states zero, so every output is SiLU(bias) of its channel, the bias
// running from -inf through the overflow of e^-v (v < -88.7), the normal range and the underflow (v > 87) to +inf
// and NaN. Each fp32 output is the fp64 formula v / (1 + e^-v) rounded (NaN for -inf and NaN, -0 for large negative
// v, v itself for large positive v) within 1e-6 relative, or 1e-36 absolute below fp32's normal range. A clamp of the
// exponent that keeps 1 + 2^z finite (the AVX-512 kernel before session 34) gives -1e36 / 2^126 = -0.012 for
// v = -1e36 and fails here.
TEST_P(CausalConv1dOnIsa, SiluAtTheEdgesOfTheExponentRange) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> biases = {-inf, -3e38f, -1e36f, -1e30f, -1e6f, -200.0f, -103.5f, -89.0f, -88.72f,
                                     -88.5f, -88.0f, -87.3f, -87.0f, -20.0f, -1.0f, -1e-30f, -0.0f, 0.0f,
                                     1e-30f, 0.5f, 20.0f, 87.0f, 88.0f, 89.0f, 104.0f, 200.0f, 1e30f, 3e38f,
                                     inf, std::numeric_limits<float>::quiet_NaN()};
  for (bool update : {false, true}) {
    Case c;
    c.update = update, c.dtype = DType::kF32, c.batch = 2, c.length = update ? 1 : 9;
    c.dim = static_cast<int64_t>(biases.size()), c.width = 4, c.state_len = 3, c.lines = 2;
    Tensors t = make_tensors(c);
    std::fill(t.x.bytes.begin(), t.x.bytes.end(), uint8_t{0});
    std::fill(t.states.bytes.begin(), t.states.bytes.end(), uint8_t{0});
    std::memcpy(t.bias.bytes.data(), biases.data(), biases.size() * sizeof(float));
    const Status st = call(c, views_of(c, t));
    ASSERT_TRUE(st.ok()) << st.message();
    const std::vector<double> y = values(t.y.view());
    for (size_t i = 0; i < y.size(); ++i) {
      const double v = biases[i % biases.size()], want = static_cast<float>(v / (1.0 + std::exp(-v)));
      char trace[96];
      std::snprintf(trace, sizeof trace, "%s v=%g isa=%s", update ? "update" : "fn", v,
                    txops::isa_name(txops::active_isa()));
      SCOPED_TRACE(trace);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(y[i])) << y[i];
      } else if (std::isinf(want)) {
        EXPECT_EQ(want, y[i]);
      } else {
        EXPECT_LE(std::fabs(y[i] - want), 1e-6 * std::fabs(want) + 1e-36) << y[i] << " against " << want;
      }
    }
  }
}

// Accumulators below fp32's normal range (x and the states zero, a bf16 denormal bias on two of every three channels;
// the SiLU itself never makes a normal input denormal): the channel-contiguous path, whose bf16 stores round with
// vcvtne2ps2bf16 on CPUs that have it (an instruction that reads fp32 denormals as zero), keeps the integer rounding
// for those vectors, so it writes the staged path's bits, bf16 denormals included.
TEST_P(CausalConv1dOnIsa, DenormalOutputsGiveTheStagedPathsBits) {
  Case c;
  c.dtype = DType::kBF16, c.batch = 1, c.length = 19, c.dim = 131, c.width = 4, c.state_len = 3, c.lines = 1;
  c.per_sequence = {1};
  for (ConvActivation act : {ConvActivation::kSilu, ConvActivation::kNone}) {
    c.activation = act;
    auto tiny = [&](Tensors* u) {
      std::fill(u->x.bytes.begin(), u->x.bytes.end(), uint8_t{0});
      std::fill(u->states.bytes.begin(), u->states.bytes.end(), uint8_t{0});
      const uint16_t denormals[2] = {0x0003, 0x8045};
      for (int64_t ch = 0; ch < c.dim; ++ch)
        if (ch % 3 != 2) std::memcpy(u->bias.bytes.data() + 2 * ch, &denormals[ch % 3], 2);
    };
    int denormals = 0;
    expect_staged_bits(c, tiny, [&](int64_t, uint16_t a) { denormals += (a & 0x7F80) == 0 && (a & 0x7F) != 0; });
    EXPECT_GT(denormals, 0);
  }
}

// Prefill of L tokens (state_len = K-1) then one update step equals prefill of L+1 tokens: y of the last token
// and the final state.
TEST_P(CausalConv1dOnIsa, PrefillThenUpdateEqualsLongerPrefill) {
  Case whole;
  whole.dtype = DType::kF32, whole.batch = 1, whole.length = 9, whole.dim = 33, whole.width = 4, whole.state_len = 3;
  whole.lines = 1, whole.per_sequence = {1};
  Tensors a = make_tensors(whole);
  Views va = views_of(whole, a);
  ASSERT_TRUE(call(whole, va).ok());
  Case first = whole;
  first.length = 8;
  Tensors b = make_tensors(whole);  // the same bytes (same seed), prefill of the first 8 tokens
  Views vb = views_of(first, b);
  const int64_t head[3] = {1, 8, whole.dim};
  vb.x = TensorView::make(b.x.bytes.data(), whole.dtype, 3, head, nullptr);
  vb.y = TensorView::make(b.y.bytes.data(), whole.dtype, 3, head, nullptr);
  ASSERT_TRUE(call(first, vb).ok());
  Case step = whole;
  step.update = true, step.length = 1, step.per_sequence = {};
  const int64_t one[3] = {1, 1, whole.dim};
  const int64_t es = 4;
  Views vs = vb;
  vs.x = TensorView::make(b.x.bytes.data() + 8 * whole.dim * es, whole.dtype, 3, one, nullptr);
  vs.y = TensorView::make(b.y.bytes.data() + 8 * whole.dim * es, whole.dtype, 3, one, nullptr);
  ASSERT_TRUE(call(step, vs).ok());
  EXPECT_EQ(0, std::memcmp(a.y.bytes.data() + 8 * whole.dim * es, b.y.bytes.data() + 8 * whole.dim * es,
                           static_cast<size_t>(whole.dim * es)));
  EXPECT_EQ(a.states.bytes, b.states.bytes);
}

// Also a prefill too short to give every thread a token chunk: its rows are then split into one item per thread
// (plan.cpp), so the items differ with the thread count and the bits must not.
// Also with the grains of a 3-thread plan run by one thread (work stealing, core/work_stealing.h).
TEST_P(CausalConv1dOnIsa, BitIdenticalForOneToFourThreads) {
  for (int shape = 0; shape < 3; ++shape) {
    const bool update = shape == 1;
    Case c;
    c.update = update, c.batch = 3, c.length = update ? 1 : 300, c.dim = 704, c.state_len = 3, c.lines = 3;
    if (shape == 2) c.batch = 1, c.length = 40, c.dim = 8200, c.lines = 1;
    std::vector<uint8_t> y1, s1;
    for (int threads = 1; threads <= 4; ++threads) {
      txops::testing::ScopedThreads scope(threads);
      Tensors t = make_tensors(c);
      txops::testing::forget_plan();
      ASSERT_TRUE(call(c, views_of(c, t)).ok());
      if (threads == 1) {
        y1 = t.y.bytes, s1 = t.states.bytes;
      } else {
        EXPECT_EQ(y1, t.y.bytes) << "threads=" << threads;
        EXPECT_EQ(s1, t.states.bytes) << "threads=" << threads;
        if (!update) EXPECT_TRUE(txops::testing::ran_multithreaded(threads));
      }
    }
    // Three parts of three grains each run by a team of one: part 0's thread takes the others' grains from their
    // end, on its own scratch (whose weight rows the first grain staged).
    txops::testing::ScopedThreads three(3);
    txops::testing::ScopedEnv grains("TXOPS_GRAINS_PER_PART", "3");
    txops::testing::ScopedTeamOfOne team;
    Tensors t = make_tensors(c);
    txops::testing::forget_plan();
    ASSERT_TRUE(call(c, views_of(c, t)).ok());
    EXPECT_EQ(y1, t.y.bytes) << "stolen grains";
    EXPECT_EQ(s1, t.states.bytes) << "stolen grains";
  }
}

// ---- validation: one code and a message naming the parameter per rule ----------------------------------------
::testing::AssertionResult refused(const Case& c, const Views& v, txops::StatusCode code, const char* words) {
  const Status st = call(c, v);
  if (st.ok()) return ::testing::AssertionFailure() << "accepted";
  if (st.code() != code || st.message().find(words) == std::string::npos)
    return ::testing::AssertionFailure() << static_cast<int>(st.code()) << " " << st.message();
  return ::testing::AssertionSuccess();
}

TEST(CausalConv1dValidation, EachRuleHasItsCodeAndMessage) {
  using txops::StatusCode;
  const StatusCode invalid = StatusCode::kParamInvalid, tiling = StatusCode::kTilingError;
  Case c;
  c.batch = 2, c.lines = 3, c.indices = {0, 2}, c.per_sequence = {1, 0};
  Tensors t = make_tensors(c);
  const Views good = views_of(c, t);
  ASSERT_TRUE(call(c, good).ok());
  Views v = good;
  v.x.data = nullptr;
  EXPECT_TRUE(refused(c, v, StatusCode::kNullptr, "x must not be null"));
  HostTensor wrong(DType::kF32, {c.width, c.dim});
  v = good, v.weight = wrong.view();
  EXPECT_TRUE(refused(c, v, invalid, "weight dtype must equal x dtype"));
  HostTensor k5(c.dtype, {5, c.dim});
  v = good, v.weight = k5.view();
  EXPECT_TRUE(refused(c, v, invalid, "weight dim 0 (K) must be in [2, 4]"));
  HostTensor short_state(c.dtype, {c.lines, 2, c.dim});
  v = good, v.states = short_state.view();
  EXPECT_TRUE(refused(c, v, invalid, "stateLen) must be >= K-1 = 3"));
  HostTensor bias2(c.dtype, {c.dim + 1});
  v = good, v.bias = bias2.view();
  EXPECT_TRUE(refused(c, v, tiling, "biasOptional shape"));
  Case bad = c;
  bad.indices = {0, 3};
  Tensors tb = make_tensors(bad);
  EXPECT_TRUE(refused(bad, views_of(bad, tb), invalid, "cacheIndicesOptional[1] must be in [0, numCacheLines = 3)"));
  bad.indices = {2, 2};
  tb = make_tensors(bad);
  EXPECT_TRUE(refused(bad, views_of(bad, tb), invalid, "must not repeat a line"));
  bad = c, bad.per_sequence = {1, 2};
  tb = make_tensors(bad);
  EXPECT_TRUE(refused(bad, views_of(bad, tb), invalid, "initialStateModeOptional[1] must be 0 or 1"));
  bad = c, bad.varlen = {3, 2};
  tb = make_tensors(bad);
  Views vq = views_of(bad, tb);
  tb.qsl.ints()[2] = 4;  // sum != tokens
  EXPECT_TRUE(refused(bad, vq, invalid, "queryStartLocOptional[B] must equal the token count"));
  tb.qsl.ints()[1] = 6, tb.qsl.ints()[2] = 5;
  EXPECT_TRUE(refused(bad, vq, invalid, "must be non-decreasing"));
  Case up = c;  // update: several tokens need numAcceptedTokens; accepted counts in range; stateLen fits them
  up.update = true, up.per_sequence = {};
  Tensors tu = make_tensors(up);
  EXPECT_TRUE(refused(up, views_of(up, tu), invalid, "x must be (B, 1, dim) without numAcceptedTokensOptional"));
  up.length = 1, up.per_sequence = {0, 2};
  tu = make_tensors(up);
  EXPECT_TRUE(refused(up, views_of(up, tu), invalid, "numAcceptedTokensOptional[1] must be in [0, stateLen - (K-1) = 0]"));
  up.length = 5, up.per_sequence = {0, 0};
  tu = make_tensors(up);
  EXPECT_TRUE(refused(up, views_of(up, tu), tiling, "stateLen) must be >= K-2 + the tokens"));
  v = good, v.y = good.x;  // y overlapping x
  EXPECT_TRUE(refused(c, v, invalid, "y"));
  {
    txops::testing::ScopedCompat cann(txops::Compat::kCann);
    Case f32 = c;
    f32.dtype = DType::kF32;
    Tensors tf = make_tensors(f32);
    EXPECT_TRUE(refused(f32, views_of(f32, tf), invalid, "(TXOPS_COMPAT=cann)"));
    EXPECT_TRUE(refused(c, good, invalid, "must be in [64, 16384]"));  // dim 16
  }
}

// ---- the aclnn two-phase functions (CANN's example shapes) --------------------------------------------------
using txops::testing::AclTensorPtr;
using txops::testing::to_acl_tensor;

// aclnnCausalConv1dFn / Update on the views of `c` with the activation string `activation`; -1 when phase one
// created no executor. The prefix-caching arguments are given (not null) to show that they are ignored.
int aclnn_call(const Case& c, const Views& v, const char* activation) {
  AclTensorPtr x = to_acl_tensor(v.x), w = to_acl_tensor(v.weight), st = to_acl_tensor(v.states);
  AclTensorPtr bias = c.bias ? to_acl_tensor(v.bias) : nullptr, y = to_acl_tensor(v.y);
  AclTensorPtr qsl = c.varlen.empty() ? nullptr : to_acl_tensor(v.qsl);
  AclTensorPtr idx = c.indices.empty() ? nullptr : to_acl_tensor(v.indices);
  AclTensorPtr per = c.per_sequence.empty() ? nullptr : to_acl_tensor(v.per_sequence);
  HostTensor unused = ints(std::vector<int32_t>(static_cast<size_t>(c.batch), 0));
  AclTensorPtr apc = to_acl_tensor(unused.view());
  uint64_t workspace_size = 1;
  aclOpExecutor* executor = nullptr;
  int status;
  if (c.update) {
    status = aclnnCausalConv1dUpdateGetWorkspaceSize(x.get(), w.get(), st.get(), bias.get(), qsl.get(), idx.get(),
                                                     per.get(), apc.get(), apc.get(), activation, c.null_block_id,
                                                     -1, y.get(), &workspace_size, &executor);
  } else {
    status = aclnnCausalConv1dFnGetWorkspaceSize(x.get(), w.get(), st.get(), bias.get(), qsl.get(), idx.get(),
                                                 per.get(), apc.get(), apc.get(), apc.get(), apc.get(), activation,
                                                 c.null_block_id, 16, y.get(), &workspace_size, &executor);
  }
  if (status != 0) return status;
  if (executor == nullptr) return -1;
  std::vector<uint8_t> workspace(static_cast<size_t>(workspace_size));
  return c.update ? aclnnCausalConv1dUpdate(workspace.data(), workspace_size, executor, nullptr)
                  : aclnnCausalConv1dFn(workspace.data(), workspace_size, executor, nullptr);
}

// Strided views that share memory are trusted, not judged (core/view_checks.h): a conv-state line laid over x's
// own rows, one element on (both views with padded rows), is accepted. Its values are then unspecified, but the
// call must stay defined behaviour: the write-back copies each x row onto itself shifted, a memmove (this test
// fails under AddressSanitizer's memcpy-param-overlap check when that copy is a memcpy).
TEST(CausalConv1dValidation, StridedStatesOverXStayDefined) {
  std::vector<float> buf(6 * 16, 0.5f), w(4 * 8, 0.25f), y(4 * 8, 0.0f);
  const TensorView x{buf.data(), DType::kF32, {1, 4, 8}, {64, 16, 1}};
  const TensorView states{buf.data() + 17, DType::kF32, {1, 3, 8}, {48, 16, 1}};  // x rows 1..3, shifted
  const TensorView wv{w.data(), DType::kF32, {4, 8}}, yv{y.data(), DType::kF32, {1, 4, 8}};
  for (ConvActivation act : {ConvActivation::kSilu, ConvActivation::kNone})
    EXPECT_TRUE(txops::causal_conv1d_fn(x, wv, states, nullptr, nullptr, nullptr, nullptr, act, -1, yv).ok());
}

TEST(CausalConv1dAclnn, ExampleShapesMatchTheOracleAndTheCppApi) {
  Case fn;  // the prefill example: bf16 varlen x (8, 64), query_start_loc {0, 4, 8}, K = 3, stateLen 3
  fn.varlen = {4, 4}, fn.batch = 2, fn.dim = 64, fn.width = 3, fn.state_len = 3, fn.lines = 2;
  Case up;  // the update example: x (4, 1, 512), K = 2, stateLen 4, no optional tensors
  up.update = true, up.batch = 4, up.length = 1, up.dim = 512, up.width = 2, up.state_len = 4, up.lines = 4;
  up.bias = false;
  for (const Case& c : {fn, up}) {
    SCOPED_TRACE(c.describe());
    Tensors a = make_tensors(c), b = make_tensors(c);
    Views va = views_of(c, a), vb = views_of(c, b);
    std::vector<double> y_ref, states_ref;
    txops::reference::causal_conv1d(c.update, va.x, va.weight, va.states, c.bias ? &va.bias : nullptr,
                                    c.varlen.empty() ? nullptr : &va.qsl, nullptr, nullptr, c.activation,
                                    c.null_block_id, &y_ref, &states_ref);
    ASSERT_EQ(aclnn_call(c, va, "silu"), 0);
    EXPECT_TRUE(gdrtest::matches_reference("causal_conv1d", va.y, y_ref, "aclnn", nullptr));
    EXPECT_EQ(values(va.states), states_ref);
    ASSERT_TRUE(call(c, vb).ok());
    EXPECT_EQ(a.y.bytes, b.y.bytes);
    EXPECT_EQ(a.states.bytes, b.states.bytes);
  }
}

TEST(CausalConv1dAclnn, ActivationStrings) {
  Case c;
  c.per_sequence = {1, 1};
  for (const char* silu : {"silu", "", static_cast<const char*>(nullptr)}) {  // CANN: null and "" mean silu
    Tensors a = make_tensors(c), b = make_tensors(c);
    ASSERT_EQ(aclnn_call(c, views_of(c, a), silu), 0);
    ASSERT_TRUE(call(c, views_of(c, b)).ok());
    EXPECT_EQ(a.y.bytes, b.y.bytes) << (silu ? silu : "(null)");
  }
  Case none = c;
  none.activation = ConvActivation::kNone;
  Tensors a = make_tensors(none), b = make_tensors(none);
  ASSERT_EQ(aclnn_call(none, views_of(none, a), "none"), 0);
  ASSERT_TRUE(call(none, views_of(none, b)).ok());
  EXPECT_EQ(a.y.bytes, b.y.bytes);
  EXPECT_EQ(aclnn_call(c, views_of(c, a), "SiLU"), 161002);  // exact spelling only
  EXPECT_EQ(aclnn_call(c, views_of(c, a), "relu"), 161002);
}

}  // namespace
}  // namespace convtest
