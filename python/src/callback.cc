// callback.cc — where Python callables run when chanflow calls them.
//
// A green thread may be resumed on any worker OS thread after every park, while CPython binds its
// thread state (and the GIL's ownership) to one OS thread. So a green thread never runs Python
// itself: it hands the callable to the Python-callback thread, one OS thread owned by this module,
// and parks until the callable has run. Its worker meanwhile runs other green threads, so a graph
// with a Python op keeps its other nodes computing. OS threads (a Python thread, a C++ thread
// calling through the C ABI) need no hand-off: they take the GIL and run the callable inline.
//
// The callback thread has one thread state for its life and holds the GIL only while a callable
// runs. While it waits for work it cannot wake any chanflow waiter, so it declares itself an
// external waiter then (deadlock detection is not suspended by its mere existence). It is stopped
// by an atexit hook; requests after that fail with Error rather than touch a finalising
// interpreter.
#include <unistd.h>

#include <cxxabi.h>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "chanflow/core/locks.h"
#include "chanflow/runtime/chan.h"
#include "chanflow/runtime/external_waiter.h"
#include "chanflow/runtime/scheduler.h"
#include "native.h"

namespace chanflow::python {
namespace {

// One callable handed to the callback thread. `done` is closed once `fn` has run and `error` is
// set; the caller's recv on it is what parks the green thread (a channel, so the green thread
// parks and the close from an OS thread wakes it, with the happens-before a channel gives).
struct Request {
  const std::function<void()>* fn;
  std::exception_ptr error;
  Chan<int> done = make_chan<int>(0);
};

[[noreturn]] void throw_shutting_down() {
  throw Error("chanflow: cannot call into Python: the interpreter is shutting down");
}

// Runs fn with the GIL held by this thread; converts a Python exception into PythonError.
void run_python(const std::function<void()>& fn) {
  try {
    fn();
  } catch (py::error_already_set& e) {
    std::string message;
    try {
      py::object lines =
          py::module_::import("traceback").attr("format_exception")(e.type(), e.value(), e.trace());
      message = py::str("").attr("join")(lines).cast<std::string>();
      while (!message.empty() && message.back() == '\n') message.pop_back();
    } catch (py::error_already_set&) {
      message = e.what();  // formatting failed: pybind11's own "Type: message"
    }
    throw PythonError(message, SharedPyObject(e.value()));
  }
}

class CallbackThread {
 public:
  // Queues `r` and starts the thread on first use. Throws Error after stop().
  void post(std::shared_ptr<Request> r) {
    os::LockGuard lock(mu_);
    if (stopped_) throw_shutting_down();
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    queue_.push_back(std::move(r));
    // The thread is about to run a callable that wakes its caller: from now on deadlock
    // detection must count it as a thread that may wake a chanflow waiter. Ended here, before
    // the caller parks, not by the thread once it woke: otherwise, between the caller's park and
    // the thread's wake-up, a parked caller and an idle-looking thread look like a deadlock.
    idle_.reset();
    cv_.notify_one();
  }

  bool stopped() {
    os::LockGuard lock(mu_);
    return stopped_;
  }

  // Makes the thread finish the queued requests and exit, and joins it. Later posts throw.
  // Called with the GIL held (atexit); releases it while joining, since the thread needs it.
  void stop() {
    std::thread t;
    {
      os::LockGuard lock(mu_);
      stopped_ = true;
      cv_.notify_one();
      t = std::move(thread_);
    }
    if (t.joinable()) {
      ReleaseGil nogil;
      t.join();
    }
  }

 private:
  void loop() {
    // One thread state for the thread's life (creating one per callable costs microseconds).
    const PyGILState_STATE gil = PyGILState_Ensure();
    PyThreadState* state = PyEval_SaveThread();
    for (;;) {
      std::shared_ptr<Request> r;
      {
        os::LockGuard lock(mu_);
        if (queue_.empty() && !stopped_) {
          idle_.emplace();  // waiting for work, this thread wakes no chanflow waiter
          while (queue_.empty() && !stopped_) cv_.wait(mu_);
          idle_.reset();
        }
        if (queue_.empty()) break;  // stopped and drained
        r = std::move(queue_.front());
        queue_.pop_front();
      }
      PyEval_RestoreThread(state);
      try {
        run_python(*r->fn);
      } catch (...) {
        r->error = std::current_exception();
      }
      state = PyEval_SaveThread();
      r->done.close();
    }
    PyEval_RestoreThread(state);
    PyGILState_Release(gil);
  }

  os::Mutex mu_;
  os::CondVar cv_;
  std::deque<std::shared_ptr<Request>> queue_ CHANFLOW_GUARDED_BY(mu_);
  std::thread thread_ CHANFLOW_GUARDED_BY(mu_);
  // Set while the thread waits for work with an empty queue (it counts one thread, not an
  // identity, so post() may end it on the poster's thread).
  std::optional<ScopedExternalWaiter> idle_ CHANFLOW_GUARDED_BY(mu_);
  bool stopped_ CHANFLOW_GUARDED_BY(mu_) = false;
};

CallbackThread& callback_thread() {
  static auto* t = new CallbackThread();  // never destroyed: green threads may post during exit
  return *t;
}

// Blocks this thread until the process exits (a thread of a finalizing interpreter that must not
// retake the GIL; see ReleaseGil).
[[noreturn]] void park_forever() noexcept {
  for (;;) pause();
}

}  // namespace

ReleaseGil::ReleaseGil() noexcept : state_(PyEval_SaveThread()) {}

ReleaseGil::~ReleaseGil() {
  // While Python finalizes, retaking the GIL ends every thread but the finalizing one by a forced
  // unwind (pthread_exit; see native.h): catch it there and park, the process is exiting. The
  // finalizing thread itself (destructors run during finalization release the GIL too) retakes
  // the GIL normally, so no "is finalizing" test may come first: it would park that thread and
  // hang the exit.
  try {
    PyEval_RestoreThread(state_);
  } catch (abi::__forced_unwind&) {
    park_forever();
  }
}

void call_with_gil(const std::function<void()>& fn) {
  if (!in_green_thread()) {
    if (PyGILState_Check() != 0) {
      run_python(fn);
      return;
    }
    if (callback_thread().stopped()) throw_shutting_down();  // atexit ran: do not take the GIL
    py::gil_scoped_acquire gil;
    run_python(fn);
    return;
  }
  auto r = std::make_shared<Request>();
  r->fn = &fn;
  callback_thread().post(r);
  (void)r->done.recv();  // parks this green thread until the callback thread closes `done`
  if (r->error) std::rethrow_exception(r->error);
}

void bind_callbacks(py::module_& m) {
  (void)m;
  py::module_::import("atexit").attr("register")(
      py::cpp_function([] { callback_thread().stop(); }));
}

}  // namespace chanflow::python
