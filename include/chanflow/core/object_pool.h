// object_pool.h — ObjectPool<T>: objects whose memory returns to a pool when released (RFC F3).
//
//   cf::ObjectPool<MsgObj> pool;
//   cf::ObjectPtr<MsgObj> m = pool.make(args...);   // reuses a released chunk when one is cached
//   m.reset();                                      // the deleter destroys the MsgObj and gives
//                                                   // its memory back to the pool, not to malloc
//
// Each chunk is the object followed by a pointer to the pool's shared core, so the deleter finds
// its pool without a global. The core is reference counted by the pool handle and by every chunk
// in existence: objects may outlive the ObjectPool that made them (their memory is then freed
// normally when they are released).
//
// Thread-safety: make() and releases may run on any threads concurrently. Each thread first uses
// its own magazine of up to 32 free chunks (no atomics); beyond that free chunks go to kShards
// shared lists, each behind a tiny spinlock, picked by thread id so threads rarely contend. At most
// `max_cached` chunks are kept in the shared lists; beyond that released memory is freed.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <new>
#include <thread>
#include <utility>
#include <vector>

#include "chanflow/core/cache_line.h"
#include "chanflow/core/object.h"
#include "chanflow/core/spinlock.h"

namespace chanflow {

template <class T>
class ObjectPool {
 public:
  // A pool that caches up to max_cached free chunks.
  explicit ObjectPool(size_t max_cached = 4096) : core_(new Core(max_cached)) {}
  ObjectPool(const ObjectPool&) = delete;
  ObjectPool& operator=(const ObjectPool&) = delete;
  // Frees cached chunks. Live objects stay valid and free their memory when released.
  ~ObjectPool() { core_->release_owner(); }

  // Constructs a T in a cached chunk (or a new one). If T's constructor throws, the chunk goes back
  // to the pool and the exception propagates.
  template <class... A>
  ObjectPtr<T> make(A&&... args) {
    const uint32_t index = T::runtime_type_index();
    Chunk* chunk = local_take(core_);
    if (chunk == nullptr) chunk = core_->acquire();
    T* obj;
    try {
      obj = new (chunk->storage) T(std::forward<A>(args)...);
    } catch (...) {
      local_give(chunk);
      throw;
    }
    detail::ObjectUnsafe::init_header(obj, index, &deleter);
    detail::track_object_created();
    return detail::ObjectUnsafe::adopt_new<T>(static_cast<Object*>(obj));
  }

  // Free chunks cached in the shared lists plus the calling thread's own magazine (approximate
  // while other threads use the pool).
  size_t cached() const {
    const LocalCache& lc = local_cache();
    return core_->cached() + (lc.owner == core_ ? lc.count : 0);
  }

 private:
  struct Core;
  struct Chunk {
    alignas(T) std::byte storage[sizeof(T)];
    Core* core;
  };
  static constexpr size_t kShards = 8;

  struct alignas(kCacheLine) Shard {
    os::SpinLock mu;  // the lock hands the list's contents over (acquire / release)
    std::vector<Chunk*> free CHANFLOW_GUARDED_BY(mu);
    void lock() noexcept CHANFLOW_ACQUIRE(mu) { mu.lock(); }
    void unlock() noexcept CHANFLOW_RELEASE(mu) { mu.unlock(); }
  };

  // Reference counted by the ObjectPool handle and by every chunk in existence (cached or holding
  // a live object), so the per-object path never touches the count: it changes only when a chunk
  // is allocated or freed.
  struct Core {
    explicit Core(size_t max_cached) : per_shard_limit(max_cached / kShards + 1) {}
    Core(const Core&) = delete;
    Core& operator=(const Core&) = delete;
    ~Core() = default;

    const size_t per_shard_limit;
    Shard shards[kShards];
    std::atomic<size_t> refs{1};
    std::atomic<bool> owner_gone{false};

    Shard& my_shard() noexcept {
      return shards[std::hash<std::thread::id>()(std::this_thread::get_id()) % kShards];
    }
    Chunk* acquire() {
      Shard& s = my_shard();
      s.lock();
      Chunk* c = nullptr;
      if (!s.free.empty()) {
        c = s.free.back();
        s.free.pop_back();
      }
      s.unlock();
      if (c == nullptr) {
        c = new Chunk;
        c->core = this;
        refs.fetch_add(1, std::memory_order_relaxed);
      }
      return c;
    }
    // Takes back a chunk whose object was destroyed (or never built).
    void recycle(Chunk* c) {
      // Acquire pairs with release_owner's store: once the owner is gone, nothing is cached.
      if (!owner_gone.load(std::memory_order_acquire)) {
        Shard& s = my_shard();
        s.lock();
        // Re-checked under the lock: release_owner drains each shard under its lock after setting
        // the flag, so a chunk pushed here is either drained there or never pushed.
        const bool keep =
            s.free.size() < per_shard_limit && !owner_gone.load(std::memory_order_relaxed);
        if (keep) s.free.push_back(c);
        s.unlock();
        if (keep) return;
      }
      delete c;
      unref();
    }
    void release_owner() {
      owner_gone.store(true, std::memory_order_release);
      size_t freed = 0;
      for (Shard& s : shards) {
        s.lock();
        for (Chunk* c : s.free) delete c;
        freed += s.free.size();
        s.free.clear();
        s.unlock();
      }
      if (freed != 0) refs.fetch_sub(freed, std::memory_order_relaxed);
      unref();
    }
    void unref() {
      // acq_rel: the deleting thread must see every other thread's use of the core.
      if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }
    size_t cached() {
      size_t n = 0;
      for (Shard& s : shards) {
        s.lock();
        n += s.free.size();
        s.unlock();
      }
      return n;
    }
  };

  // A per-thread magazine of free chunks of one pool (per T): the common make/release cycle on one
  // thread touches no atomic. A thread that switches to another pool of the same T hands its
  // magazine back to the old pool's shared lists first. Chunks keep their core alive, so a
  // magazine never points at a freed core; it is flushed when its thread exits.
  static constexpr int kLocalCapacity = 32;
  struct LocalCache {
    Core* owner = nullptr;
    int count = 0;
    Chunk* items[kLocalCapacity];
    LocalCache() = default;
    LocalCache(const LocalCache&) = delete;
    LocalCache& operator=(const LocalCache&) = delete;
    ~LocalCache() { flush(); }
    void flush() noexcept {
      while (count > 0) {
        Chunk* c = items[--count];
        c->core->recycle(c);
      }
      owner = nullptr;
    }
  };
  // The calling OS thread's magazine. Out of line, with a compiler barrier after the read, the
  // rule the runtime follows for its own thread_locals (current_worker() in
  // src/runtime/scheduler.cc): a green thread may block between two pool calls in one function,
  // or inside make() (in T's constructor) and then reach local_give(), and resume on another
  // worker OS thread. Inlined there, the thread_local's address — which a compiler treats as
  // constant within a function — could be computed once and reused after the switch, so two
  // workers would share one magazine. Called, it is recomputed on the thread running now; the
  // barrier keeps the compiler from treating the call as pure and merging two of them, and takes
  // the address as an operand it may change, so no caller knows the result in advance (Clang's
  // interprocedural constant propagation otherwise put the thread_local's address into the
  // callers). Every access to the magazine goes through this function (a ctest checks the built
  // objects).
  __attribute__((noinline)) static LocalCache& local_cache() noexcept {
    static thread_local LocalCache cache;
    LocalCache* here = &cache;
    asm volatile("" : "+r"(here) : : "memory");
    return *here;
  }
  static Chunk* local_take(Core* core) noexcept {
    LocalCache& lc = local_cache();
    if (lc.owner != core || lc.count == 0) return nullptr;
    return lc.items[--lc.count];
  }
  static void local_give(Chunk* chunk) noexcept {
    Core* core = chunk->core;
    LocalCache& lc = local_cache();
    // Relaxed: a stale 'false' only parks the chunk in this magazine until the next flush.
    if (core->owner_gone.load(std::memory_order_relaxed)) {
      core->recycle(chunk);
      return;
    }
    if (lc.owner != core) {
      if (lc.count != 0 && lc.count < kLocalCapacity / 2) {
        lc.flush();  // switch this thread's magazine to the pool it is using now
      } else if (lc.count != 0) {
        core->recycle(chunk);
        return;
      }
      lc.owner = core;
    }
    if (lc.count == kLocalCapacity) {
      // Full: move half to the shared lists so other threads can reuse them.
      for (int i = 0; i < kLocalCapacity / 2; ++i) {
        Chunk* c = lc.items[--lc.count];
        core->recycle(c);
      }
    }
    lc.items[lc.count++] = chunk;
  }

  static void deleter(Object* obj) noexcept {
    T* t = static_cast<T*>(obj);
    // The T sits at offset 0 of its chunk (storage is the chunk's first member).
    Chunk* chunk = reinterpret_cast<Chunk*>(reinterpret_cast<std::byte*>(t));
    t->~T();
    detail::track_object_destroyed();
    local_give(chunk);
  }

  Core* core_;
};

}  // namespace chanflow
