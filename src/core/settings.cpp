// settings.cpp — process-wide knobs: ISA cap (TXOPS_MAX_ISA), thread count (TXOPS_NUM_THREADS), CANN
// compatibility (TXOPS_COMPAT), verbose log (TXOPS_VERBOSE). Each reads its environment variable once and
// can be overridden at run time (tests sweep them in one process).
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <hwy/targets.h>

#include "core/isa_dispatch.h"
#include "txops/txops.h"

namespace txops {
namespace {

Isa detect_isa() {
  const int64_t supported = hwy::SupportedTargets();
  if (supported & HWY_AVX3) return Isa::kAvx512;
  if (supported & HWY_AVX2) return Isa::kAvx2;
  return Isa::kScalar;
}

Isa isa_from_env() {
  const Isa best = detect_isa();
  const char* env = std::getenv("TXOPS_MAX_ISA");
  if (env == nullptr || *env == '\0') return best;
  Isa cap = best;
  if (std::strcmp(env, "scalar") == 0) cap = Isa::kScalar;
  else if (std::strcmp(env, "avx2") == 0) cap = Isa::kAvx2;
  else if (std::strcmp(env, "avx512") == 0) cap = Isa::kAvx512;
  return static_cast<int>(cap) < static_cast<int>(best) ? cap : best;
}

int threads_from_env() {
  const char* env = std::getenv("TXOPS_NUM_THREADS");
  if (env != nullptr && *env != '\0') {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

bool flag_from_env(const char* name) {
  const char* env = std::getenv(name);
  return env != nullptr && *env != '\0' && std::strcmp(env, "0") != 0;
}

std::atomic<int> g_isa{static_cast<int>(isa_from_env())};
std::atomic<int> g_threads{threads_from_env()};
std::atomic<int> g_compat{[] {
  const char* env = std::getenv("TXOPS_COMPAT");
  return (env != nullptr && std::strcmp(env, "cann") == 0) ? 1 : 0;
}()};
std::atomic<bool> g_verbose{flag_from_env("TXOPS_VERBOSE")};

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "?";
}

Isa active_isa() { return static_cast<Isa>(g_isa.load(std::memory_order_relaxed)); }

void set_max_isa(Isa isa) {
  const Isa best = detect_isa();
  g_isa.store(static_cast<int>(isa) < static_cast<int>(best) ? static_cast<int>(isa) : static_cast<int>(best));
}

bool avx512_bf16_usable() {
  static const bool usable = [] {
    __builtin_cpu_init();  // may run from another library's static initialiser, before libgcc's
    const char* off = std::getenv("TXOPS_NO_AVX512_BF16");
    return __builtin_cpu_supports("avx512bf16") && !(off != nullptr && *off != '\0' && std::strcmp(off, "0") != 0);
  }();
  return usable;
}

bool cpu_has_avx512_bf16() { return avx512_bf16_usable() && active_isa() == Isa::kAvx512; }

int num_threads() { return g_threads.load(std::memory_order_relaxed); }
void set_num_threads(int n) { g_threads.store(n > 0 ? n : threads_from_env()); }

Compat compat_mode() { return static_cast<Compat>(g_compat.load(std::memory_order_relaxed)); }
void set_compat_mode(Compat mode) { g_compat.store(static_cast<int>(mode)); }

bool verbose() { return g_verbose.load(std::memory_order_relaxed); }
void set_verbose(bool on) { g_verbose.store(on); }

}  // namespace txops
