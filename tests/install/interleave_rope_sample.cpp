// interleave_rope_sample.cpp — a program written the way CANN's aclnn samples are (acl runtime init, device
// buffers via aclrtMalloc + aclrtMemcpy, aclCreateTensor, the two-phase call, stream sync, copy back, teardown),
// compiled against the *installed* txops headers and library with find_package(txops). It uses only CANN
// spellings (aclDataType::ACL_FLOAT16, aclFormat::ACL_FORMAT_ND, aclFloat16, ...), so a file like it builds
// unchanged for the NPU. It prints "result[i] is: v" lines; check_install.sh compares them with an
// independent computation.
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_interleave_rope.h"

#define CHECK_OK(expr, what)                                  \
  do {                                                        \
    auto status_ = (expr);                                    \
    if (status_ != 0) {                                       \
      printf("%s failed. ERROR: %d\n", what, (int)status_);   \
      return 1;                                               \
    }                                                         \
  } while (0)

static int64_t ElementCount(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

template <typename T>
static int MakeDeviceTensor(const std::vector<T>& host, const std::vector<int64_t>& shape, void** deviceAddr,
                            aclDataType dataType, aclTensor** tensor) {
  const size_t bytes = ElementCount(shape) * sizeof(T);
  CHECK_OK(aclrtMalloc(deviceAddr, bytes, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
  CHECK_OK(aclrtMemcpy(*deviceAddr, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy");
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
  *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0, aclFormat::ACL_FORMAT_ND,
                            shape.data(), shape.size(), *deviceAddr);
  return *tensor == nullptr ? 1 : 0;
}

int main() {
  int32_t deviceId = 0;
  aclrtStream stream;
  CHECK_OK(aclInit(nullptr), "aclInit");
  CHECK_OK(aclrtSetDevice(deviceId), "aclrtSetDevice");
  CHECK_OK(aclrtCreateStream(&stream), "aclrtCreateStream");

  // CANN's documented InterleaveRope shape: (B, N, S, D) with D = 64; cos/sin (B, 1, S, D).
  const std::vector<int64_t> xShape = {1, 2, 3, 64};
  const std::vector<int64_t> csShape = {1, 1, 3, 64};
  std::vector<aclFloat16> xHost(ElementCount(xShape)), cosHost(ElementCount(csShape)), sinHost(ElementCount(csShape));
  for (size_t i = 0; i < xHost.size(); i++) xHost[i] = aclFloatToFloat16(static_cast<float>((i * 37) % 23) / 8 - 1.25f);
  for (size_t i = 0; i < cosHost.size(); i++) {
    cosHost[i] = aclFloatToFloat16(static_cast<float>((i * 11) % 17) / 16);
    sinHost[i] = aclFloatToFloat16(static_cast<float>((i * 5) % 13) / 16 - 0.375f);
  }
  std::vector<aclFloat16> outHost(ElementCount(xShape), aclFloatToFloat16(0.0f));

  void *xAddr = nullptr, *cosAddr = nullptr, *sinAddr = nullptr, *outAddr = nullptr;
  aclTensor *x = nullptr, *cos = nullptr, *sin = nullptr, *out = nullptr;
  CHECK_OK(MakeDeviceTensor(xHost, xShape, &xAddr, aclDataType::ACL_FLOAT16, &x), "x");
  CHECK_OK(MakeDeviceTensor(cosHost, csShape, &cosAddr, aclDataType::ACL_FLOAT16, &cos), "cos");
  CHECK_OK(MakeDeviceTensor(sinHost, csShape, &sinAddr, aclDataType::ACL_FLOAT16, &sin), "sin");
  CHECK_OK(MakeDeviceTensor(outHost, xShape, &outAddr, aclDataType::ACL_FLOAT16, &out), "out");

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor;
  CHECK_OK(aclnnInterleaveRopeGetWorkspaceSize(x, cos, sin, out, &workspaceSize, &executor),
           "aclnnInterleaveRopeGetWorkspaceSize");
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) CHECK_OK(aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST), "workspace");
  CHECK_OK(aclnnInterleaveRope(workspaceAddr, workspaceSize, executor, stream), "aclnnInterleaveRope");
  CHECK_OK(aclrtSynchronizeStream(stream), "aclrtSynchronizeStream");

  std::vector<aclFloat16> result(outHost.size());
  CHECK_OK(aclrtMemcpy(result.data(), result.size() * sizeof(result[0]), outAddr, result.size() * sizeof(result[0]),
                       ACL_MEMCPY_DEVICE_TO_HOST),
           "copy back");
  for (size_t i = 0; i < xHost.size(); i++) printf("x[%zu] is: %.9g\n", i, aclFloat16ToFloat(xHost[i]));
  for (size_t i = 0; i < cosHost.size(); i++) {
    printf("cos[%zu] is: %.9g\n", i, aclFloat16ToFloat(cosHost[i]));
    printf("sin[%zu] is: %.9g\n", i, aclFloat16ToFloat(sinHost[i]));
  }
  for (size_t i = 0; i < result.size(); i++) printf("result[%zu] is: %.9g\n", i, aclFloat16ToFloat(result[i]));

  aclDestroyTensor(x);
  aclDestroyTensor(cos);
  aclDestroyTensor(sin);
  aclDestroyTensor(out);
  aclrtFree(xAddr);
  aclrtFree(cosAddr);
  aclrtFree(sinAddr);
  aclrtFree(outAddr);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return 0;
}
