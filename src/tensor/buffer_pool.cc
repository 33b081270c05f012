// buffer_pool.cc — the tensor buffer cache: one LIFO free list per size class, a byte limit.
#include "buffer_pool.h"

#include <atomic>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "chanflow/core/error.h"
#include "chanflow/tensor/buffer_cache.h"

#if defined(__SANITIZE_ADDRESS__)
#define CHANFLOW_TENSOR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CHANFLOW_TENSOR_ASAN 1
#endif
#endif
#if defined(CHANFLOW_TENSOR_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace chanflow::detail {
namespace {

// Classes: for each octave (2^j, 2^(j+1)] with 2^j >= kMinCachedBytes, four capacities
// 2^j * {1.25, 1.5, 1.75, 2}.
constexpr int kMinShift = std::bit_width(static_cast<uint64_t>(kMinCachedBytes)) - 1;  // 12
constexpr int kMaxShift = std::bit_width(static_cast<uint64_t>(kMaxCachedBytes)) - 2;  // 24
constexpr int kClasses = (kMaxShift - kMinShift + 1) * 4;
constexpr int64_t kDefaultLimit = int64_t{256} << 20;

int octave_of(int64_t nbytes) noexcept {  // j with 2^j < nbytes <= 2^(j+1)
  return std::bit_width(static_cast<uint64_t>(nbytes - 1)) - 1;
}

int class_index(int64_t capacity) noexcept {
  const int j = octave_of(capacity);
  const int64_t step = int64_t{1} << (j - 2);
  const auto quarter = static_cast<int>(capacity / step - 4);  // 1..4
  return (j - kMinShift) * 4 + quarter - 1;
}

int64_t initial_limit() noexcept {
#if defined(CHANFLOW_TENSOR_ASAN)
  int64_t limit = 0;  // keep ASan's own quarantine in charge of use-after-free detection
#else
  int64_t limit = kDefaultLimit;
#endif
  if (const char* env = std::getenv("CHANFLOW_TENSOR_CACHE_BYTES")) {
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (end != env && *end == '\0' && v >= 0) {
      limit = v;
    } else {
      std::fprintf(stderr,
                   "chanflow: ignoring CHANFLOW_TENSOR_CACHE_BYTES='%s' (expected a byte count "
                   ">= 0); the tensor buffer cache keeps its default of %lld bytes\n",
                   env, static_cast<long long>(limit));
    }
  }
  return limit;
}

struct alignas(64) FreeList {
  std::mutex mu;
  std::vector<void*> buffers;  // LIFO: the most recently freed (warmest) buffer is reused first
};

struct Pool {
  FreeList lists[kClasses];
  alignas(64) std::atomic<int64_t> cached{0};
  std::atomic<int64_t> limit{initial_limit()};
  alignas(64) std::atomic<int64_t> hits{0};
  std::atomic<int64_t> misses{0};
};

// Never destroyed: tensors held by other static objects may be freed during exit.
Pool& pool() noexcept {
  static Pool* const kPool = new Pool();
  return *kPool;
}

void poison(void* p, int64_t n) noexcept {
#if defined(CHANFLOW_TENSOR_ASAN)
  ASAN_POISON_MEMORY_REGION(p, static_cast<size_t>(n));
#else
  (void)p;
  (void)n;
#endif
}

void unpoison(void* p, int64_t n) noexcept {
#if defined(CHANFLOW_TENSOR_ASAN)
  ASAN_UNPOISON_MEMORY_REGION(p, static_cast<size_t>(n));
#else
  (void)p;
  (void)n;
#endif
}

// Frees idle buffers, largest classes first, until at most `keep` bytes stay cached.
void shrink_to(int64_t keep) noexcept {
  Pool& pl = pool();
  for (int c = kClasses - 1; c >= 0 && pl.cached.load(std::memory_order_relaxed) > keep; --c) {
    const int j = kMinShift + c / 4;
    const int64_t capacity = (int64_t{1} << j) + (int64_t{1} << (j - 2)) * (c % 4 + 1);
    std::vector<void*> victims;
    {
      std::lock_guard<std::mutex> lock(pl.lists[c].mu);
      std::vector<void*>& b = pl.lists[c].buffers;
      while (!b.empty() && pl.cached.load(std::memory_order_relaxed) > keep) {
        victims.push_back(b.back());
        b.pop_back();
        pl.cached.fetch_sub(capacity, std::memory_order_relaxed);
      }
    }
    for (void* p : victims) {
      unpoison(p, capacity);
      std::free(p);
    }
  }
}

}  // namespace

int64_t buffer_class_capacity(int64_t nbytes) noexcept {
  if (nbytes <= kMinCachedBytes || nbytes > kMaxCachedBytes) return 0;
  const int j = octave_of(nbytes);
  const int64_t step = int64_t{1} << (j - 2);
  return (nbytes + step - 1) / step * step;
}

void* buffer_get(int64_t capacity) noexcept {
  Pool& pl = pool();
  FreeList& list = pl.lists[class_index(capacity)];
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(list.mu);
    if (!list.buffers.empty()) {
      p = list.buffers.back();
      list.buffers.pop_back();
    }
  }
  if (p != nullptr) {
    pl.cached.fetch_sub(capacity, std::memory_order_relaxed);
    pl.hits.fetch_add(1, std::memory_order_relaxed);
    unpoison(p, capacity);
    return p;
  }
  pl.misses.fetch_add(1, std::memory_order_relaxed);
  // Capacities are multiples of 1 KiB, hence of the 64-byte alignment aligned_alloc requires.
  return std::aligned_alloc(64, static_cast<size_t>(capacity));
}

void buffer_put(void* p, int64_t capacity) noexcept {
  Pool& pl = pool();
  const int64_t limit = pl.limit.load(std::memory_order_relaxed);
  // Reserve room first, so concurrent puts never overshoot the limit together.
  if (pl.cached.fetch_add(capacity, std::memory_order_relaxed) + capacity > limit) {
    pl.cached.fetch_sub(capacity, std::memory_order_relaxed);
    std::free(p);
    return;
  }
  poison(p, capacity);  // before it is visible to other threads
  FreeList& list = pl.lists[class_index(capacity)];
  try {
    std::lock_guard<std::mutex> lock(list.mu);
    list.buffers.push_back(p);
  } catch (...) {  // the free list could not grow: free the buffer instead
    pl.cached.fetch_sub(capacity, std::memory_order_relaxed);
    unpoison(p, capacity);
    std::free(p);
  }
}

}  // namespace chanflow::detail

namespace chanflow {

TensorCacheStats tensor_cache_stats() noexcept {
  detail::Pool& pl = detail::pool();
  TensorCacheStats s;
  s.hits = pl.hits.load(std::memory_order_relaxed);
  s.misses = pl.misses.load(std::memory_order_relaxed);
  s.cached_bytes = pl.cached.load(std::memory_order_relaxed);
  s.limit = pl.limit.load(std::memory_order_relaxed);
  return s;
}

void set_tensor_cache_limit(int64_t bytes) {
  if (bytes < 0) {
    CHANFLOW_THROW(Error) << "set_tensor_cache_limit: the limit must be >= 0 bytes, got " << bytes;
  }
  detail::pool().limit.store(bytes, std::memory_order_relaxed);
  detail::shrink_to(bytes);
}

void release_cached_tensor_memory() noexcept { detail::shrink_to(0); }

}  // namespace chanflow
