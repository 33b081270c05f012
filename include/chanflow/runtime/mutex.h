// mutex.h — Mutex: mutual exclusion whose lock() parks a green thread, not its worker.
//
// BasicLockable and Lockable, so std::lock_guard / std::unique_lock / std::scoped_lock work:
//   cf::Mutex mu;  { std::lock_guard<cf::Mutex> g(mu); ++shared; }
//   cf::Mutex cache_mu("cache");  // traces and deadlock reports name it
//
// Fair under contention: unlock() hands the mutex to the longest waiter (FIFO), so no waiter
// starves. Uncontended lock/unlock is one CAS each.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "chanflow/core/export.h"
#include "chanflow/core/spinlock.h"
#include "chanflow/runtime/detail/trace_label.h"
#include "chanflow/runtime/detail/wait.h"

namespace chanflow {

class CHANFLOW_API Mutex {
 public:
  Mutex() = default;
  // A mutex that traces and deadlock reports show by `name` (an unnamed one: by its address).
  explicit Mutex(std::string name);
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

  // Its name ("" when unnamed).
  std::string_view name() const noexcept;
  // Traces' and deadlock reports' view of its name; null when unnamed (trace_label.h).
  const detail::TraceLabel* trace_label() const noexcept { return label_.get(); }

 private:
  static constexpr uint32_t kUnlocked = 0;
  static constexpr uint32_t kLocked = 1;
  static constexpr uint32_t kLockedWaiters = 2;
  std::atomic<uint32_t> state_{kUnlocked};
  os::SpinLock lock_;  // guards waiters_ and the 1 <-> 2 transitions of state_
  detail::WaitQueue waiters_ CHANFLOW_GUARDED_BY(lock_);
  // Only a named mutex has one: an unnamed one pays a null pointer.
  std::unique_ptr<const detail::TraceLabel> label_;
};

}  // namespace chanflow
