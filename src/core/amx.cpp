// amx.cpp — detection of AMX bf16 tiles and the Linux permission for their state (amx.h).
#include "core/amx.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace txops {
namespace {

bool detect_amx_bf16() {
  const char* off = std::getenv("TXOPS_NO_AMX");
  if (off != nullptr && *off != '\0' && std::strcmp(off, "0") != 0) return false;
#if defined(__x86_64__) && defined(__linux__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, 0, a, b, c, d);
  const bool tile = (d >> 24) & 1u, bf16 = (d >> 22) & 1u;
  __cpuid(1, a, b, c, d);
  const bool osxsave = (c >> 27) & 1u;
  if (!tile || !bf16 || !osxsave) return false;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if (((lo >> 17) & 3u) != 3u) return false;  // XTILECFG and XTILEDATA enabled by the OS
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

std::atomic<bool> g_amx_allowed{true};

}  // namespace

bool amx_bf16_usable() {
  static const bool usable = detect_amx_bf16();
  return usable && g_amx_allowed.load(std::memory_order_relaxed);
}

void set_amx_allowed(bool allowed) { g_amx_allowed.store(allowed, std::memory_order_relaxed); }

}  // namespace txops
