// group.h — Group: run green threads as one task; the first exception wins (Go's errgroup).
//
//   cf::Group g(ctx);
//   for (auto& part : parts) g.go([&, c = g.context()] { process(part, c); });
//   g.wait();   // rethrows the first exception; the group's context was canceled for the rest
//
// The group's context is canceled when a function throws and when wait() returns.
//
// A group may run on an explicit scheduler (Group(scheduler, ctx)), and may hand its failures to
// an error handler of its owner instead of keeping the first (the executor's run state is built
// this way: the handler decides which error is the run's). Either way the group owns the
// mechanics of structured concurrency: counting its green threads, letting a green thread that is
// unwound at scheduler teardown finish unwinding (never treated as a failure), and waiting by
// parking.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "chanflow/core/export.h"
#include "chanflow/core/locks.h"
#include "chanflow/runtime/context.h"
#include "chanflow/runtime/scheduler.h"
#include "chanflow/runtime/wait_group.h"

namespace chanflow {

class CHANFLOW_API Group {
 public:
  // Called, on the failing green thread (after its function's frame unwound) or on the thread
  // that called fail(), with each exception of the group. Must not throw.
  using ErrorHandler = std::function<void(const std::exception_ptr&)>;

  // A group whose context is a child of parent; its green threads start on the scheduler cf::go
  // uses where go() is called (scheduler_for_go).
  explicit Group(const Context& parent = background());
  // A group whose green threads start on `s` (which must outlive them).
  explicit Group(Scheduler& s, const Context& parent = background());
  // Same, with failures handed to `on_error` instead of kept: the group keeps no error (wait()
  // rethrows none) and does not cancel context() on a failure; the handler does what its owner
  // needs (typically: choose the error to report, then cancel context()). A null handler is the
  // default policy.
  Group(Scheduler& s, const Context& parent, ErrorHandler on_error);
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  // Does not wait: call wait(). The group's state outlives it while its green threads run.
  ~Group();

  // Starts fn() (or fn(context()) if it takes a Context) in a green thread of the group's
  // scheduler. An exception it throws goes to fail(). Never blocks. Thread-safe. Throws what
  // starting a green thread throws (the group then does not count the function).
  template <class F>
  void go(F&& fn) {
    go(std::string(), std::forward<F>(fn));
  }
  template <class F>
  void go(std::string name, F&& fn) {
    std::shared_ptr<State> st = state_;
    st->wg.add(1);
    try {
      auto body = [st, f = std::forward<F>(fn)]() mutable {
        try {
          if constexpr (std::is_invocable_v<decltype(f)&, Context>) {
            f(st->ctx);
          } else {
            f();
          }
        } catch (const FiberUnwind&) {
          // The scheduler tears down while this green thread is parked forever: not a failure
          // of the function, and the unwinding must go on.
          st->wg.done();
          throw;
        } catch (...) {
          st->fail(std::current_exception());
        }
        st->wg.done();
      };
      if (st->sched != nullptr) {
        st->sched->go(std::move(name), std::move(body));
      } else {
        ::chanflow::go(std::move(name), std::move(body));
      }
    } catch (...) {
      st->wg.done();
      throw;
    }
  }
  // Blocks until every function returned (parks a green thread; an OS thread waits as
  // WaitGroup::wait does, and gets DeadlockError when nothing can end the wait, the group
  // unchanged), cancels context(), then rethrows the first kept exception (if any). Thread-safe;
  // may be called again (rethrows the same exception).
  void wait();
  // Fails the group with `e` as if one of its functions had thrown it (for work the owner does
  // itself, on its own thread): the error handler gets it, or, without one, the group keeps it
  // if it is the first and cancels context(). Thread-safe.
  void fail(std::exception_ptr e) { state_->fail(std::move(e)); }
  // The group's context: canceled on the first failure (default policy) and when wait() returns.
  Context context() const { return state_->ctx; }

 private:
  struct CHANFLOW_API State {
    State(Scheduler* s, Context c, ErrorHandler h)
        : sched(s), ctx(std::move(c)), on_error(std::move(h)) {}
    void fail(std::exception_ptr e);
    Scheduler* const sched;  // null: the scheduler cf::go uses where go() is called
    const Context ctx;
    const ErrorHandler on_error;  // null: keep the first error, cancel ctx
    WaitGroup wg{"group"};        // named: traces and deadlock reports show "waitgroup group"
    os::Mutex mu;
    std::exception_ptr first CHANFLOW_GUARDED_BY(mu);
  };
  std::shared_ptr<State> state_;
};

}  // namespace chanflow
