// Stacks: guard pages report overflows by name, compact mode, pool reuse.
#include <atomic>

#include "runtime_test_util.h"
#include "sanitizer.h"  // white-box: src/runtime (CHANFLOW_TSAN)
#include "stack_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <vector>

namespace {

// Writes every byte of a frame through volatile stores, so the frame is really there and really
// written. A memset through const_cast is not: writing a volatile object through a non-volatile
// pointer is undefined, and Clang kept only the bytes read back (dig used 16 bytes a frame).
void fill(volatile char* frame, std::size_t n, char value) {
  for (std::size_t i = 0; i < n; ++i) frame[i] = value;
}

// Recurses with a big frame until the stack runs out.
__attribute__((noinline)) int deep(int n) {
  volatile char frame[1024];
  fill(frame, sizeof(frame), static_cast<char>(n & 0x7f));
  return n > 1 << 30 ? 0 : deep(n + 1) + frame[n % 1024];
}

// Recurses `bytes` deep (about), then switches (yield runs the canary check).
__attribute__((noinline)) int dig(std::size_t bytes) {
  volatile char frame[1024];
  fill(frame, sizeof(frame), 0x5a);
  if (bytes <= sizeof(frame)) {
    cf::yield();
    return frame[0];
  }
  return dig(bytes - sizeof(frame)) + frame[1];
}

TEST(StackDeathTest, OverflowHitsGuardPageAndNamesTheGreenThread) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        cf::Scheduler s({.workers = 1, .stack_size = 64 * 1024, .guard = cf::StackGuard::kAlways});
        s.go("deep-recursion", [] { deep(0); });
        cf::make_chan<int>().recv();
      },
      "stack overflow in green thread 'deep-recursion'");
}

TEST(StackDeathTest, CompactOverflowCaughtByCanary) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        cf::Scheduler s({.workers = 1, .stack_size = 64 * 1024, .guard = cf::StackGuard::kCompact});
        s.go("compact-digger", [] { dig(64 * 1024 + 8 * 1024); });
        cf::make_chan<int>().recv();
      },
      "stack overflow in green thread 'compact-digger' \\(compact stack");
}

TEST(Stack, DeepButWithinTheStackIsFine) {
  cf::Scheduler s({.workers = 1, .stack_size = 256 * 1024});
  auto ch = cf::make_chan<int>();
  s.go([ch] { ch.send(dig(200 * 1024)); });
  EXPECT_EQ(ch.recv(), 200 * 0x5a);  // 200 frames of 1 KiB, each adding 0x5a
}

TEST(Stack, CompactModeParksManyGreenThreads) {
  cf::Scheduler s({.workers = 2, .stack_size = 16 * 1024, .guard = cf::StackGuard::kCompact});
#if defined(CHANFLOW_TSAN)
  // Under ThreadSanitizer each live green thread is a TSan fiber: ~0.8 MB and milliseconds to
  // create in libtsan, so 5,000 parked at once cost 4 GB and ~100 s there (see docs/runtime.md).
  constexpr int kN = 500;
#else
  constexpr int kN = 5000;
#endif
  auto gate = cf::make_chan<cf::Unit>();
  std::atomic<int> finished{0};
  cf::WaitGroup wg;
  wg.add(kN);
  for (int i = 0; i < kN; ++i) {
    s.go([&, gate] {
      gate.recv();
      finished++;
      wg.done();
    });
  }
  wait_until([&] { return all_parked(s) && s.live() == kN; });
  gate.close();
  wg.wait();
  EXPECT_EQ(finished.load(), kN);
}

}  // namespace

namespace {
// Whether the page holding addr is resident.
bool resident(const char* addr) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  unsigned char v = 0;
  auto* p = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(addr) & ~(page - 1));
  EXPECT_EQ(mincore(p, 1, &v), 0);
  return (v & 1) != 0;
}
}  // namespace

// Idle stacks go back to the kernel only when no spawn used them for a whole trim period, and
// only beyond the kKeepWarm most recent: bursts that repeat within a period stay resident.
TEST(StackPoolTrim, OnlyStacksIdleForAWholePeriodBeyondTheWarmSetAreReturned) {
  using cf::detail::StackPool;
  using cf::detail::StackSlot;
  constexpr std::size_t kExtra = 100;
  constexpr int64_t kPeriod = StackPool::kTrimPeriodNs;
  StackPool pool(16 * 1024, cf::StackGuard::kCompact);
  std::vector<StackSlot> slots;
  for (std::size_t i = 0; i < StackPool::kKeepWarm + kExtra; ++i) slots.push_back(pool.acquire());
  auto top = [&](const StackSlot& s) { return s.base + pool.slot_size(s) - 64; };
  for (const StackSlot& s : slots) *top(s) = 1;      // fault the top page in
  for (const StackSlot& s : slots) pool.release(s);  // slots[0] is the oldest released
  const std::size_t n = slots.size();
  ASSERT_EQ(pool.warm_count(), n);

  const int64_t t0 = int64_t{1} << 40;
  EXPECT_EQ(pool.trim(t0), kPeriod);  // starts watching: nothing returned yet
  EXPECT_EQ(pool.warm_count(), n);
  // A burst takes (and gives back) the 50 most recent stacks during the period.
  std::vector<StackSlot> burst;
  for (int i = 0; i < 50; ++i) burst.push_back(pool.acquire());
  for (const StackSlot& s : burst) pool.release(s);
  EXPECT_EQ(pool.trim(t0 + kPeriod / 2), kPeriod / 2);  // the period is not over
  EXPECT_EQ(pool.warm_count(), n);
  // After the period: the stacks nobody took (n - 50) minus the warm set (kKeepWarm) go.
  EXPECT_EQ(pool.trim(t0 + kPeriod), kPeriod);
  EXPECT_EQ(pool.warm_count(), n - (kExtra - 50));
  EXPECT_FALSE(resident(top(slots[0])));     // the oldest released was returned
  EXPECT_TRUE(resident(top(slots[n - 1])));  // the newest stays warm
  // One more idle period returns the rest of the excess; then nothing is pending.
  EXPECT_EQ(pool.trim(t0 + 2 * kPeriod), 0);
  EXPECT_EQ(pool.warm_count(), StackPool::kKeepWarm);
  EXPECT_EQ(pool.trim(t0 + 3 * kPeriod), 0);
  EXPECT_EQ(pool.warm_count(), StackPool::kKeepWarm);
  // Returned stacks are handed out again (fresh pages) once the warm ones are used up.
  std::vector<StackSlot> again;
  for (std::size_t i = 0; i < n; ++i) again.push_back(pool.acquire());
  for (const StackSlot& s : again) pool.release(s);
  EXPECT_EQ(pool.warm_count(), n);
}

namespace {
// Whether this kernel has madvise guard markers (Linux 6.13+), probed like the pool does.
using cf::detail::guard_markers_available;
}  // namespace

// With guard markers every stack is guarded, far beyond the mprotect budget (about 12k stacks):
// kAlways does not run out, and no stack is compact.
TEST(StackPoolGuards, EveryStackGuardedBeyondTheMappingBudget) {
  if (!guard_markers_available())
    GTEST_SKIP() << "no MADV_GUARD_INSTALL (kernel < 6.13, or turned off)";
  using cf::detail::StackPool;
  using cf::detail::StackSlot;
  StackPool pool(16 * 1024, cf::StackGuard::kAlways);
  std::vector<StackSlot> slots;
  for (int i = 0; i < 40'000; ++i) slots.push_back(pool.acquire());  // would throw past the budget
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  for (const StackSlot& s : slots) ASSERT_EQ(s.guard, page);
  for (const StackSlot& s : slots) pool.release(s);
}

// Without guard markers (Debian 12's own 6.1 kernel, for one) a guard page is an mprotect'ed page
// costing two kernel mappings, taken from a process-wide budget: kAuto guards stacks while the
// budget lasts and then hands out compact ones (canary-checked); kAlways refuses once it is gone;
// a pool's destruction gives its guards back. CTest runs this in `runtime_stack_fallback_test`,
// with CHANFLOW_STACK_GUARD_MARKERS=0.
TEST(StackPoolGuards, WithoutMarkersGuardsWithinTheBudgetThenGoesCompact) {
  if (guard_markers_available())
    GTEST_SKIP() << "guard markers in use; see runtime_stack_fallback_test";
  using cf::detail::StackPool;
  using cf::detail::StackSlot;
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  {
    StackPool pool(16 * 1024, cf::StackGuard::kAuto);
    std::vector<StackSlot> slots;
    std::size_t guarded = 0;
    std::size_t first_compact = 0;
    for (std::size_t i = 0; i < 30'000; ++i) {  // the budget is about 12k guard pages
      slots.push_back(pool.acquire());
      if (slots.back().guard == page) {
        ++guarded;
        ASSERT_EQ(first_compact, 0u) << "a guarded stack after a compact one, at " << i;
      } else {
        ASSERT_EQ(slots.back().guard, 0u);
        EXPECT_TRUE(cf::detail::canary_intact(slots.back().base));
        if (first_compact == 0) first_compact = i + 1;
      }
    }
    EXPECT_GT(guarded, 1000u);
    EXPECT_GT(first_compact, 0u) << "30,000 stacks never exhausted the guard budget";
    // The budget is spent: a kAlways pool cannot guard its first stack.
    StackPool strict(16 * 1024, cf::StackGuard::kAlways);
    EXPECT_THROW((void)strict.acquire(), cf::Error);
    for (const StackSlot& s : slots) pool.release(s);
  }
  // The kAuto pool is gone and its guards with it: kAlways works again.
  StackPool strict(16 * 1024, cf::StackGuard::kAlways);
  const StackSlot s = strict.acquire();
  EXPECT_EQ(s.guard, page);
  strict.release(s);
}

// The 20,001st green thread (past the mprotect budget, where kAuto used to hand out compact
// stacks) overflows into a guard page: reported at once, by name, not by a late canary check.
TEST(StackDeathTest, OverflowPastTheMappingBudgetStillHitsAGuardPage) {
  if (!guard_markers_available())
    GTEST_SKIP() << "no MADV_GUARD_INSTALL (kernel < 6.13, or turned off)";
#if defined(CHANFLOW_TSAN)
  GTEST_SKIP() << "20,000 live green threads exceed TSan's 8128 fibers (docs/runtime.md); the "
                  "pool-level test above covers the guards";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        cf::Scheduler s({.workers = 1, .stack_size = 64 * 1024});
        auto gate = cf::make_chan<int>();
        cf::WaitGroup started;
        started.add(20'000);
        for (int i = 0; i < 20'000; ++i) {
          s.go([gate, &started] {
            started.done();
            gate.recv();
          });
        }
        started.wait();
        s.go("deep-past-budget", [] { deep(0); });
        gate.recv();
      },
      "stack overflow in green thread 'deep-past-budget': it ran past its stack");
}

// A worker's stack cache: spawns and exits on one worker reuse its last stacks without the pool;
// a full cache gives half back, an empty one takes a batch.
TEST(StackPoolCache, RefillsAndFlushesInBatches) {
  using cf::detail::StackPool;
  using cf::detail::StackSlot;
  StackPool pool(16 * 1024, cf::StackGuard::kCompact);
  StackPool::Cache cache;
  std::vector<StackSlot> slots;
  for (std::size_t i = 0; i < 3 * StackPool::Cache::kCacheSize; ++i)
    slots.push_back(pool.acquire());
  for (const StackSlot& s : slots) pool.release(s);
  const std::size_t warm = pool.warm_count();
  ASSERT_EQ(warm, slots.size());

  const StackSlot a = pool.acquire(cache);  // empty cache: one batch leaves the pool
  EXPECT_EQ(pool.warm_count(), warm - StackPool::Cache::kCacheBatch);
  EXPECT_EQ(cache.count, StackPool::Cache::kCacheBatch - 1);
  pool.release(cache, a);
  EXPECT_EQ(pool.acquire(cache).base, a.base);  // LIFO: the hottest stack comes back first
  pool.release(cache, a);

  std::vector<StackSlot> held;
  for (std::size_t i = 0; i < StackPool::Cache::kCacheSize; ++i) held.push_back(pool.acquire());
  std::size_t next = 0;
  while (cache.count < StackPool::Cache::kCacheSize) pool.release(cache, held[next++]);
  ASSERT_LT(next, held.size());
  const std::size_t before = pool.warm_count();
  pool.release(cache, held[next]);  // full: the older half goes back to the pool
  EXPECT_EQ(pool.warm_count(), before + StackPool::Cache::kCacheBatch);
  EXPECT_EQ(cache.count, StackPool::Cache::kCacheSize - StackPool::Cache::kCacheBatch + 1);
  EXPECT_EQ(cache.slots[cache.count - 1].base, held[next].base);
}
