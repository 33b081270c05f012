// fork.cc — the pthread_atfork handlers (fork.h).
#include "fork.h"

#include <pthread.h>

#include <cstdio>
#include <cstdlib>

namespace chanflow::detail {
namespace {

// The locks are taken in the order the runtime nests them: a green thread holds the timer heap's
// lock across its switch-out, during which its worker may record a trace event (the trace's
// locks); no holder of a trace lock, of the deadlock registry or of the chunk table waits for
// an earlier one in this list.
void prepare() noexcept {
  timer_prepare_fork();
  deadlock_prepare_fork();
  trace_prepare_fork();
  stack_pool_prepare_fork();
}

void parent() noexcept {
  stack_pool_after_fork();
  trace_after_fork(false);
  (void)deadlock_after_fork(false);
  timer_after_fork(false);
}

void child() noexcept {
  stack_pool_after_fork();
  trace_after_fork(true);
  SchedulerImpl* registered = deadlock_after_fork(true);
  timer_after_fork(true);
  schedulers_after_fork_child(registered);
}

}  // namespace

void register_fork_handlers() noexcept {
  static const bool kRegistered = [] {
    if (pthread_atfork(&prepare, &parent, &child) != 0) {
      // Only ENOMEM: without the handlers a child would hang in its first chanflow call.
      std::fprintf(stderr, "chanflow: pthread_atfork failed (out of memory)\n");
      std::abort();
    }
    return true;
  }();
  (void)kRegistered;
}

}  // namespace chanflow::detail
