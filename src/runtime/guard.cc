// guard.cc — reporting a green thread's stack overflow instead of corrupting memory.
//
// A guarded stack overflows into its PROT_NONE page and the kernel raises SIGSEGV on the worker.
// The handler runs on the worker's alternate signal stack (the faulting stack is unusable), finds
// the slot the fault hit from the chunk registry, reads the task header at the top of that slot,
// writes the green thread's name with write(2) and aborts. Faults elsewhere go to the previous
// handler (ASan's, or the default action).
#include <unistd.h>
#include <csignal>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "stack_pool.h"
#include "task.h"

namespace chanflow::detail {
namespace {

struct sigaction g_previous;
std::once_flag g_install_once;
thread_local void* t_alt_stack = nullptr;
constexpr std::size_t kAltStackSize = std::size_t{64} * 1024;

void write_str(const char* s) noexcept {
  std::size_t n = std::strlen(s);
  while (n > 0) {
    ssize_t w = write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<std::size_t>(w);
  }
}

void on_segv(int sig, siginfo_t* info, void* uctx) {
  char* top = nullptr;
  if (sig == SIGSEGV && find_guard_hit(info->si_addr, &top)) {
    const Task* t = task_at(top);
    write_str("chanflow: stack overflow in green thread '");
    // The name's characters live on the task header, above the fault: readable.
    if (t->name.empty()) {
      write_str("(unnamed)");
    } else {
      write_str(t->name.c_str());
    }
    write_str(
        "': it ran past its stack (raise SchedulerOptions::stack_size or "
        "CHANFLOW_STACK_SIZE)\n");
    signal(SIGABRT, SIG_DFL);
    abort();
  }
  // Not ours: hand over to whoever was installed before us.
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(sig, info, uctx);
    return;
  }
  if (g_previous.sa_handler == SIG_IGN) return;
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != nullptr) {
    g_previous.sa_handler(sig);
    return;
  }
  // Default action: restore it and return; the faulting instruction runs again and kills us.
  signal(sig, SIG_DFL);
}

}  // namespace

void install_overflow_handler() noexcept {
  std::call_once(g_install_once, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = &on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_previous);
  });
  if (t_alt_stack == nullptr) {
    t_alt_stack = std::malloc(kAltStackSize);
    if (t_alt_stack == nullptr) return;
    stack_t ss;
    std::memset(&ss, 0, sizeof(ss));
    ss.ss_sp = t_alt_stack;
    ss.ss_size = kAltStackSize;
    sigaltstack(&ss, nullptr);
  }
}

void release_alt_stack() noexcept {
  if (t_alt_stack == nullptr) return;
  stack_t ss;
  std::memset(&ss, 0, sizeof(ss));
  ss.ss_flags = SS_DISABLE;
  sigaltstack(&ss, nullptr);
  std::free(t_alt_stack);
  t_alt_stack = nullptr;
}

}  // namespace chanflow::detail
