// dev/gdr/inplace_stream.cpp — throwaway: an in-place read-modify-write stream over 256 MiB of fp32 (each element
// scaled and stored back, no software prefetch; best of 6 passes, 1 thread), with 256-bit (`avx2`) or 512-bit
// (`avx512`) vectors: what the memory system gives an in-place state update such as the GDR decode's, to set beside
// the bench's non-temporal copy probe (README.md, session 31). GB/s counts the bytes read plus those written.
// Usage: g++ -O2 -march=native dev/gdr/inplace_stream.cpp -o build/dev_inplace_stream && build/dev_inplace_stream avx2
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  const bool wide = argc > 1 && std::string(argv[1]) == "avx512";
  const size_t n = size_t{64} << 20;  // floats
  float* a = static_cast<float*>(std::aligned_alloc(size_t{2} << 20, n * sizeof(float)));
  if (a == nullptr) return 1;
  std::memset(a, 0, n * sizeof(float));
  double best = 1e30;
  for (int pass = 0; pass < 6; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    if (wide) {
#ifdef __AVX512F__
      const __m512 s = _mm512_set1_ps(1.0001f);
      for (size_t i = 0; i < n; i += 16) _mm512_store_ps(a + i, _mm512_mul_ps(_mm512_load_ps(a + i), s));
#else
      std::fprintf(stderr, "built without AVX-512\n");
      return 1;
#endif
    } else {
      const __m256 s = _mm256_set1_ps(1.0001f);
      for (size_t i = 0; i < n; i += 8) _mm256_store_ps(a + i, _mm256_mul_ps(_mm256_load_ps(a + i), s));
    }
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("%s in-place stream: %.2f ms, %.1f GB/s (read + written)\n", wide ? "avx512" : "avx2", best * 1e3,
              2.0 * static_cast<double>(n * sizeof(float)) / best * 1e-9);
  std::free(a);
  return 0;
}
