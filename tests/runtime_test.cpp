// runtime_test.cpp — the emulated acl runtime: init/finalize, devices, contexts, streams, memory. Misuse
// (foreign or double free, memcpy past destMax, calls in the wrong order, null out-params) returns an error
// code and a message, and never crashes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"

namespace {

TEST(Runtime, InitFinalizeAndWrongOrder) {
  // Memory works before aclInit (wrong order is tolerated, not fatal).
  void* p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, 128, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  EXPECT_NE(aclFinalize(), ACL_SUCCESS);  // finalize before init: error, no crash
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
}

TEST(Runtime, DevicesAndContexts) {
  EXPECT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclrtSetDevice(1), ACL_ERROR_RT_INVALID_DEVICEID);  // 107001, as CANN's runtime
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("deviceId"), std::string::npos);
  uint32_t count = 0;
  EXPECT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  EXPECT_EQ(count, 1u);
  int32_t dev = -1;
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
  EXPECT_EQ(dev, 0);
  aclrtContext ctx = nullptr;
  ASSERT_EQ(aclrtCreateContext(&ctx, 0), ACL_SUCCESS);
  EXPECT_EQ(aclrtSetCurrentContext(ctx), ACL_SUCCESS);
  aclrtContext cur = nullptr;
  EXPECT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
  EXPECT_EQ(cur, ctx);
  EXPECT_EQ(aclrtDestroyContext(ctx), ACL_SUCCESS);
  EXPECT_NE(aclrtDestroyContext(ctx), ACL_SUCCESS);  // twice: error
  int dummy = 0;
  EXPECT_NE(aclrtSetCurrentContext(&dummy), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
}

TEST(Runtime, Streams) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);  // default stream
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_NE(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_NE(aclrtCreateStream(nullptr), ACL_SUCCESS);
}

TEST(Runtime, MallocIsAlignedAndTracked) {
  for (size_t size : {size_t{1}, size_t{63}, size_t{4096}, size_t{3} << 20}) {
    void* p = nullptr;
    ASSERT_EQ(aclrtMalloc(&p, size, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    std::memset(p, 0x5A, size);
    EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
    EXPECT_NE(aclrtFree(p), ACL_SUCCESS) << "double free must be refused";
  }
  int on_stack = 0;
  EXPECT_NE(aclrtFree(&on_stack), ACL_SUCCESS) << "foreign pointer must be refused";
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("aclrtFree"), std::string::npos);
  std::vector<char> heap(100);
  EXPECT_NE(aclrtFree(heap.data() + 3), ACL_SUCCESS);
  EXPECT_NE(aclrtFree(nullptr), ACL_SUCCESS);
  void* p = nullptr;
  EXPECT_NE(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_NE(aclrtMalloc(nullptr, 8, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  void* h = nullptr;
  ASSERT_EQ(aclrtMallocHost(&h, 100), ACL_SUCCESS);
  EXPECT_NE(aclrtFree(h), ACL_SUCCESS) << "host memory is not device memory";
  EXPECT_EQ(aclrtFreeHost(h), ACL_SUCCESS);
}

TEST(Runtime, MemcpyAndMemset) {
  void* d = nullptr;
  ASSERT_EQ(aclrtMalloc(&d, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::vector<uint8_t> src(64), dst(64);
  for (int i = 0; i < 64; ++i) src[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(aclrtMemcpy(d, 64, src.data(), 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(dst.data(), 64, d, 64, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(src, dst);
  EXPECT_EQ(aclrtMemcpy(d, 32, src.data(), 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("destMax"), std::string::npos);
  EXPECT_NE(aclrtMemcpy(nullptr, 64, src.data(), 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  EXPECT_NE(aclrtMemcpy(d, 64, src.data(), 8, static_cast<aclrtMemcpyKind>(9)), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemset(d, 64, 0x11, 64), ACL_SUCCESS);
  EXPECT_EQ(static_cast<uint8_t*>(d)[63], 0x11);
  EXPECT_NE(aclrtMemset(d, 16, 0, 64), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(d), ACL_SUCCESS);
}

TEST(Runtime, Float16Helpers) {
  EXPECT_EQ(aclFloatToFloat16(1.0f), 0x3C00);
  EXPECT_EQ(aclFloat16ToFloat(0xC000), -2.0f);
  EXPECT_EQ(aclFloat16ToFloat(aclFloatToFloat16(0.333251953125f)), 0.333251953125f);
  EXPECT_EQ(aclDataTypeSize(ACL_BF16), 2u);
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT), 4u);
}

}  // namespace
