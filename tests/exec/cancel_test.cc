// Stopping a run from outside: Executor::run(ctx, ...) with a context canceled before the run,
// canceled while the program is blocked (recv, select) or busy (a while loop that never blocks),
// or past its deadline. The run's error is the context's, naming what was still running, and
// run() returns only after every green thread of the run ended. Every case on 1, 2, 4 and 8
// workers.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <string>
#include <thread>

#include "chanflow/core/error.h"
#include "chanflow/exec.h"
#include "chanflow/ir/builder.h"
#include "chanflow/runtime/context.h"

namespace cf = chanflow;
using cf::DType;
using cf::VarType;
using namespace std::chrono_literals;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The programs tell the test they reached the part that never ends by sending on `ready`, a
// channel the test binds (buffered: the send never waits).
struct Ready {
  cf::Channel ch = cf::Channel::make<cf::TensorObj>(64);
  std::map<std::string, cf::Channel> bind() const { return {{"ready", ch}}; }
};

// Cancels `ctx` from an OS thread once the program said it is ready.
class CancelWhenReady {
 public:
  CancelWhenReady(const Ready& r, cf::Context ctx)
      : thread_([ch = r.ch, ctx = std::move(ctx)] {
          ch.recv();
          ctx.cancel();
        }) {}
  ~CancelWhenReady() { thread_.join(); }
  CancelWhenReady(const CancelWhenReady&) = delete;
  CancelWhenReady& operator=(const CancelWhenReady&) = delete;

 private:
  std::thread thread_;
};

// The message of the error `run` throws, which must be of type E.
template <class E, class F>
std::string error_of(F&& run) {
  try {
    run();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong error type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no error";
  return {};
}

class ExecutorCancel : public testing::TestWithParam<int> {
 protected:
  cf::Executor ex_{{.workers = GetParam()}};
};

// A context canceled (or past its deadline) before run() is called: nothing of the program runs.
TEST_P(ExecutorCancel, ContextDoneBeforeTheRunRunsNothing) {
  cf::ProgramBuilder b;
  cf::Var ready = b.declare_channel("ready", VarType::kFP64, 0);
  b.channel_send(ready, b.fill_constant({1}, DType::kFloat64, 1));
  cf::Program p = b.build();
  Ready r;
  cf::Context canceled = cf::with_cancel(cf::background());
  canceled.cancel();
  std::string m = error_of<cf::CanceledError>([&] { ex_.run(canceled, p, {}, {}, r.bind()); });
  EXPECT_TRUE(contains(m, "canceled before the run started")) << m;
  cf::Context expired = cf::with_deadline(cf::background(), cf::Clock::now() - 1s);
  m = error_of<cf::DeadlineExceededError>([&] { ex_.run_scope(expired, p, {}, r.bind()); });
  EXPECT_TRUE(contains(m, "passed its deadline before the run started")) << m;
  EXPECT_EQ(r.ch->size(), 0u) << "an op of the program ran";
  // The executor runs the next program as usual.
  ex_.run(p, {}, {}, r.bind());
  EXPECT_EQ(r.ch->size(), 1u);
}

// The CPU time this process has used, all threads together. Unlike wall time it does not grow
// while the host runs other work, so comparing two runs' CPU time holds on a loaded machine.
std::chrono::nanoseconds process_cpu_time() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

// A run canceled while a large elementwise kernel computes stops between the kernel's chunks: it
// does a small part of the kernel's work. Block 0 starts a go block that says `ready` and goes
// straight on to the kernel, so the cancel, made when `ready` arrives, finds it inside the kernel
// (a green thread's start, its send and the test thread's wake-up take longer than block 0's step
// to the next op; had the cancel come first, the kernel would not run and the test would only
// pass, never fail). The same program run without canceling measures the kernel's work on this
// machine, so the bound needs no guess. Work is CPU time from `ready` to run()'s return, not wall
// time: on a busy host a worker may wait for a core long after the cancel, which says nothing
// about how much of the kernel ran (a kernel that ignored the cancel would spend its full CPU
// time however the host is loaded).
TEST_P(ExecutorCancel, CancelStopsALargeKernelBetweenChunks) {
  cf::ProgramBuilder b;
  cf::Var ready = b.declare_channel("ready", VarType::kFP64, 0);
  cf::Var x = b.fill_constant({4096, 4096}, DType::kFloat64, 0.5);
  cf::Var one = b.fill_constant({1}, DType::kFloat64, 1);
  {
    auto g = b.go();
    b.channel_send(ready, one);
  }
  cf::Var y = b.tanh(x);
  cf::Program p = b.build();
  struct Spent {
    std::chrono::nanoseconds cpu, wall;
  };
  // Runs p; returns the CPU and wall time from `ready` to run()'s return, and the run's error.
  auto timed = [&](bool cancel, std::string* error) {
    Ready r;
    cf::Context ctx = cf::with_cancel(cf::background());
    cf::Clock::time_point reached;
    std::chrono::nanoseconds reached_cpu{};
    std::thread watcher([&] {
      r.ch.recv();
      reached_cpu = process_cpu_time();
      reached = cf::Clock::now();
      if (cancel) ctx.cancel();
    });
    error->clear();
    try {
      ex_.run(ctx, p, {}, {y.name()}, r.bind());
    } catch (const cf::CanceledError& e) {
      *error = e.what();
    }
    const cf::Clock::time_point done = cf::Clock::now();
    const std::chrono::nanoseconds done_cpu = process_cpu_time();
    watcher.join();
    return Spent{done_cpu - reached_cpu, done - reached};
  };
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::string error;
  const Spent full = timed(false, &error);
  EXPECT_EQ(error, "");
  for (int i = 0; i < 3; ++i) {
    const Spent canceled = timed(true, &error);
    EXPECT_TRUE(contains(error, "canceled: the run's context was canceled")) << error;
    EXPECT_LT(canceled.cpu * 4, full.cpu)
        << "canceled after " << ms(canceled.cpu) << " ms of CPU (" << ms(canceled.wall)
        << " ms wall); the kernel takes " << ms(full.cpu) << " ms of CPU (" << ms(full.wall)
        << " ms wall)";
  }
}

// Block 0 and a go block wait in channel_recv on a channel nobody sends on; canceling wakes both,
// and the error names both threads. The go block's scope (which holds `ready`) is gone when run()
// returns: its green thread ended. (Which op each thread is at depends on how far it got when the
// context was canceled: usually the receive it waits in; the ops are checked where they are
// certain, in DeadlineStopsBusyAndBlockedRuns.)
TEST_P(ExecutorCancel, CancelWakesBlockedReceives) {
  cf::ProgramBuilder b;
  cf::Var ready = b.declare_channel("ready", VarType::kFP64, 0);
  cf::Var never = b.make_channel(DType::kFloat64, 0, "never");
  cf::Var one = b.fill_constant({1}, DType::kFloat64, 1);
  {
    auto g = b.go();
    b.channel_send(ready, one);
    b.channel_recv(never);
  }
  b.channel_recv(never);
  cf::Program p = b.build();
  Ready r;
  cf::Context ctx = cf::with_cancel(cf::background());
  std::string m;
  {
    CancelWhenReady canceler(r, ctx);
    m = error_of<cf::CanceledError>([&] { ex_.run(ctx, p, {}, {}, r.bind()); });
  }
  EXPECT_EQ(m.rfind("canceled: the run's context was canceled; still running: block 0, op ", 0), 0u)
      << m;
  EXPECT_TRUE(contains(m, "') on the calling thread; block 1, op ")) << m;
  EXPECT_TRUE(contains(m, "') in green thread go@block1#1")) << m;
  EXPECT_EQ(r.ch.use_count(), 1) << "a scope of the run still holds the bound channel";
}

// A go block waits in a select with no ready case; canceling wakes it.
TEST_P(ExecutorCancel, CancelWakesABlockedSelect) {
  cf::ProgramBuilder b;
  cf::Var ready = b.declare_channel("ready", VarType::kFP64, 0);
  cf::Var never = b.make_channel(DType::kFloat64, 0, "never");
  cf::Var one = b.fill_constant({1}, DType::kFloat64, 1);
  {
    auto g = b.go();
    b.channel_send(ready, one);
    auto s = b.select();
    { auto c = s.case_recv(never); }
  }
  cf::Program p = b.build();
  Ready r;
  cf::Context ctx = cf::with_cancel(cf::background());
  std::string m;
  {
    CancelWhenReady canceler(r, ctx);
    m = error_of<cf::CanceledError>([&] { ex_.run(ctx, p, {}, {}, r.bind()); });
  }
  EXPECT_TRUE(contains(m, "') in green thread go@block1#1")) << m;
  EXPECT_EQ(r.ch.use_count(), 1);
}

// A `while` that never blocks, on the calling thread and in a go block per worker (every worker
// busy): cancellation is seen between ops.
TEST_P(ExecutorCancel, CancelStopsBusyLoops) {
  cf::ProgramBuilder b;
  cf::Var ready = b.declare_channel("ready", VarType::kFP64, 0);
  cf::Var yes = b.fill_constant({1}, DType::kBool, 1);
  cf::Var one = b.fill_constant({1}, DType::kFloat64, 1);
  for (int g = 0; g < GetParam(); ++g) {
    auto go = b.go();
    b.channel_send(ready, one);
    auto w = b.while_loop(yes);
    b.logical_not(b.logical_not(yes));
  }
  b.channel_send(ready, one);
  {
    auto w = b.while_loop(yes);
    b.logical_not(b.logical_not(yes));
  }
  cf::Program p = b.build();
  Ready r;
  cf::Context ctx = cf::with_cancel(cf::background());
  std::thread canceler([&] {
    for (int i = 0; i <= GetParam(); ++i) r.ch.recv();  // every loop has started
    ctx.cancel();
  });
  const std::string m = error_of<cf::CanceledError>([&] { ex_.run(ctx, p, {}, {}, r.bind()); });
  canceler.join();
  EXPECT_TRUE(contains(m, "') on the calling thread")) << m;
  EXPECT_TRUE(contains(m, "') in green thread go@block")) << m;
  EXPECT_EQ(r.ch.use_count(), 1);
}

// A deadline ends a busy loop and a blocked receive alike, with DeadlineExceededError. (A pending
// deadline is a timer: a program blocked until it is not a deadlock.)
TEST_P(ExecutorCancel, DeadlineStopsBusyAndBlockedRuns) {
  cf::ProgramBuilder busy;
  {
    cf::Var yes = busy.fill_constant({1}, DType::kBool, 1);
    auto w = busy.while_loop(yes);
    busy.logical_not(busy.logical_not(yes));
  }
  std::string m = error_of<cf::DeadlineExceededError>(
      [&] { ex_.run(cf::with_timeout(cf::background(), 50ms), busy.build()); });
  EXPECT_EQ(m.rfind("deadline exceeded: the run's context passed its deadline; still running: "
                    "block 1, op ",
                    0),
            0u)
      << m;

  // The go block has started (it took `start` from block 0) when block 0 waits in its last op;
  // both wait in a receive when the deadline passes, 50 ms later.
  cf::ProgramBuilder blocked;
  cf::Var start = blocked.make_channel(DType::kFloat64, 0, "start");
  cf::Var never = blocked.make_channel(DType::kFloat64, 0, "never");
  {
    auto g = blocked.go();
    blocked.channel_recv(start);
    blocked.channel_recv(never);
  }
  blocked.channel_send(start, blocked.fill_constant({1}, DType::kFloat64, 1));
  blocked.channel_recv(never);
  m = error_of<cf::DeadlineExceededError>(
      [&] { ex_.run(cf::with_timeout(cf::background(), 50ms), blocked.build()); });
  EXPECT_TRUE(contains(m, "'channel_recv') on the calling thread")) << m;
  EXPECT_TRUE(contains(m, "'channel_recv') in green thread go@block1#1")) << m;
}

// A run with many threads names the first 16 and counts the others, so the message stays short.
TEST_P(ExecutorCancel, TheReportOfManyThreadsIsBounded) {
  constexpr int kGoBlocks = 40;
  cf::ProgramBuilder b;
  cf::Var ready = b.declare_channel("ready", VarType::kFP64, 0);
  cf::Var never = b.make_channel(DType::kFloat64, 0, "never");
  cf::Var one = b.fill_constant({1}, DType::kFloat64, 1);
  for (int g = 0; g < kGoBlocks; ++g) {
    auto go = b.go();
    b.channel_send(ready, one);
    b.channel_recv(never);
  }
  b.channel_recv(never);
  cf::Program p = b.build();
  Ready r;
  cf::Context ctx = cf::with_cancel(cf::background());
  std::thread canceler([&] {
    for (int i = 0; i < kGoBlocks; ++i) r.ch.recv();  // every go block has started
    ctx.cancel();
  });
  const std::string m = error_of<cf::CanceledError>([&] { ex_.run(ctx, p, {}, {}, r.bind()); });
  canceler.join();
  // The calling thread and 15 go blocks are named; 25 go blocks are counted.
  EXPECT_TRUE(contains(m, "; and 25 more green threads")) << m;
  EXPECT_LT(m.size(), 2000u) << m;
}

INSTANTIATE_TEST_SUITE_P(Workers, ExecutorCancel, testing::Values(1, 2, 4, 8));

}  // namespace
