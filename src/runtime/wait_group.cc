// wait_group.cc — a counter whose zero releases every waiter.
#include "chanflow/runtime/wait_group.h"

#include "chanflow/core/locks.h"

#include "block.h"
#include "chanflow/core/error.h"

namespace chanflow {

WaitGroup::WaitGroup(std::string name)
    : label_(name.empty() ? nullptr : std::make_unique<const detail::TraceLabel>(std::move(name))) {
}

std::string_view WaitGroup::name() const noexcept {
  return label_ != nullptr ? std::string_view(label_->name()) : std::string_view();
}

void WaitGroup::add(int n) {
  detail::Waiter* wake = nullptr;
  {
    os::LockGuard g(lock_);
    const int64_t next = count_ + n;
    if (next < 0) {
      CHANFLOW_THROW(Error) << "WaitGroup: negative counter (" << count_ << " + " << n << ")";
    }
    count_ = next;
    if (next == 0) {
      while (detail::Waiter* w = waiters_.pop_front()) {
        if (w->parker->try_claim()) {
          w->parker->fired = w;
          w->next = wake;
          wake = w;
        }
      }
    }
  }
  // From here on nothing of *this is touched: a released waiter may destroy the group at once
  // (wait_group.h). The waiters' records live on their own stacks and stay until unparked.
  while (wake != nullptr) {
    detail::Waiter* next = wake->next;
    detail::unpark(wake->parker);
    wake = next;
  }
}

void WaitGroup::wait() {
  lock_.lock();
  if (count_ == 0) {
    lock_.unlock();
    return;
  }
  detail::Waiter w;
  detail::block_in(lock_, waiters_, w, detail::WaitReason::kWaitGroup, this);
}

int64_t WaitGroup::count() const noexcept {
  os::LockGuard g(lock_);
  return count_;
}

}  // namespace chanflow
