// wait_group.h — WaitGroup: wait for a set of green threads to finish (Go's sync.WaitGroup).
//
//   cf::WaitGroup wg;
//   for (int i = 0; i < n; ++i) { wg.add(); cf::go([&] { work(i); wg.done(); }); }
//   wg.wait();
//   cf::WaitGroup workers("workers");  // traces and deadlock reports name it
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "chanflow/core/export.h"
#include "chanflow/core/spinlock.h"
#include "chanflow/runtime/detail/trace_label.h"
#include "chanflow/runtime/detail/wait.h"

namespace chanflow {

class CHANFLOW_API WaitGroup {
 public:
  WaitGroup() = default;
  // A wait group that traces and deadlock reports show by `name` (an unnamed one: by its address).
  explicit WaitGroup(std::string name);
  WaitGroup(const WaitGroup&) = delete;
  WaitGroup& operator=(const WaitGroup&) = delete;
  // Must not be destroyed while a wait() is in progress that no add() has released yet. May be
  // destroyed as soon as a wait() has returned, even while the add()/done() that released it is
  // still returning and the other waiters it released are still on their way out: after
  // bringing the counter to 0 neither add() nor those waiters touch the WaitGroup (as Go's, so
  // the group may live in the waiter's frame or in state the waiter frees).
  ~WaitGroup() = default;

  // Adds n (may be negative) to the counter; reaching 0 releases every waiter. Throws Error if the
  // counter would go negative. Never blocks. Thread-safe; release ordering.
  void add(int n = 1);
  // add(-1).
  void done() { add(-1); }
  // Blocks until the counter is 0 (parks a green thread). Acquire: sees every write made before
  // the done() calls that released it. Throws DeadlockError when nothing can ever release it.
  void wait();
  // The counter (a snapshot).
  int64_t count() const noexcept;

  // Its name ("" when unnamed).
  std::string_view name() const noexcept;
  // Traces' and deadlock reports' view of its name; null when unnamed (trace_label.h).
  const detail::TraceLabel* trace_label() const noexcept { return label_.get(); }

 private:
  mutable os::SpinLock lock_;
  int64_t count_ CHANFLOW_GUARDED_BY(lock_) = 0;
  detail::WaitQueue waiters_ CHANFLOW_GUARDED_BY(lock_);
  // Only a named wait group has one: an unnamed one pays a null pointer.
  std::unique_ptr<const detail::TraceLabel> label_;
};

}  // namespace chanflow
