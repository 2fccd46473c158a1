/* acl_meta.h — the CANN tensor API that aclnn operators take (aclTensor, aclScalar, aclIntArray,
 * aclFloatArray, aclBoolArray, aclTensorList, aclScalarList, dtypes, formats, status codes) and the
 * executor calls (aclSetAclOpExecutorRepeatable, aclDestroyAclOpExecutor). Same names, signatures and enum
 * values as CANN's aclnn/acl_meta.h, so a CANN program compiles unchanged and its logs and data files mean
 * the same thing. Implemented by txops on the host (src/runtime/acl_tensor.cpp, acl_arrays.cpp,
 * acl_lists.cpp; executors in src/core/executor.cpp); see src/runtime/README.md.
 *
 * Every object made here is recorded in a registry of live objects, so a destroyed, foreign or wrong-kind
 * pointer given to a destroy or introspection call (or to an operator) returns ACLNN_ERR_PARAM_INVALID with
 * a message, never a crash; destroying NULL succeeds (as in CANN). */
#ifndef TXOPS_ACLNN_ACL_META_H_
#define TXOPS_ACLNN_ACL_META_H_

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h> /* aclCreateBoolArray takes const bool* */
#endif

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
#define ACLNN_ERR_INNER_NULLPTR 561103 /* aclSetAclOpExecutorRepeatable / aclDestroyAclOpExecutor(NULL) */

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
typedef struct aclScalar aclScalar;
typedef struct aclIntArray aclIntArray;
typedef struct aclFloatArray aclFloatArray;
typedef struct aclBoolArray aclBoolArray;
typedef struct aclTensorList aclTensorList;
typedef struct aclScalarList aclScalarList;
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

/* A scalar: copies the dtype's size of bytes from value (NULL value, or a dtype txops does not know -> NULL). */
TXOPS_API aclScalar* aclCreateScalar(void* value, aclDataType dataType);
TXOPS_API aclnnStatus aclDestroyScalar(const aclScalar* scalar);
/* Arrays copy their values (value may be NULL only when size is 0). */
TXOPS_API aclFloatArray* aclCreateFloatArray(const float* value, uint64_t size);
TXOPS_API aclnnStatus aclDestroyFloatArray(const aclFloatArray* array);
TXOPS_API aclBoolArray* aclCreateBoolArray(const bool* value, uint64_t size);
TXOPS_API aclnnStatus aclDestroyBoolArray(const aclBoolArray* array);
/* Lists take ownership of the objects they hold, as in CANN: aclDestroyTensorList / aclDestroyScalarList
 * destroy them too. Entries may be NULL; each non-NULL entry must be live and in no other list (and not twice
 * in this one), else NULL; destroying an element on its own while its list lives -> ACLNN_ERR_PARAM_INVALID. */
TXOPS_API aclTensorList* aclCreateTensorList(const aclTensor* const* value, uint64_t size);
TXOPS_API aclnnStatus aclDestroyTensorList(const aclTensorList* array);
TXOPS_API aclScalarList* aclCreateScalarList(const aclScalar* const* value, uint64_t size);
TXOPS_API aclnnStatus aclDestroyScalarList(const aclScalarList* array);

/* Executors (made by an aclnnXxxGetWorkspaceSize call). By default phase two (aclnnXxx) runs an executor once
 * and destroys it. aclSetAclOpExecutorRepeatable, called after phase one and before the first run, keeps it:
 * it then runs any number of times — on the data its tensors point at at that moment, so data changed in place
 * between runs is seen — until aclDestroyAclOpExecutor. As in CANN a repeatable executor is used on one stream
 * at a time: a run that starts while another run of the same executor is still going (another thread) is
 * refused with ACLNN_ERR_PARAM_INVALID, and so is destroying it during a run. NULL -> ACLNN_ERR_INNER_NULLPTR;
 * a consumed, destroyed or never-made executor -> ACLNN_ERR_PARAM_INVALID; setting repeatable after the
 * executor has run -> ACLNN_ERR_PARAM_INVALID. Destroying a live executor that was never run frees it (either
 * kind). */
TXOPS_API aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor);
TXOPS_API aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor);

/* Introspection helpers CANN also provides (null argument -> ACLNN_ERR_PARAM_NULLPTR; an object that is not
 * live -> ACLNN_ERR_PARAM_INVALID). The arrays aclGetViewShape & co. return belong to the caller (CANN frees
 * them with delete[]; txops allocates them with malloc). CANN has no public getter for a scalar's value. */
TXOPS_API aclnnStatus aclGetViewShape(const aclTensor* tensor, int64_t** viewDims, uint64_t* viewDimsNum);
TXOPS_API aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType);
TXOPS_API aclnnStatus aclGetViewStrides(const aclTensor* tensor, int64_t** stridesValue, uint64_t* stridesNum);
TXOPS_API aclnnStatus aclGetViewOffset(const aclTensor* tensor, int64_t* offset);
TXOPS_API aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format);
TXOPS_API aclnnStatus aclGetStorageShape(const aclTensor* tensor, int64_t** storageDims, uint64_t* storageDimsNum);
TXOPS_API aclnnStatus aclGetIntArraySize(const aclIntArray* array, uint64_t* size);
TXOPS_API aclnnStatus aclGetFloatArraySize(const aclFloatArray* array, uint64_t* size);
TXOPS_API aclnnStatus aclGetBoolArraySize(const aclBoolArray* array, uint64_t* size);
TXOPS_API aclnnStatus aclGetTensorListSize(const aclTensorList* tensorList, uint64_t* size);
TXOPS_API aclnnStatus aclGetScalarListSize(const aclScalarList* scalarList, uint64_t* size);

/* The last failure's one-line reason (thread-local), e.g.
 * "aclnnInterleaveRope: cos dim 1 (N) must be 1, got 4". Empty string when there is none. */
TXOPS_API const char* aclGetRecentErrMsg(void);

#ifdef __cplusplus
}
#endif

#endif /* TXOPS_ACLNN_ACL_META_H_ */
