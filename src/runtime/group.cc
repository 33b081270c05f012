// group.cc — the error group: first exception wins and cancels the group's context.
#include "chanflow/runtime/group.h"

namespace chanflow {

Group::Group(const Context& parent) : state_(std::make_shared<State>(with_cancel(parent))) {}

Group::~Group() = default;

void Group::State::fail(std::exception_ptr e) {
  {
    detail::LockGuard g(mu);
    if (!first) first = std::move(e);
  }
  ctx.cancel();
}

void Group::wait() {
  state_->wg.wait();
  state_->ctx.cancel();
  std::exception_ptr e;
  {
    detail::LockGuard g(state_->mu);
    e = state_->first;
  }
  if (e) std::rethrow_exception(e);
}

}  // namespace chanflow
