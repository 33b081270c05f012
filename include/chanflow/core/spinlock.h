// spinlock.h — the short lock guarding a channel, a wait queue, the timer heap, an object pool's
// shard or a tensor buffer cache. Public: runtime headers (Mutex, WaitGroup, channels) and
// core/object_pool.h hold one as a member.
//
// Critical sections under it are a few dozen instructions and never block or switch fibers, so
// spinning is cheaper than a futex-backed mutex. A parking green thread keeps the lock across its
// switch-out and the worker releases it right after, on the same OS thread.
//
// A capability for Clang's thread-safety analysis (thread_annotations.h): fields name it in
// CHANFLOW_GUARDED_BY, and os::LockGuard (locks.h) holds it for a scope.
//
//   os::SpinLock lock;  int n CHANFLOW_GUARDED_BY(lock);  { os::LockGuard g(lock); ++n; }
#pragma once

#include <atomic>
#include <thread>

#include "chanflow/core/check.h"
#include "chanflow/core/thread_annotations.h"

namespace chanflow::os {

// A test-and-test-and-set lock. lock() acquires (acquire ordering), unlock() releases (release
// ordering). Not recursive. Thread-safe.
//
// A waiter spins for only kSpinPauses `pause`s (about the length of one critical section on
// another CPU), then yields its OS thread between looks. The short spin is a throughput choice:
// when green threads on two CPUs hammer one channel, a waiter that keeps polling wins the lock
// every other operation, and the channel's lines move between the CPUs on every operation. A
// waiter that steps away for a sched_yield lets the holder run dozens of operations on warm lines
// (docs/runtime.md, "The channel lock steps aside early", has the measurements). The yield also
// lets a preempted holder run when there are more threads than CPUs.
//
// The bodies are not analysed (CHANFLOW_NO_THREAD_SAFETY_ANALYSIS): the lock is the flag, which the
// analysis cannot see; callers are checked against the annotations.
class CHANFLOW_CAPABILITY("mutex") SpinLock {
 public:
  void lock() noexcept CHANFLOW_ACQUIRE() CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
    if (!flag_.exchange(true, std::memory_order_acquire)) return;
    lock_slow();
  }
  bool try_lock() noexcept CHANFLOW_TRY_ACQUIRE(true) CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
    return !flag_.load(std::memory_order_relaxed) &&
           !flag_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept CHANFLOW_RELEASE() CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
    flag_.store(false, std::memory_order_release);
  }
  // Whether some thread holds the lock (a snapshot, for assertions that the caller holds it: a
  // spin lock does not know its owner, so "held by someone" is what can be checked).
  bool is_locked() const noexcept { return flag_.load(std::memory_order_relaxed); }
  // Tells the analysis the caller holds this lock (code it cannot follow: a callback run with the
  // lock retaken); checks is_locked() in debug and sanitizer builds.
  void assert_held() const noexcept CHANFLOW_ASSERT_CAPABILITY(this) {
    CHANFLOW_INVARIANT(is_locked()) << "spin lock not held";
  }

 private:
  // Out of line and cold: the callers inline only the uncontended exchange.
  [[gnu::noinline, gnu::cold]] void lock_slow() noexcept {
    for (unsigned spins = 0;; ++spins) {
      while (flag_.load(std::memory_order_relaxed)) {
        if (spins < kSpinPauses) {
          pause();
          ++spins;
        } else {
          std::this_thread::yield();
        }
      }
      if (!flag_.exchange(true, std::memory_order_acquire)) return;
    }
  }

  static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  // About one short critical section on another CPU (a `pause` is tens of cycles; on Zen 5
  // about 19 ns).
  static constexpr unsigned kSpinPauses = 4;

  std::atomic<bool> flag_{false};
};

}  // namespace chanflow::os
