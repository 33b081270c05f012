// stack_pool.cc — mapping, guarding and recycling green-thread stacks.
#include "stack_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>

#include "chanflow/core/error.h"
#include "fork.h"

namespace chanflow::detail {
namespace {

// Chunks are registered for the SIGSEGV handler, which reads this table lock-free.
struct ChunkRecord {
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};
  std::atomic<std::size_t> slot_size{0};
  std::atomic<std::size_t> guard{0};
};
constexpr int kMaxChunks = 1 << 16;
ChunkRecord g_chunks[kMaxChunks];
std::atomic<int> g_chunk_count{0};
std::mutex g_chunk_mu;  // writers only

int register_chunk(char* base, std::size_t bytes, std::size_t slot_size, std::size_t guard) {
  std::lock_guard<std::mutex> lock(g_chunk_mu);
  int n = g_chunk_count.load(std::memory_order_relaxed);
  int index = -1;
  for (int i = 0; i < n; ++i) {
    if (g_chunks[i].begin.load(std::memory_order_relaxed) == 0) {
      index = i;
      break;
    }
  }
  if (index < 0) {
    if (n == kMaxChunks) return -1;  // not reported on overflow, still works
    index = n;
  }
  ChunkRecord& r = g_chunks[index];
  r.slot_size.store(slot_size, std::memory_order_relaxed);
  r.guard.store(guard, std::memory_order_relaxed);
  r.end.store(reinterpret_cast<std::uintptr_t>(base + bytes), std::memory_order_relaxed);
  r.begin.store(reinterpret_cast<std::uintptr_t>(base), std::memory_order_release);
  if (index == n) g_chunk_count.store(n + 1, std::memory_order_release);
  return index;
}

void unregister_chunk(int index) {
  if (index < 0) return;
  std::lock_guard<std::mutex> lock(g_chunk_mu);
  g_chunks[index].begin.store(0, std::memory_order_release);
}

// Guard pages left in the process-wide budget: each guarded stack splits its chunk into two
// mappings. We use at most half of vm.max_map_count minus a reserve for everything else.
std::atomic<long> g_guard_budget{-1};

// Linux's default vm.max_map_count, assumed when /proc does not tell.
constexpr long kDefaultMaxMapCount = 65530;
// Mappings of the guard pages' half of vm.max_map_count left to everything else (the heap's
// arenas, libraries, OS threads' stacks and guards).
constexpr long kMapReserve = 8192;

long init_budget() {
  long max_maps = kDefaultMaxMapCount;
  std::ifstream f("/proc/sys/vm/max_map_count");
  if (f) f >> max_maps;
  long budget = (max_maps / 2 - kMapReserve) / 2;
  return budget > 0 ? budget : 0;
}

bool take_guard_budget(long n) {
  long cur = g_guard_budget.load(std::memory_order_relaxed);
  if (cur < 0) {
    long init = init_budget();
    g_guard_budget.compare_exchange_strong(cur, init, std::memory_order_relaxed);
    cur = g_guard_budget.load(std::memory_order_relaxed);
  }
  while (cur >= n) {
    if (g_guard_budget.compare_exchange_weak(cur, cur - n, std::memory_order_relaxed)) return true;
  }
  return false;
}

void give_guard_budget(long n) { g_guard_budget.fetch_add(n, std::memory_order_relaxed); }

constexpr std::size_t kGuardedPerChunk = 16;
constexpr std::size_t kCompactPerChunk = 256;

// Linux 6.13+ "guard regions": madvise(MADV_GUARD_INSTALL) turns pages of an existing mapping into
// guard pages (any access raises SIGSEGV) by marking page-table entries. Unlike mprotect it does
// not split the mapping, so guard pages cost no vm.max_map_count budget and every stack can have
// one: no canary, no compact stacks. Older kernels answer EINVAL and the pool falls back to
// mprotect guards within the budget, then canaries.
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

// 1: the kernel has guard markers, 0: it has not (or CHANFLOW_STACK_GUARD_MARKERS=0 turned them
// off), -1: not probed yet.
std::atomic<int> g_guard_markers{-1};

}  // namespace

bool guard_markers_available() noexcept {
  const int known = g_guard_markers.load(std::memory_order_relaxed);
  if (known >= 0) return known == 1;
  bool ok = false;
  const char* env = std::getenv("CHANFLOW_STACK_GUARD_MARKERS");
  if (env == nullptr || std::strcmp(env, "0") != 0) {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void* m = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
      ok = madvise(m, page, MADV_GUARD_INSTALL) == 0;
      munmap(m, 2 * page);
    }
  }
  g_guard_markers.store(ok ? 1 : 0, std::memory_order_relaxed);  // racing probes agree
  return ok;
}

StackPool::StackPool(std::size_t usable, StackGuard mode)
    : page_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))), mode_(mode) {
  usable_ = (usable + page_ - 1) / page_ * page_;
  if (usable_ < 4 * page_) usable_ = 4 * page_;
}

StackPool::~StackPool() {
  for (const Chunk& c : chunks_) {
    unregister_chunk(c.registry_index);
    munmap(c.base, c.bytes);
  }
  long guarded = 0;
  for (const Chunk& c : chunks_) guarded += c.guarded ? static_cast<long>(kGuardedPerChunk) : 0;
  give_guard_budget(guarded);
}

bool StackPool::grow_marked() {
  if (!guard_markers_available()) return false;
  const std::size_t n = kCompactPerChunk;
  const std::size_t slot = usable_ + page_;
  const std::size_t bytes = n * slot;
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (mem == MAP_FAILED) {
    CHANFLOW_THROW(Error) << "green thread stacks: mmap of " << bytes
                          << " bytes failed: " << std::strerror(errno);
  }
  char* base = static_cast<char*>(mem);
  for (std::size_t i = 0; i < n; ++i) {
    if (madvise(base + i * slot, page_, MADV_GUARD_INSTALL) == 0) continue;
    const int err = errno;
    munmap(base, bytes);
    if (i == 0) {
      // An older kernel (EINVAL) or a sandbox refusing the call: this chunk uses the fallback,
      // and only a kernel without the feature stops later chunks from trying.
      if (err == EINVAL || err == ENOSYS) g_guard_markers.store(0, std::memory_order_relaxed);
      return false;
    }
    CHANFLOW_THROW(Error) << "green thread stacks: installing a guard page failed: "
                          << std::strerror(err);
  }
  add_chunk(base, n, slot, page_, false);
  return true;
}

void StackPool::add_chunk(char* base, std::size_t n, std::size_t slot, std::size_t guard,
                          bool guarded) {
  const std::size_t bytes = n * slot;
  std::unique_ptr<std::atomic<void*>[]> owners;
  try {
    owners = std::make_unique<std::atomic<void*>[]>(n);
    // Every later push_back (release, trim, this function) stays within these capacities, so
    // the noexcept release paths never allocate.
    total_slots_ += n;
    warm_.reserve(total_slots_);
    free_.reserve(total_slots_);
    chunks_.reserve(chunks_.size() + 1);
  } catch (...) {
    total_slots_ -= n;
    munmap(base, bytes);
    if (guarded) give_guard_budget(static_cast<long>(kGuardedPerChunk));
    throw;
  }
  for (std::size_t i = 0; i < n; ++i) owners[i].store(nullptr, std::memory_order_relaxed);
  const int index = register_chunk(base, bytes, slot, guard);
  std::atomic<void*>* table = owners.get();
  chunks_.push_back(Chunk{base, bytes, index, guarded, n, std::move(owners)});
  // The highest slot is handed out first: an overflow of a compact stack then runs into the
  // (free) slot below it, where the canary check catches it, rather than off the chunk.
  for (std::size_t i = 0; i < n; ++i) free_.push_back(StackSlot{base + i * slot, guard, &table[i]});
}

void StackPool::grow() {
  if (mode_ != StackGuard::kCompact && grow_marked()) return;
  const bool want_guard = mode_ != StackGuard::kCompact;
  const bool guard = want_guard && take_guard_budget(static_cast<long>(kGuardedPerChunk));
  if (want_guard && !guard && mode_ == StackGuard::kAlways) {
    CHANFLOW_THROW(Error)
        << "green thread stacks: the guard-page budget (half of vm.max_map_count) "
           "is exhausted; use StackGuard::kAuto or kCompact for this many "
           "green threads";
  }
  const std::size_t n = guard ? kGuardedPerChunk : kCompactPerChunk;
  const std::size_t slot = usable_ + (guard ? page_ : 0);
  const std::size_t bytes = n * slot;
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (mem == MAP_FAILED) {
    if (guard) give_guard_budget(static_cast<long>(kGuardedPerChunk));
    CHANFLOW_THROW(Error) << "green thread stacks: mmap of " << bytes
                          << " bytes failed: " << std::strerror(errno);
  }
  char* base = static_cast<char*>(mem);
  for (std::size_t i = 0; i < n; ++i) {
    char* s = base + i * slot;
    if (guard) {
      if (mprotect(s, page_, PROT_NONE) != 0) {
        const int err = errno;
        munmap(base, bytes);
        give_guard_budget(static_cast<long>(kGuardedPerChunk));
        CHANFLOW_THROW(Error) << "green thread stacks: mprotect of a guard page failed: "
                              << std::strerror(err);
      }
    }
  }
  add_chunk(base, n, slot, guard ? page_ : 0, guard);
}

std::size_t StackPool::take_locked(StackSlot* out, std::size_t n, std::size_t* fresh) {
  std::size_t got = 0;
  while (got < n && !warm_.empty()) {
    out[got++] = warm_.back();
    warm_.pop_back();
  }
  low_water_ = std::min(low_water_, warm_.size());
  warm_count_.store(warm_.size(), std::memory_order_relaxed);
  *fresh = 0;
  while (got < n) {
    if (free_.empty()) {
      if (got > 0) break;  // enough to go on; do not map a chunk for a partial refill
      grow();
    }
    out[got++] = free_.back();
    free_.pop_back();
    ++*fresh;
  }
  return got;
}

// A warm stack's canary is intact: its last green thread checked it on exit (an overflow ends the
// process), so only a fresh or trimmed (zeroed) stack needs it written. Not rewriting it keeps
// the spawn path off the stack's bottom page.
StackSlot StackPool::acquire() {
  StackSlot s;
  std::size_t fresh = 0;
  {
    os::LockGuard lock(mu_);
    take_locked(&s, 1, &fresh);
  }
  if (fresh != 0 && s.guard == 0) write_canary(s.base);
  return s;
}

StackSlot StackPool::acquire(Cache& cache) {
  if (cache.count == 0) {
    std::size_t fresh = 0;
    {
      os::LockGuard lock(mu_);
      cache.count = take_locked(cache.slots, Cache::kCacheBatch, &fresh);
    }
    for (std::size_t i = cache.count - fresh; i < cache.count; ++i) {
      if (cache.slots[i].guard == 0) write_canary(cache.slots[i].base);
    }
    // take_locked put the hottest stack first; the cache pops from the end. Reversed, the cache
    // hands stacks out in the pool's LIFO order (the reversed order cost 1-worker spawn ~20 %).
    std::reverse(cache.slots, cache.slots + cache.count);
  }
  return cache.slots[--cache.count];
}

void StackPool::release(StackSlot slot) noexcept {
  os::LockGuard lock(mu_);
  warm_.push_back(slot);
  warm_count_.store(warm_.size(), std::memory_order_relaxed);
}

void StackPool::release(Cache& cache, StackSlot slot) noexcept {
  if (cache.count == Cache::kCacheSize) {
    // The oldest half goes back; the most recently used (hottest) stay.
    os::LockGuard lock(mu_);
    for (std::size_t i = 0; i < Cache::kCacheBatch; ++i) warm_.push_back(cache.slots[i]);
    warm_count_.store(warm_.size(), std::memory_order_relaxed);
    for (std::size_t i = Cache::kCacheBatch; i < Cache::kCacheSize; ++i) {
      cache.slots[i - Cache::kCacheBatch] = cache.slots[i];
    }
    cache.count = Cache::kCacheSize - Cache::kCacheBatch;
  }
  cache.slots[cache.count++] = slot;
}

int64_t StackPool::trim(int64_t now_ns) noexcept {
  if (warm_count_.load(std::memory_order_relaxed) <= kKeepWarm) return 0;
  os::LockGuard lock(mu_);
  if (trim_epoch_ns_ == 0 || now_ns < trim_epoch_ns_) {  // first excess: start watching it
    trim_epoch_ns_ = now_ns;
    low_water_ = warm_.size();
    return kTrimPeriodNs;
  }
  if (now_ns - trim_epoch_ns_ < kTrimPeriodNs) return kTrimPeriodNs - (now_ns - trim_epoch_ns_);
  // The oldest-released stacks (front) that no spawn took during the whole period go cold.
  const std::size_t idle = std::min(low_water_, warm_.size());
  const std::size_t excess = idle > kKeepWarm ? idle - kKeepWarm : 0;
  if (excess > 0) {
    // madvise is costly (a TLB shootdown on every CPU): one call per run of adjacent slots.
    const auto cold = warm_.begin() + static_cast<std::ptrdiff_t>(excess);
    std::sort(warm_.begin(), cold,
              [](const StackSlot& a, const StackSlot& b) { return a.base < b.base; });
    char* run_begin = nullptr;
    char* run_end = nullptr;
    for (auto it = warm_.begin(); it != cold; ++it) {
      char* const b = it->bottom();
      if (b != run_end) {
        if (run_begin != nullptr) {
          madvise(run_begin, static_cast<std::size_t>(run_end - run_begin), MADV_DONTNEED);
        }
        run_begin = b;
      }
      run_end = b + usable_;
      free_.push_back(*it);  // never reallocates: free_ once held every slot (grow)
    }
    madvise(run_begin, static_cast<std::size_t>(run_end - run_begin), MADV_DONTNEED);
    warm_.erase(warm_.begin(), cold);
  }
  trim_epoch_ns_ = now_ns;
  low_water_ = warm_.size();
  warm_count_.store(warm_.size(), std::memory_order_relaxed);
  return warm_.size() > kKeepWarm ? kTrimPeriodNs : 0;
}

void write_canary(char* base) noexcept {
  for (std::size_t i = 0; i < kCanaryWords; ++i) {
    std::memcpy(base + i * sizeof(kStackCanary), &kStackCanary, sizeof(kStackCanary));
  }
}

// Not instrumented by ASan: after an overflow the canary words lie inside the overflowing frames,
// whose redzones ASan has poisoned; reading them must report the overflow by name, not trip ASan.
// The slot base is page-aligned, so the words are read directly.
__attribute__((no_sanitize_address)) bool canary_intact(const char* base) noexcept {
  const auto* words = reinterpret_cast<const volatile std::uint64_t*>(base);
  for (std::size_t i = 0; i < kCanaryWords; ++i) {
    if (words[i] != kStackCanary) return false;
  }
  return true;
}

bool find_guard_hit(const void* addr, char** slot_top) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  const int n = g_chunk_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    const ChunkRecord& r = g_chunks[i];
    const std::uintptr_t b = r.begin.load(std::memory_order_acquire);
    if (b == 0 || a < b || a >= r.end.load(std::memory_order_relaxed)) continue;
    const std::size_t slot = r.slot_size.load(std::memory_order_relaxed);
    const std::size_t guard = r.guard.load(std::memory_order_relaxed);
    const std::uintptr_t off = (a - b) % slot;
    const std::uintptr_t slot_base = a - off;
    if (guard != 0 && off < guard) {
      *slot_top = reinterpret_cast<char*>(slot_base + slot);  // NOLINT(performance-no-int-to-ptr)
      return true;
    }
    return false;
  }
  return false;
}

// fork.h: the chunk table's writers' lock, so the child does not inherit it held.
void stack_pool_prepare_fork() noexcept { g_chunk_mu.lock(); }
void stack_pool_after_fork() noexcept { g_chunk_mu.unlock(); }

}  // namespace chanflow::detail
