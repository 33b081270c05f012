// stack_pool.cc — mapping, guarding and recycling green-thread stacks.
#include "stack_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "chanflow/core/error.h"

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

long init_budget() {
  long max_maps = 65530;
  std::ifstream f("/proc/sys/vm/max_map_count");
  if (f) f >> max_maps;
  long budget = (max_maps / 2 - 8192) / 2;
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

}  // namespace

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

void StackPool::grow() {
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
        CHANFLOW_THROW(Error) << "green thread stacks: mprotect of a guard page failed: "
                              << std::strerror(errno);
      }
    }
  }
  int index = register_chunk(base, bytes, slot, guard ? page_ : 0);
  chunks_.push_back(Chunk{base, bytes, index, guard});
  // The highest slot is handed out first: an overflow of a compact stack then runs into the
  // (free) slot below it, where the canary check catches it, rather than off the chunk.
  for (std::size_t i = 0; i < n; ++i) {
    free_.push_back(StackSlot{base + i * slot, guard ? page_ : 0});
  }
}

StackSlot StackPool::acquire() {
  StackSlot s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!warm_.empty()) {
      s = warm_.back();
      warm_.pop_back();
      low_water_ = std::min(low_water_, warm_.size());
    } else {
      if (free_.empty()) grow();
      s = free_.back();
      free_.pop_back();
    }
    warm_count_.store(warm_.size(), std::memory_order_relaxed);
  }
  if (s.guard == 0) write_canary(s.base);
  return s;
}

void StackPool::release(StackSlot slot) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  warm_.push_back(slot);
  warm_count_.store(warm_.size(), std::memory_order_relaxed);
}

int64_t StackPool::trim(int64_t now_ns) noexcept {
  if (warm_count_.load(std::memory_order_relaxed) <= kKeepWarm) return 0;
  std::lock_guard<std::mutex> lock(mu_);
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

}  // namespace chanflow::detail
