// interrupt.cc — Ctrl-C stops a run on Python's main thread and raises KeyboardInterrupt.
//
// Python's own SIGINT handler only sets a flag that the main thread checks between bytecodes; a
// main thread blocked in Executor.run (GIL released, waiting on the run) never gets there, so
// Ctrl-C would do nothing until the program ended by itself. While a run is in progress on the
// main thread, this module therefore puts its own handler in place of Python's:
//
//   handler (any thread)   counts the signal in a lock-free atomic and writes one byte to a pipe —
//                          nothing else, so it is async-signal-safe;
//   watcher thread         (one per process, started at the first such run) reads the pipe and
//                          cancels the Context of every main-thread run in progress;
//   the run                returns CanceledError, naming what was running; with the GIL held
//                          again the previous handler is restored and, if a SIGINT came during the
//                          run, it is handed back to Python (PyErr_SetInterruptEx +
//                          PyErr_CheckSignals), so Python's handler decides: the default one
//                          raises KeyboardInterrupt; a user handler that returns lets the run's
//                          CanceledError propagate. The process stays usable: the next run
//                          installs the handler again.
//
// Polling is not used (releasing and re-taking the GIL every few milliseconds to call
// PyErr_CheckSignals): it would need the run on another thread or a timed wait in a loop, cost a
// wake-up per period for every run, and add up to a period of latency; the pipe wakes the watcher
// only when a signal comes.
//
// The handler is installed only on the main thread (where Python delivers SIGINT) and only when
// Python's SIGINT handler is a Python-level one (default_int_handler or a user callable): with
// SIG_IGN or SIG_DFL, or when Python did not install a handler (an embedding application), the
// disposition is left alone and Ctrl-C does what it did before. Runs started from other Python
// threads are not stopped by SIGINT: Python raises KeyboardInterrupt in the main thread only,
// whose code may then stop them (a timeout, closing what they wait on). Installations are
// counted, so overlapping scopes restore the original handler once, when the last one ends.
// Repeated Ctrl-C during one run cancels again (idempotent) and is handed back to Python once.
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>
#include <vector>

#include "chanflow/core/error.h"
#include "chanflow/core/locks.h"
#include "chanflow/runtime/external_waiter.h"
#include "native.h"

namespace chanflow::python {
namespace {

// SIGINTs the handler counted. Release on increment, acquire on read: whoever sees a run canceled
// by the watcher (which read the count after the handler's byte) also sees the increment.
std::atomic<unsigned long long> g_sigint_count{0};
// The pipe's write end, read by the handler.
std::atomic<int> g_pipe_write{-1};
static_assert(std::atomic<unsigned long long>::is_always_lock_free &&
                  std::atomic<int>::is_always_lock_free,
              "the signal handler needs lock-free atomics");

extern "C" void on_sigint(int /*signo*/) {
  const int saved = errno;
  g_sigint_count.fetch_add(1, std::memory_order_release);
  const unsigned char byte = 1;
  // Non-blocking: when the pipe is full the watcher has bytes to read anyway.
  [[maybe_unused]] const ssize_t n = write(g_pipe_write.load(std::memory_order_relaxed), &byte, 1);
  errno = saved;
}

struct RunRecord {
  Context ctx;
};

struct State {
  os::Mutex mu;
  // Main-thread runs in progress.
  std::vector<RunRecord*> runs CHANFLOW_GUARDED_BY(mu);
  // InterruptScopes that installed the handler, and what the first of them replaced.
  int installed CHANFLOW_GUARDED_BY(mu) = 0;
  struct sigaction previous CHANFLOW_GUARDED_BY(mu) {};
  // The process whose watcher reads the pipe (fork-safe), and the pipe's read end.
  pid_t watcher_pid CHANFLOW_GUARDED_BY(mu) = 0;
  int read_fd CHANFLOW_GUARDED_BY(mu) = -1;
  // Python objects for the checks, taken at the first scope (GIL held).
  py::object getsignal, main_ident;
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
    unsigned char buf[64];
    const ssize_t n = read(read_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the pipe broke: nothing more can come
    (void)g_sigint_count.load(std::memory_order_acquire);
    State& s = state();
    os::LockGuard lock(s.mu);
    for (RunRecord* r : s.runs) r->ctx.cancel();
  }
}

// Starts the watcher of this process (again after a fork: threads do not survive it).
void ensure_watcher(State& s) CHANFLOW_REQUIRES(s.mu) {
  if (s.watcher_pid == getpid()) return;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    CHANFLOW_THROW(Error) << "cannot create the pipe that forwards SIGINT: "
                          << std::strerror(errno);
  }
  fcntl(fds[1], F_SETFL, O_NONBLOCK);
  std::thread(&watch, fds[0]).detach();  // lives as long as the process, blocked in read()
  g_pipe_write.store(fds[1], std::memory_order_relaxed);
  s.read_fd = fds[0];
  s.watcher_pid = getpid();
}

// GIL held.
bool should_install(State& s) {
  if (!s.getsignal) {
    // The C function, not signal.getsignal: that one converts the handler to an enum member and
    // raises (and catches) a ValueError for every Python-level handler, microseconds per call
    // (channel operations on the main thread install a scope per blocking call).
    s.getsignal = py::module_::import("_signal").attr("getsignal");
    s.main_ident = py::module_::import("threading").attr("main_thread")().attr("ident");
  }
  if (py::int_(PyThread_get_thread_ident()).not_equal(s.main_ident)) return false;
  py::object handler = s.getsignal(SIGINT);
  return PyCallable_Check(handler.ptr()) != 0;  // not SIG_IGN, SIG_DFL or None
}

}  // namespace

InterruptScope::InterruptScope(const Context& ctx) {
  State& s = state();
  if (!should_install(s)) return;
  auto* record = new RunRecord{ctx};
  {
    os::LockGuard lock(s.mu);
    try {
      ensure_watcher(s);
      s.runs.push_back(record);
    } catch (...) {
      delete record;
      throw;
    }
    // Read before the handler is in place: every SIGINT it counts from here belongs to this run.
    start_count_ = g_sigint_count.load(std::memory_order_acquire);
    if (s.installed++ == 0) {
      struct sigaction sa {};
      sa.sa_handler = &on_sigint;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART | SA_ONSTACK;
      sigaction(SIGINT, &sa, &s.previous);
    }
  }
  record_ = record;
  active_ = true;
  // A SIGINT that came just before the handler was replaced went to Python's handler, which only
  // set its flag: deliver it now (KeyboardInterrupt before the run starts) instead of losing it
  // for the whole run.
  if (PyErr_CheckSignals() != 0) {
    end();
    throw py::error_already_set();
  }
}

InterruptScope::~InterruptScope() {
  if (active_) end();
}

void InterruptScope::end() noexcept {
  State& s = state();
  auto* record = static_cast<RunRecord*>(record_);
  {
    os::LockGuard lock(s.mu);
    s.runs.erase(std::remove(s.runs.begin(), s.runs.end(), record), s.runs.end());
    if (--s.installed == 0) sigaction(SIGINT, &s.previous, nullptr);
  }
  delete record;
  record_ = nullptr;
  active_ = false;
}

bool InterruptScope::finish() {
  if (!active_) return false;
  end();
  // After the restore: a SIGINT from now on goes to Python's handler directly.
  if (g_sigint_count.load(std::memory_order_acquire) == start_count_) return false;
  PyErr_SetInterruptEx(SIGINT);
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  return true;
}

}  // namespace chanflow::python
