// futex.h — sleeping on and waking a 32-bit word (Linux futex), without libstdc++'s atomic wait
// machinery (its waiter pool adds cost and has had lost-wake-up bugs) (private).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <ctime>

namespace chanflow::detail {

// Sleeps while *word == expected (or until timeout_ns > 0 elapses, or spuriously). The caller
// re-checks its condition in a loop.
inline void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, long timeout_ns = 0) {
  struct timespec ts;
  struct timespec* tsp = nullptr;
  if (timeout_ns > 0) {
    ts.tv_sec = timeout_ns / 1000000000L;
    ts.tv_nsec = timeout_ns % 1000000000L;
    tsp = &ts;
  }
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, tsp, nullptr,
          0);
}

// Wakes every thread sleeping on word.
inline void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

}  // namespace chanflow::detail
