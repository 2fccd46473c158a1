// dev/rope/nt_halves.cpp — throwaway: a 512 MiB copy with non-temporal stores, written four ways (best of 3, 1
// thread): 64-byte stores; 32-byte stores in address order; 32-byte stores whose two lines' halves go in turn
// (A0 B0 A1 B1: what the half rule's rows did, j then h + j, with AVX2 vectors or 16-bit AVX-512 ones); plain 32-byte
// stores. Counts 2 bytes moved per byte copied, as the bench's copy probe does.
// Usage: g++ -O2 -march=native dev/rope/nt_halves.cpp -o build/dev_nt_halves && build/dev_nt_halves
#include <immintrin.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main() {
  const size_t bytes = size_t{512} << 20;
  char* a = static_cast<char*>(std::aligned_alloc(size_t{2} << 20, bytes));
  char* b = static_cast<char*>(std::aligned_alloc(size_t{2} << 20, bytes));
  if (a == nullptr || b == nullptr) return 1;
  std::memset(a, 1, bytes);
  std::memset(b, 2, bytes);
  const char* names[] = {"non-temporal, 64-byte stores", "non-temporal, 32-byte stores in order",
                         "non-temporal, 32-byte halves of two lines in turn", "plain 32-byte stores"};
  for (int mode = 0; mode < 4; ++mode) {
    double best = 1e30;
    for (int round = 0; round < 3; ++round) {
      const auto t0 = std::chrono::steady_clock::now();
      if (mode == 0) {
        for (size_t i = 0; i < bytes; i += 64)
          _mm512_stream_si512(reinterpret_cast<__m512i*>(b + i), _mm512_load_si512(a + i));
      } else if (mode == 1) {
        for (size_t i = 0; i < bytes; i += 32)
          _mm256_stream_si256(reinterpret_cast<__m256i*>(b + i), _mm256_load_si256(reinterpret_cast<__m256i*>(a + i)));
      } else if (mode == 2) {
        for (size_t i = 0; i < bytes; i += 128) {
          const __m256i* s = reinterpret_cast<const __m256i*>(a + i);
          __m256i* d = reinterpret_cast<__m256i*>(b + i);
          const __m256i x0 = _mm256_load_si256(s), x1 = _mm256_load_si256(s + 1), x2 = _mm256_load_si256(s + 2),
                        x3 = _mm256_load_si256(s + 3);
          _mm256_stream_si256(d, x0);
          _mm256_stream_si256(d + 2, x2);
          _mm256_stream_si256(d + 1, x1);
          _mm256_stream_si256(d + 3, x3);
        }
      } else {
        for (size_t i = 0; i < bytes; i += 32)
          _mm256_store_si256(reinterpret_cast<__m256i*>(b + i), _mm256_load_si256(reinterpret_cast<__m256i*>(a + i)));
      }
      _mm_sfence();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s < best) best = s;
    }
    std::printf("%-52s %.2f GB/s\n", names[mode], 2.0 * static_cast<double>(bytes) / best / 1e9);
  }
  std::free(a);
  std::free(b);
  return 0;
}
