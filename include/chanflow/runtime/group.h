// group.h — Group: run green threads as one task; the first exception wins (Go's errgroup).
//
//   cf::Group g(ctx);
//   for (auto& part : parts) g.go([&, c = g.context()] { process(part, c); });
//   g.wait();   // rethrows the first exception; the group's context was canceled for the rest
//
// The group's context is canceled when a function throws and when wait() returns.
#pragma once

#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "chanflow/core/detail/locks.h"
#include "chanflow/core/export.h"
#include "chanflow/runtime/context.h"
#include "chanflow/runtime/scheduler.h"
#include "chanflow/runtime/wait_group.h"

namespace chanflow {

class CHANFLOW_API Group {
 public:
  // A group whose context is a child of parent.
  explicit Group(const Context& parent = background());
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  // Does not wait: call wait(). The group's state outlives it while its green threads run.
  ~Group();

  // Starts fn() (or fn(context()) if it takes a Context) in a green thread of the current
  // scheduler (see cf::go). An exception it throws is recorded (the first one wins) and cancels
  // context(). Never blocks. Thread-safe.
  template <class F>
  void go(F&& fn) {
    go(std::string(), std::forward<F>(fn));
  }
  template <class F>
  void go(std::string name, F&& fn) {
    std::shared_ptr<State> st = state_;
    st->wg.add(1);
    try {
      ::chanflow::go(std::move(name), [st, f = std::forward<F>(fn)]() mutable {
        try {
          if constexpr (std::is_invocable_v<decltype(f)&, Context>) {
            f(st->ctx);
          } else {
            f();
          }
        } catch (const detail::FiberUnwind&) {
          st->wg.done();
          throw;
        } catch (...) {
          st->fail(std::current_exception());
        }
        st->wg.done();
      });
    } catch (...) {
      st->wg.done();
      throw;
    }
  }
  // Blocks until every function returned, cancels context(), then rethrows the first exception
  // (if any). Thread-safe; may be called again (rethrows the same exception).
  void wait();
  // The group's context: canceled on the first failure and when wait() returns.
  Context context() const { return state_->ctx; }

 private:
  struct CHANFLOW_API State {
    explicit State(Context c) : ctx(std::move(c)) {}
    void fail(std::exception_ptr e);
    Context ctx;
    WaitGroup wg;
    detail::Mutex mu;
    std::exception_ptr first CHANFLOW_GUARDED_BY(mu);
  };
  std::shared_ptr<State> state_;
};

}  // namespace chanflow
