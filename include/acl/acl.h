/* acl.h — the CANN host runtime, emulated on the CPU: init/finalize, devices, contexts, streams, memory
 * (aclrtMalloc/Free/Memcpy/Memset) and fp16 helpers. "Device" memory is 64-byte-aligned host memory the
 * runtime keeps track of; work runs synchronously, so streams only have to exist and synchronise.
 * Also pulls in the tensor API (aclnn/acl_meta.h), as CANN's header does in practice. */
#ifndef TXOPS_ACL_ACL_H_
#define TXOPS_ACL_ACL_H_

#include <stddef.h>
#include <stdint.h>

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int aclError;
typedef void* aclrtContext;
typedef uint16_t aclFloat16;

#define ACL_SUCCESS 0
/* Runtime error codes (CANN's numbers). */
#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_ERROR_UNINITIALIZE 100001
#define ACL_ERROR_REPEAT_INITIALIZE 100002
#define ACL_ERROR_INVALID_DEVICE 107001
#define ACL_ERROR_BAD_ALLOC 200000
#define ACL_ERROR_RT_PARAM_INVALID 107000
#define ACL_ERROR_RT_CONTEXT_NULL 107002
#define ACL_ERROR_RT_STREAM_CONTEXT 107003
#define ACL_ERROR_RT_MEMORY_ALLOCATION 207001
#define ACL_ERROR_RT_INVALID_MEMORY_TYPE 207000
#define ACL_ERROR_INTERNAL_ERROR 500000

typedef enum {
  ACL_MEM_MALLOC_HUGE_FIRST = 0,
  ACL_MEM_MALLOC_HUGE_ONLY = 1,
  ACL_MEM_MALLOC_NORMAL_ONLY = 2,
  ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3,
  ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4,
  ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5
} aclrtMemMallocPolicy;

typedef enum {
  ACL_MEMCPY_HOST_TO_HOST = 0,
  ACL_MEMCPY_HOST_TO_DEVICE = 1,
  ACL_MEMCPY_DEVICE_TO_HOST = 2,
  ACL_MEMCPY_DEVICE_TO_DEVICE = 3
} aclrtMemcpyKind;

TXOPS_API aclError aclInit(const char* configPath);
TXOPS_API aclError aclFinalize(void);

TXOPS_API aclError aclrtSetDevice(int32_t deviceId);
TXOPS_API aclError aclrtResetDevice(int32_t deviceId);
TXOPS_API aclError aclrtGetDevice(int32_t* deviceId);
TXOPS_API aclError aclrtGetDeviceCount(uint32_t* count);

TXOPS_API aclError aclrtCreateContext(aclrtContext* context, int32_t deviceId);
TXOPS_API aclError aclrtSetCurrentContext(aclrtContext context);
TXOPS_API aclError aclrtGetCurrentContext(aclrtContext* context);
TXOPS_API aclError aclrtDestroyContext(aclrtContext context);

TXOPS_API aclError aclrtCreateStream(aclrtStream* stream);
TXOPS_API aclError aclrtDestroyStream(aclrtStream stream);
TXOPS_API aclError aclrtSynchronizeStream(aclrtStream stream);
TXOPS_API aclError aclrtSynchronizeDevice(void);

TXOPS_API aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy);
TXOPS_API aclError aclrtMallocHost(void** hostPtr, size_t size);
TXOPS_API aclError aclrtFree(void* devPtr);
TXOPS_API aclError aclrtFreeHost(void* hostPtr);
TXOPS_API aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind);
TXOPS_API aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count);

TXOPS_API aclFloat16 aclFloatToFloat16(float value);
TXOPS_API float aclFloat16ToFloat(aclFloat16 value);
TXOPS_API size_t aclDataTypeSize(aclDataType dataType);

#ifdef __cplusplus
}
#endif

#endif /* TXOPS_ACL_ACL_H_ */
