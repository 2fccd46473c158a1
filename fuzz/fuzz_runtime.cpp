// fuzz_runtime.cpp — the tensor / int-array / runtime API: up to 24 calls per input among aclCreateTensor with
// arbitrary arguments (rank 0-10, dims / strides / offset / storage dims from 0, negative and huge values, null
// arrays, invalid dtype and format codes) and its introspection, aclCreateIntArray, destroys (live and null),
// aclrtMalloc / aclrtMallocHost (sizes up to 1 MiB and impossible ones, invalid policies), aclrtFree / FreeHost
// (live, null, interior, already freed, of the other kind), aclrtMemcpy / aclrtMemset (in-bounds, count past
// destMax, null, invalid kinds), streams, contexts and devices, aclInit / aclFinalize, fp16 conversions, and
// executor misuse (run by another API, twice, never made). Everything made is released at the end of the input,
// and the runtime's global state is put back (no context current, device reset, aclFinalize if initialised).
#include <algorithm>
#include <set>

#include "aclnnop/aclnn_inplace_partial_rotary_mul.h"
#include "aclnnop/aclnn_interleave_rope.h"
#include "fuzz_util.h"

namespace {

using namespace txfuzz;

struct Mem {
  char* p;
  size_t size;
  bool host;
};

struct RuntimeFuzz {
  explicit RuntimeFuzz(Input& in) : in(in) {}
  ~RuntimeFuzz() {
    for (aclTensor* t : tensors) aclDestroyTensor(t);
    for (aclIntArray* a : arrays) aclDestroyIntArray(a);
    for (const Mem& m : mems)
      if ((m.host ? aclrtFreeHost(m.p) : aclrtFree(m.p)) != ACL_SUCCESS) die("freeing a live block failed");
    for (aclrtStream s : streams)
      if (aclrtDestroyStream(s) != ACL_SUCCESS) die("aclrtDestroyStream of a live stream failed");
    for (aclrtContext c : contexts)
      if (aclrtDestroyContext(c) != ACL_SUCCESS) die("aclrtDestroyContext of a live context failed");
    aclrtContext cur = nullptr;
    if (aclrtGetCurrentContext(&cur) == ACL_SUCCESS) die("a context is still current after all were destroyed");
    aclrtResetDevice(0);
    if (initialized) aclFinalize();
  }

  Input& in;
  std::vector<aclTensor*> tensors;
  std::vector<aclIntArray*> arrays;
  std::vector<Mem> mems;
  std::set<void*> freed;  // pointers freed by this input and not handed out again
  std::vector<aclrtStream> streams;
  std::vector<aclrtContext> contexts;
  bool initialized = false;

  int64_t r(int64_t lo, int64_t hi, const char* label) { return in.range(lo, hi, "rt", label); }
  template <class T, size_t N>
  T pick(const T (&c)[N], const char* label) {
    return c[r(0, N - 1, label)];
  }

  int64_t wild(const char* label) {
    static const int64_t kValues[] = {0, 1, 2, 3, 4, 7, 8, 64, 1000, -1, -2, INT64_MIN, INT64_MAX, INT64_MAX - 1,
                                      int64_t{1} << 31, int64_t{1} << 32, int64_t{1} << 40, int64_t{1} << 62,
                                      -(int64_t{1} << 62), INT32_MAX, INT32_MIN};
    return pick(kValues, label);
  }

  void note_alloc(void* p) { freed.erase(p); }

  void malloc_op(bool host) {
    static const size_t kOdd[] = {0, SIZE_MAX, SIZE_MAX - 63, SIZE_MAX - 64, size_t{1} << 62, size_t{1} << 63,
                                  (size_t{1} << 62) + 1};
    size_t size = r(0, 1, "size_odd") ? pick(kOdd, "size") : static_cast<size_t>(1 + r(0, (1 << 20) - 1, "size"));
    void* p = nullptr;
    const bool null_out = r(0, 15, "null_out") == 15;
    aclError e;
    if (host) {
      e = aclrtMallocHost(null_out ? nullptr : &p, size);
    } else {
      static const int kPolicies[] = {ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_NORMAL_ONLY,
                                      ACL_MEM_MALLOC_HUGE_FIRST_P2P, ACL_MEM_MALLOC_HUGE_ONLY_P2P,
                                      ACL_MEM_MALLOC_NORMAL_ONLY_P2P, 6, 7};
      e = aclrtMalloc(null_out ? nullptr : &p, size, static_cast<aclrtMemMallocPolicy>(pick(kPolicies, "policy")));
    }
    if (e != ACL_SUCCESS) {
      if (aclGetRecentErrMsg()[0] == '\0') die("a failed allocation left no message");
      return;
    }
    if (null_out || p == nullptr) die("allocation succeeded with a null out-param or result");
    if (reinterpret_cast<uintptr_t>(p) % 64 != 0) die("runtime block is not 64-byte aligned");
    // the whole block is usable: touch both ends and clear it through the API
    static_cast<char*>(p)[0] = 1;
    static_cast<char*>(p)[size - 1] = 1;
    if (aclrtMemset(p, size, 0, size) != ACL_SUCCESS) die("aclrtMemset of a whole new block failed");
    note_alloc(p);
    mems.push_back({static_cast<char*>(p), size, host});
  }

  void free_op() {
    const int64_t kind = r(0, 5, "free_kind");
    if (kind == 0 && !mems.empty()) {  // a live block, with its own free
      const size_t i = static_cast<size_t>(r(0, mems.size() - 1, "which"));
      const Mem m = mems[i];
      if ((m.host ? aclrtFreeHost(m.p) : aclrtFree(m.p)) != ACL_SUCCESS) die("freeing a live block failed");
      mems.erase(mems.begin() + i);
      freed.insert(m.p);
    } else if (kind == 1) {
      if (aclrtFree(nullptr) == ACL_SUCCESS || aclrtFreeHost(nullptr) == ACL_SUCCESS) die("freeing null succeeded");
    } else if (kind == 2 && !freed.empty()) {  // twice
      void* p = *freed.begin();
      if (aclrtFree(p) == ACL_SUCCESS || aclrtFreeHost(p) == ACL_SUCCESS) die("freeing a freed block succeeded");
    } else if (kind == 3 && !mems.empty()) {  // an interior pointer
      const Mem& m = mems[static_cast<size_t>(r(0, mems.size() - 1, "which"))];
      if (m.size > 1 && (aclrtFree(m.p + 1) == ACL_SUCCESS || aclrtFreeHost(m.p + 1) == ACL_SUCCESS))
        die("freeing an interior pointer succeeded");
    } else if (kind == 4 && !mems.empty()) {  // with the other kind's free
      const Mem& m = mems[static_cast<size_t>(r(0, mems.size() - 1, "which"))];
      if ((m.host ? aclrtFree(m.p) : aclrtFreeHost(m.p)) == ACL_SUCCESS) die("freeing with the wrong kind succeeded");
    } else if (kind == 5) {  // never allocated
      alignas(64) static char local[64];
      if (aclrtFree(local) == ACL_SUCCESS) die("freeing a pointer never allocated succeeded");
    }
  }

  // A pointer and the bytes available after it: inside a live block, or null.
  char* place(const char* label, size_t* avail) {
    if (mems.empty() || r(0, 7, label) == 7) {
      *avail = 0;
      return nullptr;
    }
    const Mem& m = mems[static_cast<size_t>(r(0, mems.size() - 1, "which"))];
    const size_t at = static_cast<size_t>(r(0, m.size - 1, "at"));
    *avail = m.size - at;
    return m.p + at;
  }

  void memcpy_op() {
    size_t dst_avail, src_avail;
    char* dst = place("dst", &dst_avail);
    char* src = place("src", &src_avail);
    const size_t dest_max = static_cast<size_t>(r(0, dst_avail, "dest_max"));  // never more than there is
    const bool over = r(0, 7, "over") == 7;
    size_t count = over ? dest_max + 1 + r(0, 100, "excess") : static_cast<size_t>(r(0, std::min(dest_max, src_avail), "count"));
    const int kind = static_cast<int>(r(0, 3, "kind"));
    const aclError e = aclrtMemcpy(dst, dest_max, src, count, static_cast<aclrtMemcpyKind>(kind));
    const bool valid = !over && (count == 0 || (dst && src));
    if ((e == ACL_SUCCESS) != valid) die("aclrtMemcpy(count %zu, destMax %zu, kind %d) returned %d", count, dest_max, kind, e);
  }

  void memset_op() {
    size_t avail;
    char* dst = place("dst", &avail);
    const size_t max_count = static_cast<size_t>(r(0, avail, "max_count"));
    const bool over = r(0, 7, "over") == 7;
    const size_t count = over ? max_count + 1 : static_cast<size_t>(r(0, max_count, "count"));
    const aclError e = aclrtMemset(dst, max_count, static_cast<int32_t>(r(INT32_MIN, INT32_MAX, "value")), count);
    const bool valid = !over && (count == 0 || dst);
    if ((e == ACL_SUCCESS) != valid) die("aclrtMemset(count %zu, maxCount %zu) returned %d", count, max_count, e);
  }

  void stream_op() {
    switch (r(0, 4, "stream")) {
      case 0: {
        aclrtStream s = nullptr;
        if (r(0, 7, "null_out") == 7) {
          if (aclrtCreateStream(nullptr) == ACL_SUCCESS) die("aclrtCreateStream(NULL) succeeded");
        } else {
          if (aclrtCreateStream(&s) != ACL_SUCCESS || s == nullptr) die("aclrtCreateStream failed");
          note_alloc(s);
          streams.push_back(s);
        }
        break;
      }
      case 1:
        if (!streams.empty()) {
          const size_t i = static_cast<size_t>(r(0, streams.size() - 1, "which"));
          if (aclrtDestroyStream(streams[i]) != ACL_SUCCESS) die("aclrtDestroyStream of a live stream failed");
          freed.insert(streams[i]);
          streams.erase(streams.begin() + i);
        } else if (aclrtDestroyStream(nullptr) == ACL_SUCCESS) {
          die("aclrtDestroyStream(NULL) succeeded");
        }
        break;
      case 2:
        if (aclrtSynchronizeStream(nullptr) != ACL_SUCCESS) die("synchronising the default stream failed");
        for (aclrtStream s : streams)
          if (aclrtSynchronizeStream(s) != ACL_SUCCESS) die("synchronising a live stream failed");
        if (aclrtSynchronizeDevice() != ACL_SUCCESS) die("aclrtSynchronizeDevice failed");
        break;
      case 3: {
        alignas(64) static char local[8];
        if (aclrtSynchronizeStream(local) == ACL_SUCCESS || aclrtDestroyStream(local) == ACL_SUCCESS)
          die("a stream never made was accepted");
        break;
      }
      case 4:
        for (void* p : freed)
          if (aclrtDestroyStream(p) == ACL_SUCCESS) die("destroying a destroyed stream succeeded");
        break;
    }
  }

  void context_op() {
    switch (r(0, 6, "ctx")) {
      case 0: {
        const int32_t dev = static_cast<int32_t>(r(0, 3, "dev") == 3 ? r(INT32_MIN, INT32_MAX, "devid") : 0);
        aclrtContext c = nullptr;
        const aclError e = aclrtCreateContext(&c, dev);
        if ((e == ACL_SUCCESS) != (dev == 0)) die("aclrtCreateContext(device %d) returned %d", dev, e);
        if (e == ACL_SUCCESS) {
          note_alloc(c);
          contexts.push_back(c);
        }
        break;
      }
      case 1:
        if (!contexts.empty()) {
          const size_t i = static_cast<size_t>(r(0, contexts.size() - 1, "which"));
          if (aclrtDestroyContext(contexts[i]) != ACL_SUCCESS) die("aclrtDestroyContext of a live context failed");
          freed.insert(contexts[i]);
          contexts.erase(contexts.begin() + i);
        } else if (aclrtDestroyContext(nullptr) == ACL_SUCCESS) {
          die("aclrtDestroyContext(NULL) succeeded");
        }
        break;
      case 2:
        if (!contexts.empty()) {
          if (aclrtSetCurrentContext(contexts[static_cast<size_t>(r(0, contexts.size() - 1, "which"))]) != ACL_SUCCESS)
            die("aclrtSetCurrentContext of a live context failed");
        } else if (aclrtSetCurrentContext(nullptr) == ACL_SUCCESS) {
          die("aclrtSetCurrentContext(NULL) succeeded");
        }
        break;
      case 3: {
        aclrtContext c = nullptr;
        const aclError e = aclrtGetCurrentContext(r(0, 3, "null_out") == 3 ? nullptr : &c);
        if (e == ACL_SUCCESS && std::find(contexts.begin(), contexts.end(), c) == contexts.end())
          die("aclrtGetCurrentContext returned a context that is not live");
        break;
      }
      case 4: {
        const int32_t dev = static_cast<int32_t>(r(-2, 2, "dev"));
        if ((aclrtSetDevice(dev) == ACL_SUCCESS) != (dev == 0)) die("aclrtSetDevice(%d) is wrong", dev);
        int32_t got = -1;
        if (dev == 0 && (aclrtGetDevice(&got) != ACL_SUCCESS || got != 0)) die("aclrtGetDevice after SetDevice(0)");
        if (aclrtGetDevice(nullptr) == ACL_SUCCESS) die("aclrtGetDevice(NULL) succeeded");
        break;
      }
      case 5: {
        uint32_t n = 0;
        if (aclrtGetDeviceCount(&n) != ACL_SUCCESS || n != 1 || aclrtGetDeviceCount(nullptr) == ACL_SUCCESS)
          die("aclrtGetDeviceCount is wrong");
        if ((aclrtResetDevice(static_cast<int32_t>(r(-1, 1, "dev"))) == ACL_SUCCESS) == false) {
          // only device 0 resets; nothing to check beyond no crash
        }
        break;
      }
      case 6:
        for (void* p : freed)
          if (aclrtSetCurrentContext(p) == ACL_SUCCESS || aclrtDestroyContext(p) == ACL_SUCCESS)
            die("a destroyed context was accepted");
        break;
    }
  }

  void init_op() {
    if (r(0, 1, "init")) {
      const aclError e = aclInit(r(0, 1, "config") ? "/nonexistent/acl.json" : nullptr);
      if (initialized ? e != ACL_ERROR_REPEAT_INITIALIZE : e != ACL_SUCCESS) die("aclInit returned %d", e);
      initialized = true;
    } else {
      const aclError e = aclFinalize();
      if (initialized ? e != ACL_SUCCESS : e != ACL_ERROR_UNINITIALIZE) die("aclFinalize returned %d", e);
      initialized = false;
    }
  }

  // aclCreateTensor with arbitrary arguments (only the arrays it is given are real), then its introspection.
  void tensor_op() {
    int64_t dims[12], strides[12], storage[12];
    const uint64_t ndim = static_cast<uint64_t>(r(0, 10, "ndim"));
    for (uint64_t i = 0; i < 12; ++i) {
      dims[i] = r(0, 3, "dim_kind") ? r(0, 8, "dim") : wild("dim");
      strides[i] = r(0, 3, "stride_kind") ? r(-8, 8, "stride") : wild("stride");
      storage[i] = r(0, 3, "storage_kind") ? r(0, 512, "storage") : wild("storage");
    }
    const bool null_dims = ndim > 0 && r(0, 15, "null_dims") == 15;
    const bool with_strides = r(0, 1, "with_strides");
    const int64_t offset = r(0, 1, "offset_kind") ? r(0, 16, "offset") : wild("offset");
    const uint64_t nstorage = r(0, 3, "storage_num_kind") ? static_cast<uint64_t>(r(0, 10, "storage_num")) : 1;
    const bool null_storage = nstorage > 0 && r(0, 15, "null_storage") == 15;
    static const int kDtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT32, ACL_INT64, ACL_DOUBLE, ACL_BOOL,
                                  ACL_INT8, ACL_DT_UNDEFINED, 5, 28, 31, -32};
    static const int kFormats[] = {ACL_FORMAT_ND, ACL_FORMAT_NCHW, ACL_FORMAT_NHWC, ACL_FORMAT_FRACTAL_NZ,
                                   ACL_FORMAT_UNDEFINED, 31, -32};
    const aclDataType dt = static_cast<aclDataType>(pick(kDtypes, "dtype"));
    const aclFormat fmt = static_cast<aclFormat>(pick(kFormats, "format"));
    size_t avail;
    char* data = place("data", &avail);
    aclTensor* t = aclCreateTensor(null_dims ? nullptr : dims, ndim, dt, with_strides ? strides : nullptr, offset,
                                   fmt, null_storage ? nullptr : storage, nstorage, data);
    if (t == nullptr) {
      if (aclGetRecentErrMsg()[0] == '\0') die("aclCreateTensor returned NULL without a message");
      return;
    }
    if (null_dims || ndim > 8 || (null_storage && nstorage > 0)) die("aclCreateTensor accepted impossible arrays");
    int64_t* v = nullptr;
    uint64_t n = 0;
    if (aclGetViewShape(t, &v, &n) != ACLNN_SUCCESS || n != ndim || (n && std::memcmp(v, dims, n * 8) != 0))
      die("aclGetViewShape does not give back viewDims");
    delete[] v;  // CANN: released with delete[]
    if (aclGetViewStrides(t, &v, &n) != ACLNN_SUCCESS || n != ndim ||
        (with_strides && n && std::memcmp(v, strides, n * 8) != 0))
      die("aclGetViewStrides does not give back the strides");
    delete[] v;  // CANN: released with delete[]
    if (aclGetStorageShape(t, &v, &n) != ACLNN_SUCCESS || n != nstorage || (n && std::memcmp(v, storage, n * 8) != 0))
      die("aclGetStorageShape does not give back storageDims");
    delete[] v;  // CANN: released with delete[]
    aclDataType gdt;
    aclFormat gfmt;
    int64_t goff;
    if (aclGetDataType(t, &gdt) != ACLNN_SUCCESS || gdt != dt || aclGetFormat(t, &gfmt) != ACLNN_SUCCESS ||
        gfmt != fmt || aclGetViewOffset(t, &goff) != ACLNN_SUCCESS || goff != offset)
      die("tensor introspection does not give back the arguments");
    if (aclGetViewShape(t, nullptr, &n) == ACLNN_SUCCESS || aclGetViewShape(nullptr, &v, &n) == ACLNN_SUCCESS ||
        aclGetDataType(t, nullptr) == ACLNN_SUCCESS || aclGetFormat(nullptr, &gfmt) == ACLNN_SUCCESS ||
        aclGetViewOffset(t, nullptr) == ACLNN_SUCCESS || aclGetStorageShape(t, &v, nullptr) == ACLNN_SUCCESS ||
        aclGetViewStrides(nullptr, &v, &n) == ACLNN_SUCCESS)
      die("introspection with a null argument succeeded");
    if (r(0, 1, "use")) use_tensor(t);
    tensors.push_back(t);
  }

  // A created tensor as the in-place xRef of InplacePartialRotaryMul (phase one judges its view and storage).
  void use_tensor(aclTensor* t) {
    int64_t* v = nullptr;
    uint64_t n = 0;
    aclGetViewShape(t, &v, &n);
    const int64_t L = n == 4 && v[3] > 0 && v[3] <= 1024 ? v[3] : 2;
    delete[] v;  // CANN: released with delete[]
    alignas(64) static float cs[1024];
    const int64_t cdims[4] = {1, 1, 1, L};
    aclTensor* c = aclCreateTensor(cdims, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, cdims, 4, cs);
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    const aclnnStatus st = aclnnInplacePartialRotaryMulGetWorkspaceSize(t, c, c, 1, nullptr, &ws, &ex);
    // cos and sin are the same tensor and read-only, so the op may run; x must not overlap them
    if (st == ACLNN_SUCCESS) {
      void* w = nullptr;
      if (ws > 0 && aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) die("workspace allocation failed");
      if (aclnnInplacePartialRotaryMul(w, ws, ex, nullptr) != ACLNN_SUCCESS) die("phase two failed");
      if (w) aclrtFree(w);
    }
    aclDestroyTensor(c);
  }

  void int_array_op() {
    int64_t values[16];
    const uint64_t n = static_cast<uint64_t>(r(0, 16, "n"));
    for (uint64_t i = 0; i < n; ++i) values[i] = wild("value");
    const bool null_values = r(0, 7, "null_values") == 7;
    aclIntArray* a = aclCreateIntArray(null_values ? nullptr : values, n);
    if ((a == nullptr) != (null_values && n > 0)) die("aclCreateIntArray(%s, %llu) is wrong", null_values ? "NULL" : "v",
                                                      (unsigned long long)n);
    if (a == nullptr) return;
    uint64_t size = 99;
    if (aclGetIntArraySize(a, &size) != ACLNN_SUCCESS || size != n || aclGetIntArraySize(a, nullptr) == ACLNN_SUCCESS ||
        aclGetIntArraySize(nullptr, &size) == ACLNN_SUCCESS)
      die("aclGetIntArraySize is wrong");
    arrays.push_back(a);
  }

  void destroy_op() {
    if (aclDestroyTensor(nullptr) != ACLNN_SUCCESS || aclDestroyIntArray(nullptr) != ACLNN_SUCCESS)
      die("destroying null is not a no-op");
    if (r(0, 1, "what") && !tensors.empty()) {
      const size_t i = static_cast<size_t>(r(0, tensors.size() - 1, "which"));
      if (aclDestroyTensor(tensors[i]) != ACLNN_SUCCESS) die("aclDestroyTensor of a live tensor failed");
      tensors.erase(tensors.begin() + i);
    } else if (!arrays.empty()) {
      const size_t i = static_cast<size_t>(r(0, arrays.size() - 1, "which"));
      if (aclDestroyIntArray(arrays[i]) != ACLNN_SUCCESS) die("aclDestroyIntArray of a live array failed");
      arrays.erase(arrays.begin() + i);
    }
  }

  // An InterleaveRope executor, misused and then run (or run with a wrong API first).
  void executor_op() {
    alignas(64) static float x[2 * 64], cs[64];
    const int64_t xd[4] = {1, 1, 2, 64}, cd[4] = {1, 1, 1, 64};
    aclTensor* xt = aclCreateTensor(xd, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, xd, 4, x);
    aclTensor* ct = aclCreateTensor(cd, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, cd, 4, cs);
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    if (aclnnInterleaveRopeGetWorkspaceSize(xt, ct, ct, xt, &ws, &ex) != ACLNN_SUCCESS || ex == nullptr)
      die("a valid InterleaveRope phase one failed: %s", aclGetRecentErrMsg());
    const int64_t k = r(0, 3, "misuse");
    if (k == 1 && aclnnInplacePartialRotaryMul(nullptr, ws, ex, nullptr) != ACLNN_ERR_PARAM_INVALID)
      die("an executor ran under another API");
    if (k == 2 && aclnnInterleaveRope(nullptr, ws, nullptr, nullptr) != ACLNN_ERR_PARAM_NULLPTR)
      die("a null executor was not 161001");
    if (aclnnInterleaveRope(nullptr, ws, ex, nullptr) != ACLNN_SUCCESS) die("running a live executor failed");
    if (k == 3 && aclnnInterleaveRope(nullptr, ws, ex, nullptr) != ACLNN_ERR_PARAM_INVALID)
      die("an executor ran twice");
    aclDestroyTensor(xt);
    aclDestroyTensor(ct);
  }

  void misc_op() {
    const uint32_t bits = static_cast<uint32_t>(r(0, UINT32_MAX, "bits"));
    float f;
    std::memcpy(&f, &bits, 4);
    const aclFloat16 h = aclFloatToFloat16(f);
    const float back = aclFloat16ToFloat(h);
    if (std::isfinite(f) && std::fabs(f) < 65000.0f && std::fabs(back - f) > std::fabs(f) * 0.001f + 6e-8f)
      die("fp16 round trip of %g gave %g", f, back);
    (void)aclDataTypeSize(static_cast<aclDataType>(r(-32, 31, "dtype")));
    if (aclGetRecentErrMsg() == nullptr) die("aclGetRecentErrMsg returned NULL");
  }

  void run() {
    const int64_t calls = r(1, 24, "calls");
    for (int64_t i = 0; i < calls; ++i) {
      switch (r(0, 12, "op")) {
        case 0: tensor_op(); break;
        case 1: malloc_op(false); break;
        case 2: malloc_op(true); break;
        case 3: free_op(); break;
        case 4: memcpy_op(); break;
        case 5: memset_op(); break;
        case 6: stream_op(); break;
        case 7: context_op(); break;
        case 8: init_op(); break;
        case 9: int_array_op(); break;
        case 10: destroy_op(); break;
        case 11: executor_op(); break;
        case 12: misc_op(); break;
      }
    }
  }
};

}  // namespace

TXFUZZ_TARGET(runtime) {
  txops::set_num_threads(1);
  RuntimeFuzz f(in);
  f.run();
}
