// fork_test.cc — a fork()ed child of a process whose runtime ran works (fork.h): its schedulers
// (the default one and explicit ones made in the parent) start new workers, timers fire, a
// recording in progress in the parent is not continued but the child can record. Every case runs
// the child's part in a real child process, which _exit()s with a status the parent checks; the
// parent waits for it with a deadline (poll on a pipe the child holds), so a regression fails as
// "the child hung" instead of hanging the suite.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>

#include "chanflow/runtime.h"
#include "runtime_test_util.h"
#include "sanitizer.h"  // white-box: src/runtime (CHANFLOW_TSAN)

using namespace std::chrono_literals;

namespace {

constexpr int kChildLimitMs = 30'000;

// Runs `child` in a fork()ed child; returns its exit status (0: it returned 0), or -1 when it
// did not end within kChildLimitMs (it is killed then).
int status_of_child(const std::function<int()>& child) {
  int fds[2];
  if (pipe(fds) != 0) return -2;
  const pid_t pid = fork();
  if (pid < 0) return -2;
  if (pid == 0) {
    close(fds[0]);
    int status = 98;
    try {
      status = child();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      status = 99;
    }
    _exit(status);  // the write end closes with the process: the parent's poll sees POLLHUP
  }
  close(fds[1]);
  pollfd p{fds[0], POLLIN, 0};
  const int ready = poll(&p, 1, kChildLimitMs);
  close(fds[0]);
  if (ready <= 0) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return -1;
  }
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return -2;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Green threads on the default scheduler (cf::go from this OS thread): a ping-pong, sleeps (the
// timer thread), after(), a WaitGroup. 0 when all of it worked.
int use_the_runtime() {
  auto ping = cf::make_chan<int>(0);
  auto pong = cf::make_chan<int>(0);
  cf::go([ping, pong] {
    for (int i = 0; i < 100; ++i) pong.send(*ping.recv() + 1);
  });
  for (int i = 0; i < 100; ++i) {
    ping.send(i);
    if (pong.recv() != i + 1) return 1;
  }
  cf::WaitGroup wg;
  auto sum = cf::make_chan<int>(8);
  for (int i = 0; i < 8; ++i) {
    wg.add(1);
    cf::go([&wg, sum, i] {
      cf::sleep_for(1ms);
      sum.send(i);
      wg.done();
    });
  }
  wg.wait();
  int total = 0;
  for (int i = 0; i < 8; ++i) total += *sum.recv();
  if (total != 28) return 2;
  if (!cf::after(5ms).recv()) return 3;
  return 0;
}

class Fork : public WorkersFixture {
 protected:
  void SetUp() override {
#if defined(CHANFLOW_TSAN)
    // ThreadSanitizer does not support a child that starts threads after a multi-threaded fork
    // (it kills it by default; with die_after_fork=0 it reports races on the TLS of the
    // parent's threads, which the child's new threads reuse). ASan runs these tests.
    GTEST_SKIP() << "ThreadSanitizer does not support threads started after fork()";
#endif
    WorkersFixture::SetUp();
  }
};

TEST_P(Fork, ChildOfAnIdleRuntimeWorks) { EXPECT_EQ(status_of_child(use_the_runtime), 0); }

TEST_P(Fork, ChildWorksAfterTheParentRanGreenThreadsAndTimers) {
  ASSERT_EQ(use_the_runtime(), 0);
  // Parked in the parent when it forks: a green thread waiting on a channel, one sleeping (a
  // timer in the heap), on the fixture's scheduler (installed as cf::go's default) and on the
  // process-wide one.
  auto never = cf::make_chan<int>(0);
  auto done = cf::make_chan<int>(1);
  cf::go([never] { (void)never.recv(); });
  cf::go([done] {
    cf::sleep_for(200ms);
    done.send(1);
  });
  wait_until([&] { return all_parked(sched()); });
  EXPECT_EQ(status_of_child(use_the_runtime), 0);
  // The child's own use of the fixture's Scheduler object, made in the parent.
  EXPECT_EQ(status_of_child([this] {
              auto ch = cf::make_chan<int>(0);
              sched().go([ch] { ch.send(7); });
              return ch.recv() == 7 ? 0 : 1;
            }),
            0);
  // A fork of a fork.
  EXPECT_EQ(status_of_child([] { return status_of_child(use_the_runtime); }), 0);
  // The parent is unaffected.
  EXPECT_EQ(done.recv(), 1);
  never.close();
  EXPECT_EQ(use_the_runtime(), 0);
}

TEST_P(Fork, ChildDestroysASchedulerOfTheParentAtOnce) {
  auto own = std::make_unique<cf::Scheduler>(cf::SchedulerOptions{.workers = GetParam()});
  auto never = cf::make_chan<int>(0);
  own->go([never] { (void)never.recv(); });  // parked forever in the parent
  EXPECT_EQ(status_of_child([&own] {
              own.reset();  // the parent's green thread does not exist here: nothing to wait for
              return 0;
            }),
            0);
  never.close();
}

TEST_P(Fork, ChildTimesOutAndDetectsDeadlock) {
  ASSERT_EQ(use_the_runtime(), 0);
  EXPECT_EQ(status_of_child([] {
              const cf::Context ctx = cf::with_timeout(cf::background(), 20ms);
              (void)ctx.done().recv();  // the deadline's timer fires in the child
              if (!ctx.err()) return 1;
              try {
                (void)cf::make_chan<int>(0).recv();  // nothing can wake this: DeadlockError
              } catch (const cf::DeadlockError&) {
                return 0;
              }
              return 2;
            }),
            0);
}

TEST_P(Fork, ChildOfARecordingProcessDoesNotContinueItButCanRecord) {
  cf::trace::start();
  ASSERT_EQ(use_the_runtime(), 0);
  EXPECT_EQ(status_of_child([] {
              if (cf::trace::enabled()) return 1;
              cf::trace::stop();  // nothing to stop here
              cf::trace::start();
              if (use_the_runtime() != 0) return 2;
              cf::trace::stop();
              return cf::trace::to_json().find("\"complete\":true") != std::string::npos ? 0 : 3;
            }),
            0);
  ASSERT_EQ(use_the_runtime(), 0);
  cf::trace::stop();
  EXPECT_NE(cf::trace::to_json().find("\"complete\":true"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Workers, Fork, CHANFLOW_WORKER_COUNTS);

}  // namespace
