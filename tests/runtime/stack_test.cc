// Stacks: guard pages report overflows by name, compact mode, pool reuse.
#include <atomic>
#include <cstring>

#include "runtime_test_util.h"
#include "sanitizer.h"  // white-box: src/runtime (CHANFLOW_TSAN)

namespace {

// Recurses with a big frame until the stack runs out.
__attribute__((noinline)) int deep(int n) {
  volatile char frame[1024];
  std::memset(const_cast<char*>(frame), n & 0x7f, sizeof(frame));
  return n > 1 << 30 ? 0 : deep(n + 1) + frame[n % 1024];
}

// Recurses `bytes` deep (about), then switches (yield runs the canary check).
__attribute__((noinline)) int dig(std::size_t bytes) {
  volatile char frame[1024];
  std::memset(const_cast<char*>(frame), 0x5a, sizeof(frame));
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
