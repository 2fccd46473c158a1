// acl_memory.h — what the runtime knows about the memory it handed out: the aclrtMalloc / aclrtMallocHost
// block holding a pointer, so that phase one can refuse a tensor claiming more bytes than its block has.
// Pointers the runtime never allocated (plain host memory, the C++ API's buffers) are not known, and not checked.
#ifndef TXOPS_RUNTIME_ACL_MEMORY_H_
#define TXOPS_RUNTIME_ACL_MEMORY_H_

#include <cstddef>
#include <cstdint>

namespace txops {

struct RuntimeBlock {
  uintptr_t base = 0;
  size_t size = 0;           // bytes the caller asked for
  const char* kind = "";     // "aclrtMalloc" or "aclrtMallocHost"
};

// True (and *block filled) when p lies inside a live block the runtime allocated.
bool find_runtime_block(const void* p, RuntimeBlock* block);

}  // namespace txops

#endif  // TXOPS_RUNTIME_ACL_MEMORY_H_
