// global_queue.h — the scheduler's shared run queue: a growable ring of task pointers (private).
//
// Tasks land here when a worker's local ring overflows, when a thread outside the scheduler wakes
// or spawns one, and when a thief's batch does not fit. It holds pointers, not a list threaded
// through the tasks: a green thread's header lives at the top of its own stack, so a linked list
// made every pop a cache and TLB miss on a cold stack page (perf: 40 % of a 1M-green-thread skynet
// run was spent walking that list). Popping a batch now reads one contiguous array.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>

#include "chanflow/core/cache_line.h"
#include "chanflow/core/locks.h"
#include "chanflow/core/spinlock.h"
#include "task.h"

namespace chanflow::detail {

class GlobalQueue {
 public:
  GlobalQueue() = default;
  GlobalQueue(const GlobalQueue&) = delete;
  GlobalQueue& operator=(const GlobalQueue&) = delete;

  // Tasks queued (a snapshot; exact under the lock). Thread-safe.
  std::size_t size() const noexcept { return size_.load(std::memory_order_acquire); }
  // Like size(), sequentially consistent: for the idle check paired with a full fence.
  std::size_t size_seq_cst() const noexcept { return size_.load(std::memory_order_seq_cst); }

  // Appends ts[0, n) in order. Thread-safe. Grows the ring when full; the process ends with a
  // message if that allocation fails (a pointer array: memory is already exhausted).
  void push(Task* const* ts, std::size_t n) noexcept {
    os::LockGuard lock(lock_);
    if (count_ + n > cap_) grow(count_ + n);
    for (std::size_t i = 0; i < n; ++i) buf_[(head_ + count_ + i) & (cap_ - 1)] = ts[i];
    count_ += n;
    size_.store(count_, std::memory_order_seq_cst);
  }

  // Removes up to `max` tasks from the front into out, oldest first, but at most `share` of
  // them when the queue is longer (share(count) computes it under the lock). Returns the count.
  template <typename Share>
  std::size_t pop(Task** out, std::size_t max, Share share) noexcept {
    if (size_.load(std::memory_order_acquire) == 0) return 0;
    os::LockGuard lock(lock_);
    const std::size_t n = std::min<std::size_t>({count_, max, share(count_)});
    for (std::size_t i = 0; i < n; ++i) out[i] = buf_[(head_ + i) & (cap_ - 1)];
    head_ = (head_ + n) & (cap_ - 1);
    count_ -= n;
    size_.store(count_, std::memory_order_relaxed);
    return n;
  }

 private:
  void grow(std::size_t need) noexcept CHANFLOW_REQUIRES(lock_) {
    std::size_t cap = cap_ == 0 ? kInitialCapacity : cap_;
    while (cap < need) cap *= 2;
    auto* fresh = new (std::nothrow) Task*[cap];
    if (fresh == nullptr) {
      std::fputs("chanflow: out of memory growing the scheduler's global run queue\n", stderr);
      std::abort();
    }
    for (std::size_t i = 0; i < count_; ++i) fresh[i] = buf_[(head_ + i) & (cap_ - 1)];
    buf_.reset(fresh);
    cap_ = cap;
    head_ = 0;
  }

  static constexpr std::size_t kInitialCapacity = 1024;  // a power of two, like every capacity

  os::SpinLock lock_;
  std::unique_ptr<Task*[]> buf_ CHANFLOW_GUARDED_BY(lock_);
  std::size_t cap_ CHANFLOW_GUARDED_BY(lock_) = 0;
  std::size_t head_ CHANFLOW_GUARDED_BY(lock_) = 0;
  std::size_t count_ CHANFLOW_GUARDED_BY(lock_) = 0;
  alignas(kCacheLine) std::atomic<std::size_t> size_{0};
};

}  // namespace chanflow::detail
