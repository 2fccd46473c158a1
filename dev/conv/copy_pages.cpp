// dev/conv/copy_pages.cpp — throwaway: the non-temporal copy of 512 MiB (AVX-512 loads, streaming stores; best of 6)
// on 4 KiB pages and, with the argument `huge`, on 2 MiB pages (madvise; THP set to `madvise`), so that the conv's
// times on either page size (DEV_HUGE_PAGES=1 build/dev_conv_speed ...) can be set against the copy on the same.
// Usage: g++ -O2 -march=native dev/conv/copy_pages.cpp -o build/dev_copy_pages && build/dev_copy_pages [huge]
#include <immintrin.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  const size_t bytes = size_t{512} << 20;
  const bool huge = argc > 1 && std::string(argv[1]) == "huge";
  char* a = static_cast<char*>(std::aligned_alloc(size_t{2} << 20, bytes));
  char* b = static_cast<char*>(std::aligned_alloc(size_t{2} << 20, bytes));
  if (a == nullptr || b == nullptr) return 1;
  if (huge) madvise(a, bytes, MADV_HUGEPAGE), madvise(b, bytes, MADV_HUGEPAGE);
  std::memset(a, 1, bytes);
  std::memset(b, 2, bytes);
  double best = 1e30;
  for (int r = 0; r < 6; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < bytes; i += 64)
      _mm512_stream_si512(reinterpret_cast<__m512i*>(b + i), _mm512_load_si512(reinterpret_cast<const void*>(a + i)));
    _mm_sfence();
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (dt < best) best = dt;
  }
  std::printf("%s pages: non-temporal copy %.2f GB/s (read + write)\n", huge ? "2 MiB" : "4 KiB",
              2.0 * bytes / best / 1e9);
  std::free(a);
  std::free(b);
  return 0;
}
