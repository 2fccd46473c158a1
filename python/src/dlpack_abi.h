// dlpack_abi.h — the DLPack exchange ABI (the unversioned DLManagedTensor of DLPack 0.x, which torch 1.13
// and numpy 1.24 produce), declared from the DLPack specification so the module needs no extra package.
// Capsule protocol: a producer returns a PyCapsule named "dltensor" holding a DLManagedTensor*; a consumer
// that takes it renames the capsule "used_dltensor" and from then on owns it: it calls `deleter` once done.
#ifndef TXOPS_PYTHON_DLPACK_ABI_H_
#define TXOPS_PYTHON_DLPACK_ABI_H_

#include <cstdint>

extern "C" {

// Device types (only the CPU is accepted by txops).
enum DLDeviceType : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
};

struct DLDevice {
  DLDeviceType device_type;
  int32_t device_id;
};

// Type codes of DLDataType::code.
enum DLDataTypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
};

struct DLDataType {
  uint8_t code;   // a DLDataTypeCode
  uint8_t bits;   // bits per lane
  uint16_t lanes; // 1 for scalars
};

struct DLTensor {
  void* data;            // base pointer; the first element is at data + byte_offset
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;        // ndim entries
  int64_t* strides;      // ndim entries, in elements; null means compact row-major
  uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;                          // the producer's bookkeeping
  void (*deleter)(DLManagedTensor* self);     // releases the producer's memory; may be null
};

}  // extern "C"

#endif  // TXOPS_PYTHON_DLPACK_ABI_H_
