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
//   handler (any thread)  for each signal that has a Python-level handler when the call starts
//                         (the only ones: SIG_DFL, SIG_IGN and signals Python does not handle are
//                         left alone), this module's C handler stands in front of Python's: it
//                         calls the handler it replaced — Python's, which records the signal for
//                         the interpreter and writes its wakeup fd (an asyncio loop's, say) — and
//                         then writes the signal's number to a pipe; nothing else, so it is
//                         async-signal-safe, and the record is made before the byte is seen.
//                         SIGINT is only counted, not passed on: the call hands it back to Python
//                         (PyErr_SetInterruptEx) when it ends or wakes to run handlers, so that a
//                         Python op the run executes on the main thread does not take the
//                         KeyboardInterrupt meant for the run;
//   watcher thread        (one per process, started at the first call) reads the signal numbers
//                         from the pipe and acts on the main thread's calls in progress:
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
// A canceled run ends only once what it waits for ends: a run whose Python op (a TapeMachine's,
// called inline on the run's thread: the helper, or the main thread) blocks in a channel operation
// would keep the main thread waiting for it, and a handler's exception or Ctrl-C would never leave
// the call. So a Python op runs in a RunScope (native.h, set by graph.cc): its channel operations
// and selects also wait on the run's context and raise the run's error once it is done, and the
// runs it starts are children of that context. An InterruptScope inside a RunScope whose run is
// done only ends (finish): the op's call raises the run's CanceledError and the SIGINT stays
// counted for the run's own scope further out, so Ctrl-C is the run's KeyboardInterrupt.
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
// that hooks a signal puts the handler in place, the last one restores the previous one — unless
// a Python handler run meanwhile set a new disposition (signal.signal), which is then kept.
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
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

// The pipe's write end, and the handler each hooked signal had before: read by the handler, set
// before the handler is put in place (the sigaction call orders them).
std::atomic<int> g_pipe_write{-1};
std::array<struct sigaction, NSIG> g_previous{};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free atomics");

// SIGINTs the handler counted, and (GIL held) how many of them were handed back to Python.
// Release on increment, acquire on read: who sees the count also sees what came before it.
std::atomic<unsigned long long> g_sigint_count{0};
unsigned long long g_sigint_handed = 0;
static_assert(std::atomic<unsigned long long>::is_always_lock_free,
              "the signal handler needs lock-free atomics");

// Hands the SIGINTs counted since the last call back to Python (PyErr_SetInterruptEx: Python's
// handler runs at its next check). GIL held.
void hand_back_sigints() {
  const unsigned long long n = g_sigint_count.load(std::memory_order_acquire);
  if (n == g_sigint_handed) return;
  g_sigint_handed = n;
  PyErr_SetInterruptEx(SIGINT);
}

extern "C" void on_signal(int signo, siginfo_t* info, void* uctx) {
  const int saved = errno;
  if (signo > 0 && signo < NSIG) {
    const struct sigaction& prev = g_previous[static_cast<size_t>(signo)];
    if (signo == SIGINT) {
      // Not passed on to Python's handler now: a Python op running on the main thread would take
      // the KeyboardInterrupt meant for the run. The run is canceled, and the call hands the
      // SIGINT back to Python (hand_back_sigints).
      g_sigint_count.fetch_add(1, std::memory_order_release);
    } else if ((prev.sa_flags & SA_SIGINFO) != 0) {
      if (prev.sa_sigaction != nullptr) prev.sa_sigaction(signo, info, uctx);
    } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN &&
               prev.sa_handler != nullptr) {
      prev.sa_handler(signo);
    }
    // After Python's handler recorded it: whoever the byte wakes sees the signal pending.
    const auto byte = static_cast<unsigned char>(signo);
    // Non-blocking: when the pipe is full the watcher has bytes to read anyway.
    [[maybe_unused]] const ssize_t n =
        write(g_pipe_write.load(std::memory_order_relaxed), &byte, 1);
  }
  errno = saved;
}

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
  // Scopes in progress that hooked each signal (changed by the main thread only).
  std::array<int, NSIG> hooked CHANFLOW_GUARDED_BY(mu){};
  // The process whose watcher reads the pipe (fork-safe), and the pipe's ends.
  pid_t watcher_pid CHANFLOW_GUARDED_BY(mu) = 0;
  int read_fd CHANFLOW_GUARDED_BY(mu) = -1;
  // Taken at the first scope (GIL held): Python's main thread, and _signal.getsignal with the
  // signal numbers to ask it about.
  bool python_ready = false;
  unsigned long main_ident = 0;
  py::object getsignal;
  PyCFunction getsignal_c = nullptr;  // its C function, when it is a METH_O builtin
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
  fcntl(fds[1], F_SETFL, O_NONBLOCK);
  std::thread(&watch, fds[0]).detach();  // lives as long as the process, blocked in read()
  g_pipe_write.store(fds[1], std::memory_order_relaxed);
  s.read_fd = fds[0];
  s.watcher_pid = getpid();
}

// GIL held.
bool on_python_main_thread(State& s) {
  if (!s.python_ready) {
    s.main_ident =
        py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
    // The C function, not signal.getsignal: that one converts the handler to an enum member and
    // raises (and catches) a ValueError for every Python-level handler, microseconds per call.
    s.getsignal = py::module_::import("_signal").attr("getsignal");
    // Called as C (about 60 calls per scope: a third of their cost is the generic call path)
    // when it is the one-argument builtin it is in CPython.
    if (PyCFunction_Check(s.getsignal.ptr()) != 0 &&
        (PyCFunction_GET_FLAGS(s.getsignal.ptr()) &
         (METH_VARARGS | METH_FASTCALL | METH_NOARGS | METH_O | METH_KEYWORDS)) == METH_O) {
      s.getsignal_c = PyCFunction_GET_FUNCTION(s.getsignal.ptr());
    }
    for (int signo = 1; signo < NSIG; ++signo) {
      if (signo != SIGKILL && signo != SIGSTOP) {
        s.signal_numbers.push_back(py::int_(signo));
      }
    }
    s.python_ready = true;
  }
  return PyThread_get_thread_ident() == s.main_ident;
}

// The signals that have a Python-level handler now (a callable, not SIG_DFL, SIG_IGN or None),
// as bit signo - 1. GIL held; throws error_already_set if getsignal fails.
unsigned long long python_handled(State& s) {
  static_assert(NSIG - 1 <= 64, "a signal set of 64 bits");
  unsigned long long out = 0;
  for (const py::object& signo : s.signal_numbers) {
    PyObject* h = s.getsignal_c != nullptr
                      ? s.getsignal_c(PyCFunction_GET_SELF(s.getsignal.ptr()), signo.ptr())
                      : PyObject_CallOneArg(s.getsignal.ptr(), signo.ptr());
    if (h == nullptr) throw py::error_already_set();
    if (PyCallable_Check(h) != 0) out |= 1ULL << (PyLong_AsLong(signo.ptr()) - 1);
    Py_DECREF(h);
  }
  return out;
}

// Puts on_signal in front of the current handler of each signal in `set` (its first hook) or
// counts one more hook. Main thread, GIL held.
void hook(State& s, unsigned long long set) CHANFLOW_REQUIRES(s.mu) {
  for (int signo = 1; signo < NSIG; ++signo) {
    const auto i = static_cast<size_t>(signo);
    if ((set & (1ULL << (signo - 1))) == 0 || s.hooked[i]++ != 0) continue;
    struct sigaction sa {};
    sa.sa_sigaction = &on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigaction(signo, &sa, &g_previous[i]);
  }
}

// Undoes hook(): the last hook of a signal restores its previous handler — unless a disposition
// set meanwhile (a Python handler's signal.signal while a helper ran the run) replaced on_signal:
// that one is kept.
void unhook(State& s, unsigned long long set) CHANFLOW_REQUIRES(s.mu) {
  for (int signo = 1; signo < NSIG; ++signo) {
    const auto i = static_cast<size_t>(signo);
    if ((set & (1ULL << (signo - 1))) == 0 || --s.hooked[i] != 0) continue;
    struct sigaction current {};
    sigaction(signo, &g_previous[i], &current);
    if ((current.sa_flags & SA_SIGINFO) == 0 || current.sa_sigaction != &on_signal) {
      sigaction(signo, &current, nullptr);
    }
  }
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

// The innermost RunScope's context on this thread.
thread_local const Context* t_run = nullptr;

}  // namespace

RunScope::RunScope(const Context& ctx) noexcept : previous_(t_run) { t_run = &ctx; }

RunScope::~RunScope() { t_run = previous_; }

const Context* current_run() noexcept { return t_run; }

Context run_parent() { return t_run != nullptr ? *t_run : background(); }

InterruptScope::InterruptScope(const Context& ctx, Mode mode, Handoff* handoff)
    : run_(current_run()) {
  State& s = state();
  if (!on_python_main_thread(s)) return;
  hooked_ = python_handled(s);
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
    hook(s, hooked_);
  }
  record_ = record;
  active_ = true;
  // A signal that came just before the handler was in place only set Python's flag: run its
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
    unhook(s, hooked_);
  }
  delete record;
  record_ = nullptr;
  active_ = false;
  return signals;
}

bool InterruptScope::finish(bool completed) {
  if (!active_) return false;
  if (run_ != nullptr && run_->err()) {
    // The run this call belongs to is over: the caller raises its error. SIGINTs stay counted
    // for the run's own scope (further out on this thread: a Python op runs on the main thread
    // only under an inline run), which hands them back as it ends; other pending handlers run
    // at the interpreter's next check, in the op.
    end();
    return false;
  }
  const unsigned long long signals = end();
  hand_back_sigints();          // after the restore: a SIGINT from now on goes to Python's handler
  if (completed) return false;  // the interpreter runs pending handlers as the call returns
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  return signals > 0;
}

void run_interruptibly(const Context& ctx, const std::function<void()>& body) {
  Handoff job;  // used when signals other than SIGINT may come
  job.body = &body;
  InterruptScope interrupt(ctx, InterruptScope::Mode::kRun, &job);
  std::exception_ptr error;
  if (!interrupt.other_signals()) {
    // Not on the main thread, or only SIGINT can come: it cancels the run.
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
      hand_back_sigints();
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
