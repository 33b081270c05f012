// context.cc — the context tree: cancellation flows from a node to all its descendants.
#include "chanflow/runtime/context.h"

#include <algorithm>
#include <vector>

#include "chanflow/core/error.h"
#include "chanflow/core/locks.h"
#include "timer.h"

namespace chanflow::detail {

struct ContextImpl {
  // Lock order: an ancestor's mu before a descendant's (cancel walks down holding both).
  os::Mutex mu;
  Chan<Unit> done;  // nil for background
  std::exception_ptr err CHANFLOW_GUARDED_BY(mu);
  // Set with err, for pollers (context_done_flag). Relaxed: it carries no data; a poller that
  // sees it reads err under mu.
  std::atomic<bool> done_flag{false};
  std::shared_ptr<ContextImpl> parent;
  std::vector<ContextImpl*> children CHANFLOW_GUARDED_BY(mu);
  std::optional<Clock::time_point> deadline;
  struct DeadlineTimer : TimerEntry {
    ContextImpl* owner = nullptr;
  } timer;
  bool timer_armed CHANFLOW_GUARDED_BY(mu) = false;

  ~ContextImpl() {
    if (timer_armed) timer_remove(&timer);
    if (parent) {
      os::LockGuard g(parent->mu);
      auto& c = parent->children;
      c.erase(std::remove(c.begin(), c.end(), this), c.end());
    }
  }

  void cancel_locked(const std::exception_ptr& e) CHANFLOW_REQUIRES(mu) {
    if (err) return;
    err = e;
    done_flag.store(true, std::memory_order_relaxed);
    done.close();
    for (ContextImpl* child : children) {
      os::LockGuard g(child->mu);
      child->cancel_locked(e);
    }
  }
  void cancel(const std::exception_ptr& e) {
    os::LockGuard g(mu);
    cancel_locked(e);
  }
};

namespace {

std::exception_ptr canceled_error() {
  return std::make_exception_ptr(CanceledError("context canceled"));
}

std::shared_ptr<ContextImpl> make_child(const Context& parent,
                                        std::optional<Clock::time_point> deadline) {
  auto impl = std::make_shared<ContextImpl>();
  impl->done = make_chan<Unit>(0, "context");
  impl->done.base()->set_context_done();
  impl->parent = parent.impl();
  impl->deadline = deadline;
  std::exception_ptr parent_err;
  if (impl->parent) {
    os::LockGuard g(impl->parent->mu);
    if (impl->parent->err) {
      parent_err = impl->parent->err;
    } else {
      impl->parent->children.push_back(impl.get());
    }
  }
  if (parent_err) impl->cancel(parent_err);
  return impl;
}

}  // namespace
}  // namespace chanflow::detail

namespace chanflow {

Context::Context() : impl_(background().impl()) {}

Context background() {
  static const auto kRoot = std::make_shared<detail::ContextImpl>();
  return Context(kRoot);
}

Chan<Unit> Context::done() const { return impl_->done; }

std::exception_ptr Context::err() const {
  os::LockGuard g(impl_->mu);
  return impl_->err;
}

void Context::cancel() const {
  if (!impl_->parent) return;  // background
  impl_->cancel(detail::canceled_error());
}

std::optional<Clock::time_point> Context::deadline() const { return impl_->deadline; }

void Context::throw_if_done() const {
  if (std::exception_ptr e = err()) std::rethrow_exception(e);
}

const std::atomic<bool>& detail::context_done_flag(const Context& ctx) noexcept {
  return ctx.impl()->done_flag;
}

Context with_cancel(const Context& parent) {
  return Context(detail::make_child(parent, parent.deadline()));
}

Context with_deadline(const Context& parent, Clock::time_point t) {
  const auto inherited = parent.deadline();
  if (inherited && *inherited <= t) return with_cancel(parent);
  auto impl = detail::make_child(parent, t);
  if (Clock::now() >= t) {
    impl->cancel(std::make_exception_ptr(DeadlineExceededError("context deadline exceeded")));
    return Context(impl);
  }
  os::LockGuard g(impl->mu);
  if (!impl->err) {
    impl->timer.owner = impl.get();
    impl->timer.when = t;
    impl->timer.fire = [](detail::TimerEntry* e) {
      auto* self = static_cast<detail::ContextImpl::DeadlineTimer*>(e)->owner;
      self->cancel(std::make_exception_ptr(DeadlineExceededError("context deadline exceeded")));
    };
    impl->timer_armed = true;
    detail::timer_add(&impl->timer);
  }
  return Context(impl);
}

Context with_timeout(const Context& parent, std::chrono::nanoseconds d) {
  const Clock::time_point now = Clock::now();
  // A deadline past the end of the clock is no deadline (and now + d would overflow into the
  // past: `chanflow run --timeout 2562047h` ended at once).
  if (d > Clock::time_point::max() - now) return with_cancel(parent);
  return with_deadline(parent, now + d);
}

}  // namespace chanflow
