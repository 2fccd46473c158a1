/* acl.h — the CANN host runtime, emulated on the CPU: init/finalize, devices, contexts, streams, events,
 * memory (aclrtMalloc/Free/Memcpy/Memset and their Async forms, aclrtGetMemInfo), aclrtGetSocName and fp16
 * helpers. Names, signatures and numbers are CANN's (acl/acl_base.h, acl/acl_rt.h, rt_error_codes.h).
 * "Device" memory is 64-byte-aligned host memory the runtime keeps track of; work runs synchronously, so
 * streams only have to exist and synchronise, an Async call has finished when it returns, and an event is
 * complete as soon as it is recorded (its timestamp is the steady clock at aclrtRecordEvent).
 * Every handle (stream, context, event, memory block) is recorded while live: a destroyed, freed or foreign
 * one returns an error code with a message (aclGetRecentErrMsg), never a crash.
 * Also pulls in the tensor API (aclnn/acl_meta.h), as CANN's header does in practice.
 * Per-function CPU semantics: src/runtime/README.md. */
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
typedef void* aclrtEvent;
typedef uint16_t aclFloat16;

#define ACL_SUCCESS 0
/* Error codes (CANN's numbers: acl_base.h, then rt_error_codes.h). */
#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_ERROR_UNINITIALIZE 100001
#define ACL_ERROR_REPEAT_INITIALIZE 100002
#define ACL_ERROR_BAD_ALLOC 200000
#define ACL_ERROR_INVALID_DEVICE 200002 /* CANN's value; the runtime reports a bad id as 107001 below */
#define ACL_ERROR_INTERNAL_ERROR 500000
#define ACL_ERROR_RT_PARAM_INVALID 107000
#define ACL_ERROR_RT_INVALID_DEVICEID 107001 /* aclrtSetDevice & co. with an id other than 0 */
#define ACL_ERROR_RT_CONTEXT_NULL 107002
#define ACL_ERROR_RT_STREAM_CONTEXT 107003
#define ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID 107006  /* aclrtEventElapsedTime: an event not recorded */
#define ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL 107007 /* aclrtEventElapsedTime: end recorded before start */
#define ACL_ERROR_RT_INVALID_MEMORY_TYPE 107016      /* aclrtGetMemInfo: attr not an aclrtMemAttr */
#define ACL_ERROR_RT_FEATURE_NOT_SUPPORT 207000
#define ACL_ERROR_RT_MEMORY_ALLOCATION 207001

/* aclrtCreateEventWithFlag flags (a bitmap; on the CPU every event can time and synchronise). */
#define ACL_EVENT_SYNC 0x00000001u
#define ACL_EVENT_CAPTURE_STREAM_PROGRESS 0x00000002u
#define ACL_EVENT_TIME_LINE 0x00000008u
#define ACL_EVENT_DEVICE_USE_ONLY 0x00000010u
#define ACL_EVENT_EXTERNAL 0x00000020u

typedef enum aclrtEventStatus {
  ACL_EVENT_STATUS_COMPLETE = 0,
  ACL_EVENT_STATUS_NOT_READY = 1,
  ACL_EVENT_STATUS_RESERVED = 2
} aclrtEventStatus;

typedef enum aclrtEventRecordedStatus {
  ACL_EVENT_RECORDED_STATUS_NOT_READY = 0,
  ACL_EVENT_RECORDED_STATUS_COMPLETE = 1
} aclrtEventRecordedStatus;

/* aclrtGetMemInfo: which memory. The CPU has one memory, so every value reports the same numbers. */
typedef enum aclrtMemAttr {
  ACL_DDR_MEM = 0,
  ACL_HBM_MEM = 1,
  ACL_DDR_MEM_HUGE = 2,
  ACL_DDR_MEM_NORMAL = 3,
  ACL_HBM_MEM_HUGE = 4,
  ACL_HBM_MEM_NORMAL = 5,
  ACL_DDR_MEM_P2P_HUGE = 6,
  ACL_DDR_MEM_P2P_NORMAL = 7,
  ACL_HBM_MEM_P2P_HUGE = 8,
  ACL_HBM_MEM_P2P_NORMAL = 9,
  ACL_HBM_MEM_HUGE1G = 10,
  ACL_HBM_MEM_P2P_HUGE1G = 11,
  ACL_MEM_NORMAL = 12,
  ACL_MEM_HUGE = 13,
  ACL_MEM_HUGE1G = 14,
  ACL_MEM_P2P_NORMAL = 15,
  ACL_MEM_P2P_HUGE = 16,
  ACL_MEM_P2P_HUGE1G = 17
} aclrtMemAttr;

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
/* Work is synchronous: waiting on an event never blocks (the stream must be live or NULL). */
TXOPS_API aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event);

/* Events (src/runtime/acl_events.cpp). Record = "the stream has reached here" = now, on the CPU. */
TXOPS_API aclError aclrtCreateEvent(aclrtEvent* event);
TXOPS_API aclError aclrtCreateEventWithFlag(aclrtEvent* event, uint32_t flag);
TXOPS_API aclError aclrtDestroyEvent(aclrtEvent event);
TXOPS_API aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream);
TXOPS_API aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream);
TXOPS_API aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus* status);
TXOPS_API aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus* status);
TXOPS_API aclError aclrtSynchronizeEvent(aclrtEvent event);
/* Milliseconds between the two records (steady clock); 107006 when one is not recorded. */
TXOPS_API aclError aclrtEventElapsedTime(float* ms, aclrtEvent startEvent, aclrtEvent endEvent);

TXOPS_API aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy);
TXOPS_API aclError aclrtMallocHost(void** hostPtr, size_t size);
TXOPS_API aclError aclrtFree(void* devPtr);
TXOPS_API aclError aclrtFreeHost(void* hostPtr);
TXOPS_API aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind);
TXOPS_API aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count);
/* Same checks as the synchronous calls, plus a live (or NULL) stream; done when they return. */
TXOPS_API aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind,
                                    aclrtStream stream);
TXOPS_API aclError aclrtMemsetAsync(void* devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream);
/* The machine's memory in bytes: total = physical RAM, free = what Linux reports as available (MemAvailable). */
TXOPS_API aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t* free, size_t* total);

/* "txops-cpu", never an Ascend SoC name (see src/runtime/README.md). */
TXOPS_API const char* aclrtGetSocName(void);

TXOPS_API aclFloat16 aclFloatToFloat16(float value);
TXOPS_API float aclFloat16ToFloat(aclFloat16 value);
TXOPS_API size_t aclDataTypeSize(aclDataType dataType);

#ifdef __cplusplus
}
#endif

#endif /* TXOPS_ACL_ACL_H_ */
