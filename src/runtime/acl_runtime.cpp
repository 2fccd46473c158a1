// acl_runtime.cpp — the CANN host runtime on the CPU. "Device" memory is 64-byte-aligned host memory
// (transparent huge pages advised for large blocks) that the runtime records, so freeing a pointer it never
// handed out, or freeing twice, returns an error instead of crashing. Work runs synchronously, so streams
// and contexts are tokens that must exist; synchronising one always succeeds. Nothing here aborts.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_set>

#include "acl/acl.h"
#include "core/dtype.h"
#include "core/status.h"
#include "runtime/acl_memory.h"
#include "runtime/acl_streams.h"

#if defined(__SANITIZE_ADDRESS__)
#define TXOPS_HAS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TXOPS_HAS_ASAN 1
#endif
#endif
#ifdef TXOPS_HAS_ASAN
#include <sanitizer/asan_interface.h>
#define TXOPS_ASAN_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define TXOPS_ASAN_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define TXOPS_ASAN_POISON(p, n) ((void)(p), (void)(n))
#define TXOPS_ASAN_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace {

struct Runtime {
  std::mutex mutex;
  // Ordered by address, so the block holding any interior pointer is found by one upper_bound.
  std::map<uintptr_t, size_t> device_blocks;
  std::map<uintptr_t, size_t> host_blocks;
  std::unordered_set<void*> streams;
  std::unordered_set<void*> contexts;
  bool initialized = false;
  int32_t current_device = -1;
  void* current_context = nullptr;
};

Runtime& runtime() {
  static auto* rt = new Runtime();  // never destroyed: usable from static destructors
  return *rt;
}

constexpr int32_t kDeviceCount = 1;  // the CPU is device 0

aclError fail(aclError code, const char* message) {
  txops::set_recent_error(message);
  return code;
}

// The machine's physical memory: no block may be larger (a huge request is refused before the allocator sees
// it, so it cannot wrap the rounding below or abort an allocator that does not return null).
size_t physical_memory() {
  static const size_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : size_t{1} << 40;
  }();
  return bytes;
}

// The bytes allocated for a block of `size`: rounded up to 64, plus the guard (acl_memory.h).
size_t allocated_bytes(size_t size) { return (size + 63) / 64 * 64 + txops::kBlockGuard; }

void* aligned_block(size_t size) {
  if (size > physical_memory()) return nullptr;
  const size_t bytes = allocated_bytes(size);
  void* p = nullptr;
  if (bytes >= (2u << 20)) {
    if (posix_memalign(&p, 2u << 20, bytes) != 0) return nullptr;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
  } else {
    p = std::aligned_alloc(64, bytes);
    if (p == nullptr) return nullptr;
  }
  // an access past the caller's bytes is still an AddressSanitizer report
  TXOPS_ASAN_POISON(static_cast<char*>(p) + size, bytes - size);
  return p;
}

// Frees the block at p if `blocks` holds it (aclrtFree / aclrtFreeHost); false when it does not.
bool free_registered_block(std::map<uintptr_t, size_t>& blocks, void* p) {
  size_t size = 0;
  {
    std::lock_guard<std::mutex> lock(runtime().mutex);
    const auto it = blocks.find(reinterpret_cast<uintptr_t>(p));
    if (it == blocks.end()) return false;
    size = it->second;
    blocks.erase(it);
  }
  TXOPS_ASAN_UNPOISON(p, allocated_bytes(size));
  std::free(p);
  return true;
}

// The block of `blocks` whose [base, base + size + kBlockGuard) holds p, if any: its bytes, or its guard (memory
// of the same allocation, so no other object's).
bool block_holding(const std::map<uintptr_t, size_t>& blocks, uintptr_t p, txops::RuntimeBlock* block) {
  auto it = blocks.upper_bound(p);
  if (it == blocks.begin()) return false;
  --it;
  if (p - it->first >= it->second + txops::kBlockGuard) return false;
  block->base = it->first;
  block->size = it->second;
  return true;
}

}  // namespace

namespace txops {

bool find_runtime_block(const void* p, RuntimeBlock* block) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  if (block_holding(rt.device_blocks, address, block)) {
    block->kind = "aclrtMalloc";
    return true;
  }
  if (block_holding(rt.host_blocks, address, block)) {
    block->kind = "aclrtMallocHost";
    return true;
  }
  return false;
}

bool stream_is_live_or_default(const void* stream) {
  if (stream == nullptr) return true;
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  return rt.streams.count(const_cast<void*>(stream)) != 0;
}

namespace {
thread_local std::vector<UsedBlock> used_blocks;  // this thread's phase one so far
}  // namespace

void note_used_block(const char* param, const RuntimeBlock& block) {
  used_blocks.push_back(UsedBlock{param, block.base, block.size});
}

std::vector<UsedBlock> take_used_blocks() {
  std::vector<UsedBlock> taken;
  taken.swap(used_blocks);
  return taken;
}

std::string check_used_blocks(const std::vector<UsedBlock>& blocks) {
  for (const UsedBlock& used : blocks) {
    RuntimeBlock now;
    if (!find_runtime_block(reinterpret_cast<const void*>(used.base), &now) || now.base != used.base ||
        now.size < used.size) {
      return std::string(used.param) + "'s memory block (" + std::to_string(used.size) +
             " bytes) was freed after phase one; a tensor's memory must stay allocated until its operator has run";
    }
  }
  return std::string();
}

}  // namespace txops

namespace {

// A copy or fill of `count` bytes at p stays inside p's block when the runtime handed p out (else: the message,
// false). Pointers it never allocated are the caller's word.
bool fits_in_block(const void* p, size_t count, const char* api, const char* param) {
  txops::RuntimeBlock block;
  if (!txops::find_runtime_block(p, &block)) return true;
  const size_t available = block.bytes_from(p);
  if (count <= available) return true;
  txops::set_recent_error(std::string(api) + ": count must be <= the " + std::to_string(available) +
                          " bytes left in " + param + "'s " + block.kind + " block, got " + std::to_string(count));
  return false;
}

}  // namespace

extern "C" {

aclError aclInit(const char* /*configPath*/) {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  if (rt.initialized) return fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialised");
  rt.initialized = true;
  return ACL_SUCCESS;
}

aclError aclFinalize(void) {
  Runtime& rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  if (!rt.initialized) return fail(ACL_ERROR_UNINITIALIZE, "aclFinalize: aclInit was not called");
  rt.initialized = false;
  return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId) {
  if (deviceId < 0 || deviceId >= kDeviceCount) {
    return fail(ACL_ERROR_RT_INVALID_DEVICEID, ("aclrtSetDevice: deviceId must be 0 (the CPU), got " +
                                                std::to_string(deviceId)).c_str());
  }
  std::lock_guard<std::mutex> lock(runtime().mutex);
  runtime().current_device = deviceId;
  return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
  if (deviceId < 0 || deviceId >= kDeviceCount) {
    return fail(ACL_ERROR_RT_INVALID_DEVICEID, ("aclrtResetDevice: deviceId must be 0 (the CPU), got " +
                                                std::to_string(deviceId)).c_str());
  }
  std::lock_guard<std::mutex> lock(runtime().mutex);
  runtime().current_device = -1;
  return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t* deviceId) {
  if (deviceId == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: deviceId must not be null");
  std::lock_guard<std::mutex> lock(runtime().mutex);
  if (runtime().current_device < 0) return fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetDevice: no device is set");
  *deviceId = runtime().current_device;
  return ACL_SUCCESS;
}

aclError aclrtGetDeviceCount(uint32_t* count) {
  if (count == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count must not be null");
  *count = kDeviceCount;
  return ACL_SUCCESS;
}

aclError aclrtCreateContext(aclrtContext* context, int32_t deviceId) {
  if (context == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateContext: context must not be null");
  if (deviceId < 0 || deviceId >= kDeviceCount) {
    return fail(ACL_ERROR_RT_INVALID_DEVICEID, ("aclrtCreateContext: deviceId must be 0 (the CPU), got " +
                                                std::to_string(deviceId)).c_str());
  }
  void* token = std::malloc(1);
  if (token == nullptr) return fail(ACL_ERROR_BAD_ALLOC, "aclrtCreateContext: out of memory");
  std::lock_guard<std::mutex> lock(runtime().mutex);
  runtime().contexts.insert(token);
  runtime().current_context = token;
  runtime().current_device = deviceId;
  *context = token;
  return ACL_SUCCESS;
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  if (runtime().contexts.count(context) == 0) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtSetCurrentContext: context was not made by aclrtCreateContext");
  }
  runtime().current_context = context;
  return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext* context) {
  if (context == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetCurrentContext: context must not be null");
  std::lock_guard<std::mutex> lock(runtime().mutex);
  if (runtime().current_context == nullptr) {
    return fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetCurrentContext: no context is current");
  }
  *context = runtime().current_context;
  return ACL_SUCCESS;
}

aclError aclrtDestroyContext(aclrtContext context) {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  if (runtime().contexts.erase(context) == 0) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext: context is not live (never made, or destroyed)");
  }
  if (runtime().current_context == context) runtime().current_context = nullptr;
  std::free(context);
  return ACL_SUCCESS;
}

aclError aclrtCreateStream(aclrtStream* stream) {
  if (stream == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream must not be null");
  void* token = std::malloc(1);
  if (token == nullptr) return fail(ACL_ERROR_BAD_ALLOC, "aclrtCreateStream: out of memory");
  std::lock_guard<std::mutex> lock(runtime().mutex);
  runtime().streams.insert(token);
  *stream = token;
  return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream) {
  std::lock_guard<std::mutex> lock(runtime().mutex);
  if (runtime().streams.erase(stream) == 0) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream: stream is not live (never made, or destroyed)");
  }
  std::free(stream);
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  // Work is synchronous; the default stream (null) and any live stream are always idle.
  std::lock_guard<std::mutex> lock(runtime().mutex);
  if (stream != nullptr && runtime().streams.count(stream) == 0) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeStream: stream is not live");
  }
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeDevice(void) { return ACL_SUCCESS; }

aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  if (devPtr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: devPtr must not be null");
  if (size == 0) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: size must be > 0, got 0");
  if (static_cast<int>(policy) < 0 || static_cast<int>(policy) > ACL_MEM_MALLOC_NORMAL_ONLY_P2P) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: policy is not an aclrtMemMallocPolicy");
  }
  void* p = aligned_block(size);
  if (p == nullptr) {
    *devPtr = nullptr;
    return fail(ACL_ERROR_RT_MEMORY_ALLOCATION, ("aclrtMalloc: cannot allocate " + std::to_string(size) +
                                                 " bytes").c_str());
  }
  std::lock_guard<std::mutex> lock(runtime().mutex);
  runtime().device_blocks[reinterpret_cast<uintptr_t>(p)] = size;
  *devPtr = p;
  return ACL_SUCCESS;
}

aclError aclrtMallocHost(void** hostPtr, size_t size) {
  if (hostPtr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMallocHost: hostPtr must not be null");
  if (size == 0) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMallocHost: size must be > 0, got 0");
  void* p = aligned_block(size);
  if (p == nullptr) return fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMallocHost: out of memory");
  std::lock_guard<std::mutex> lock(runtime().mutex);
  runtime().host_blocks[reinterpret_cast<uintptr_t>(p)] = size;
  *hostPtr = p;
  return ACL_SUCCESS;
}

aclError aclrtFree(void* devPtr) {
  if (devPtr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: devPtr must not be null");
  if (!free_registered_block(runtime().device_blocks, devPtr)) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: devPtr was not returned by aclrtMalloc (or was already freed)");
  }
  return ACL_SUCCESS;
}

aclError aclrtFreeHost(void* hostPtr) {
  if (hostPtr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtFreeHost: hostPtr must not be null");
  if (!free_registered_block(runtime().host_blocks, hostPtr)) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtFreeHost: hostPtr was not returned by aclrtMallocHost (or was already freed)");
  }
  return ACL_SUCCESS;
}

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind) {
  if (static_cast<int>(kind) < ACL_MEMCPY_HOST_TO_HOST || static_cast<int>(kind) > ACL_MEMCPY_DEVICE_TO_DEVICE) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: kind is not an aclrtMemcpyKind");
  }
  if (count > destMax) {
    return fail(ACL_ERROR_INVALID_PARAM, ("aclrtMemcpy: count must be <= destMax (" + std::to_string(destMax) +
                                          "), got " + std::to_string(count)).c_str());
  }
  if (count == 0) return ACL_SUCCESS;
  if (dst == nullptr || src == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: dst and src must not be null");
  if (!fits_in_block(dst, count, "aclrtMemcpy", "dst") || !fits_in_block(src, count, "aclrtMemcpy", "src")) {
    return ACL_ERROR_INVALID_PARAM;
  }
  std::memmove(dst, src, count);
  return ACL_SUCCESS;
}

aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
  if (count > maxCount) {
    return fail(ACL_ERROR_INVALID_PARAM, ("aclrtMemset: count must be <= maxCount (" + std::to_string(maxCount) +
                                          "), got " + std::to_string(count)).c_str());
  }
  if (count == 0) return ACL_SUCCESS;
  if (devPtr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset: devPtr must not be null");
  if (!fits_in_block(devPtr, count, "aclrtMemset", "devPtr")) return ACL_ERROR_INVALID_PARAM;
  std::memset(devPtr, value, count);
  return ACL_SUCCESS;
}

aclFloat16 aclFloatToFloat16(float value) { return txops::f32_to_f16(value); }
float aclFloat16ToFloat(aclFloat16 value) { return txops::f16_to_f32(value); }

size_t aclDataTypeSize(aclDataType dataType) { return txops::dtype_size(static_cast<txops::DType>(dataType)); }

}  // extern "C"
