// mutex.h — Mutex: mutual exclusion whose lock() parks a green thread, not its worker.
//
// BasicLockable and Lockable, so std::lock_guard / std::unique_lock / std::scoped_lock work:
//   cf::Mutex mu;  { std::lock_guard<cf::Mutex> g(mu); ++shared; }
//
// Fair under contention: unlock() hands the mutex to the longest waiter (FIFO), so no waiter
// starves. Uncontended lock/unlock is one CAS each.
#pragma once

#include <atomic>
#include <cstdint>

#include "chanflow/core/export.h"
#include "chanflow/core/spinlock.h"
#include "chanflow/runtime/detail/wait.h"

namespace chanflow {

class CHANFLOW_API Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  // Acquires the mutex, parking the caller while another holds it. Acquire ordering. Not
  // recursive (relocking from the holder deadlocks; a deadlock report names it). Thread-safe.
  void lock();
  // Acquires only if free right now. Acquire ordering on success. Never blocks.
  bool try_lock() noexcept;
  // Releases (release ordering); wakes the first waiter by handing it the lock. The caller must
  // hold the mutex. Never blocks.
  void unlock();

 private:
  static constexpr uint32_t kUnlocked = 0;
  static constexpr uint32_t kLocked = 1;
  static constexpr uint32_t kLockedWaiters = 2;
  std::atomic<uint32_t> state_{kUnlocked};
  os::SpinLock lock_;  // guards waiters_ and the 1 <-> 2 transitions of state_
  detail::WaitQueue waiters_ CHANFLOW_GUARDED_BY(lock_);
};

}  // namespace chanflow
