// isa_dispatch.h — choosing a kernel compiled once per ISA by Highway (foreach_target.h), explicitly, at plan
// time: the plan keeps the function pointer for the active ISA (TXOPS_MAX_ISA caps it), so one executor
// always runs one ISA. Targets built: AVX3 (AVX-512), AVX2, SCALAR (see CMakeLists.txt HWY_DISABLED_TARGETS).
//
// Use, in a kernel .cpp after the HWY_ONCE line:
//   auto* fn = TXOPS_SELECT_KERNEL(isa, RotateRowsF32);   // function pointer for that ISA
#ifndef TXOPS_CORE_ISA_DISPATCH_H_
#define TXOPS_CORE_ISA_DISPATCH_H_

#include <hwy/highway.h>

#include "txops/txops.h"

// A target not compiled (HWY_DISABLED_TARGETS) gives a null pointer of the kernel's type (plain nullptr would not
// deduce the templates below).
#if HWY_TARGETS & HWY_AVX3
#define TXOPS_AVX3_FN(FN) &N_AVX3::FN
#else
#define TXOPS_AVX3_FN(FN) static_cast<decltype(TXOPS_SCALAR_FN(FN))>(nullptr)
#endif
#if HWY_TARGETS & HWY_AVX2
#define TXOPS_AVX2_FN(FN) &N_AVX2::FN
#else
#define TXOPS_AVX2_FN(FN) static_cast<decltype(TXOPS_SCALAR_FN(FN))>(nullptr)
#endif
#define TXOPS_SCALAR_FN(FN) &N_SCALAR::FN

namespace txops {
// The CPU has the AVX512_BF16 instructions and TXOPS_NO_AVX512_BF16 (set, not "0") does not forbid them: read once,
// so the kernels may keep it in a static. The variable lets one machine run the paths of AVX-512 CPUs without them.
bool avx512_bf16_usable();
}  // namespace txops

#define TXOPS_SELECT_KERNEL(isa, FN) \
  ::txops::select_kernel((isa), TXOPS_AVX3_FN(FN), TXOPS_AVX2_FN(FN), TXOPS_SCALAR_FN(FN))

namespace txops {

// The best non-null kernel at or below `isa`.
template <class Fn>
Fn* select_kernel(Isa isa, Fn* avx512, Fn* avx2, Fn* scalar) {
  if (isa == Isa::kAvx512 && avx512 != nullptr) return avx512;
  if (isa != Isa::kScalar && avx2 != nullptr) return avx2;
  return scalar;
}

// The ISA a selected kernel really is (for verbose logs): the same fallback rule as select_kernel.
template <class Fn>
Isa selected_isa(Isa isa, Fn* avx512, Fn* avx2) {
  if (isa == Isa::kAvx512 && avx512 != nullptr) return Isa::kAvx512;
  if (isa != Isa::kScalar && avx2 != nullptr) return Isa::kAvx2;
  return Isa::kScalar;
}

}  // namespace txops

#endif  // TXOPS_CORE_ISA_DISPATCH_H_
