// tensor_api_test.cpp — aclCreateTensor / aclCreateIntArray and their conversion to views: strides and offsets
// in elements, contiguous default strides, format and storage-bounds checks with CANN's codes, and the
// executor lifecycle shared by every operator (consumed once, workspace checks, null out-params).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "acl/acl.h"
#include "core/executor.h"
#include "core/status.h"
#include "runtime/acl_tensor.h"

namespace txops {
namespace {

TEST(TensorApi, ContiguousDefaultStridesAndOffset) {
  std::vector<float> storage(100);
  const int64_t dims[3] = {2, 3, 4};
  const int64_t storage_dims[1] = {100};
  aclTensor* t = aclCreateTensor(dims, 3, ACL_FLOAT, nullptr, 10, ACL_FORMAT_ND, storage_dims, 1, storage.data());
  ASSERT_NE(t, nullptr);
  TensorView v;
  ASSERT_TRUE(tensor_to_view(t, "x", &v).ok());
  EXPECT_EQ(v.ndim, 3);
  EXPECT_EQ(v.strides[0], 12);
  EXPECT_EQ(v.strides[1], 4);
  EXPECT_EQ(v.strides[2], 1);
  EXPECT_EQ(v.data, storage.data() + 10);
  EXPECT_TRUE(v.is_contiguous());
  int64_t* got = nullptr;
  uint64_t n = 0;
  ASSERT_EQ(aclGetViewStrides(t, &got, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(got[0], 12);
  delete[] got;  // CANN: the getter's array is released with delete[]
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

TEST(TensorApi, ViewOutsideStorageIsRefused) {
  std::vector<uint16_t> storage(24);
  const int64_t dims[2] = {4, 6};
  const int64_t storage_dims[2] = {4, 6};
  // Offset 1 pushes the last element past the 24-element storage: refused at creation.
  aclTensor* t = aclCreateTensor(dims, 2, ACL_BF16, nullptr, 1, ACL_FORMAT_ND, storage_dims, 2, storage.data());
  EXPECT_EQ(t, nullptr);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("storage"), std::string::npos) << aclGetRecentErrMsg();
  TensorView v;
  // A strided view that fits: every other row.
  const int64_t dims2[2] = {2, 6};
  const int64_t strides2[2] = {12, 1};
  t = aclCreateTensor(dims2, 2, ACL_BF16, strides2, 6, ACL_FORMAT_ND, storage_dims, 2, storage.data());
  EXPECT_TRUE(tensor_to_view(t, "query", &v).ok());
  EXPECT_FALSE(v.is_contiguous());
  aclDestroyTensor(t);
  // Broadcast (stride 0) views are fine.
  const int64_t strides3[2] = {0, 1};
  t = aclCreateTensor(dims, 2, ACL_BF16, strides3, 0, ACL_FORMAT_ND, storage_dims, 2, storage.data());
  EXPECT_TRUE(tensor_to_view(t, "cos", &v).ok());
  aclDestroyTensor(t);
}

TEST(TensorApi, FormatsAndNulls) {
  std::vector<float> storage(8);
  const int64_t dims[1] = {8};
  for (aclFormat f : {ACL_FORMAT_NCHW, ACL_FORMAT_NHWC, ACL_FORMAT_FRACTAL_NZ}) {
    aclTensor* t = aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, f, dims, 1, storage.data());
    TensorView v;
    Status st = tensor_to_view(t, "x", &v);
    EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
    EXPECT_NE(st.message().find("format"), std::string::npos);
    aclDestroyTensor(t);
  }
  TensorView v;
  EXPECT_EQ(tensor_to_view(nullptr, "cos", &v).code(), StatusCode::kNullptr);
  bool present = true;
  EXPECT_TRUE(optional_tensor_to_view(nullptr, "gOptional", &v, &present).ok());
  EXPECT_FALSE(present);
  const int64_t neg[1] = {-1};
  EXPECT_EQ(aclCreateTensor(neg, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 1, storage.data()), nullptr);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("viewDims"), std::string::npos);
  const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(aclCreateTensor(nine, 9, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 1, storage.data()), nullptr);
  EXPECT_EQ(aclDestroyTensor(nullptr), ACLNN_SUCCESS);
}

TEST(TensorApi, IntArray) {
  const int64_t values[2] = {128, 192};
  aclIntArray* a = aclCreateIntArray(values, 2);
  ASSERT_NE(a, nullptr);
  uint64_t n = 0;
  const int64_t* got = int_array_values(a, &n);
  ASSERT_EQ(n, 2u);
  EXPECT_EQ(got[1], 192);
  EXPECT_EQ(aclDestroyIntArray(a), ACLNN_SUCCESS);
  EXPECT_EQ(aclCreateIntArray(nullptr, 3), nullptr);
  EXPECT_EQ(int_array_values(nullptr, &n), nullptr);
  EXPECT_EQ(n, 0u);
}

TEST(Executor, ConsumedOnceAndChecked) {
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  int runs = 0;
  ASSERT_EQ(make_executor("aclnnTest", 256, [&runs](void* w) { ++runs; return Status(); }, &ws, &ex), ACLNN_SUCCESS);
  EXPECT_EQ(ws, 256u);
  std::vector<char> workspace(256);
  EXPECT_EQ(run_executor("aclnnTest", workspace.data(), 100, ex), ACLNN_ERR_PARAM_INVALID);  // too small
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("workspaceSize"), std::string::npos);
  EXPECT_EQ(run_executor("aclnnOther", workspace.data(), 256, ex), ACLNN_ERR_PARAM_INVALID);  // wrong API
  EXPECT_EQ(run_executor("aclnnTest", nullptr, 256, ex), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(run_executor("aclnnTest", workspace.data(), 256, ex), ACLNN_SUCCESS);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(run_executor("aclnnTest", workspace.data(), 256, ex), ACLNN_ERR_PARAM_INVALID);  // consumed
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("not live"), std::string::npos);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(run_executor("aclnnTest", nullptr, 0, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(check_phase_one_outputs(nullptr, &ex).code(), StatusCode::kNullptr);
  EXPECT_EQ(check_phase_one_outputs(&ws, nullptr).code(), StatusCode::kNullptr);
}

TEST(Executor, FailureCodeAndMessageReachTheCaller) {
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(make_executor("aclnnTest", 0,
                          [](void*) { return fail(StatusCode::kRuntimeError, "something broke: %d", 7); }, &ws, &ex),
            ACLNN_SUCCESS);
  EXPECT_EQ(run_executor("aclnnTest", nullptr, 0, ex), ACLNN_ERR_RUNTIME_ERROR);
  EXPECT_STREQ(aclGetRecentErrMsg(), "aclnnTest: something broke: 7");
}

}  // namespace
}  // namespace txops
