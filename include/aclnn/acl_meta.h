/* acl_meta.h — the CANN tensor API that aclnn operators take (aclTensor, aclIntArray, dtypes, formats,
 * status codes). Same names and enum values as CANN, so a CANN program compiles unchanged and its logs
 * and data files mean the same thing. Implemented by txops on the host (src/runtime/acl_tensor.cpp). */
#ifndef TXOPS_ACLNN_ACL_META_H_
#define TXOPS_ACLNN_ACL_META_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define TXOPS_API __declspec(dllexport)
#else
#define TXOPS_API __attribute__((visibility("default")))
#endif

typedef int32_t aclnnStatus;
typedef void* aclrtStream;

/* Status codes (CANN's numbers). */
#define ACLNN_SUCCESS 0
#define ACLNN_ERR_PARAM_NULLPTR 161001
#define ACLNN_ERR_PARAM_INVALID 161002
#define ACLNN_ERR_RUNTIME_ERROR 361001
#define ACLNN_ERR_INNER_TILING_ERROR 561002

typedef enum {
  ACL_DT_UNDEFINED = -1,
  ACL_FLOAT = 0,
  ACL_FLOAT16 = 1,
  ACL_INT8 = 2,
  ACL_INT32 = 3,
  ACL_UINT8 = 4,
  ACL_INT16 = 6,
  ACL_UINT16 = 7,
  ACL_UINT32 = 8,
  ACL_INT64 = 9,
  ACL_UINT64 = 10,
  ACL_DOUBLE = 11,
  ACL_BOOL = 12,
  ACL_BF16 = 27
} aclDataType;

typedef enum {
  ACL_FORMAT_UNDEFINED = -1,
  ACL_FORMAT_NCHW = 0,
  ACL_FORMAT_NHWC = 1,
  ACL_FORMAT_ND = 2,
  ACL_FORMAT_FRACTAL_NZ = 29
} aclFormat;

typedef struct aclTensor aclTensor;
typedef struct aclIntArray aclIntArray;
typedef struct aclOpExecutor aclOpExecutor;

/* A view (viewDims, stride, offset — all in elements) over storage (storageDims elements at tensorData).
 * stride == NULL means contiguous. Returns NULL (and sets aclGetRecentErrMsg) when the view does not fit
 * its storage or an argument is invalid. */
TXOPS_API aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType,
                                     const int64_t* stride, int64_t offset, aclFormat format,
                                     const int64_t* storageDims, uint64_t storageDimsNum, void* tensorData);
TXOPS_API aclnnStatus aclDestroyTensor(const aclTensor* tensor);
TXOPS_API aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size);
TXOPS_API aclnnStatus aclDestroyIntArray(const aclIntArray* array);

/* Introspection helpers CANN also provides. */
TXOPS_API aclnnStatus aclGetViewShape(const aclTensor* tensor, int64_t** viewDims, uint64_t* viewDimsNum);
TXOPS_API aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType);
TXOPS_API aclnnStatus aclGetViewStrides(const aclTensor* tensor, int64_t** stridesValue, uint64_t* stridesNum);
TXOPS_API aclnnStatus aclGetViewOffset(const aclTensor* tensor, int64_t* offset);
TXOPS_API aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format);
TXOPS_API aclnnStatus aclGetStorageShape(const aclTensor* tensor, int64_t** storageDims, uint64_t* storageDimsNum);
TXOPS_API aclnnStatus aclGetIntArraySize(const aclIntArray* array, uint64_t* size);

/* The last failure's one-line reason (thread-local), e.g.
 * "aclnnInterleaveRope: cos dim 1 (N) must be 1, got 4". Empty string when there is none. */
TXOPS_API const char* aclGetRecentErrMsg(void);

#ifdef __cplusplus
}
#endif

#endif /* TXOPS_ACLNN_ACL_META_H_ */
