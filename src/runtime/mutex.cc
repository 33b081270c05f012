// mutex.cc — a fair, parking mutex: uncontended paths are one CAS; contended unlock hands off.
#include "chanflow/runtime/mutex.h"

#include "chanflow/core/locks.h"

#include "block.h"

namespace chanflow {

Mutex::Mutex(std::string name)
    : label_(name.empty() ? nullptr : std::make_unique<const detail::TraceLabel>(std::move(name))) {
}

std::string_view Mutex::name() const noexcept {
  return label_ != nullptr ? std::string_view(label_->name()) : std::string_view();
}

bool Mutex::try_lock() noexcept {
  uint32_t expected = kUnlocked;
  return state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire,
                                        std::memory_order_relaxed);
}

void Mutex::lock() {
  if (try_lock()) return;
  lock_.lock();
  // Under lock_, state_ moves only 0 -> 1 (a try_lock elsewhere) or 1 -> 0 (an uncontended
  // unlock); mark waiters so unlock() takes the slow path and hands over.
  for (;;) {
    uint32_t s = state_.load(std::memory_order_relaxed);
    if (s == kUnlocked) {
      if (state_.compare_exchange_weak(s, waiters_.empty() ? kLocked : kLockedWaiters,
                                       std::memory_order_acquire, std::memory_order_relaxed)) {
        lock_.unlock();
        return;
      }
      continue;
    }
    if (s == kLockedWaiters ||
        state_.compare_exchange_weak(s, kLockedWaiters, std::memory_order_relaxed,
                                     std::memory_order_relaxed)) {
      break;
    }
  }
  detail::Waiter w;
  detail::block_in(lock_, waiters_, w, detail::WaitReason::kMutex, this, [this] {
    lock_.assert_held();  // block_in runs this with lock_ retaken
    // Canceled: the mark of waiters goes with the last of them.
    if (waiters_.empty() && state_.load(std::memory_order_relaxed) == kLockedWaiters) {
      state_.store(kLocked, std::memory_order_relaxed);
    }
  });
  // Woken by unlock(): the mutex was handed to us (state_ stayed locked). The claim's acq_rel
  // plus unpark's release give us the previous holder's writes.
}

void Mutex::unlock() {
  uint32_t expected = kLocked;
  if (state_.compare_exchange_strong(expected, kUnlocked, std::memory_order_release,
                                     std::memory_order_relaxed)) {
    return;
  }
  detail::Waiter* next = nullptr;
  {
    os::LockGuard g(lock_);
    while (detail::Waiter* w = waiters_.pop_front()) {
      if (w->parker->try_claim()) {
        next = w;
        break;
      }
    }
    if (next == nullptr) {
      state_.store(kUnlocked, std::memory_order_release);
    } else {
      state_.store(waiters_.empty() ? kLocked : kLockedWaiters, std::memory_order_release);
    }
  }
  if (next != nullptr) detail::unpark(next->parker);
}

}  // namespace chanflow
