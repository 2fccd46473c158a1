// dlpack_abi.h — the DLPack exchange ABI, declared from the DLPack specification so the module needs no extra
// package: the unversioned DLManagedTensor of DLPack 0.x (which torch 1.13 and numpy 1.24 produce) and, from
// DLPack 1.x, the versioned managed tensor and the C exchange API table that a framework publishes on its
// tensor type as `__dlpack_c_exchange_api__` (torch >= 2.10).
// Capsule protocol: a producer returns a PyCapsule named "dltensor" holding a DLManagedTensor*; a consumer
// that takes it renames the capsule "used_dltensor" and from then on owns it: it calls `deleter` once done.
// C exchange API: `type(x).__dlpack_c_exchange_api__` is a PyCapsule named "dlpack_exchange_api" holding a
// DLPackExchangeAPI* that lives as long as the process; dltensor_from_py_object_no_sync fills a caller-owned
// DLTensor that borrows the object's shape and strides (valid while the object lives and Python has not run),
// with no allocation and no capsule.
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

// ---- DLPack 1.x ----
struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};

constexpr uint64_t kDLPackFlagReadOnly = 1ULL << 0;

struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;  // kDLPackFlagReadOnly, ...
  DLTensor dl_tensor;
};

struct DLPackExchangeAPIHeader {
  DLPackVersion version;                   // a consumer must check major == 1 before using the table
  DLPackExchangeAPIHeader* prev_api;
};

// The table's slots in the specification's order; only the two exporters are called here.
struct DLPackExchangeAPI {
  DLPackExchangeAPIHeader header;
  void* managed_tensor_allocator;
  int (*managed_tensor_from_py_object_no_sync)(void* py_object, DLManagedTensorVersioned** out);  // never null
  void* managed_tensor_to_py_object_no_sync;
  int (*dltensor_from_py_object_no_sync)(void* py_object, DLTensor* out);  // may be null; -1 + Python error
  void* current_work_stream;
};

}  // extern "C"

#endif  // TXOPS_PYTHON_DLPACK_ABI_H_
