// buffer_pool.cc — the tensor buffer cache: a small LIFO cache per thread in front of one shared
// LIFO free list per size class, under one byte limit.
//
// Why per thread: with several workers, a shared list hands a buffer last written on one CPU to
// the next allocation on another (its lines migrate when the op writes its output), and every get
// and put would bounce the shared counters' cache lines (docs/tensor.md). A thread keeps
// up to kThreadSlots buffers per class (at most limit / kThreadShare bytes) and serves its own
// allocations from them, without shared atomics; the shared lists take what it cannot keep.
#include "buffer_pool.h"

#include <atomic>
#include <bit>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "chanflow/core/cache_line.h"
#include "chanflow/core/env.h"
#include "chanflow/core/error.h"
#include "chanflow/core/locks.h"
#include "chanflow/core/spinlock.h"
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

// The default limit, or CHANFLOW_TENSOR_CACHE_BYTES. A value that does not parse is kept as an
// error (the pool is built inside noexcept paths) and the limit is 0, so nothing is ever cached:
// every cacheable allocation misses, and a miss reports the error (buffer_cache_setting_error).
struct InitialLimit {
  int64_t bytes;
  std::string error;
};

InitialLimit initial_limit() noexcept {
#if defined(CHANFLOW_TENSOR_ASAN)
  int64_t limit = 0;  // keep ASan's own quarantine in charge of use-after-free detection
#else
  int64_t limit = kDefaultLimit;
#endif
  try {
    if (std::optional<int64_t> v = env_int("CHANFLOW_TENSOR_CACHE_BYTES", 0, INT64_MAX)) {
      limit = *v;
    }
    return {limit, {}};
  } catch (const std::exception& e) {
    return {0, e.what()};
  }
}

struct alignas(kCacheLine) FreeList {
  os::Mutex mu;
  // LIFO: the most recently freed (warmest) buffer is reused first.
  std::vector<void*> buffers CHANFLOW_GUARDED_BY(mu);
};

struct Pool {
  explicit Pool(InitialLimit init) : limit(init.bytes), setting_error(std::move(init.error)) {}
  FreeList lists[kClasses];
  alignas(kCacheLine) std::atomic<int64_t> cached{0};
  std::atomic<int64_t> limit;
  // Non-empty while CHANFLOW_TENSOR_CACHE_BYTES is malformed and no set_tensor_cache_limit
  // replaced it; written only under setting_mu (read by allocations that miss, which take it).
  os::Mutex setting_mu;
  std::string setting_error CHANFLOW_GUARDED_BY(setting_mu);
  std::atomic<bool> setting_bad{!setting_error.empty()};
};

// Never destroyed: tensors held by other static objects may be freed during exit.
Pool& pool() noexcept {
  static Pool* const kPool = new Pool(initial_limit());
  return *kPool;
}

// A thread's own cache. Its owner takes `mu` (os::SpinLock) around every access (uncontended: a
// lock on a line only this CPU writes); other threads take it only to shrink the cache or read its
// counters.
constexpr int kThreadSlots = 4;
constexpr int64_t kThreadShare = 8;  // a thread holds at most limit / kThreadShare bytes

struct ThreadCache {
  os::SpinLock mu;
  void* slots[kClasses][kThreadSlots] CHANFLOW_GUARDED_BY(mu) = {};
  uint8_t count[kClasses] CHANFLOW_GUARDED_BY(mu) = {};
  int64_t bytes CHANFLOW_GUARDED_BY(mu) = 0;  // idle bytes held
  int64_t hits CHANFLOW_GUARDED_BY(mu) = 0;
  int64_t misses CHANFLOW_GUARDED_BY(mu) = 0;
  ThreadCache();
  ~ThreadCache();
};

// Every live thread cache, and the counters of exited threads.
struct Registry {
  os::Mutex mu;
  std::vector<ThreadCache*> caches CHANFLOW_GUARDED_BY(mu);
  int64_t retired_hits CHANFLOW_GUARDED_BY(mu) = 0;
  int64_t retired_misses CHANFLOW_GUARDED_BY(mu) = 0;
};

Registry& registry() noexcept {
  static auto* const kRegistry = new Registry();  // never destroyed, like the pool
  return *kRegistry;
}

int64_t class_capacity(int c) noexcept {
  const int j = kMinShift + c / 4;
  return (int64_t{1} << j) + (int64_t{1} << (j - 2)) * (c % 4 + 1);
}

void poison(void* p, int64_t n) noexcept;
void unpoison(void* p, int64_t n) noexcept;
void put_shared(void* p, int64_t capacity) noexcept;

thread_local bool t_cache_gone = false;  // set when this thread's cache was destroyed

ThreadCache::ThreadCache() {
  Registry& r = registry();
  os::LockGuard lock(r.mu);
  r.caches.push_back(this);
}

ThreadCache::~ThreadCache() {
  t_cache_gone = true;
  {
    Registry& r = registry();
    os::LockGuard lock(r.mu);
    std::erase(r.caches, this);
    r.retired_hits += hits;
    r.retired_misses += misses;
  }
  for (int c = 0; c < kClasses; ++c) {
    for (int i = 0; i < count[c]; ++i) {
      unpoison(slots[c][i], class_capacity(c));
      put_shared(slots[c][i], class_capacity(c));
    }
  }
}

// The calling thread's cache; nullptr once it was destroyed (thread exit, static destructors).
ThreadCache* thread_cache() noexcept {
  if (t_cache_gone) return nullptr;
  thread_local ThreadCache cache;
  return &cache;
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

// Frees the idle buffers of every thread cache, into the shared lists when `keep` > 0 and room is
// left, else to malloc.
void drain_thread_caches(int64_t keep) noexcept {
  Registry& r = registry();
  os::LockGuard lock(r.mu);
  for (ThreadCache* tc : r.caches) {
    os::LockGuard g(tc->mu);
    for (int c = 0; c < kClasses; ++c) {
      for (int i = 0; i < tc->count[c]; ++i) {
        void* p = tc->slots[c][i];
        unpoison(p, class_capacity(c));
        if (keep > 0) {
          put_shared(p, class_capacity(c));
        } else {
          std::free(p);
        }
      }
      tc->count[c] = 0;
    }
    tc->bytes = 0;
  }
}

// Frees idle buffers, largest classes first, until at most `keep` bytes stay cached (thread
// caches are emptied first: they count against the limit too).
void shrink_to(int64_t keep) noexcept {
  drain_thread_caches(keep);
  Pool& pl = pool();
  for (int c = kClasses - 1; c >= 0 && pl.cached.load(std::memory_order_relaxed) > keep; --c) {
    const int64_t capacity = class_capacity(c);
    std::vector<void*> victims;
    {
      os::LockGuard lock(pl.lists[c].mu);
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

namespace {

// The shared path of buffer_put: cached while the limit allows, else freed.
void put_shared(void* p, int64_t capacity) noexcept {
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
    os::LockGuard lock(list.mu);
    list.buffers.push_back(p);
  } catch (...) {  // the free list could not grow: free the buffer instead
    pl.cached.fetch_sub(capacity, std::memory_order_relaxed);
    unpoison(p, capacity);
    std::free(p);
  }
}

}  // namespace

// Counts a hit or a miss for the thread (or, after its cache is gone, for the exited threads).
void count_outcome(ThreadCache* tc, bool hit) noexcept {
  if (tc != nullptr) {
    os::LockGuard g(tc->mu);
    ++(hit ? tc->hits : tc->misses);
    return;
  }
  Registry& r = registry();
  os::LockGuard lock(r.mu);
  ++(hit ? r.retired_hits : r.retired_misses);
}

void* buffer_get(int64_t capacity) noexcept {
  const int c = class_index(capacity);
  ThreadCache* tc = thread_cache();
  if (tc != nullptr) {
    os::LockGuard g(tc->mu);
    if (tc->count[c] > 0) {
      void* p = tc->slots[c][--tc->count[c]];
      tc->bytes -= capacity;
      ++tc->hits;
      unpoison(p, capacity);
      return p;
    }
  }
  Pool& pl = pool();
  FreeList& list = pl.lists[c];
  void* p = nullptr;
  {
    os::LockGuard lock(list.mu);
    if (!list.buffers.empty()) {
      p = list.buffers.back();
      list.buffers.pop_back();
    }
  }
  if (p != nullptr) {
    pl.cached.fetch_sub(capacity, std::memory_order_relaxed);
    count_outcome(tc, true);
    unpoison(p, capacity);
    return p;
  }
  count_outcome(tc, false);
  // Relaxed: the flag is set before the pool is published (its static initialisation) and only
  // ever cleared by set_tensor_cache_limit; a stale read fails one allocation of a race with it.
  if (pl.setting_bad.load(std::memory_order_relaxed)) return nullptr;
  // Capacities are multiples of 1 KiB, hence of the 64-byte alignment aligned_alloc requires.
  return std::aligned_alloc(64, static_cast<size_t>(capacity));
}

void buffer_put(void* p, int64_t capacity) noexcept {
  const int c = class_index(capacity);
  const int64_t room = pool().limit.load(std::memory_order_relaxed) / kThreadShare;
  if (ThreadCache* tc = thread_cache()) {
    os::LockGuard g(tc->mu);
    if (tc->count[c] < kThreadSlots && tc->bytes + capacity <= room) {
      poison(p, capacity);
      tc->slots[c][tc->count[c]++] = p;
      tc->bytes += capacity;
      return;
    }
  }
  put_shared(p, capacity);
}

std::string buffer_cache_setting_error() {
  Pool& pl = pool();
  os::LockGuard lock(pl.setting_mu);
  return pl.setting_error;
}

}  // namespace chanflow::detail

namespace chanflow {

TensorCacheStats tensor_cache_stats() noexcept {
  detail::Pool& pl = detail::pool();
  TensorCacheStats s;
  s.cached_bytes = pl.cached.load(std::memory_order_relaxed);
  s.limit = pl.limit.load(std::memory_order_relaxed);
  detail::Registry& r = detail::registry();
  os::LockGuard lock(r.mu);
  s.hits = r.retired_hits;
  s.misses = r.retired_misses;
  for (detail::ThreadCache* tc : r.caches) {
    os::LockGuard g(tc->mu);
    s.hits += tc->hits;
    s.misses += tc->misses;
    s.cached_bytes += tc->bytes;
  }
  return s;
}

void set_tensor_cache_limit(int64_t bytes) {
  if (bytes < 0) {
    CHANFLOW_THROW(Error) << "set_tensor_cache_limit: the limit must be >= 0 bytes, got " << bytes;
  }
  detail::Pool& pl = detail::pool();
  {
    // An explicit limit replaces the environment's, malformed or not.
    os::LockGuard lock(pl.setting_mu);
    pl.setting_error.clear();
    pl.setting_bad.store(false, std::memory_order_relaxed);
  }
  pl.limit.store(bytes, std::memory_order_relaxed);
  detail::shrink_to(bytes);
}

void release_cached_tensor_memory() noexcept { detail::shrink_to(0); }

}  // namespace chanflow
