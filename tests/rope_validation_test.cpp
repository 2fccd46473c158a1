// rope_validation_test.cpp — one case per validation rule of docs/rope.md, each checked through the C++
// API (status code; message "txops::<fn>: " + names the parameter, one line) and through the aclnn API
// (phase-one code; aclGetRecentErrMsg() starts with "aclnn<Op>: " and names the parameter). Also the CANN
// compat mode (TXOPS_COMPAT=cann via set_compat_mode): what CANN refuses is refused with CANN's code.
// Arguments are built from a valid base problem per op, one field changed per case.
#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <string>
#include <vector>

#include "aclnnop/aclnn_apply_rotary_pos_emb_grad.h"
#include "aclnnop/aclnn_apply_rotary_pos_emb_v2.h"
#include "aclnnop/aclnn_inplace_partial_rotary_mul.h"
#include "aclnnop/aclnn_inplace_partial_rotary_mul_grad.h"
#include "aclnnop/aclnn_interleave_rope.h"
#include "support/rope_acl_util.h"
#include "support/rope_test_util.h"

namespace txops {
namespace {

using namespace txops::testing;
using Shape = std::vector<int64_t>;
constexpr StatusCode kNull = StatusCode::kNullptr, kInvalid = StatusCode::kParamInvalid,
                     kTiling = StatusCode::kTilingError;

std::string normalized(const std::string& s) {
  std::string out;
  for (char ch : s)
    if (ch != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

// True when a word of `message` (split on non-alphanumerics, case and '_' ignored) is `param`, or `param`
// with CANN's "Ref" / "Optional" / "Out" suffix (the C++ API and aclnn name the same parameter slightly
// differently: x / xRef, grad_query / gradQueryOut).
// `param` may list alternatives separated by '|'.
bool names_param(const std::string& message, const std::string& param) {
  const size_t bar = param.find('|');
  if (bar != std::string::npos)
    return names_param(message, param.substr(0, bar)) || names_param(message, param.substr(bar + 1));
  const std::string m = normalized(message), p = normalized(param);
  std::string word;
  for (size_t i = 0; i <= m.size(); ++i) {
    if (i < m.size() && std::isalnum(static_cast<unsigned char>(m[i]))) {
      word += m[i];
      continue;
    }
    if (word == p || word == p + "ref" || word == p + "optional" || word == p + "out") return true;
    word.clear();
  }
  return false;
}

// Checks a failed call: code, prefix, one line, parameter named.
void expect_failure(const std::string& what, int code, const std::string& message, StatusCode want_code,
                    const std::string& prefix, const std::string& param) {
  EXPECT_EQ(code, static_cast<int>(want_code)) << what << ": message '" << message << "'";
  EXPECT_EQ(message.rfind(prefix, 0), 0u) << what << ": message '" << message << "' should start with '" << prefix
                                          << "'";
  EXPECT_EQ(message.find('\n'), std::string::npos) << what << ": message is not one line";
  EXPECT_TRUE(names_param(message, param)) << what << ": message '" << message << "' should name " << param;
}

// ---- InterleaveRope -------------------------------------------------------------------------------------
struct InterleaveArgs {
  DType x = DType::kF16, cos = DType::kF16, sin = DType::kF16, out = DType::kF16;
  Shape x_shape{2, 3, 4, 64}, cos_shape{2, 1, 4, 64}, sin_shape{2, 1, 4, 64}, out_shape{2, 3, 4, 64};
  aclFormat x_format = ACL_FORMAT_ND;
  bool null_cos = false;
};

struct InterleaveRule {
  const char* name;
  std::function<void(InterleaveArgs*)> change;
  StatusCode code;
  const char* param;
  bool aclnn_only = false;  // formats and null pointers exist only on the aclnn side
};

void check_interleave_rule(const InterleaveRule& rule) {
  InterleaveArgs a;
  rule.change(&a);
  OwnedTensor x(a.x, a.x_shape), cos(a.cos, a.cos_shape), sin(a.sin, a.sin_shape), out(a.out, a.out_shape);
  if (!rule.aclnn_only) {
    const Status st = interleave_rope(x.view(), cos.view(), sin.view(), out.view());
    expect_failure(std::string("C++ ") + rule.name, static_cast<int>(st.code()), st.message(), rule.code,
                   "txops::interleave_rope: ", rule.param);
  }
  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  const aclnnStatus code = aclnnInterleaveRopeGetWorkspaceSize(x.acl(a.x_format), a.null_cos ? nullptr : cos.acl(),
                                                               sin.acl(), out.acl(), &ws, &exec);
  expect_failure(std::string("aclnn ") + rule.name, code, aclGetRecentErrMsg(), rule.code, "aclnnInterleaveRope: ",
                 rule.param);
}

TEST(RopeValidation, InterleaveRopeRules) {
  const InterleaveRule rules[] = {
      {"null cos", [](InterleaveArgs* a) { a->null_cos = true; }, kNull, "cos", true},
      {"x dtype int32", [](InterleaveArgs* a) { a->x = a->out = DType::kI32; }, kInvalid, "x"},
      {"sin dtype differs from cos", [](InterleaveArgs* a) { a->sin = DType::kF32; }, kInvalid, "sin"},
      {"cos fp16 with bf16 x", [](InterleaveArgs* a) { a->x = a->out = DType::kBF16; }, kInvalid, "cos"},
      {"out dtype differs from x", [](InterleaveArgs* a) { a->out = DType::kF32; }, kInvalid, "out"},
      {"x format NCHW", [](InterleaveArgs* a) { a->x_format = ACL_FORMAT_NCHW; }, kInvalid, "x", true},
      {"x rank 3", [](InterleaveArgs* a) { a->x_shape = a->out_shape = {6, 4, 64}; }, kTiling, "x"},
      {"cos rank 3", [](InterleaveArgs* a) { a->cos_shape = a->sin_shape = {2, 4, 64}; }, kTiling, "cos"},
      {"out shape differs", [](InterleaveArgs* a) { a->out_shape = {2, 3, 5, 64}; }, kTiling, "out"},
      {"cos D differs", [](InterleaveArgs* a) { a->cos_shape = a->sin_shape = {2, 1, 4, 32}; }, kTiling, "cos"},
      {"cos B not 1 or B", [](InterleaveArgs* a) { a->cos_shape = a->sin_shape = {3, 1, 4, 64}; }, kTiling, "cos"},
      {"cos S not 1 or S", [](InterleaveArgs* a) { a->cos_shape = a->sin_shape = {2, 1, 3, 64}; }, kTiling, "cos"},
      {"cos N not 1", [](InterleaveArgs* a) { a->cos_shape = a->sin_shape = {2, 3, 4, 64}; }, kTiling, "cos"},
      {"sin shape differs", [](InterleaveArgs* a) { a->sin_shape = {1, 1, 4, 64}; }, kTiling, "sin"},
      {"D odd", [](InterleaveArgs* a) {
         a->x_shape = a->out_shape = {2, 3, 4, 63};
         a->cos_shape = a->sin_shape = {2, 1, 4, 63};
       }, kTiling, "x"},
      {"D over 1024", [](InterleaveArgs* a) {
         a->x_shape = a->out_shape = {1, 1, 1, 1026};
         a->cos_shape = a->sin_shape = {1, 1, 1, 1026};
       }, kTiling, "x"},
  };
  for (const auto& rule : rules) check_interleave_rule(rule);
}

TEST(RopeValidation, InterleaveRopeCannCompat) {
  ScopedCompat cann(Compat::kCann);
  // CANN: D must be 64, cos B must equal x B, cos/sin the same dtype as x.
  const InterleaveRule rules[] = {
      {"D 32 (CANN: 64 only)", [](InterleaveArgs* a) {
         a->x_shape = a->out_shape = {2, 3, 4, 32};
         a->cos_shape = a->sin_shape = {2, 1, 4, 32};
       }, kTiling, "x"},
      {"cos B 1 (CANN: equal to x B)", [](InterleaveArgs* a) { a->cos_shape = a->sin_shape = {1, 1, 4, 64}; },
       kTiling, "cos"},
      {"fp32 cos with fp16 x (CANN: same dtype)", [](InterleaveArgs* a) { a->cos = a->sin = DType::kF32; },
       kInvalid, "cos"},
  };
  for (const auto& rule : rules) check_interleave_rule(rule);
  // What CANN accepts passes phase one in compat mode too.
  OwnedTensor x(DType::kF16, {2, 3, 4, 64}), cos(DType::kF16, {2, 1, 4, 64}), sin(DType::kF16, {2, 1, 4, 64});
  OwnedTensor out(DType::kF16, {2, 3, 4, 64});
  EXPECT_TRUE(interleave_rope(x.view(), cos.view(), sin.view(), out.view()).ok());
}

// Every required tensor of every RoPE op, null in turn: 161001 naming it (aclnn only: the C++ API takes
// references). Valid shapes otherwise.
TEST(RopeValidation, EveryRequiredTensorNullIsNullptrError) {
  const char* kInterleaveNames[] = {"x", "cos", "sin", "out"};
  for (int which = 0; which < 4; ++which) {
    OwnedTensor x(DType::kF32, {1, 2, 3, 8}), cos(DType::kF32, {1, 1, 3, 8}), sin(DType::kF32, {1, 1, 3, 8});
    OwnedTensor out(DType::kF32, {1, 2, 3, 8});
    aclTensor* t[4] = {x.acl(), cos.acl(), sin.acl(), out.acl()};
    t[which] = nullptr;
    uint64_t ws = 0;
    aclOpExecutor* exec = nullptr;
    const aclnnStatus code = aclnnInterleaveRopeGetWorkspaceSize(t[0], t[1], t[2], t[3], &ws, &exec);
    expect_failure(std::string("null ") + kInterleaveNames[which], code, aclGetRecentErrMsg(), kNull,
                   "aclnnInterleaveRope: ", kInterleaveNames[which]);
  }
  const int64_t slice_values[2] = {0, 8};
  AclIntArrayPtr slice(aclCreateIntArray(slice_values, 2));
  for (bool backward : {false, true}) {
    const char* names[] = {backward ? "dy" : "x", "cos", "sin"};
    for (int which = 0; which < 3; ++which) {
      OwnedTensor x(DType::kF32, {1, 3, 2, 8}), cos(DType::kF32, {1, 3, 1, 8}), sin(DType::kF32, {1, 3, 1, 8});
      aclTensor* t[3] = {x.acl(), cos.acl(), sin.acl()};
      t[which] = nullptr;
      uint64_t ws = 0;
      aclOpExecutor* exec = nullptr;
      const aclnnStatus code =
          backward ? aclnnInplacePartialRotaryMulGradGetWorkspaceSize(t[0], t[1], t[2], 0, slice.get(), &ws, &exec)
                   : aclnnInplacePartialRotaryMulGetWorkspaceSize(t[0], t[1], t[2], 0, slice.get(), &ws, &exec);
      expect_failure(std::string("null ") + names[which], code, aclGetRecentErrMsg(), kNull,
                     backward ? "aclnnInplacePartialRotaryMulGrad: " : "aclnnInplacePartialRotaryMul: ",
                     names[which]);
    }
  }
  char half[] = "half";
  const char* kForwardNames[] = {"query", "key", "cos", "sin"};
  for (int which = 0; which < 4; ++which) {
    OwnedTensor q(DType::kF32, {1, 3, 2, 8}), k(DType::kF32, {1, 3, 1, 8}), cos(DType::kF32, {1, 3, 1, 8});
    OwnedTensor sin(DType::kF32, {1, 3, 1, 8});
    aclTensor* t[4] = {q.acl(), k.acl(), cos.acl(), sin.acl()};
    t[which] = nullptr;
    uint64_t ws = 0;
    aclOpExecutor* exec = nullptr;
    const aclnnStatus code = aclnnApplyRotaryPosEmbV2GetWorkspaceSize(t[0], t[1], t[2], t[3], 1, half, &ws, &exec);
    expect_failure(std::string("null ") + kForwardNames[which], code, aclGetRecentErrMsg(), kNull,
                   "aclnnApplyRotaryPosEmbV2: ", kForwardNames[which]);
  }
  // Grad: the embeds, cos, sin and gradQueryOut / gradKeyOut are required (q/k and gradCos/gradSin optional).
  const char* kGradNames[] = {"gradQueryEmbed", "gradKeyEmbed", "cos", "sin", "gradQuery", "gradKey"};
  for (int which = 0; which < 6; ++which) {
    OwnedTensor gqe(DType::kF32, {1, 3, 2, 8}), gke(DType::kF32, {1, 3, 1, 8}), cos(DType::kF32, {1, 3, 1, 8});
    OwnedTensor sin(DType::kF32, {1, 3, 1, 8}), gq(DType::kF32, {1, 3, 2, 8}), gk(DType::kF32, {1, 3, 1, 8});
    aclTensor* t[6] = {gqe.acl(), gke.acl(), cos.acl(), sin.acl(), gq.acl(), gk.acl()};
    t[which] = nullptr;
    uint64_t ws = 0;
    aclOpExecutor* exec = nullptr;
    const aclnnStatus code = aclnnApplyRotaryPosEmbGradGetWorkspaceSize(
        t[0], t[1], t[2], t[3], nullptr, nullptr, half, 1, t[4], t[5], nullptr, nullptr, &ws, &exec);
    expect_failure(std::string("null ") + kGradNames[which], code, aclGetRecentErrMsg(), kNull,
                   "aclnnApplyRotaryPosEmbGrad: ", kGradNames[which]);
  }
}

// ---- InplacePartialRotaryMul (+Grad) ------------------------------------------------------------------
struct PartialArgs {
  DType x = DType::kF32, cos = DType::kF32, sin = DType::kF32;
  Shape x_shape{2, 3, 5, 64}, cos_shape{1, 3, 1, 32}, sin_shape{1, 3, 1, 32};
  int64_t mode = 0;
  std::vector<int64_t> slice{16, 48};
  bool null_sin = false;
};

struct PartialRule {
  const char* name;
  std::function<void(PartialArgs*)> change;
  StatusCode code;
  const char* param;
  bool aclnn_only = false;
};

void check_partial_rule(const PartialRule& rule, bool backward, bool expect_ok = false) {
  PartialArgs a;
  rule.change(&a);
  OwnedTensor x(a.x, a.x_shape), cos(a.cos, a.cos_shape), sin(a.sin, a.sin_shape);
  const std::string what = std::string(backward ? "grad " : "forward ") + rule.name;
  const std::string param = backward && std::string(rule.param) == "x" ? "dy" : rule.param;  // xRef / dyRef
  if (!rule.aclnn_only && a.slice.size() == 2 && a.mode >= 0 && a.mode <= 3) {
    const RotaryMode mode = static_cast<RotaryMode>(a.mode);
    const Status st = backward ? inplace_partial_rotary_mul_grad(x.view(), cos.view(), sin.view(), mode, a.slice[0],
                                                                 a.slice[1])
                               : inplace_partial_rotary_mul(x.view(), cos.view(), sin.view(), mode, a.slice[0],
                                                            a.slice[1]);
    if (expect_ok) {
      EXPECT_TRUE(st.ok()) << "C++ " << what << ": " << st.message();
    } else {
      expect_failure("C++ " + what, static_cast<int>(st.code()), st.message(), rule.code,
                     backward ? "txops::inplace_partial_rotary_mul_grad: " : "txops::inplace_partial_rotary_mul: ",
                     param);
    }
  }
  AclIntArrayPtr slice(aclCreateIntArray(a.slice.data(), a.slice.size()));
  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  aclTensor* sin_acl = a.null_sin ? nullptr : sin.acl();
  const aclnnStatus code =
      backward ? aclnnInplacePartialRotaryMulGradGetWorkspaceSize(x.acl(), cos.acl(), sin_acl, a.mode, slice.get(),
                                                                  &ws, &exec)
               : aclnnInplacePartialRotaryMulGetWorkspaceSize(x.acl(), cos.acl(), sin_acl, a.mode, slice.get(), &ws,
                                                              &exec);
  if (expect_ok) {
    EXPECT_EQ(code, 0) << "aclnn " << what << ": " << aclGetRecentErrMsg();
    if (code == 0) {
      // Consume the executor so that it is not leaked.
      std::vector<uint8_t> workspace(ws + 1);
      EXPECT_EQ(backward ? aclnnInplacePartialRotaryMulGrad(workspace.data(), ws, exec, nullptr)
                         : aclnnInplacePartialRotaryMul(workspace.data(), ws, exec, nullptr), 0);
    }
    return;
  }
  expect_failure("aclnn " + what, code, aclGetRecentErrMsg(), rule.code,
                 backward ? "aclnnInplacePartialRotaryMulGrad: " : "aclnnInplacePartialRotaryMul: ", param);
}

TEST(RopeValidation, InplacePartialRotaryMulRules) {
  const PartialRule rules[] = {
      {"null sin", [](PartialArgs* a) { a->null_sin = true; }, kNull, "sin", true},
      {"x dtype int32", [](PartialArgs* a) { a->x = DType::kI32; }, kInvalid, "x"},
      {"cos dtype int32", [](PartialArgs* a) { a->cos = a->sin = DType::kI32; }, kInvalid, "cos"},
      {"sin dtype differs from cos", [](PartialArgs* a) { a->sin = DType::kBF16; }, kInvalid, "sin"},
      {"x rank 3", [](PartialArgs* a) { a->x_shape = {6, 5, 64}; }, kTiling, "x"},
      {"D over 1024", [](PartialArgs* a) { a->x_shape = {1, 3, 1, 1026}; }, kTiling, "x"},
      {"slice start negative", [](PartialArgs* a) { a->slice = {-2, 30}; }, kTiling, "partialSlice"},
      {"slice end past D", [](PartialArgs* a) { a->slice = {48, 80}; }, kTiling, "partialSlice"},
      {"slice start after end", [](PartialArgs* a) {
         a->slice = {40, 8};
         a->cos_shape = a->sin_shape = {1, 3, 1, 0};
       }, kTiling, "partialSlice"},
      {"slice of three values", [](PartialArgs* a) { a->slice = {16, 48, 2}; }, kTiling, "partialSlice", true},
      {"odd slice length (half)", [](PartialArgs* a) {
         a->slice = {16, 47};
         a->cos_shape = a->sin_shape = {1, 3, 1, 31};
       }, kTiling, "partialSlice"},
      {"slice length not a multiple of 4 (quarter)", [](PartialArgs* a) {
         a->mode = 2;
         a->slice = {16, 46};
         a->cos_shape = a->sin_shape = {1, 3, 1, 30};
       }, kTiling, "partialSlice"},
      {"mode 4", [](PartialArgs* a) { a->mode = 4; }, kTiling, "rotaryMode", true},
      {"mode -1", [](PartialArgs* a) { a->mode = -1; }, kTiling, "rotaryMode", true},
      {"cos last dim not the slice length", [](PartialArgs* a) { a->cos_shape = a->sin_shape = {1, 3, 1, 64}; },
       kTiling, "cos"},
      {"cos rank 3", [](PartialArgs* a) { a->cos_shape = a->sin_shape = {3, 1, 32}; }, kTiling, "cos"},
      {"cos B not 1 or B", [](PartialArgs* a) { a->cos_shape = a->sin_shape = {3, 3, 1, 32}; }, kTiling, "cos"},
      {"cos N not 1 or N", [](PartialArgs* a) { a->cos_shape = a->sin_shape = {1, 3, 2, 32}; }, kTiling, "cos"},
      {"sin shape differs", [](PartialArgs* a) { a->sin_shape = {1, 1, 1, 32}; }, kTiling, "sin"},
  };
  for (bool backward : {false, true})
    for (const auto& rule : rules) check_partial_rule(rule, backward);
}

TEST(RopeValidation, InplacePartialRotaryMulAcceptsWhatTheSpecAllows) {
  const PartialRule allowed[] = {
      {"start == end", [](PartialArgs* a) {
         a->slice = {7, 7};
         a->cos_shape = a->sin_shape = {1, 3, 1, 0};
       }, kTiling, ""},
      {"mixed dtypes bf16 x, fp16 cos", [](PartialArgs* a) {
         a->x = DType::kBF16;
         a->cos = a->sin = DType::kF16;
       }, kTiling, ""},
      {"interleave-half, full width", [](PartialArgs* a) {
         a->mode = 3;
         a->slice = {0, 64};
         a->cos_shape = a->sin_shape = {2, 3, 5, 64};
       }, kTiling, ""},
  };
  for (bool backward : {false, true})
    for (const auto& rule : allowed) check_partial_rule(rule, backward, true);
}

TEST(RopeValidation, InplacePartialRotaryMulCannCompat) {
  ScopedCompat cann(Compat::kCann);
  // CANN implements mode 1 (interleave) only, forward, contiguous.
  check_partial_rule({"mode 0 (CANN: interleave only)", [](PartialArgs*) {}, kTiling, "rotaryMode"}, false);
  check_partial_rule({"mode 1", [](PartialArgs* a) { a->mode = 1; }, kTiling, ""}, false, true);
  // A strided x is beyond CANN: refused (code not pinned by the spec).
  std::vector<float> storage(2 * 3 * 5 * 128, 0.0f);
  TensorView strided(storage.data(), DType::kF32, {2, 3, 5, 64}, {3 * 5 * 128, 5 * 128, 128, 1});
  OwnedTensor cos(DType::kF32, {1, 3, 1, 32}), sin(DType::kF32, {1, 3, 1, 32});
  EXPECT_FALSE(inplace_partial_rotary_mul(strided, cos.view(), sin.view(), RotaryMode::kInterleave, 16, 48).ok());
}

// ---- ApplyRotaryPosEmbV2 / Grad ------------------------------------------------------------------------
struct ApplyArgs {
  DType q = DType::kF16, k = DType::kF16, cos = DType::kF16, sin = DType::kF16, out = DType::kF16;
  Shape q_shape{2, 3, 4, 64}, k_shape{2, 3, 1, 64}, cos_shape{2, 3, 1, 64}, sin_shape{2, 3, 1, 64};
  Shape gq_shape{2, 3, 4, 64}, gcos_shape{2, 3, 1, 64};
  int64_t layout = 1;
  const char* mode = "half";
  bool null_cos = false, with_query = true, with_key = true, null_grad_query_out = false;
};

struct ApplyRule {
  const char* name;
  std::function<void(ApplyArgs*)> change;
  StatusCode code;
  const char* param;
  bool aclnn_only = false;
  bool forward = true, backward = true;
};

void check_apply_rule(const ApplyRule& rule, bool backward) {
  if ((backward && !rule.backward) || (!backward && !rule.forward)) return;
  ApplyArgs a;
  rule.change(&a);
  OwnedTensor q(a.q, a.q_shape), k(a.k, a.k_shape), cos(a.cos, a.cos_shape), sin(a.sin, a.sin_shape);
  OwnedTensor gq(a.out, a.gq_shape), gk(a.out, a.k_shape), gcos(a.cos, a.gcos_shape), gsin(a.cos, a.gcos_shape);
  const std::string what = std::string(backward ? "grad " : "forward ") + rule.name;
  // The grad's first two tensors are the embeds: a rule on "query" / "key" is about them there.
  std::string param = rule.param;
  if (backward && param == "query") param = "gradQueryEmbed";
  if (backward && param == "key") param = "gradKeyEmbed";
  const std::string mode_text = a.mode ? a.mode : "half";
  const bool mode_known = mode_text == "half" || mode_text == "interleave" || mode_text == "quarter";
  if (!rule.aclnn_only && mode_known) {
    const RotaryMode mode = mode_text == "half" ? RotaryMode::kHalf
                            : mode_text == "interleave" ? RotaryMode::kInterleave : RotaryMode::kQuarter;
    const Layout layout = static_cast<Layout>(a.layout);
    const Status st =
        backward ? apply_rotary_pos_emb_grad(q.view(), k.view(), cos.view(), sin.view(),
                                             a.with_query ? q.ptr() : nullptr, a.with_key ? k.ptr() : nullptr, mode,
                                             layout, gq.view(), gk.view(), gcos.ptr(), gsin.ptr())
                 : apply_rotary_pos_emb(q.view(), k.view(), cos.view(), sin.view(), layout, mode);
    expect_failure("C++ " + what, static_cast<int>(st.code()), st.message(), rule.code,
                   backward ? "txops::apply_rotary_pos_emb_grad: " : "txops::apply_rotary_pos_emb: ", param);
  }
  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  std::string mode_buffer = mode_text;
  char* mode_arg = a.mode ? &mode_buffer[0] : nullptr;
  aclTensor* cos_acl = a.null_cos ? nullptr : cos.acl();
  aclnnStatus code;
  if (backward) {
    // The embeds reuse q's and k's shapes; q and k themselves are passed as queryOptional / keyOptional.
    OwnedTensor qe(a.q, a.q_shape), ke(a.k, a.k_shape);
    code = aclnnApplyRotaryPosEmbGradGetWorkspaceSize(
        qe.acl(), ke.acl(), cos_acl, sin.acl(), a.with_query ? q.acl() : nullptr, a.with_key ? k.acl() : nullptr,
        mode_arg, a.layout, a.null_grad_query_out ? nullptr : gq.acl(), gk.acl(), gcos.acl(), gsin.acl(), &ws, &exec);
  } else {
    code = aclnnApplyRotaryPosEmbV2GetWorkspaceSize(q.acl(), k.acl(), cos_acl, sin.acl(), a.layout, mode_arg, &ws,
                                                    &exec);
  }
  expect_failure("aclnn " + what, code, aclGetRecentErrMsg(), rule.code,
                 backward ? "aclnnApplyRotaryPosEmbGrad: " : "aclnnApplyRotaryPosEmbV2: ", param);
}

TEST(RopeValidation, ApplyRotaryPosEmbRules) {
  const ApplyRule rules[] = {
      {"null cos", [](ApplyArgs* a) { a->null_cos = true; }, kNull, "cos", true},
      {"null gradQueryOut", [](ApplyArgs* a) { a->null_grad_query_out = true; }, kNull, "gradQuery", true, false},
      {"q dtype int32", [](ApplyArgs* a) { a->q = a->k = a->out = DType::kI32; }, kInvalid, "query"},
      {"k dtype differs from q", [](ApplyArgs* a) { a->k = DType::kF32; }, kInvalid, "key"},
      {"cos bf16 with fp16 q", [](ApplyArgs* a) { a->cos = a->sin = DType::kBF16; }, kInvalid, "cos"},
      {"sin dtype differs from cos", [](ApplyArgs* a) { a->sin = DType::kF32; }, kInvalid, "sin"},
      {"layout 0", [](ApplyArgs* a) { a->layout = 0; }, kInvalid, "layout"},
      {"layout 5", [](ApplyArgs* a) { a->layout = 5; }, kInvalid, "layout"},
      {"mode string unknown", [](ApplyArgs* a) { a->mode = "rotate"; }, kInvalid, "rotaryMode", true},
      {"k B differs from q", [](ApplyArgs* a) { a->k_shape = {1, 3, 1, 64}; }, kInvalid, "key"},
      {"k D differs from q", [](ApplyArgs* a) { a->k_shape = {2, 3, 1, 32}; }, kInvalid, "key"},
      {"q rank 3 with BSND", [](ApplyArgs* a) { a->q_shape = a->gq_shape = {6, 4, 64}; }, kInvalid, "query"},
      {"q rank 4 with TND", [](ApplyArgs* a) { a->layout = 4; }, kInvalid, "query"},
      {"D odd", [](ApplyArgs* a) {
         a->q_shape = a->gq_shape = {2, 3, 4, 63};
         a->k_shape = {2, 3, 1, 63};
         a->cos_shape = a->sin_shape = a->gcos_shape = {2, 3, 1, 63};
       }, kInvalid, "query"},
      {"D over 1024", [](ApplyArgs* a) {
         a->q_shape = a->gq_shape = {1, 1, 1, 1026};
         a->k_shape = {1, 1, 1, 1026};
         a->cos_shape = a->sin_shape = a->gcos_shape = {1, 1, 1, 1026};
       }, kInvalid, "query"},
      {"cos D larger than q D", [](ApplyArgs* a) { a->cos_shape = a->sin_shape = a->gcos_shape = {2, 3, 1, 128}; },
       kInvalid, "cos"},
      {"cos D smaller than q D (grad)", [](ApplyArgs* a) { a->cos_shape = a->sin_shape = a->gcos_shape = {2, 3, 1, 32}; },
       kInvalid, "cos", false, false, true},
      {"cos B not 1 or B", [](ApplyArgs* a) { a->cos_shape = a->sin_shape = a->gcos_shape = {3, 3, 1, 64}; },
       kInvalid, "cos"},
      {"cos S differs", [](ApplyArgs* a) { a->cos_shape = a->sin_shape = a->gcos_shape = {2, 1, 1, 64}; }, kInvalid,
       "cos"},
      {"cos N not 1", [](ApplyArgs* a) { a->cos_shape = a->sin_shape = a->gcos_shape = {2, 3, 4, 64}; }, kInvalid,
       "cos"},
      {"sin shape differs", [](ApplyArgs* a) { a->sin_shape = {1, 3, 1, 64}; }, kInvalid, "sin"},
      {"query without key", [](ApplyArgs* a) { a->with_key = false; }, kInvalid, "key|query", false, false, true},
      {"gradQueryOut shape differs", [](ApplyArgs* a) { a->gq_shape = {2, 3, 5, 64}; }, kInvalid, "gradQuery", false,
       false, true},
      {"gradCosOut shape differs", [](ApplyArgs* a) { a->gcos_shape = {1, 3, 1, 64}; }, kInvalid, "gradCos", false,
       false, true},
  };
  for (bool backward : {false, true})
    for (const auto& rule : rules) check_apply_rule(rule, backward);
}

TEST(RopeValidation, ApplyRotaryPosEmbCannCompat) {
  ScopedCompat cann(Compat::kCann);
  // CANN: grad in "half" only, layouts {1, 2, 4}, all tensors one dtype.
  const ApplyRule rules[] = {
      {"grad interleave (CANN: half only)", [](ApplyArgs* a) { a->mode = "interleave"; }, kInvalid, "rotaryMode",
       false, false, true},
      {"grad layout BNSD (CANN: 1, 2, 4)", [](ApplyArgs* a) {
         a->layout = 3;
         a->q_shape = a->gq_shape = {2, 4, 3, 64};
         a->k_shape = {2, 1, 3, 64};
         a->cos_shape = a->sin_shape = a->gcos_shape = {2, 1, 3, 64};
       }, kInvalid, "layout", false, false, true},
      {"grad fp32 cos with fp16 q (CANN: one dtype)", [](ApplyArgs* a) { a->cos = a->sin = DType::kF32; }, kInvalid,
       "cos", false, false, true},
  };
  for (const auto& rule : rules) check_apply_rule(rule, true);
}

}  // namespace
}  // namespace txops
