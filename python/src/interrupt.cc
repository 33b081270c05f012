// interrupt.cc — signals reach Python while its main thread is blocked in a chanflow call.
//
// Python runs a signal's Python-level handler only on the main thread, between bytecodes; its C
// handler only records the signal. A main thread blocked in Channel.recv, select, Executor.run
// or GoMachine.run (GIL released, waiting on the runtime) never gets there, so without help a
// SIGINT, SIGTERM or SIGALRM would be handled only when the call returned by itself. Python's own
// blocking calls follow PEP 475 instead: the wait is interrupted, the handlers run, an exception
// from one ends the call, and otherwise the call goes on. This module gives chanflow's blocking
// calls on the main thread the same behaviour.
//
//   Python's C handler    (any thread) records the signal for the interpreter and then writes its
//                         number to the interpreter's wakeup fd — during a chanflow call on the
//                         main thread, the write end of this module's pipe (signal.set_wakeup_fd).
//                         So every signal with a Python-level handler reaches us, and only those:
//                         SIG_DFL, SIG_IGN and C-level handlers are left alone, as Python leaves
//                         them.
//   watcher thread        (one per process, started at the first call) reads the signal numbers
//                         from the pipe, forwards them to the wakeup fd the call replaced (an
//                         asyncio loop's, say), and acts on the main thread's calls in progress:
//                          - a wait that can be retried (a channel operation or select; kRetry)
//                            has its Context canceled, for any signal: the select returns the
//                            context's case, which performed no other case (select performs
//                            exactly one), so nothing was sent or received;
//                          - a run (Executor.run, GoMachine.run ...; kRun) has its Context
//                            canceled by SIGINT only (Ctrl-C stops a run even when the handler
//                            returns: the run's CanceledError then propagates). Any other signal
//                            cannot cancel what it cannot undo: while such a handler exists the
//                            run goes on a helper thread and the watcher wakes the main thread,
//                            which runs the handlers with the GIL and waits again.
//   the call              with the GIL, runs Python's handlers (PyErr_CheckSignals) when its wait
//                         ended without performing its operation: an exception from a handler
//                         leaves the call (a run on a helper is canceled first and waited for);
//                         otherwise a retryable wait is tried again with the time left, and a run
//                         canceled by SIGINT raises its CanceledError. A call that performed its
//                         operation returns its result and leaves pending handlers to the
//                         interpreter, which runs them as the call returns — as for a signal that
//                         came just after it — so a received value is never dropped and a sent
//                         one never reported unsent.
//
// A run is handed to a helper only when some signal other than SIGINT has a Python-level handler
// at the time of the call (it cannot get one during an inline run: only the main thread installs
// handlers, and it runs no Python code meanwhile). Without one — the usual case — the run stays on
// the main thread and costs what it cost before: the hand-off is two thread wake-ups. Helpers are
// kept for reuse; an idle one, and the main thread while it waits for one, are external waiters
// for deadlock detection (external_waiter.h), so a deadlocked run on a helper is reported as on
// the main thread.
//
// Polling is not used (releasing and re-taking the GIL every few milliseconds to call
// PyErr_CheckSignals): it would cost a wake-up per period for every call and add up to a period of
// latency; the pipe wakes the watcher only when a signal comes.
//
// Only calls on Python's main thread take part: Python runs handlers there only, and a call on
// another thread is stopped by what the main thread does (a timeout, closing what it waits on).
// Scopes nest (a handler run during a helper's run may itself block on a channel): the first one
// replaces the wakeup fd, the last one restores it.
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "chanflow/core/error.h"
#include "chanflow/core/locks.h"
#include "chanflow/runtime/external_waiter.h"
#include "native.h"

namespace chanflow::python {

// A run handed to a helper thread (run_interruptibly): the main thread waits on it for the end of
// the run or a signal.
struct Handoff {
  const std::function<void()>* body = nullptr;
  std::exception_ptr error;  // what body threw (written by the helper before done)
  os::Mutex mu;
  os::CondVar cv;
  bool done CHANFLOW_GUARDED_BY(mu) = false;
  // Signals the watcher saw during the run: the main thread runs the handlers when it grew.
  unsigned long long wakes CHANFLOW_GUARDED_BY(mu) = 0;
  // The main thread's declaration while it only waits; whoever wakes it (the helper at the end,
  // the watcher for a signal) ends it first, so the main thread counts again from that moment.
  std::optional<ScopedExternalWaiter> main_waiting CHANFLOW_GUARDED_BY(mu);

  // Ends the main thread's wait: `finished` from the helper, otherwise a signal.
  void wake(bool finished) {
    os::LockGuard lock(mu);
    main_waiting.reset();
    if (finished) {
      done = true;
    } else {
      ++wakes;
    }
    cv.notify_one();  // under mu: the main thread may free *this as soon as it sees done
  }
};

namespace {

struct RunRecord {
  Context ctx;
  InterruptScope::Mode mode;
  Handoff* handoff = nullptr;      // kRun on a helper: woken for every signal
  unsigned long long signals = 0;  // guarded by State::mu
};

struct State {
  os::Mutex mu;
  // The main thread's calls in progress.
  std::vector<RunRecord*> runs CHANFLOW_GUARDED_BY(mu);
  // Scopes in progress, and the wakeup fd the first of them replaced (-1: none), to which the
  // watcher forwards what it reads.
  int installed CHANFLOW_GUARDED_BY(mu) = 0;
  int forward_fd CHANFLOW_GUARDED_BY(mu) = -1;
  // The process whose watcher reads the pipe (fork-safe), and the pipe's ends.
  pid_t watcher_pid CHANFLOW_GUARDED_BY(mu) = 0;
  int read_fd CHANFLOW_GUARDED_BY(mu) = -1;
  int write_fd CHANFLOW_GUARDED_BY(mu) = -1;
  // Taken at the first scope (GIL held): Python's main thread, and _signal.getsignal with the
  // signal numbers to ask it about.
  bool python_ready = false;
  unsigned long main_ident = 0;
  py::object getsignal, set_wakeup_fd;
  std::vector<py::object> signal_numbers;
};
State& state() {
  static auto* s = new State();  // never destroyed: the watcher thread uses it until exit
  return *s;
}

void watch(int read_fd) {
  // The watcher only waits for signals: deadlock detection must not count it as a thread that
  // could wake a waiter, or a deadlocked run would never be reported.
  ScopedExternalWaiter external;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);  // never the thread a signal is delivered to
  for (;;) {
    std::array<unsigned char, 64> buf{};
    const ssize_t n = read(read_fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the pipe broke: nothing more can come
    State& s = state();
    os::LockGuard lock(s.mu);
    if (s.forward_fd >= 0) {
      // Best effort, non-blocking as Python's own write is: a full pipe there has bytes to read.
      [[maybe_unused]] const ssize_t w = write(s.forward_fd, buf.data(), static_cast<size_t>(n));
    }
    for (ssize_t i = 0; i < n; ++i) {
      const int signo = buf[static_cast<size_t>(i)];
      for (RunRecord* r : s.runs) {
        ++r->signals;
        if (signo == SIGINT || r->mode == InterruptScope::Mode::kRetry) r->ctx.cancel();
        if (r->handoff != nullptr) r->handoff->wake(false);
      }
    }
  }
}

// Starts the watcher of this process (again after a fork: threads do not survive it).
void ensure_watcher(State& s) CHANFLOW_REQUIRES(s.mu) {
  if (s.watcher_pid == getpid()) return;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    CHANFLOW_THROW(Error) << "cannot create the pipe that forwards signals: "
                          << std::strerror(errno);
  }
  // Non-blocking writes, as Python's handler expects of a wakeup fd: when the pipe is full the
  // watcher has bytes to read anyway.
  fcntl(fds[1], F_SETFL, O_NONBLOCK);
  std::thread(&watch, fds[0]).detach();  // lives as long as the process, blocked in read()
  s.read_fd = fds[0];
  s.write_fd = fds[1];
  s.watcher_pid = getpid();
}

// GIL held.
bool on_python_main_thread(State& s) {
  if (!s.python_ready) {
    s.main_ident =
        py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
    // The C function, not signal.getsignal: that one converts the handler to an enum member and
    // raises (and catches) a ValueError for every Python-level handler, microseconds per call.
    py::module_ sig = py::module_::import("_signal");
    s.getsignal = sig.attr("getsignal");
    // The Python function: the C one (PySignal_SetWakeupFd) is not exported by every build.
    s.set_wakeup_fd = sig.attr("set_wakeup_fd");
    for (int signo = 1; signo < NSIG; ++signo) {
      if (signo != SIGINT && signo != SIGKILL && signo != SIGSTOP) {
        s.signal_numbers.push_back(py::int_(signo));
      }
    }
    s.python_ready = true;
  }
  return PyThread_get_thread_ident() == s.main_ident;
}

// Whether a signal other than SIGINT has a Python-level handler now (a callable, not SIG_DFL,
// SIG_IGN or None). GIL held; throws error_already_set if getsignal fails.
bool other_python_handlers(State& s) {
  for (const py::object& signo : s.signal_numbers) {
    PyObject* h = PyObject_CallOneArg(s.getsignal.ptr(), signo.ptr());
    if (h == nullptr) throw py::error_already_set();
    const bool callable = PyCallable_Check(h) != 0;
    Py_DECREF(h);
    if (callable) return true;
  }
  return false;
}

// signal.set_wakeup_fd(fd) on the main thread, GIL held; returns the previous fd, or
// std::nullopt when Python refused (the fd was closed meanwhile ...). Keeps a pending Python
// error as it was (a scope may end while one propagates).
std::optional<int> set_wakeup_fd(State& s, int fd) noexcept {
  PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
  PyErr_Fetch(&type, &value, &trace);
  std::optional<int> previous;
  if (PyObject* arg = PyLong_FromLong(fd)) {
    if (PyObject* r = PyObject_CallOneArg(s.set_wakeup_fd.ptr(), arg)) {
      previous = static_cast<int>(PyLong_AsLong(r));
      Py_DECREF(r);
    }
    Py_DECREF(arg);
  }
  PyErr_Clear();
  PyErr_Restore(type, value, trace);
  return previous;
}

// The helper threads that run a main-thread run while the main thread waits for signals.
struct Helper {
  os::CondVar cv;
  Handoff* job = nullptr;                    // guarded by Pool::mu
  std::optional<ScopedExternalWaiter> idle;  // guarded by Pool::mu: declared while idle
};
struct Pool {
  os::Mutex mu;
  std::vector<Helper*> idle CHANFLOW_GUARDED_BY(mu);
  pid_t pid CHANFLOW_GUARDED_BY(mu) = 0;  // the process the helpers belong to
};
Pool& pool() {
  static auto* p = new Pool();  // never destroyed: idle helpers wait on it until exit
  return *p;
}

void help(Helper* h) {
  Pool& p = pool();
  for (;;) {
    Handoff* job = nullptr;
    {
      os::LockGuard lock(p.mu);
      while (h->job == nullptr) h->cv.wait(p.mu);
      job = h->job;
      h->job = nullptr;
    }
    try {
      (*job->body)();
    } catch (...) {
      job->error = std::current_exception();
    }
    {
      // Idle (and an external waiter) before the main thread counts again: never a moment where
      // neither counts while the main thread has something left to do.
      os::LockGuard lock(p.mu);
      h->idle.emplace();
      p.idle.push_back(h);
    }
    job->wake(true);  // the last touch of *job
  }
}

// Hands `job` to an idle helper, or to a new one.
void submit(Handoff& job) {
  Pool& p = pool();
  os::LockGuard lock(p.mu);
  if (p.pid != getpid()) {
    p.idle.clear();  // a fork's child: the parent's helpers are not in this process
    p.pid = getpid();
  }
  if (!p.idle.empty()) {
    Helper* h = p.idle.back();
    p.idle.pop_back();
    h->idle.reset();  // it counts as a thread that may wake waiters from here on
    h->job = &job;
    h->cv.notify_one();
    return;
  }
  auto* h = new Helper();  // lives as long as the process
  h->job = &job;
  try {
    std::thread(&help, h).detach();
  } catch (const std::system_error& e) {
    delete h;
    CHANFLOW_THROW(Error) << "cannot start the thread that runs a main-thread run while signals "
                             "are handled: "
                          << e.what();
  }
}

}  // namespace

InterruptScope::InterruptScope(const Context& ctx, Mode mode, Handoff* handoff) {
  State& s = state();
  if (!on_python_main_thread(s)) return;
  auto* record = new RunRecord{ctx, mode, handoff};
  {
    os::LockGuard lock(s.mu);
    try {
      ensure_watcher(s);
      s.runs.push_back(record);
    } catch (...) {
      delete record;
      throw;
    }
    if (s.installed == 0) {
      const std::optional<int> previous = set_wakeup_fd(s, s.write_fd);
      if (!previous) {
        s.runs.pop_back();
        delete record;
        CHANFLOW_THROW(Error) << "cannot set the signal wakeup fd that forwards signals";
      }
      s.forward_fd = *previous;
    }
    ++s.installed;
  }
  record_ = record;
  active_ = true;
  // A signal that came just before the wakeup fd was replaced only set Python's flag: run its
  // handler now (its exception before the call starts) instead of after the whole call.
  if (PyErr_CheckSignals() != 0) {
    end();
    throw py::error_already_set();
  }
}

InterruptScope::~InterruptScope() {
  if (active_) end();
}

unsigned long long InterruptScope::end() noexcept {
  State& s = state();
  auto* record = static_cast<RunRecord*>(record_);
  unsigned long long signals = 0;
  {
    os::LockGuard lock(s.mu);
    s.runs.erase(std::remove(s.runs.begin(), s.runs.end(), record), s.runs.end());
    signals = record->signals;
    // The watcher keeps forward_fd for the bytes still in the pipe; new ones go there directly.
    // (An fd closed meanwhile cannot be restored: Python's wakeup fd is then none.)
    if (--s.installed == 0 && !set_wakeup_fd(s, s.forward_fd)) set_wakeup_fd(s, -1);
  }
  delete record;
  record_ = nullptr;
  active_ = false;
  return signals;
}

bool InterruptScope::finish(bool completed) {
  if (!active_) return false;
  const unsigned long long signals = end();
  if (completed) return false;  // the interpreter runs pending handlers as the call returns
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  return signals > 0;
}

void run_interruptibly(const Context& ctx, const std::function<void()>& body) {
  State& s = state();
  std::exception_ptr error;
  if (!on_python_main_thread(s) || !other_python_handlers(s)) {
    // On the main thread, only SIGINT can come: it cancels the run.
    InterruptScope interrupt(ctx, InterruptScope::Mode::kRun);
    {
      ReleaseGil nogil;
      try {
        body();
      } catch (...) {
        error = std::current_exception();
      }
    }
    release_pending_owners();
    interrupt.finish(error == nullptr);
    if (error) std::rethrow_exception(error);
    return;
  }
  Handoff job;
  job.body = &body;
  InterruptScope interrupt(ctx, InterruptScope::Mode::kRun, &job);
  // A handler's exception, held while the canceled run ends (GIL held to take and restore it).
  PyObject* raised[3] = {nullptr, nullptr, nullptr};
  {
    std::optional<ReleaseGil> nogil(std::in_place);
    submit(job);
    unsigned long long seen = 0;
    for (;;) {
      {
        os::LockGuard lock(job.mu);
        if (!job.done && job.wakes == seen) {
          job.main_waiting.emplace();
          while (!job.done && job.wakes == seen) job.cv.wait(job.mu);
        }
        if (job.done) break;
        seen = job.wakes;
      }
      if (raised[0] != nullptr) continue;  // canceled already: only the end is awaited
      nogil.reset();
      if (PyErr_CheckSignals() != 0) {
        PyErr_Fetch(&raised[0], &raised[1], &raised[2]);
        if (raised[0] == nullptr) raised[0] = Py_NewRef(PyExc_SystemError);
        ctx.cancel();
      }
      nogil.emplace();
    }
  }
  release_pending_owners();
  if (raised[0] != nullptr) {
    interrupt.finish(true);  // handlers that came meanwhile are left to the interpreter
    PyErr_Restore(raised[0], raised[1], raised[2]);
    throw py::error_already_set();
  }
  interrupt.finish(job.error == nullptr);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace chanflow::python
