// spinlock.h — the short lock guarding a channel, a wait queue or the timer heap (private).
//
// Critical sections under it are a few dozen instructions and never block or switch fibers, so
// spinning is cheaper than a futex-backed mutex. A parking green thread keeps the lock across its
// switch-out and the worker releases it right after, on the same OS thread.
//
//   detail::SpinLock lock;  { std::lock_guard g(lock); ... }
#pragma once

#include <atomic>
#include <thread>

namespace chanflow::detail {

// A test-and-test-and-set lock. lock() acquires (acquire ordering), unlock() releases (release
// ordering). Not recursive. Thread-safe. After a short spin the waiter yields its OS thread.
class SpinLock {
 public:
  void lock() noexcept {
    if (!flag_.exchange(true, std::memory_order_acquire)) return;
    lock_slow();
  }
  bool try_lock() noexcept {
    return !flag_.load(std::memory_order_relaxed) &&
           !flag_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { flag_.store(false, std::memory_order_release); }

 private:
  void lock_slow() noexcept {
    for (int spins = 0;; ++spins) {
      while (flag_.load(std::memory_order_relaxed)) {
        if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
          __builtin_ia32_pause();
#endif
          ++spins;
        } else {
          std::this_thread::yield();
        }
      }
      if (!flag_.exchange(true, std::memory_order_acquire)) return;
    }
  }

  std::atomic<bool> flag_{false};
};

}  // namespace chanflow::detail
