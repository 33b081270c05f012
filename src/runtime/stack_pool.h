// stack_pool.h — green-thread stacks: carved from big mappings, pooled, reused warm (private).
//
// A first-touch page fault costs microseconds, so stacks are never unmapped while the scheduler
// lives: a released stack goes back on a LIFO free list and the next spawn reuses it with its pages
// already resident. On Linux 6.13+ every stack gets a guard page marked with
// madvise(MADV_GUARD_INSTALL), which does not split the mapping. On older kernels a guard page is
// an mprotect'ed page costing two kernel mappings (vm.max_map_count is 65530 by default), so they
// are handed out from a process-wide budget and, in StackGuard::kAuto, later stacks are compact:
// back to back in one mapping, protected by a canary word instead (see docs/runtime.md).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "chanflow/core/locks.h"
#include "chanflow/runtime/scheduler.h"

namespace chanflow::detail {

struct StackSlot {
  char* base = nullptr;   // lowest address of the slot (the guard page, if any)
  std::size_t guard = 0;  // guard bytes at base (0: compact, canary at base)
  // The slot's entry in its chunk's owner table (see StackPool::for_each_owner).
  std::atomic<void*>* owner = nullptr;
  char* bottom() const noexcept { return base + guard; }
};

// Whether stacks get their guard pages from madvise(MADV_GUARD_INSTALL) (Linux 6.13+): probed
// once per process. CHANFLOW_STACK_GUARD_MARKERS=0 in the environment forces the fallback of older
// kernels (mprotect'ed guard pages within the budget, then canaries), which tests use to cover it.
bool guard_markers_available() noexcept;

inline constexpr std::uint64_t kStackCanary = 0x6368616e666c6f77ULL;  // "chanflow"
// Words of canary at the low end of a compact stack. Several, because an overflowing frame may
// leave a few bytes unwritten exactly where one word sits.
inline constexpr std::size_t kCanaryWords = 8;
void write_canary(char* base) noexcept;
bool canary_intact(const char* base) noexcept;

class StackPool {
 public:
  StackPool(std::size_t usable, StackGuard mode);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  // A worker's private front of the pool (Go's per-P stack cache): spawn and exit on one worker
  // take and return stacks here without the pool's lock; it refills and flushes in batches of
  // kCacheBatch. Used only by its owner thread. Its stacks stay warm and are not trimmed (at most
  // kCacheSize per worker).
  struct Cache {
    static constexpr std::size_t kCacheSize = 32;
    static constexpr std::size_t kCacheBatch = kCacheSize / 2;
    StackSlot slots[kCacheSize];
    std::size_t count = 0;
  };

  // A stack; its usable bytes are [bottom(), base + slot_size()). Throws Error when memory or the
  // guard budget (kAlways) runs out. Thread-safe.
  StackSlot acquire();
  // Same, from the owner's cache (refilled from the pool when empty). Owner thread only.
  StackSlot acquire(Cache& cache);
  // Returns a stack to the pool (kept warm: its pages stay resident). Thread-safe.
  void release(StackSlot slot) noexcept;
  // Same, to the owner's cache (half of it is flushed to the pool when full). Owner thread only.
  void release(Cache& cache, StackSlot slot) noexcept;
  // Gives back to the kernel the pages of warm stacks that no spawn used during the last trim
  // period (kTrimPeriodNs), keeping the kKeepWarm most recently used ones. A burst of green
  // threads that repeats within the period (a server's requests, a benchmark's repetitions) keeps
  // finding its stacks resident; memory a burst left behind is returned within about two
  // periods. Returns the nanoseconds until a later call could free more (0: nothing pending), so
  // an idle worker can sleep that long and call again. Thread-safe; called by idle workers.
  int64_t trim(int64_t now_ns) noexcept;

  // Calls fn(owner) for every non-null owner entry: each slot has one, which its user sets while
  // the slot holds something that must be found later (the scheduler: a live green thread, so
  // reports and teardown can list them without a list threaded through the tasks — Go's allgs).
  // Holds the pool's lock; the caller must know the owners cannot go away meanwhile.
  template <typename F>
  void for_each_owner(F&& fn) {
    os::LockGuard lock(mu_);
    for (const Chunk& c : chunks_) {
      for (std::size_t i = 0; i < c.slots; ++i) {
        if (void* o = c.owners[i].load(std::memory_order_acquire)) fn(o);
      }
    }
  }

  static constexpr int64_t kTrimPeriodNs = 1'000'000'000;
  static constexpr std::size_t kKeepWarm = 4096;

  std::size_t usable() const noexcept { return usable_; }
  // Released stacks whose pages are resident (a snapshot). Thread-safe.
  std::size_t warm_count() const noexcept { return warm_count_.load(std::memory_order_relaxed); }
  // Distance between the bases of consecutive slots of a compact chunk; guarded slots add a page.
  std::size_t slot_size(const StackSlot& s) const noexcept { return usable_ + s.guard; }

 private:
  void grow() CHANFLOW_REQUIRES(mu_);  // maps one more chunk
  // grow() with guard markers (Linux 6.13+); false if the kernel has none.
  bool grow_marked() CHANFLOW_REQUIRES(mu_);
  // Moves up to n stacks to out (warm first, then fresh ones). Returns how many, and how many of
  // them (the last ones) are fresh: their canary is not written yet.
  std::size_t take_locked(StackSlot* out, std::size_t n, std::size_t* fresh) CHANFLOW_REQUIRES(mu_);

  std::size_t usable_;
  std::size_t page_;
  StackGuard mode_;
  os::Mutex mu_;
  // In all chunks; free_ and warm_ reserve this much.
  std::size_t total_slots_ CHANFLOW_GUARDED_BY(mu_) = 0;
  // Never used or trimmed: pages not resident.
  std::vector<StackSlot> free_ CHANFLOW_GUARDED_BY(mu_);
  // Released stacks, LIFO: the hottest is reused first.
  std::vector<StackSlot> warm_ CHANFLOW_GUARDED_BY(mu_);
  std::atomic<std::size_t> warm_count_{0};
  // warm_[0, low_water_) were not acquired since trim_epoch_ns_.
  std::size_t low_water_ CHANFLOW_GUARDED_BY(mu_) = 0;
  int64_t trim_epoch_ns_ CHANFLOW_GUARDED_BY(mu_) = 0;
  struct Chunk {
    char* base;
    std::size_t bytes;
    int registry_index;
    bool guarded;  // took kGuardedPerChunk from the mprotect guard budget
    std::size_t slots;
    std::unique_ptr<std::atomic<void*>[]> owners;  // one per slot, null while unused
  };
  // Registers a chunk of n slots of `slot` bytes at base and queues its slots as free.
  void add_chunk(char* base, std::size_t n, std::size_t slot, std::size_t guard, bool guarded)
      CHANFLOW_REQUIRES(mu_);
  std::vector<Chunk> chunks_ CHANFLOW_GUARDED_BY(mu_);
};

// The green thread's task header sits at the top of its slot: the overflow handler finds it from a
// fault address. Returns the slot holding `addr` if addr lies in a guard page, else false.
// Async-signal-safe.
bool find_guard_hit(const void* addr, char** slot_top) noexcept;

// Installs the SIGSEGV handler reporting guard-page hits (once per process) and, for the calling
// thread, an alternate signal stack. Workers call it at start and release_alt_stack() at exit.
void install_overflow_handler() noexcept;
void release_alt_stack() noexcept;

}  // namespace chanflow::detail
