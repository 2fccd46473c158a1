// acl_device_info.cpp — what the "device" is: aclrtGetMemInfo reports the machine's memory (the CPU has one
// memory, so DDR/HBM, huge/normal and P2P attributes all read the same numbers): total = physical RAM, free =
// Linux's MemAvailable, both capped by a cgroup v2 memory limit when the process runs under a smaller one.
// aclrtGetSocName returns "txops-cpu", not an Ascend SoC name: code that branches on a SoC name
// ("Ascend910B…") to pick NPU kernels or tiling must not believe it has an NPU (see src/runtime/README.md).
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "acl/acl.h"
#include "core/status.h"

namespace {

// A "Name:   N kB" line of /proc/meminfo, in bytes; 0 when absent.
size_t meminfo_bytes(const char* name) {
  FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return 0;
  char line[256];
  size_t bytes = 0;
  const size_t n = std::strlen(name);
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, name, n) == 0 && line[n] == ':') {
      unsigned long long kb = 0;
      if (std::sscanf(line + n + 1, "%llu", &kb) == 1) bytes = static_cast<size_t>(kb) * 1024;
      break;
    }
  }
  std::fclose(f);
  return bytes;
}

// A cgroup v2 file holding one number ("max" or unreadable -> 0).
size_t cgroup_bytes(const char* path) {
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return 0;
  unsigned long long v = 0;
  const bool ok = std::fscanf(f, "%llu", &v) == 1;
  std::fclose(f);
  return ok ? static_cast<size_t>(v) : 0;
}

}  // namespace

extern "C" {

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t* free, size_t* total) {
  if (static_cast<int>(attr) < ACL_DDR_MEM || static_cast<int>(attr) > ACL_MEM_P2P_HUGE1G) {
    txops::set_recent_error("aclrtGetMemInfo: attr must be an aclrtMemAttr (0.." +
                            std::to_string(static_cast<int>(ACL_MEM_P2P_HUGE1G)) + "), got " +
                            std::to_string(static_cast<int>(attr)));
    return ACL_ERROR_RT_INVALID_MEMORY_TYPE;
  }
  if (free == nullptr || total == nullptr) {
    txops::set_recent_error("aclrtGetMemInfo: free and total must not be null");
    return ACL_ERROR_INVALID_PARAM;
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  size_t t = pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
  if (t == 0) t = meminfo_bytes("MemTotal");
  size_t f = meminfo_bytes("MemAvailable");
  if (f == 0) {
    const long avail = sysconf(_SC_AVPHYS_PAGES);
    f = avail > 0 && page > 0 ? static_cast<size_t>(avail) * static_cast<size_t>(page) : 0;
  }
  const size_t limit = cgroup_bytes("/sys/fs/cgroup/memory.max");
  if (limit > 0 && limit < t) {
    const size_t used = cgroup_bytes("/sys/fs/cgroup/memory.current");
    t = limit;
    const size_t left = used < limit ? limit - used : 0;
    if (left < f) f = left;
  }
  if (f > t) f = t;
  *free = f;
  *total = t;
  return ACL_SUCCESS;
}

const char* aclrtGetSocName(void) { return "txops-cpu"; }

}  // extern "C"
