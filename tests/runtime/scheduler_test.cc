// Scheduler: spawning, yielding, parking from OS threads, teardown.
#include <sched.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "runtime_test_util.h"
#include "sanitizer.h"  // white-box: src/runtime (CHANFLOW_TSAN)
#include "task.h"       // white-box: resume_lines

namespace {

using Scheduler = WorkersFixture;

TEST_P(Scheduler, RunsManyGreenThreads) {
  constexpr int kN = 20000;
  std::atomic<int> ran{0};
  cf::WaitGroup wg;
  wg.add(kN);
  for (int i = 0; i < kN; ++i) {
    cf::go([&] {
      ran++;
      wg.done();
    });
  }
  wg.wait();
  EXPECT_EQ(ran.load(), kN);
  EXPECT_EQ(sched().workers(), GetParam());
}

// What a worker prefetches before a green thread runs (task.h, resume_lines): lines of the
// thread's own stack, ending at most at its header. Before its first run they cover its callable
// (it starts on the fiber record below it); after a switch-out, the stack just below where it
// switched out and up. The green thread reads its own record (nothing else writes it meanwhile).
TEST_P(Scheduler, ResumeLinesSpanTheSwitchedOutStackUpToTheHeader) {
  auto checked = cf::make_chan<bool>(1);
  cf::go([checked]() mutable {
    cf::detail::Task* t = cf::detail::current_task();
    const char* bottom = t->slot.bottom();
    const char* header_end = reinterpret_cast<const char*>(t + 1);
    auto on_stack = [&](cf::detail::StackLines l) {
      return l.from != nullptr && bottom <= l.from && l.from < l.to && l.to <= header_end &&
             static_cast<std::size_t>(l.to - l.from) <= cf::detail::kResumePrefetchBytes;
    };
    const cf::detail::StackLines first = cf::detail::resume_lines(t);
    const char* fn = static_cast<const char*>(t->fn);
    const bool first_ok =
        t->resume_sp == nullptr && on_stack(first) && first.from < fn && fn < first.to;
    cf::yield();  // always switches out
    const cf::detail::StackLines lines = cf::detail::resume_lines(t);
    const char* sp = static_cast<const char*>(t->resume_sp);
    checked.send(first_ok && on_stack(lines) && lines.from < sp && sp < lines.to);
  });
  EXPECT_TRUE(*checked.recv());
}

TEST_P(Scheduler, GreenThreadsSpawnOnTheirOwnScheduler) {
  cf::Scheduler other({.workers = 1});
  auto ch = cf::make_chan<bool>();
  other.go([&, ch] {
    cf::go([ch] { ch.send(cf::in_green_thread()); });  // runs on `other`
  });
  EXPECT_EQ(ch.recv(), true);
  EXPECT_FALSE(cf::in_green_thread());
}

// live() sums per-worker counters that spawns and exits bump on whichever worker (or OS thread)
// they happen; the sum must never undercount. Every child sees at least itself and its parked
// parent, while spawns come from an OS thread and from green threads on every worker.
TEST_P(Scheduler, LiveCountNeverUndercounts) {
  constexpr int kParents = 16;
  constexpr int kChildren = 300;
  std::atomic<int> undercounts{0};
  cf::WaitGroup parents;
  parents.add(kParents);
  cf::Scheduler& s = sched();
  std::thread spawner([&] {
    for (int p = 0; p < kParents; ++p) {
      s.go([&] {
        cf::WaitGroup children;
        children.add(kChildren);
        for (int c = 0; c < kChildren; ++c) {
          cf::go([&s, &undercounts, &children, c] {
            if (s.live() < 2) undercounts++;
            if (c % 3 == 0) cf::yield();
            children.done();
          });
        }
        children.wait();
        parents.done();
      });
    }
  });
  spawner.join();
  parents.wait();
  EXPECT_EQ(undercounts.load(), 0);
  // Every green thread has exited or is about to: live() reaches 0 and stays there.
  wait_until([&] { return s.live() == 0; });
}

TEST_P(Scheduler, NamesAreVisible) {
  auto ch = cf::make_chan<std::string>();
  cf::go("worker-7", [ch] { ch.send(cf::current_green_thread_name()); });
  EXPECT_EQ(ch.recv(), "worker-7");
  cf::go([ch] { ch.send(cf::current_green_thread_name()); });
  EXPECT_EQ(ch.recv()->front(), '#');
  EXPECT_EQ(cf::current_green_thread_name(), "");
}

TEST_P(Scheduler, YieldLetsOthersRun) {
  std::atomic<int> turns{0};
  std::atomic<bool> stop{false};
  cf::WaitGroup wg;
  wg.add(2);
  cf::go([&] {
    while (!stop) cf::yield();
    wg.done();
  });
  cf::go([&] {
    for (int i = 0; i < 100; ++i) {
      turns++;
      cf::yield();
    }
    stop = true;
    wg.done();
  });
  wg.wait();
  EXPECT_EQ(turns.load(), 100);
}

TEST_P(Scheduler, SleepParksOnlyTheGreenThread) {
  // On one worker too: while `sleeper` sleeps, `runner` completes; the order proves the worker
  // was free.
  auto order = cf::make_chan<std::string>(2);
  cf::go("sleeper", [order] {
    cf::sleep_for(std::chrono::milliseconds(40));
    order.send("sleeper");
  });
  cf::go("runner", [order] { order.send("runner"); });
  EXPECT_EQ(order.recv(), "runner");
  EXPECT_EQ(order.recv(), "sleeper");
}

TEST_P(Scheduler, PlainThreadsHandWorkToGreenThreadsAndWait) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::atomic<int64_t> total{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto results = cf::make_chan<int64_t>();
      for (int i = 0; i < 100; ++i) cf::go([results, t, i] { results.send(t * 1000 + i); });
      for (int i = 0; i < 100; ++i) total += *results.recv();
    });
  }
  for (auto& th : threads) th.join();
  int64_t expect = 0;
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < 100; ++i) expect += t * 1000 + i;
  EXPECT_EQ(total.load(), expect);
}

TEST(SchedulerTeardown, DestructorWaitsForGreenThreads) {
  std::atomic<int> finished{0};
  {
    cf::Scheduler s({.workers = 2});
    for (int i = 0; i < 100; ++i) {
      s.go([&] {
        for (int k = 0; k < 10; ++k) cf::yield();
        cf::sleep_for(std::chrono::milliseconds(1));
        finished++;
      });
    }
  }
  EXPECT_EQ(finished.load(), 100);
}

TEST(SchedulerTeardown, ParkedForeverGreenThreadsAreUnwound) {
  struct Flag {
    std::atomic<int>* n;
    ~Flag() { (*n)++; }
  };
  std::atomic<int> unwound{0};
  auto orphan = cf::make_chan<int>();
  {
    cf::Scheduler s({.workers = 2});
    s.go("nil-waiter", [&] {
      Flag f{&unwound};
      cf::Chan<int>().recv();  // blocks forever
    });
    s.go("orphan-receiver", [&, orphan] {
      Flag f{&unwound};
      orphan.recv();
    });
    wait_until([&] { return parked_receivers(orphan.base()) == 1; });
  }
  EXPECT_EQ(unwound.load(), 2);
  EXPECT_EQ(parked_receivers(orphan.base()), 0u);  // its waiter left the channel
}

// Under ThreadSanitizer a finished green thread's TSan fiber serves a later green thread: libtsan's
// fiber creation zeroes ~0.8 MB (milliseconds each), which made spawn-heavy tests such as
// RunsManyGreenThreads take minutes and look hung. Elsewhere green threads have no TSan fiber.
TEST(SchedulerSanitizers, FinishedGreenThreadsTsanFiberIsReused) {
  cf::Scheduler s({.workers = 1});
  auto fiber_of_a_green_thread = [&] {
    auto ch = cf::make_chan<void*>(1);
    s.go([ch] { ch.send(cf::detail::current_task()->tsan_fiber); });
    void* fiber = ch.recv().value();
    while (s.live() != 0) std::this_thread::yield();  // it finished: its fiber is idle again
    return fiber;
  };
  void* first = fiber_of_a_green_thread();
  void* second = fiber_of_a_green_thread();
#if defined(CHANFLOW_TSAN)
  EXPECT_NE(first, nullptr);
  EXPECT_EQ(first, second);
#else
  EXPECT_EQ(first, nullptr);
  EXPECT_EQ(second, nullptr);
#endif
}

TEST(SchedulerOptions, StackSizeAndWorkers) {
  cf::Scheduler s({.workers = 3, .stack_size = 100000});
  EXPECT_EQ(s.workers(), 3);
  EXPECT_GE(s.stack_size(), 100000u);
  EXPECT_EQ(s.stack_size() % 4096, 0u);
}

TEST(SchedulerOptions, OversizedCallableIsAnError) {
  cf::Scheduler s({.workers = 1, .stack_size = 64 * 1024});
  struct Big {
    char bytes[64 * 1024];
    void operator()() const {}
  };
  auto big = std::make_unique<Big>();
  EXPECT_THROW(s.go(*big), cf::Error);
}

// Starvation by yield loops: n green threads spin on `while (!flag) yield();` and the one that
// sets the flag was spawned first, so it sits at the oldest end of the spawner's local queue.
// yield() puts each looper on the global queue, which is then never empty at a fairness turn;
// when the global queue went first on every turn, the setter never ran with 61 or more loops on
// one worker (a review's reproducer; the turns now alternate). Returns whether the setter ran
// before the deadline; the loops give up at the deadline, so a failure cannot hang.
bool setter_runs_among_yield_loops(int workers, int loops_before, int loops_after) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::atomic<bool> flag{false};
  std::atomic<bool> in_time{false};
  {
    cf::Scheduler s({.workers = workers});
    s.go([&] {
      auto loop = [&] {
        while (!flag.load() && std::chrono::steady_clock::now() < deadline) cf::yield();
      };
      for (int i = 0; i < loops_before; ++i) cf::go(loop);
      cf::go([&] {
        in_time.store(std::chrono::steady_clock::now() < deadline);
        flag.store(true);
      });
      for (int i = 0; i < loops_after; ++i) cf::go(loop);
    });
  }
  return in_time.load();
}

TEST_P(Scheduler, OldestLocalTaskRunsAmongYieldLoops) {
  for (int loops : {61, 200}) {
    EXPECT_TRUE(setter_runs_among_yield_loops(GetParam(), 0, loops)) << loops << " yield loops";
  }
}

TEST_P(Scheduler, TaskBetweenYieldLoopsRuns) {
  EXPECT_TRUE(setter_runs_among_yield_loops(GetParam(), 100, 100));
}

INSTANTIATE_TEST_SUITE_P(Workers, Scheduler, CHANFLOW_WORKER_COUNTS);

}  // namespace

// pin_workers: each worker's OS thread is bound to one CPU of the process's mask, and two workers
// that run at the same time are bound to different CPUs when the process may use two.
TEST(SchedulerPinning, EachWorkerOnItsOwnCpu) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  const int ncpus = CPU_COUNT(&allowed);
  cf::Scheduler sched({.workers = 2, .pin_workers = true});
  std::atomic<int> started{0};
  std::atomic<bool> timed_out{false};
  int cpu_of[2] = {-1, -1};
  int count_of[2] = {0, 0};
  cf::WaitGroup wg;
  for (int i = 0; i < 2; ++i) {
    wg.add(1);
    sched.go([&, i] {
      // Both spin until both run: they are then on different workers.
      started.fetch_add(1);
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (started.load() < 2) {
        if (std::chrono::steady_clock::now() > until) {
          timed_out = true;
          break;
        }
      }
      cpu_set_t mine;
      CPU_ZERO(&mine);
      pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine);
      count_of[i] = CPU_COUNT(&mine);
      for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &mine)) cpu_of[i] = c;
      }
      wg.done();
    });
  }
  wg.wait();
  ASSERT_FALSE(timed_out.load());
  EXPECT_EQ(count_of[0], 1);
  EXPECT_EQ(count_of[1], 1);
  EXPECT_TRUE(CPU_ISSET(cpu_of[0], &allowed));
  EXPECT_TRUE(CPU_ISSET(cpu_of[1], &allowed));
  if (ncpus >= 2) {
    EXPECT_NE(cpu_of[0], cpu_of[1]);
  }
}

// go_for_others: a green thread spawned for another worker goes to the run queue, where a thief
// takes it at once, not to runnext, which thieves leave alone for 3 µs. Checked at the instant
// after the spawn: runnext is still empty, and an idle worker runs the child while the spawner
// keeps its worker busy.
TEST(SchedulerGoForOthers, ChildSkipsRunnextAndAnIdleWorkerRunsIt) {
  cf::Scheduler s({.workers = 2});
  auto result = cf::make_chan<int>(1);
  s.go([&s, result]() mutable {
    std::atomic<bool> child_ran{false};
    s.go_for_others([&child_ran] { child_ran.store(true); });
    const bool in_runnext = cf::detail::current_worker()->runnext.load() != nullptr;
    while (!child_ran.load()) {
    }  // busy: only the other worker can run the child
    result.send(in_runnext ? 1 : 0);
  });
  EXPECT_EQ(result.recv(), 0);
}

// Direct hand-off: a green thread that parks while its worker has a task ready locally switches
// straight to that task. On 1 worker a ping-pong then returns to the worker's own context only for
// its turn at the global queue (every 61st dispatch); switching through the worker, every park
// (two per round trip) would.
TEST(SchedulerHandOff, PingPongOnOneWorkerSkipsTheWorkersContext) {
  constexpr int kRounds = 10'000;
  cf::Scheduler s({.workers = 1});
  auto ping = cf::make_chan<int>();
  auto pong = cf::make_chan<int>();
  auto returns = cf::make_chan<uint64_t>(1);
  s.go([ping, pong]() mutable {
    for (int i = 0; i < kRounds; ++i) {
      ping.send(i);
      pong.recv();
    }
    ping.close();
  });
  s.go([ping, pong, returns]() mutable {
    // The only worker: its counters are read on its own OS thread.
    const uint64_t before = cf::detail::current_worker()->home_returns;
    while (auto v = ping.recv()) pong.send(*v);
    returns.send(cf::detail::current_worker()->home_returns - before);
  });
  const uint64_t n = *returns.recv();
  EXPECT_LT(n, 2 * kRounds / 50) << "parks that went through the worker's context";
}

// Hand-offs must not starve the global queue: while two green threads ping-pong on the only
// worker (each park hands off to the other), a green thread woken from an OS thread (queued
// globally) still runs, on the worker's periodic turn at the global queue.
TEST(SchedulerHandOff, GlobalQueueStillServedDuringAPingPong) {
  // A wall-clock bound, not a round count: the OS thread below must get a CPU first.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::atomic<bool> stop{false};  // before the scheduler: outlives its green threads
  cf::Scheduler s({.workers = 1});
  auto ping = cf::make_chan<int>();
  auto pong = cf::make_chan<int>();
  auto gate = cf::make_chan<int>();
  auto started = cf::make_chan<int>(1);
  auto outcome = cf::make_chan<int>(1);
  s.go([&stop, gate]() mutable {
    gate.recv();  // woken by the OS thread below: queued on the global queue
    stop.store(true);
  });
  s.go([ping, pong, started, outcome, &stop, deadline]() mutable {
    for (int rounds = 0; !stop.load() && std::chrono::steady_clock::now() < deadline; ++rounds) {
      ping.send(rounds);
      pong.recv();
      if (rounds == 0) started.send(1);
    }
    ping.close();
    outcome.send(stop.load() ? 1 : 0);
  });
  s.go([ping, pong]() mutable {
    while (auto v = ping.recv()) pong.send(*v);
  });
  started.recv();
  gate.send(1);
  EXPECT_EQ(outcome.recv(), 1) << "the globally queued green thread never ran";
}

// The same for the local ring: on the only worker, a green thread pushed out of runnext into the
// ring (here: spawned, then displaced when the spawner wakes its partner) still runs while the
// pair keeps refilling runnext, on the worker's periodic fairness turn. With `beside_a_yielder`,
// a yield loop keeps the global queue non-empty at every fairness turn, so the local queue needs
// turns of its own (before they alternated, the ring's green thread did not run in 26M rounds).
// Returns whether the ring's green thread ran.
namespace {

bool local_ring_served_during_a_ping_pong(bool beside_a_yielder) {
  constexpr int kMaxRounds = 2'000'000;
  std::atomic<bool> stop{false};  // before the scheduler: outlives its green threads
  cf::Scheduler s({.workers = 1});
  auto ping = cf::make_chan<int>();
  auto pong = cf::make_chan<int>();
  auto outcome = cf::make_chan<int>(1);
  if (beside_a_yielder) {
    s.go([&stop] {
      while (!stop.load()) cf::yield();
    });
  }
  s.go([ping, pong]() mutable {
    while (auto v = ping.recv()) pong.send(*v);
  });
  s.go([ping, pong, outcome, &stop]() mutable {
    cf::go([&stop] { stop.store(true); });  // runnext, until the first send displaces it
    int rounds = 0;
    for (; rounds < kMaxRounds && !stop.load(); ++rounds) {
      ping.send(rounds);
      pong.recv();
    }
    ping.close();
    const bool ran = stop.load();
    stop.store(true);  // ends the yield loop either way
    outcome.send(ran ? 1 : 0);
  });
  return outcome.recv() == 1;
}

}  // namespace

TEST(SchedulerHandOff, LocalRingStillServedDuringAPingPong) {
  EXPECT_TRUE(local_ring_served_during_a_ping_pong(/*beside_a_yielder=*/false))
      << "the green thread in the local ring never ran";
}

TEST(SchedulerHandOff, LocalRingStillServedDuringAPingPongBesideAYielder) {
  EXPECT_TRUE(local_ring_served_during_a_ping_pong(/*beside_a_yielder=*/true))
      << "the green thread in the local ring never ran";
}

// An idle worker next to a fast ping-pong backs off from runnext slots (scheduler.cc, steal):
// after a grace steal fails because the victim dispatched meanwhile, it leaves every runnext alone
// for 4 µs, doubling up to 64 µs. Without the backoff it started a 3 µs grace every few
// microseconds for as long as the pair ran, and its polling of the lines the busy worker writes
// on every hand-off cost that worker a cache miss each time.
namespace {
// Runs `rounds` round trips of an unbuffered ping-pong pair on s; returns their µs.
double ping_pong_us(cf::Scheduler& s, int rounds) {
  auto ping = cf::make_chan<int>();
  auto pong = cf::make_chan<int>();
  auto done = cf::make_chan<double>(1);
  s.go([ping, pong]() mutable {
    while (auto v = ping.recv()) pong.send(*v);
  });
  s.go([ping, pong, done, rounds]() mutable {
    const auto t = std::chrono::steady_clock::now();
    for (int i = 0; i < rounds; ++i) {
      ping.send(i);
      pong.recv();
    }
    ping.close();
    done.send(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count());
  });
  return *done.recv();
}
}  // namespace

TEST(SchedulerRunnextBackoff, IdleWorkerStaysAwayFromABusyPingPong) {
  cf::Scheduler s({.workers = 2});
  const double elapsed_us = ping_pong_us(s, 200'000);
  uint64_t waits = 0;
  for (const auto& w : s.impl()->workers) waits += w->runnext_grace_waits.load();
  // At most one grace per 64 µs once backed off (after 4 + 8 + 16 + 32 µs): allow one per 20.
  EXPECT_LT(static_cast<double>(waits), elapsed_us / 20 + 20)
      << waits << " grace waits in " << elapsed_us << " µs";
}

// Confines the calling thread (and the threads it starts meanwhile, such as a scheduler's
// workers) to the first CPU it may run on, as on a host whose other CPUs another process keeps
// busy; restores its affinity on destruction.
class OneCpu {
 public:
  OneCpu() {
    EXPECT_EQ(sched_getaffinity(0, sizeof(saved_), &saved_), 0);
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &saved_)) ++cpu;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    EXPECT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  }
  OneCpu(const OneCpu&) = delete;
  OneCpu& operator=(const OneCpu&) = delete;
  ~OneCpu() { EXPECT_EQ(sched_setaffinity(0, sizeof(saved_), &saved_), 0); }

 private:
  cpu_set_t saved_;
};

// Two workers sharing one CPU (the process confined to it, as on a host where another process
// keeps the other CPUs busy). A ready into runnext wakes the idle worker, whose wake-up preempts
// the busy one on that CPU; a thief that then waited out its grace saw the preempted victim
// dispatch nothing and took its runnext, so the ping-pong moved to the thief at about every
// wake-up (hundreds of steals in 200,000 round trips, each a preemption). The thief yields the CPU
// before its grace (scheduler.cc, steal), sees the victim dispatch, and backs off.
TEST(SchedulerRunnextBackoff, IdleWorkerSharingTheCpuDoesNotTakeTheBusyPair) {
  OneCpu confined;  // the workers inherit it; restored at the end of the test
  constexpr int kRounds = 200'000;
  uint64_t steals = 0;
  double elapsed_ms = 0;
  {
    cf::Scheduler s({.workers = 2});
    elapsed_ms = ping_pong_us(s, kRounds) / 1000;
    for (const auto& w : s.impl()->workers) steals += w->runnext_steals.load();
  }
  // What remains comes with the kernel's periodic preemptions, so it grows with the run's length
  // (slower under the sanitizers): about 0.4 per ms here, in release builds and under TSan alike;
  // without the yield 20–30 per ms (600–900 in a 27 ms run).
  EXPECT_LT(static_cast<double>(steals), 20 + 2 * elapsed_ms)
      << steals << " runnext steals in " << kRounds << " round trips, " << elapsed_ms << " ms";
}

// An OS thread's ping-pong with a green echo, the process confined to one CPU: the OS thread
// sleeps in the futex at once (a spin on one CPU only delays the echo), and the echo's wake puts it
// on the worker's CPU. The worker yields that CPU before it spins idle, so the OS thread answers
// while the worker still counts as spinning, and the worker need not sleep and be woken: no
// sleep in 20,000 round trips here. Without the yield the OS thread often ran only once the
// worker's spin had ended in a sleep: 1,410 sleeps, and 4.8 instead of 3.0 us a round trip.
TEST(SchedulerIdle, WorkerYieldsToTheOsThreadItWoke) {
  OneCpu confined;
  constexpr int kRounds = 20'000;
  uint64_t sleeps = 0;
  {
    cf::Scheduler s({.workers = 1});
    auto ping = cf::make_chan<int>();
    auto pong = cf::make_chan<int>();
    s.go([ping, pong]() mutable {
      for (std::optional<int> v = ping.recv(); v; v = ping.recv()) pong.send(*v + 1);
    });
    for (int i = 0; i < kRounds; ++i) {
      ping.send(i);
      EXPECT_EQ(pong.recv(), i + 1);
    }
    ping.close();
    sleeps = s.impl()->workers[0]->idle_sleeps.load();
  }
  EXPECT_LT(sleeps, static_cast<uint64_t>(kRounds / 100)) << sleeps << " idle sleeps";
}
