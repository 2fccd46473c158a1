// fuzz_util.h — what the libFuzzer targets in fuzz/ share: one decoder from input bytes to API arguments.
//
// Every decision a target makes goes through Input::range(lo, hi, scope, label). When fuzzing, the values come
// from the input bytes (FuzzedDataProvider, which returns `lo` once the bytes run out, so the empty input and
// every all-zero decision is the plain valid call). When writing seeds (seed_gen.cpp), the values come from a
// script keyed by "scope.label" and are encoded into exactly the bytes FuzzedDataProvider decodes back.
//
// Session owns everything one input creates (aclrtMalloc blocks, tensors, int arrays, streams) and destroys it
// at the end, checking that the destroy calls succeed. Session::tensor() turns a proposed shape into an
// aclTensor pointing INTO an aclrtMalloc block, the view ending at the block's last byte (so one element past
// it is an ASan report), then lets the input mutate it: dtype (invalid codes too), rank and dims (0, negative,
// huge), strides (padded, permuted, broadcast, negative, huge, wild), offset, storage claims (larger than the
// block, overflowing, null), the data pointer (null, misplaced, shared with an earlier tensor) and the format.
// Session::two_phases() runs GetWorkspaceSize, allocates the workspace with aclrtMalloc and runs phase two,
// with the call-level mutations (null out-params, short or null workspace, null or foreign executor, a second
// run, a live stream), and checks the contract: status codes are CANN's, a failure leaves a one-line message
// prefixed with the API name, a successful phase one has an executor and runs successfully exactly once.
#ifndef TXOPS_FUZZ_FUZZ_UTIL_H_
#define TXOPS_FUZZ_FUZZ_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "txops/txops.h"

namespace txfuzz {

// ---- failures the sanitizers cannot see: contract violations ------------------------------------------------
[[noreturn]] inline void die(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline void die(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::fprintf(stderr, "txfuzz: contract violation: ");
  std::vfprintf(stderr, fmt, args);
  std::fprintf(stderr, "\n");
  va_end(args);
  std::abort();
}

// ---- where decisions come from -----------------------------------------------------------------------------
class Input {
 public:
  virtual ~Input() = default;
  // A value in [lo, hi]. `scope` (may be null) and `label` name the decision, e.g. "x" and "mut".
  virtual int64_t range(int64_t lo, int64_t hi, const char* scope, const char* label) = 0;
};

// Phase one's status in the latest two_phases() call (the seed generator reports it per seed).
inline aclnnStatus g_last_phase_one = ACLNN_SUCCESS;

// ---- saturating arithmetic for the harness's own size computations (no UB in the harness) --------------------
inline int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}
inline int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
  return r;
}
inline int64_t sat_neg(int64_t a) { return a == INT64_MIN ? INT64_MAX : -a; }

constexpr int64_t kMaxElements = 64 * 1024;      // per tensor (the op targets keep whole problems near this)
constexpr int64_t kMaxBlockBytes = 4 << 20;      // larger storage claims get a small block (refused in phase one)
constexpr uint64_t kMaxWorkspace = 1ull << 30;   // a larger workspace for these sizes is a planning bug

inline size_t elem_size(aclDataType dt) {
  const size_t s = aclDataTypeSize(dt);
  return s == 0 ? 4 : s;
}

// Shrinks the largest of `dims` (halving) until their product is at most `budget`; `keep_even` dims stay even.
inline void fit_budget(std::vector<int64_t*> dims, int64_t budget, std::vector<bool> keep_even = {}) {
  keep_even.resize(dims.size(), false);
  for (;;) {
    int64_t prod = 1;
    for (int64_t* d : dims) prod = sat_mul(prod, *d > 0 ? *d : 1);
    if (prod <= budget) return;
    size_t big = 0;
    for (size_t i = 1; i < dims.size(); ++i)
      if (*dims[i] > *dims[big]) big = i;
    int64_t v = *dims[big] / 2;
    if (keep_even[big] && v % 2) --v;
    if (v < (keep_even[big] ? 2 : 1) || v == *dims[big]) return;  // cannot shrink further
    *dims[big] = v;
  }
}

// One created tensor, kept so that a later tensor can alias it.
struct TensorRecord {
  aclTensor* tensor = nullptr;
  std::vector<int64_t> dims, strides, storage;
  bool pass_strides = false;
  int64_t offset = 0;
  aclDataType dtype = ACL_FLOAT;
  aclFormat format = ACL_FORMAT_ND;
  char* data = nullptr;        // tensorData
  char* block = nullptr;       // the aclrtMalloc block holding data (null when data is null)
  size_t block_bytes = 0;
};

class Session {
 public:
  explicit Session(Input& in) : in_(in) {}
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  ~Session() {
    for (aclTensor* t : tensors_)
      if (aclDestroyTensor(t) != ACLNN_SUCCESS) die("aclDestroyTensor of a live tensor failed");
    for (aclIntArray* a : arrays_)
      if (aclDestroyIntArray(a) != ACLNN_SUCCESS) die("aclDestroyIntArray of a live array failed");
    for (void* p : blocks_)
      if (aclrtFree(p) != ACL_SUCCESS) die("aclrtFree of a live block failed: %s", aclGetRecentErrMsg());
    for (aclrtStream s : streams_)
      if (aclrtDestroyStream(s) != ACL_SUCCESS) die("aclrtDestroyStream of a live stream failed");
  }

  Input& input() { return in_; }
  int64_t range(int64_t lo, int64_t hi, const char* scope, const char* label) {
    return in_.range(lo, hi, scope, label);
  }
  bool flag(const char* scope, const char* label) { return range(0, 1, scope, label) != 0; }
  template <class T, size_t N>
  T pick(const T (&choices)[N], const char* scope, const char* label) {
    return choices[range(0, static_cast<int64_t>(N) - 1, scope, label)];
  }

  // Process-wide knobs, set on every input so that each input behaves the same whatever ran before it:
  // ISA cap (best, AVX2, scalar), thread count (1-3), TXOPS_COMPAT.
  void settings() {
    static const txops::Isa kIsas[] = {txops::Isa::kAvx512, txops::Isa::kAvx2, txops::Isa::kScalar};
    txops::set_max_isa(pick(kIsas, "cfg", "isa"));
    txops::set_num_threads(static_cast<int>(1 + range(0, 2, "cfg", "threads")));
    txops::set_compat_mode(flag("cfg", "compat") ? txops::Compat::kCann : txops::Compat::kTxops);
  }

  // An aclrtMalloc block of `bytes` (tracked, freed at the end); null when refused. Tensors fill theirs.
  char* block(size_t bytes) {
    void* p = nullptr;
    if (aclrtMalloc(&p, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return nullptr;
    blocks_.push_back(p);
    return static_cast<char*>(p);
  }

  aclrtStream stream() {
    aclrtStream s = nullptr;
    if (aclrtCreateStream(&s) != ACL_SUCCESS) die("aclrtCreateStream failed");
    streams_.push_back(s);
    return s;
  }

  aclIntArray* int_array(const char* name, std::vector<int64_t> values) {
    const int64_t kind = range(0, 5, name, "mut");
    static const int64_t kWild[] = {-1, 0, 1, 2, 1024, INT64_MAX, INT64_MIN, int64_t{1} << 40};
    switch (kind) {
      case 1: return nullptr;
      case 2: values.resize(static_cast<size_t>(range(0, 4, name, "len"))); break;
      case 3:
        if (!values.empty()) values[range(0, values.size() - 1, name, "at")] = pick(kWild, name, "value");
        break;
      case 4: {  // null values with a size: must be refused
        if (aclCreateIntArray(nullptr, 1 + range(0, 3, name, "len")) != nullptr)
          die("aclCreateIntArray(NULL, n > 0) returned an array");
        return nullptr;
      }
      case 5:
        for (auto& v : values) v += range(-2, 2, name, "delta");
        break;
      default: break;
    }
    aclIntArray* a = aclCreateIntArray(values.empty() ? nullptr : values.data(), values.size());
    if (a == nullptr) die("aclCreateIntArray of %zu values failed", values.size());
    uint64_t size = 0;
    if (aclGetIntArraySize(a, &size) != ACLNN_SUCCESS || size != values.size()) die("aclGetIntArraySize is wrong");
    arrays_.push_back(a);
    return a;
  }

  // A tensor of `dims` and `dtype` (the valid proposal), mutated by the input; null when the input asks for a
  // null tensor or aclCreateTensor refuses the mutated arguments. `ints` (host-readable int tensors) are
  // written, in row-major order, to the view's elements that lie inside the block.
  aclTensor* tensor(const char* name, std::vector<int64_t> dims, aclDataType dtype,
                    const std::vector<int64_t>* ints = nullptr) {
    TensorRecord r;
    r.dtype = dtype;
    r.dims = std::move(dims);
    const int64_t mut = range(0, 255, name, "mut");
    bool m[8] = {};
    if (mut < 128) {
      m[mut % 8] = true;
    } else {
      for (int i = 0; i < 7; ++i) m[i + 1] = (mut >> i) & 1;
    }
    enum { kDtype = 1, kShape = 2, kLayout = 3, kOffset = 4, kStorage = 5, kData = 6, kMisc = 7 };
    if (m[kMisc] && flag(name, "null")) return nullptr;
    if (m[kDtype]) {
      static const int kCodes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT32, ACL_INT64, ACL_DOUBLE, ACL_INT8,
                                   ACL_UINT8, ACL_INT16, ACL_UINT16, ACL_UINT32, ACL_UINT64, ACL_BOOL,
                                   ACL_DT_UNDEFINED, 5, 13, 26, 28, 31, -32, -2};
      r.dtype = static_cast<aclDataType>(pick(kCodes, name, "dtype"));
    }
    if (m[kShape]) mutate_shape(name, &r.dims);
    const int rank = static_cast<int>(r.dims.size());
    // contiguous strides, then the layout
    r.strides.assign(r.dims.size(), 1);
    for (int d = rank - 2; d >= 0; --d) r.strides[d] = sat_mul(r.strides[d + 1], r.dims[d + 1] > 0 ? r.dims[d + 1] : 1);
    if (m[kLayout] && rank > 0) {
      mutate_layout(name, &r);
      r.pass_strides = true;
    } else {
      r.pass_strides = rank > 0 && flag(name, "explicit_strides");
    }
    // the elements the view reaches, relative to its first element
    int64_t numel = 1, lo = 0, hi = 0;
    for (int d = 0; d < rank; ++d) {
      numel = sat_mul(numel, r.dims[d] < 0 ? 0 : r.dims[d]);
      if (r.dims[d] <= 0) continue;
      const int64_t reach = sat_mul(r.dims[d] - 1, r.strides[d]);
      if (reach < 0) lo = sat_add(lo, reach); else hi = sat_add(hi, reach);
    }
    r.offset = sat_neg(lo);  // the lowest element at storage index 0
    if (m[kOffset]) {
      static const int64_t kExtra[] = {1, 2, 3, 5, 8, 64};
      static const int64_t kWild[] = {-1, INT64_MIN, int64_t{1} << 40, INT64_MAX, INT64_MAX - 1, 0};
      if (flag(name, "offset_wild")) r.offset = pick(kWild, name, "offset");
      else r.offset = sat_add(r.offset, pick(kExtra, name, "offset"));
    }
    const int64_t needed = numel > 0 ? sat_add(sat_add(r.offset, hi), 1) : 0;
    int64_t claim = needed < 0 ? 0 : needed;
    // storage dims: the view dims for a plain contiguous tensor, else one dim of the claimed elements
    const bool plain = !m[kLayout] && r.offset == 0 && rank > 0 && numel > 0;
    r.storage = plain ? r.dims : std::vector<int64_t>{claim};
    int64_t short_bytes = 0;  // the block is this much smaller than the claim
    bool null_storage = false;
    uint64_t storage_num = r.storage.size();
    if (m[kStorage]) {
      switch (range(0, 6, name, "storage")) {
        case 0: claim = sat_add(claim, range(-3, 3, name, "claim_delta")); r.storage = {claim}; break;
        case 1: {
          static const int64_t kHuge[] = {int64_t{1} << 40, INT64_MAX, int64_t{1} << 62, int64_t{1} << 31};
          claim = pick(kHuge, name, "claim");
          r.storage = {claim};
          break;
        }
        case 2: short_bytes = 1 + range(0, 63, name, "short"); break;
        case 3: {
          static const int64_t kSplit[][2] = {{int64_t{1} << 32, int64_t{1} << 32}, {-1, 1}, {-1, -1}, {0, 5},
                                              {INT64_MAX, 2}, {int64_t{1} << 62, 4}};
          const auto& s = kSplit[range(0, 5, name, "split")];
          r.storage = {s[0], s[1]};
          storage_num = 2;
          break;
        }
        case 4: null_storage = true; storage_num = 1 + range(0, 3, name, "storage_num"); break;
        case 5: r.storage.assign(9 + range(0, 3, name, "storage_rank"), 1); storage_num = r.storage.size(); break;
        case 6: r.storage.clear(); storage_num = 0; break;
      }
    }
    // the block: the claimed bytes, the view ending at the block's end (tail-aligned), unless mutated
    const size_t esize = elem_size(r.dtype);
    const int64_t claim_bytes = sat_mul(claim < 0 ? 0 : claim, static_cast<int64_t>(esize));
    size_t block_bytes = 64;
    bool fits = claim_bytes <= kMaxBlockBytes;
    if (fits) block_bytes = static_cast<size_t>((claim_bytes + 63) / 64 * 64);
    if (block_bytes == 0) block_bytes = 64;
    if (fits && short_bytes > 0) {
      block_bytes = claim_bytes > short_bytes ? static_cast<size_t>(claim_bytes - short_bytes) : 1;
      fits = false;
    }
    int64_t data_kind = m[kData] ? range(0, 4, name, "data") : -1;
    if (data_kind == 4 && records_.empty()) data_kind = -1;
    if (data_kind == 0) {  // null data
      r.data = nullptr;
    } else if (data_kind == 4) {  // the memory of an earlier tensor
      const TensorRecord& o = records_[range(0, records_.size() - 1, name, "share")];
      r.block = o.block;
      r.block_bytes = o.block_bytes;
      r.data = o.data;
    } else {
      r.block = block(block_bytes);
      if (r.block == nullptr) die("aclrtMalloc(%zu) failed", block_bytes);
      r.block_bytes = block_bytes;
      size_t at = fits ? block_bytes - static_cast<size_t>(claim_bytes) : 0;
      if (data_kind == 1) at = 0;  // head-aligned: slack after the view
      if (data_kind == 2) at += static_cast<size_t>(1 + range(0, 6, name, "misalign"));  // misaligned
      if (data_kind == 3) at = static_cast<size_t>(range(0, block_bytes, name, "at"));  // anywhere in the block
      if (at > block_bytes) at = block_bytes;
      r.data = r.block + at;
    }
    if (m[kMisc]) {
      static const int kFormats[] = {ACL_FORMAT_NCHW, ACL_FORMAT_NHWC, ACL_FORMAT_FRACTAL_NZ, ACL_FORMAT_UNDEFINED,
                                     3, 31, -32, -2};
      r.format = static_cast<aclFormat>(pick(kFormats, name, "format"));
    }
    if (r.data != nullptr && data_kind != 4) fill(name, r, ints);
    r.tensor = aclCreateTensor(r.dims.data(), r.dims.size(), r.dtype, r.pass_strides ? r.strides.data() : nullptr,
                               r.offset, r.format, null_storage ? nullptr : r.storage.data(), storage_num, r.data);
    trace(name, r, storage_num, null_storage);
    if (r.tensor == nullptr) {
      if (aclGetRecentErrMsg()[0] == '\0') die("aclCreateTensor returned NULL without a message");
      return nullptr;
    }
    introspect(r);
    tensors_.push_back(r.tensor);
    records_.push_back(r);
    return r.tensor;
  }

  // A second tensor over `of`'s memory: kind 0 the same aclTensor, 1 an identical new one, 2 shifted by some
  // elements (partial overlap), 3 an independent tensor (`fresh`, made by the caller).
  aclTensor* alias(const char* name, aclTensor* of, int64_t kind) {
    const TensorRecord* o = find(of);
    if (o == nullptr || kind == 0) return of;
    TensorRecord r = *o;
    if (kind == 2) {  // back by `shift` elements when the offset allows, else forward
      const int64_t shift = range(1, 8, name, "shift");
      if (r.offset >= shift) {
        r.offset -= shift;
      } else {
        r.offset = sat_add(r.offset, shift);
        if (r.storage.size() == 1) r.storage[0] = sat_add(r.storage[0], shift);
      }
    }
    r.tensor = aclCreateTensor(r.dims.data(), r.dims.size(), r.dtype, r.pass_strides ? r.strides.data() : nullptr,
                               r.offset, r.format, r.storage.data(), r.storage.size(), r.data);
    if (r.tensor == nullptr) return nullptr;
    tensors_.push_back(r.tensor);
    records_.push_back(r);
    return r.tensor;
  }

  // Phase one (`get(workspaceSize*, executor**)`), then phase two (`run(workspace, size, executor, stream)`).
  // Returns phase one's status.
  template <class Get, class Run>
  aclnnStatus two_phases(const char* api, Get get, Run run) {
    const int64_t mode = range(0, 15, "call", "mode");
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    const aclnnStatus st = get(mode == 1 ? nullptr : &ws, mode == 2 ? nullptr : &ex);
    check_status(api, "GetWorkspaceSize", st);
    last_status_ = st;
    g_last_phase_one = st;
    if (mode == 1 || mode == 2) {
      if (st == ACLNN_SUCCESS) die("%s: phase one succeeded with a null workspaceSize or executor", api);
      return st;
    }
    if (st != ACLNN_SUCCESS) return st;
    if (ex == nullptr) die("%s: phase one succeeded without an executor", api);
    if (ws > kMaxWorkspace) die("%s: workspace of %llu bytes for a small problem", api, (unsigned long long)ws);
    // the workspace: an aclrtMalloc block, tail-aligned (mode 7) or at the block start
    char* wsp = nullptr;
    uint64_t ws_pass = ws;
    if (mode == 9) ws_pass = ws + 4096;
    if (ws_pass > 0) {
      const size_t bytes = static_cast<size_t>((ws_pass + 63) / 64 * 64);
      char* b = block(bytes);
      if (b == nullptr) die("aclrtMalloc(%zu) for the workspace failed", bytes);
      wsp = mode == 7 ? b + (bytes - ws_pass) : b;
    }
    aclrtStream stream = mode == 8 ? this->stream() : nullptr;
    // misuse first: the executor must survive a refused call
    if (mode == 3 && ws > 0) expect(api, run(wsp, ws - 1, ex, stream), ACLNN_ERR_PARAM_INVALID, "workspaceSize - 1");
    if (mode == 4 && ws > 0) expect(api, run(nullptr, ws, ex, stream), ACLNN_ERR_PARAM_NULLPTR, "a null workspace");
    if (mode == 5) expect(api, run(wsp, ws_pass, nullptr, stream), ACLNN_ERR_PARAM_NULLPTR, "a null executor");
    if (mode == 10) {  // a pointer that never was an executor
      alignas(64) char fake[256] = {};
      expect(api, run(wsp, ws_pass, reinterpret_cast<aclOpExecutor*>(fake), stream), ACLNN_ERR_PARAM_INVALID,
             "a foreign executor");
    }
    const aclnnStatus st2 = run(wsp, ws_pass, ex, stream);
    check_status(api, "run", st2);
    if (st2 != ACLNN_SUCCESS) die("%s: phase two failed (%d: %s) after phase one succeeded", api, st2,
                                  aclGetRecentErrMsg());
    if (mode == 6) expect(api, run(wsp, ws_pass, ex, stream), ACLNN_ERR_PARAM_INVALID, "a second run");
    if (stream != nullptr && aclrtSynchronizeStream(stream) != ACL_SUCCESS) die("aclrtSynchronizeStream failed");
    return st;
  }

  aclnnStatus last_status() const { return last_status_; }

  // A float attribute: ordinary, zero, negative, and non-finite values.
  float scale(const char* label) {
    static const float kScales[] = {0.125f, 1.0f, 0.0f, -1.0f, 1e30f, -1e-30f, NAN, INFINITY};
    return pick(kScales, "attr", label);
  }

 private:
  const TensorRecord* find(const aclTensor* t) const {
    for (const TensorRecord& r : records_)
      if (r.tensor == t) return &r;
    return nullptr;
  }

  void expect(const char* api, aclnnStatus got, aclnnStatus want, const char* what) {
    check_status(api, "run", got);
    if (got != want) die("%s: phase two with %s gave %d, want %d", api, what, got, want);
  }

  static void check_status(const char* api, const char* phase, aclnnStatus st) {
    if (st == ACLNN_SUCCESS) return;
    if (st != ACLNN_ERR_PARAM_NULLPTR && st != ACLNN_ERR_PARAM_INVALID && st != ACLNN_ERR_RUNTIME_ERROR &&
        st != ACLNN_ERR_INNER_TILING_ERROR)
      die("%s %s returned %d, not a CANN status code", api, phase, st);
    const char* msg = aclGetRecentErrMsg();
    const size_t n = std::strlen(api);
    if (msg == nullptr || std::strncmp(msg, api, n) != 0 || std::strncmp(msg + n, ": ", 2) != 0 || msg[n + 2] == 0)
      die("%s %s failed (%d) with message \"%s\": want \"%s: <param> <rule>\"", api, phase, st, msg ? msg : "(null)",
          api);
    if (std::strchr(msg, '\n') != nullptr) die("%s %s: message is not one line: \"%s\"", api, phase, msg);
  }

  void mutate_shape(const char* name, std::vector<int64_t>* dims) {
    static const int64_t kDims[] = {0, 1, 2, 3, 5, 7, 64, 1025, int64_t{1} << 20, int64_t{1} << 31,
                                    int64_t{1} << 40, INT64_MAX, -1, INT64_MIN, -2};
    const int rank = static_cast<int>(dims->size());
    switch (range(0, 4, name, "shape")) {
      case 0:
        if (rank > 0) (*dims)[range(0, rank - 1, name, "dim")] = pick(kDims, name, "size");
        break;
      case 1:
        if (rank > 0) (*dims)[range(0, rank - 1, name, "dim")] += range(-2, 2, name, "delta");
        break;
      case 2:
        if (rank > 0) dims->erase(dims->begin() + range(0, rank - 1, name, "dim"));
        break;
      case 3: dims->insert(dims->begin() + range(0, rank, name, "dim"), 1 + range(0, 2, name, "size")); break;
      case 4: dims->assign(static_cast<size_t>(range(0, 10, name, "rank")), 1 + range(0, 1, name, "size")); break;
    }
  }

  void mutate_layout(const char* name, TensorRecord* r) {
    std::vector<int64_t>& s = r->strides;
    const std::vector<int64_t>& dims = r->dims;
    const int rank = static_cast<int>(dims.size());
    const int d = static_cast<int>(range(0, rank - 1, name, "axis"));
    auto rebuild = [&](int64_t last_step, int pad_axis, int64_t pad) {  // row-major with a last-dim step and a pad
      s[rank - 1] = last_step;
      for (int i = rank - 2; i >= 0; --i)
        s[i] = sat_add(sat_mul(s[i + 1], dims[i + 1] > 0 ? dims[i + 1] : 1), i == pad_axis ? pad : 0);
    };
    switch (range(0, 7, name, "layout")) {
      case 0: rebuild(1, d, 1 + range(0, 15, name, "pad")); break;  // padded rows
      case 1: {  // two axes swapped in memory order
        const int e = static_cast<int>(range(0, rank - 1, name, "axis2"));
        std::vector<int> order(rank);
        for (int i = 0; i < rank; ++i) order[i] = i;
        std::swap(order[d], order[e]);
        int64_t running = 1;
        for (int i = rank - 1; i >= 0; --i) {
          s[order[i]] = running;
          running = sat_mul(running, dims[order[i]] > 0 ? dims[order[i]] : 1);
        }
        break;
      }
      case 2: s[d] = 0; break;  // broadcast
      case 3: s[d] = sat_neg(s[d]); break;  // negative
      case 4: {
        static const int64_t kHuge[] = {int64_t{1} << 31, int64_t{1} << 40, INT64_MAX / 2, INT64_MAX, INT64_MIN,
                                        -(int64_t{1} << 40), int64_t{1} << 62};
        s[d] = pick(kHuge, name, "stride");
        break;
      }
      case 5:
        for (int64_t& v : s) v = range(-4, 4, name, "stride");
        break;
      case 6: rebuild(2 + range(0, 2, name, "step"), -1, 0); break;  // last dim not unit-stride
      case 7: s[d] = sat_add(s[d], range(-2, 2, name, "delta")); break;  // near-miss (overlapping rows)
    }
  }

  // Block contents: a pattern by dtype (ordinary, or special values), then the int values if any.
  void fill(const char* name, const TensorRecord& r, const std::vector<int64_t>* ints) {
    const int64_t kind = range(0, 2, name, "fill");
    const size_t esize = elem_size(r.dtype);
    const size_t begin = static_cast<size_t>(r.data - r.block);
    const std::vector<char>& pattern = fill_pattern(r.dtype, kind);  // kPatternElements elements
    size_t bytes = r.block_bytes - begin;
    for (size_t at = 0; at < bytes; at += pattern.size())
      std::memcpy(r.data + at, pattern.data(), std::min(pattern.size(), bytes - at));
    if (ints == nullptr || (r.dtype != ACL_INT32 && r.dtype != ACL_INT64)) return;
    // row-major logical order over the view, written only where the element lies inside the block
    const int rank = static_cast<int>(r.dims.size());
    int64_t numel = 1;
    for (int64_t d : r.dims) numel = sat_mul(numel, d < 0 ? 0 : d);
    std::vector<int64_t> idx(rank, 0);
    for (int64_t li = 0; li < numel && li < static_cast<int64_t>(ints->size()); ++li) {
      int64_t e = r.offset;
      for (int d = 0; d < rank; ++d) e = sat_add(e, sat_mul(idx[d], r.strides[d]));
      const int64_t byte = sat_add(sat_mul(e, static_cast<int64_t>(esize)), static_cast<int64_t>(begin));
      if (byte >= 0 && sat_add(byte, static_cast<int64_t>(esize)) <= static_cast<int64_t>(r.block_bytes)) {
        const int64_t v = (*ints)[li];
        if (esize == 4) {
          const int32_t x = static_cast<int32_t>(v);
          std::memcpy(r.block + byte, &x, 4);
        } else {
          std::memcpy(r.block + byte, &v, 8);
        }
      }
      for (int d = rank - 1; d >= 0; --d) {
        if (++idx[d] < r.dims[d]) break;
        idx[d] = 0;
      }
    }
  }

  // kPatternElements elements of `dtype`: ordinary values in [-0.5, 0.5) (kind 0), special values (1), zeros (2);
  // int32: 0..6. Made once; tensors copy it over their blocks.
  static constexpr size_t kPatternElements = 4096;
  static const std::vector<char>& fill_pattern(aclDataType dtype, int64_t kind) {
    static std::map<std::pair<int, int64_t>, std::vector<char>> cache;
    std::vector<char>& p = cache[{static_cast<int>(dtype), kind}];
    if (!p.empty()) return p;
    const size_t esize = elem_size(dtype);
    p.assign(kPatternElements * esize, 0);
    static const float kSpecial[] = {NAN, INFINITY, -INFINITY, 3e38f, -3e38f, 1e-40f, 0.0f, -0.0f, 65504.0f, 1e5f};
    for (size_t i = 0; i < kPatternElements; ++i) {
      const float hashed = static_cast<float>((static_cast<uint32_t>(i) * 2654435761u) >> 24) / 256.0f - 0.5f;
      const float v = kind == 1 ? kSpecial[i % 10] : kind == 2 ? 0.0f : hashed;
      char* q = p.data() + i * esize;
      if (dtype == ACL_FLOAT) {
        std::memcpy(q, &v, 4);
      } else if (dtype == ACL_FLOAT16) {
        const uint16_t h = aclFloatToFloat16(v);
        std::memcpy(q, &h, 2);
      } else if (dtype == ACL_BF16) {
        uint32_t u;
        std::memcpy(&u, &v, 4);
        const uint16_t h = static_cast<uint16_t>(u >> 16);
        std::memcpy(q, &h, 2);
      } else if (dtype == ACL_INT32) {
        const int32_t x = static_cast<int32_t>(i % 7);
        std::memcpy(q, &x, 4);
      } else {
        std::memset(q, static_cast<int>(i * 37 + kind), esize);
      }
    }
    return p;
  }

  // TXFUZZ_TRACE=1: one line per tensor made (for triaging a reproducer).
  static void trace(const char* name, const TensorRecord& r, uint64_t storage_num, bool null_storage) {
    static const bool on = std::getenv("TXFUZZ_TRACE") != nullptr;
    if (!on) return;
    auto list = [](const std::vector<int64_t>& v) {
      std::string s = "(";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
      return s + ")";
    };
    std::fprintf(stderr, "txfuzz: %s dims %s strides %s%s offset %lld dtype %d format %d storage %s%s num %llu data %s+%lld "
                 "of a %zu-byte block -> %s\n", name, list(r.dims).c_str(), list(r.strides).c_str(),
                 r.pass_strides ? "" : " (null)", (long long)r.offset, (int)r.dtype, (int)r.format,
                 list(r.storage).c_str(), null_storage ? " (null)" : "", (unsigned long long)storage_num,
                 r.data ? "block" : "null", (long long)(r.data ? r.data - r.block : 0), r.block_bytes,
                 r.tensor ? "tensor" : aclGetRecentErrMsg());
  }

  // The introspection calls give back what creation was given.
  static void introspect(const TensorRecord& r) {
    int64_t* v = nullptr;
    uint64_t n = 0;
    if (aclGetViewShape(r.tensor, &v, &n) != ACLNN_SUCCESS || n != r.dims.size() ||
        (n > 0 && std::memcmp(v, r.dims.data(), n * 8) != 0))
      die("aclGetViewShape does not match aclCreateTensor's viewDims");
    delete[] v;  // CANN: released with delete[]
    if (aclGetViewStrides(r.tensor, &v, &n) != ACLNN_SUCCESS || n != r.dims.size() ||
        (r.pass_strides && n > 0 && std::memcmp(v, r.strides.data(), n * 8) != 0))
      die("aclGetViewStrides does not match aclCreateTensor's strides");
    delete[] v;  // CANN: released with delete[]
    if (aclGetStorageShape(r.tensor, &v, &n) != ACLNN_SUCCESS) die("aclGetStorageShape failed");
    delete[] v;  // CANN: released with delete[]
    aclDataType dt;
    aclFormat fmt;
    int64_t off = -1;
    if (aclGetDataType(r.tensor, &dt) != ACLNN_SUCCESS || dt != r.dtype) die("aclGetDataType is wrong");
    if (aclGetFormat(r.tensor, &fmt) != ACLNN_SUCCESS || fmt != r.format) die("aclGetFormat is wrong");
    if (aclGetViewOffset(r.tensor, &off) != ACLNN_SUCCESS || off != r.offset) die("aclGetViewOffset is wrong");
  }

  Input& in_;
  std::vector<void*> blocks_;
  std::vector<aclTensor*> tensors_;
  std::vector<aclIntArray*> arrays_;
  std::vector<aclrtStream> streams_;
  std::vector<TensorRecord> records_;
  aclnnStatus last_status_ = ACLNN_SUCCESS;
};

// A float dtype (the valid proposals of the RoPE and GDR targets).
inline aclDataType float_dtype(Session& s, const char* scope, const char* label) {
  static const aclDataType kTypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
  return s.pick(kTypes, scope, label);
}

// One rotary-mode string for the ApplyRotaryPosEmb targets (mutable storage: the API takes char*).
inline char* mode_string(Session& s, char (&buf)[128]) {
  static const char* const kModes[] = {"half", "interleave", "quarter", nullptr, "", "HALF", "interleave-half",
                                       "halfx", "x"};
  const int64_t i = s.range(0, 9, "attr", "mode");
  if (i == 9) {  // a long string, no terminator within the first 100 bytes
    std::memset(buf, 'q', 127);
    buf[127] = 0;
    return buf;
  }
  if (kModes[i] == nullptr) return nullptr;
  std::snprintf(buf, sizeof(buf), "%s", kModes[i]);
  return buf;
}

// ---- the libFuzzer entry: one body per target, run on a FuzzedDataProvider --------------------------------
using Body = void (*)(Input& in);

// Once per process: libomp gives its threads back at once (they would spin 200 ms after each parallel region on
// the shared cores), and nothing prints per call.
inline void init_process() {
  setenv("KMP_BLOCKTIME", "0", 0);
  setenv("OMP_WAIT_POLICY", "passive", 0);
  unsetenv("TXOPS_VERBOSE");
  txops::set_verbose(false);
}

}  // namespace txfuzz

// TXFUZZ_TARGET(name) { body using `in` } defines txfuzz_body_<name>(txfuzz::Input& in) and, unless the seed
// generator includes the file (TXFUZZ_SEED_GEN), the libFuzzer entry points running it.
#ifdef TXFUZZ_SEED_GEN
#define TXFUZZ_TARGET(name) void txfuzz_body_##name(txfuzz::Input& in)
#else
#include <fuzzer/FuzzedDataProvider.h>
namespace txfuzz {
class FdpInput final : public Input {
 public:
  FdpInput(const uint8_t* data, size_t size) : fdp_(data, size) {}
  int64_t range(int64_t lo, int64_t hi, const char*, const char*) override {
    return fdp_.ConsumeIntegralInRange<int64_t>(lo, hi);
  }

 private:
  FuzzedDataProvider fdp_;
};
}  // namespace txfuzz
#define TXFUZZ_TARGET(name)                                                          \
  void txfuzz_body_##name(txfuzz::Input& in);                                        \
  extern "C" int LLVMFuzzerInitialize(int*, char***) {                               \
    txfuzz::init_process();                                                          \
    return 0;                                                                        \
  }                                                                                  \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {          \
    txfuzz::FdpInput in(data, size);                                                 \
    txfuzz_body_##name(in);                                                          \
    return 0;                                                                        \
  }                                                                                  \
  void txfuzz_body_##name(txfuzz::Input& in)
#endif

#endif  // TXOPS_FUZZ_FUZZ_UTIL_H_
