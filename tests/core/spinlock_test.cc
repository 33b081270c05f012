// Tests of os::SpinLock (core/spinlock.h), the lock of channels, wait queues, the
// object pool's shards and the tensor buffer cache: mutual exclusion with more threads than CPUs
// (waiters take the yield path), the memory it hands over, and try_lock.
#include "chanflow/core/spinlock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using chanflow::os::SpinLock;

// Plain (non-atomic) data guarded by the lock: a lost update, or a torn pair under TSan, means a
// broken lock. 8 threads on this 2-CPU machine: holders get preempted, so waiters spin out and
// yield.
TEST(SpinLock, ExcludesWithMoreThreadsThanCpus) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 100'000;
  SpinLock lock;
  int64_t a = 0;
  int64_t b = 0;  // always equal to a outside the lock
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard<SpinLock> g(lock);
        ASSERT_EQ(a, b);
        ++a;
        ++b;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(a, int64_t{kThreads} * kRounds);
  EXPECT_EQ(b, a);
}

TEST(SpinLock, TryLockFailsWhileHeldAndSucceedsAfter) {
  SpinLock lock;
  // Branches on try_lock() itself, not on a copy of its result: Clang's thread-safety analysis
  // (the `clang` preset) follows only that.
  if (!lock.try_lock()) FAIL() << "try_lock() failed on a free lock";
  bool other = true;
  std::thread([&] { other = lock.try_lock(); }).join();
  EXPECT_FALSE(other);
  lock.unlock();
  std::thread([&] {
    other = false;
    if (lock.try_lock()) {
      other = true;
      lock.unlock();
    }
  }).join();
  EXPECT_TRUE(other);
}

// A thread that asks while another holds the lock (usually: it may not have reached lock() yet
// when the holder lets go) gets it once released, and sees what the holder wrote under it.
TEST(SpinLock, WaiterGetsTheLockAndWhatTheHolderWrote) {
  SpinLock lock;
  std::atomic<bool> waiting{false};
  int64_t payload = 0;
  lock.lock();
  std::thread waiter([&] {
    waiting.store(true);
    std::lock_guard<SpinLock> g(lock);
    EXPECT_EQ(payload, 42);
  });
  while (!waiting.load()) std::this_thread::yield();
  payload = 42;
  lock.unlock();
  waiter.join();
}

}  // namespace
