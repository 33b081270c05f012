// group.cc — the error group: first exception wins and cancels the group's context.
#include "chanflow/runtime/group.h"

namespace chanflow {

Group::Group(const Context& parent)
    : state_(std::make_shared<State>(nullptr, with_cancel(parent), nullptr)) {}

Group::Group(Scheduler& s, const Context& parent)
    : state_(std::make_shared<State>(&s, with_cancel(parent), nullptr)) {}

Group::Group(Scheduler& s, const Context& parent, ErrorHandler on_error)
    : state_(std::make_shared<State>(&s, with_cancel(parent), std::move(on_error))) {}

Group::~Group() = default;

void Group::State::fail(std::exception_ptr e) {
  if (on_error) {
    on_error(e);
    return;
  }
  {
    os::LockGuard g(mu);
    if (!first) first = std::move(e);
  }
  ctx.cancel();
}

void Group::wait() {
  state_->wg.wait();
  state_->ctx.cancel();
  std::exception_ptr e;
  {
    os::LockGuard g(state_->mu);
    e = state_->first;
  }
  if (e) std::rethrow_exception(e);
}

}  // namespace chanflow
