// callback.cc — where Python callables run when chanflow calls them.
//
// A green thread may be resumed on any worker OS thread after every park, while CPython binds its
// thread state (and the GIL's ownership) to one OS thread. So a green thread never runs Python
// itself: it hands the callable to a Python-callback thread, an OS thread owned by this module,
// and parks until the callable has run. Its worker meanwhile runs other green threads, so a graph
// with a Python op keeps its other nodes computing. OS threads (a Python thread, a C++ thread
// calling through the C ABI) need no hand-off: they take the GIL and run the callable inline.
//
// The callback threads form a pool that grows only when every one of them is blocked in chanflow
// (as Go hands a blocked thread's P to another thread). One thread serves the queue while its
// callables run Python, one at a time, as the GIL would anyway. But a callable may itself block
// in chanflow — call a C++ function that calls Python from a green thread, run a GoMachine with a
// Python op — and what it waits for may be a callable queued behind it. So when a callback thread
// releases the GIL to block in chanflow (ReleaseGil) and no other callback thread runs, the queue
// is handed to an idle callback thread, or to a new one: queued work is always served while a
// thread that is not blocked exists or can be started (up to kMaxCallbackThreads).
//
// Each thread has one thread state for its life and holds the GIL only while a callable runs.
// While it waits for work it cannot wake any chanflow waiter, so it declares itself an external
// waiter then (deadlock detection is not suspended by the pool's mere existence); while it blocks
// in chanflow it is an OS waiter like any other. The pool is stopped by an atexit hook; requests
// after that fail with Error rather than touch a finalising interpreter. A fork()ed child starts
// with a new, empty pool (the parent's threads do not exist there).
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "chanflow/core/locks.h"
#include "chanflow/runtime/chan.h"
#include "chanflow/runtime/external_waiter.h"
#include "chanflow/runtime/scheduler.h"
#include "native.h"

namespace chanflow::python {
namespace {

// The most callback threads: one per callable blocked in chanflow at once, plus one. Beyond it,
// queued callables wait until a callback thread is free (a callable that blocks waiting for one
// of them then waits forever, reported as a deadlock when nothing else can end the wait).
constexpr int kMaxCallbackThreads = 256;

// One callable handed to a callback thread. `done` is closed once `fn` has run and `error` is
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

// Blocks this thread until the process exits (a thread of a finalizing interpreter that must not
// retake the GIL; see ReleaseGil).
[[noreturn]] void park_forever() noexcept {
  for (;;) pause();
}

// PyEval_RestoreThread for a thread that is not the finalizing one: while Python finalizes,
// retaking the GIL ends such a thread by a forced unwind (pthread_exit; see native.h), caught
// here and turned into a park, the process is exiting.
void restore_thread(PyThreadState* state) {
  // Caught as (...): PyEval_RestoreThread is C and raises nothing else, and the forced unwind's
  // exception object is foreign (binding a reference to it is what UBSan reports as a null one).
  try {
    PyEval_RestoreThread(state);
  } catch (...) {
    park_forever();
  }
}

// Runs fn with the GIL held by this thread; converts a Python exception into PythonError.
void run_python(const std::function<void()>& fn) {
  try {
    fn();
  } catch (py::error_already_set& e) {
    std::string message;
    try {
      // An exception raised by C code (int('abc') called directly) has no traceback: None.
      py::object trace = e.trace() ? e.trace() : py::none();
      py::object lines =
          py::module_::import("traceback").attr("format_exception")(e.type(), e.value(), trace);
      message = py::str("").attr("join")(lines).cast<std::string>();
      while (!message.empty() && message.back() == '\n') message.pop_back();
    } catch (py::error_already_set&) {
      message = e.what();  // formatting failed: pybind11's own "Type: message"
    }
    throw PythonError(message, SharedPyObject(e.value()));
  }
}

class CallbackPool;

// One callback thread. Its fields are guarded by the pool's mu_ (the analysis cannot name it
// from here; every access is in a CallbackPool method that holds it).
struct Slot {
  CallbackPool* pool = nullptr;
  std::thread thread;
  os::CondVar cv;                 // signalled when `work` is set or the pool stops
  std::shared_ptr<Request> work;  // handed to it while it was idle
  // Set while it waits for work (it counts one thread, not an identity, so post() may end it on
  // the poster's thread, before the poster parks).
  std::optional<ScopedExternalWaiter> idle;
  bool blocked = false;  // inside ReleaseGil (blocked in chanflow), not running Python
  bool exited = false;   // left its loop: its std::thread is joinable without waiting long
};

// The calling thread's slot when it is a callback thread (nullptr elsewhere).
thread_local Slot* t_slot = nullptr;

class CallbackPool {
 public:
  // Queues `r` for a running callback thread, or else hands it to the idle one that ran last
  // (its lines are warm; callables run one at a time under the GIL anyway), or starts a thread
  // for it when every callback thread is blocked in chanflow. Throws Error after stop().
  void post(std::shared_ptr<Request> r) {
    os::LockGuard lock(mu_);
    if (stopped_) throw_shutting_down();
    if (running_ > 0) {
      queue_.push_back(std::move(r));
      return;
    }
    if (!idle_.empty()) {
      Slot* s = idle_.back();
      idle_.pop_back();
      // From now on deadlock detection must count that thread as one that may wake a chanflow
      // waiter: ended here, before the caller parks, not by the thread once it woke (otherwise,
      // between the caller's park and its wake-up, a parked caller and an idle-looking thread
      // look like a deadlock).
      s->idle.reset();
      s->work = std::move(r);
      ++running_;
      s->cv.notify_one();
      return;
    }
    queue_.push_back(std::move(r));
    serve_queue();
  }

  bool stopped() {
    os::LockGuard lock(mu_);
    return stopped_;
  }

  // The calling callback thread blocks in chanflow (GIL released): when no other callback thread
  // runs, queued callables go to another thread, since the one this thread waits for may be
  // among them.
  void begin_blocking(Slot* s) {
    os::LockGuard lock(mu_);
    s->blocked = true;
    --running_;
    ++blocked_;
    if (running_ == 0 && !queue_.empty()) serve_queue();
  }

  void end_blocking(Slot* s) {
    os::LockGuard lock(mu_);
    s->blocked = false;
    ++running_;
    --blocked_;
    stop_cv_.notify_all();
  }

  // Makes the threads finish the queued requests and exit, and joins them; a thread blocked in
  // chanflow for good (a callable waiting for what never comes) is left behind, detached, and
  // the requests nobody can serve then fail as after shutdown. Later posts throw. Called with
  // the GIL held (atexit); releases it while waiting, since the threads need it.
  void stop() {
    std::vector<std::shared_ptr<Request>> unserved;
    std::vector<std::thread> joinable;
    {
      ReleaseGil nogil;
      os::LockGuard lock(mu_);
      stopped_ = true;
      for (auto& s : slots_) s->cv.notify_one();
      // Every thread exited or blocked in chanflow: nothing more will be served.
      while (live_ != blocked_) stop_cv_.wait(mu_);
      unserved.assign(queue_.begin(), queue_.end());
      queue_.clear();
      for (auto& s : slots_) {
        if (!s->thread.joinable()) continue;
        if (s->exited) {
          joinable.push_back(std::move(s->thread));
        } else {
          s->thread.detach();  // blocked for good: it parks if it ever retakes the GIL
        }
      }
    }
    for (auto& r : unserved) {
      try {
        throw_shutting_down();
      } catch (...) {
        r->error = std::current_exception();
      }
      r->done.close();
    }
    ReleaseGil nogil;
    for (auto& t : joinable) t.join();
  }

 private:
  // Starts a thread for the head of the queue, if the limit allows. Only while no thread runs
  // (running_ == 0): then none is idle either, as a thread goes idle only with an empty queue and
  // post() gives work to an idle thread before it queues.
  // When no thread can be started (the limit, or the system refuses one), the queue waits for a
  // callback thread that stops blocking.
  void serve_queue() noexcept CHANFLOW_REQUIRES(mu_) {
    if (live_ >= kMaxCallbackThreads) return;
    try {
      slots_.push_back(std::make_unique<Slot>());
    } catch (...) {
      return;
    }
    Slot* s = slots_.back().get();
    s->pool = this;
    s->work = std::move(queue_.front());
    queue_.pop_front();
    try {
      s->thread = std::thread([this, s] { loop(s); });
    } catch (...) {
      queue_.push_front(std::move(s->work));  // cannot throw: the slot it left is free
      slots_.pop_back();
      return;
    }
    ++live_;
    ++running_;
  }

  void loop(Slot* s) {
    t_slot = s;
    // One thread state for the thread's life (creating one per callable costs microseconds).
    const PyGILState_STATE gil = PyGILState_Ensure();
    PyThreadState* state = PyEval_SaveThread();
    std::shared_ptr<Request> r;
    {
      os::LockGuard lock(mu_);
      r = std::move(s->work);
    }
    for (;;) {
      restore_thread(state);
      try {
        run_python(*r->fn);
      } catch (...) {
        r->error = std::current_exception();
      }
      state = PyEval_SaveThread();
      r->done.close();
      r.reset();
      os::LockGuard lock(mu_);
      if (!queue_.empty()) {
        r = std::move(queue_.front());
        queue_.pop_front();
        continue;
      }
      if (stopped_) break;
      --running_;
      s->idle.emplace();  // waiting for work, this thread wakes no chanflow waiter
      idle_.push_back(s);
      while (!s->work && !stopped_) s->cv.wait(mu_);
      if (!s->work) {  // stopped while idle (post() no longer hands out work)
        idle_.erase(std::find(idle_.begin(), idle_.end(), s));
        s->idle.reset();
        ++running_;
        break;
      }
      r = std::move(s->work);
    }
    t_slot = nullptr;
    restore_thread(state);
    PyGILState_Release(gil);
    os::LockGuard lock(mu_);
    --running_;
    --live_;
    s->exited = true;
    stop_cv_.notify_all();
  }

  os::Mutex mu_;
  os::CondVar stop_cv_;  // signalled when a thread exits or stops blocking
  std::deque<std::shared_ptr<Request>> queue_ CHANFLOW_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Slot>> slots_ CHANFLOW_GUARDED_BY(mu_);  // every thread started
  std::vector<Slot*> idle_ CHANFLOW_GUARDED_BY(mu_);                   // waiting for work
  int live_ CHANFLOW_GUARDED_BY(mu_) = 0;                              // started and not exited
  int running_ CHANFLOW_GUARDED_BY(mu_) = 0;  // live, neither idle nor blocked in chanflow
  int blocked_ CHANFLOW_GUARDED_BY(mu_) = 0;  // inside ReleaseGil
  bool stopped_ CHANFLOW_GUARDED_BY(mu_) = false;
};

// The pool of this process. Never destroyed: green threads may post during exit. A fork()ed
// child replaces it (after_fork_child) and leaks the parent's, whose threads and lock holders do
// not exist there.
std::atomic<CallbackPool*> g_pool{new CallbackPool()};

CallbackPool& callback_pool() { return *g_pool.load(std::memory_order_acquire); }

// pthread_atfork's child handler: the forking thread is the child's only thread, and no longer a
// callback thread of any pool.
void after_fork_child() {
  t_slot = nullptr;
  g_pool.store(new CallbackPool(), std::memory_order_release);
}

}  // namespace

ReleaseGil::ReleaseGil() noexcept : slot_(t_slot) {
  if (slot_ != nullptr) {
    // A nested ReleaseGil (Python run inline on this thread in between) is already counted.
    auto* s = static_cast<Slot*>(slot_);
    if (s->blocked) {
      slot_ = nullptr;
    } else {
      s->pool->begin_blocking(s);
    }
  }
  state_ = PyEval_SaveThread();
}

ReleaseGil::~ReleaseGil() {
  if (slot_ != nullptr) {
    auto* s = static_cast<Slot*>(slot_);
    s->pool->end_blocking(s);
  }
  // While Python finalizes, retaking the GIL ends every thread but the finalizing one by a forced
  // unwind (pthread_exit; see native.h): restore_thread parks it instead. The finalizing thread
  // itself (destructors run during finalization release the GIL too) retakes the GIL normally,
  // so no "is finalizing" test may come first: it would park that thread and hang the exit.
  restore_thread(state_);
}

void call_with_gil(const std::function<void()>& fn) {
  if (!in_green_thread()) {
    if (PyGILState_Check() != 0) {
      run_python(fn);
      return;
    }
    if (callback_pool().stopped()) throw_shutting_down();  // atexit ran: do not take the GIL
    py::gil_scoped_acquire gil;
    run_python(fn);
    return;
  }
  auto r = std::make_shared<Request>();
  r->fn = &fn;
  callback_pool().post(r);
  (void)r->done.recv();  // parks this green thread until a callback thread closes `done`
  if (r->error) std::rethrow_exception(r->error);
}

void bind_callbacks(py::module_& m) {
  (void)m;
  py::module_::import("atexit").attr("register")(py::cpp_function([] { callback_pool().stop(); }));
  static const int kAtFork = pthread_atfork(nullptr, nullptr, &after_fork_child);
  (void)kAtFork;
}

}  // namespace chanflow::python
