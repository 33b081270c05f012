// runtime_bench — chanflow's green threads, channels and select under Google Benchmark, in the
// shapes of docs/benchmarks.md ("Targets") and of Go's runtime channel benchmarks. The same shapes
// for Go and Boost.Fiber are in bench/peers/; scripts/bench.py runs them all and prints the ratios.
//
// Every benchmark takes the worker count as its argument (BM_PingPong/2 = 2 workers) and runs
// its shape inside a green thread on a scheduler of that size, as Go's benchmarks run inside
// goroutines. One benchmark iteration is one whole run of the shape (e.g. 1M round trips), timed
// inside the green thread (manual time); the counter ns_per_op is that time per operation.
// One untimed run precedes the timed ones, as in the peers.
//
// CHANFLOW_BENCH_SCALE=0.2 shrinks the per-run operation counts for a smoke run.
//   build/release/bench/chanflow_runtime_bench --benchmark_filter='PingPong/1'
#include <benchmark/benchmark.h>

#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "chanflow/runtime.h"

namespace cf = chanflow;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int64_t scaled(int64_t n) {
  static const double scale = [] {
    const char* s = std::getenv("CHANFLOW_BENCH_SCALE");
    return s != nullptr ? std::atof(s) : 1.0;
  }();
  const auto m = static_cast<int64_t>(static_cast<double>(n) * scale);
  return m < 1 ? 1 : m;
}

// Runs `shape` (returns the seconds it measured, or a negative value when its result check
// failed) inside a green thread and waits for it from this OS thread.
template <class F>
double in_green_thread(F&& shape) {
  cf::Chan<double> out = cf::make_chan<double>(1);
  cf::go("bench", [&] { out.send(shape()); });
  return *out.recv();
}

// Where a shape's measuring code runs: in a green thread (as Go's benchmarks run in goroutines),
// or on the benchmark's OS thread, as the executor's block 0 and a Python thread do (its channel
// operations then block the OS thread).
enum class Where { kGreenThread, kOsThread };

// The benchmark loop shared by every shape: a scheduler of state.range(0) workers, one warm-up
// run, then one timed run per iteration. `ops` is how many operations one run performs.
template <class F>
void run_shape(benchmark::State& state, int64_t ops, F&& shape, Where where = Where::kGreenThread) {
  cf::Scheduler scheduler({.workers = static_cast<int>(state.range(0))});
  cf::ScopedDefaultScheduler use(scheduler);
  auto run = [&] { return where == Where::kGreenThread ? in_green_thread(shape) : shape(); };
  if (run() < 0) {
    state.SkipWithError("result check failed");
    return;
  }
  double total = 0;
  for (auto _ : state) {
    const double secs = run();
    if (secs < 0) {
      state.SkipWithError("result check failed");
      return;
    }
    state.SetIterationTime(secs);
    total += secs;
  }
  state.counters["ns_per_op"] =
      total * 1e9 / (static_cast<double>(state.iterations()) * static_cast<double>(ops));
}

// Timed runs per repetition: CHANFLOW_BENCH_ITERS (default 3); scripts/bench.py --quick uses 1.
int64_t timed_runs() {
  const char* s = std::getenv("CHANFLOW_BENCH_ITERS");
  const int64_t n = s != nullptr ? std::atoll(s) : 3;
  return n < 1 ? 1 : n;
}

// Shapes run at 1 and 2 workers (the machine's cores); the scaling shapes also at 4 (more workers
// than cores).
#define CHANFLOW_BENCH_WORKERS(fn) \
  BENCHMARK(fn)                    \
      ->Arg(1)                     \
      ->Arg(2)                     \
      ->UseManualTime()            \
      ->Iterations(timed_runs())   \
      ->Unit(benchmark::kMillisecond)
#define CHANFLOW_BENCH_SCALING(fn) \
  BENCHMARK(fn)                    \
      ->Arg(1)                     \
      ->Arg(2)                     \
      ->Arg(4)                     \
      ->UseManualTime()            \
      ->Iterations(timed_runs())   \
      ->Unit(benchmark::kMillisecond)

// --- channels ----------------------------------------------------------------------------------

// Unbuffered ping-pong: one round trip = send on req, the echo green thread answers on resp.
// `around` (start, stop) brackets the timed round trips. Returns their seconds (-1: a wrong echo).
template <class Around = void (*)(bool)>
double ping_pong(
    int64_t n, cf::Chan<int64_t> req, cf::Chan<int64_t> resp, Around around = [](bool) {}) {
  cf::go("echo", [req, resp]() mutable {
    for (int64_t x : req) resp.send(x + 1);
  });
  around(true);
  int64_t v = 0;
  const auto t = Clock::now();
  for (int64_t i = 0; i < n; ++i) {
    req.send(v);
    v = *resp.recv();
  }
  const double secs = seconds_since(t);
  around(false);
  req.close();
  return v == n ? secs : -1;
}

void BM_PingPong(benchmark::State& state) {
  const int64_t n = scaled(1'000'000);
  run_shape(state, n, [n]() -> double {
    return ping_pong(n, cf::make_chan<int64_t>(), cf::make_chan<int64_t>());
  });
}
CHANFLOW_BENCH_SCALING(BM_PingPong);

// BM_PingPong with the trace on, streaming every event to a file in the temp directory (no event
// bound: each round trip is two run slices with their park reasons and two wake flows, six
// events). The timed part is the round trips (recording, and the writer thread rendering or
// spooling as it goes); each run's trace is stopped after it. Counters: dropped_share, the share
// of events the writer could not keep up with (dropped and counted, trace.h); stop_ms, the time
// trace::stop() took per run (it renders what the writer spooled: docs/runtime.md, "Tracing").
void BM_PingPongTraced(benchmark::State& state) {
  const int64_t n = scaled(200'000);
  const char* tmp = std::getenv("TMPDIR");
  const std::string path =
      std::string(tmp != nullptr ? tmp : "/tmp") + "/chanflow_bench_trace.json";
  std::size_t kept = 0, dropped = 0;
  double stop_secs = 0;
  int runs = 0;
  run_shape(state, n, [n, &path, &kept, &dropped, &stop_secs, &runs]() -> double {
    return ping_pong(n, cf::make_chan<int64_t>(0, "req"), cf::make_chan<int64_t>(0, "resp"),
                     [&](bool start) {
                       if (start) {
                         cf::trace::start({.path = path, .max_events = 0});
                         return;
                       }
                       const auto t = Clock::now();
                       cf::trace::stop();
                       stop_secs += seconds_since(t);
                       ++runs;
                       kept += cf::trace::event_count();
                       dropped += cf::trace::dropped_count();
                     });
  });
  state.counters["dropped_share"] =
      kept + dropped == 0 ? 0.0
                          : static_cast<double>(dropped) / static_cast<double>(kept + dropped);
  state.counters["stop_ms"] = runs == 0 ? 0.0 : 1e3 * stop_secs / runs;
  std::remove(path.c_str());
}
CHANFLOW_BENCH_WORKERS(BM_PingPongTraced);

// BM_PingPong with the pinging side on the benchmark's OS thread: each round trip blocks it on
// the echo's answer (a futex wait and wake where a green thread parks). Traced, each blocking wait
// is a "blocked" slice with its wake flow (docs/runtime.md, "File format"); counter dropped_share
// as BM_PingPongTraced's.
void os_ping_pong(benchmark::State& state, bool traced) {
  const int64_t n = scaled(100'000);
  const char* tmp = std::getenv("TMPDIR");
  const std::string path =
      std::string(tmp != nullptr ? tmp : "/tmp") + "/chanflow_bench_os_trace.json";
  std::size_t kept = 0, dropped = 0;
  run_shape(
      state, n,
      [&]() -> double {
        return ping_pong(n, cf::make_chan<int64_t>(0, "req"), cf::make_chan<int64_t>(0, "resp"),
                         [&](bool start) {
                           if (!traced) return;
                           if (start) {
                             cf::trace::start({.path = path, .max_events = 0});
                             return;
                           }
                           cf::trace::stop();
                           kept += cf::trace::event_count();
                           dropped += cf::trace::dropped_count();
                         });
      },
      Where::kOsThread);
  if (traced) {
    state.counters["dropped_share"] =
        kept + dropped == 0 ? 0.0
                            : static_cast<double>(dropped) / static_cast<double>(kept + dropped);
    std::remove(path.c_str());
  }
}
void BM_OsPingPong(benchmark::State& state) { os_ping_pong(state, false); }
void BM_OsPingPongTraced(benchmark::State& state) { os_ping_pong(state, true); }
CHANFLOW_BENCH_WORKERS(BM_OsPingPong);
CHANFLOW_BENCH_WORKERS(BM_OsPingPongTraced);

// Buffered chan(128): a producer green thread streams n ints to the measuring green thread.
void BM_Buffered128(benchmark::State& state) {
  const int64_t n = scaled(10'000'000);
  run_shape(state, n, [n]() -> double {
    cf::Chan<int64_t> c = cf::make_chan<int64_t>(128);
    const auto t = Clock::now();
    cf::go("producer", [c, n]() mutable {
      for (int64_t i = 0; i < n; ++i) c.send(i);
      c.close();
    });
    int64_t sum = 0;
    for (int64_t x : c) sum += x;
    const double secs = seconds_since(t);
    return sum == n * (n - 1) / 2 ? secs : -1;
  });
}
CHANFLOW_BENCH_WORKERS(BM_Buffered128);

// Go's BenchmarkChanProdCons{0,10,100}: `workers` producer/consumer pairs share one channel of
// the given capacity; producers take batches of 1000 sends from a shared counter, then send a 0
// that stops one consumer. ns per message.
void prod_cons(benchmark::State& state, size_t capacity) {
  const int64_t n = scaled(2'000'000);
  const int procs = static_cast<int>(state.range(0));
  run_shape(state, n, [n, procs, capacity]() -> double {
    constexpr int64_t kBatch = 1000;
    std::atomic<int64_t> batches{n / kBatch};
    std::atomic<int64_t> received{0};
    cf::Chan<int> myc = cf::make_chan<int>(capacity);
    cf::WaitGroup wg;
    const auto t = Clock::now();
    wg.add(2 * procs);
    for (int p = 0; p < procs; ++p) {
      cf::go("producer", [&, myc]() mutable {
        while (batches.fetch_sub(1, std::memory_order_relaxed) > 0) {
          for (int64_t g = 0; g < kBatch; ++g) myc.send(1);
        }
        myc.send(0);
        wg.done();
      });
      cf::go("consumer", [&, myc]() mutable {
        int64_t got = 0;
        while (*myc.recv() != 0) ++got;
        received.fetch_add(got, std::memory_order_relaxed);
        wg.done();
      });
    }
    wg.wait();
    const double secs = seconds_since(t);
    return received.load() == (n / kBatch) * kBatch ? secs : -1;
  });
}
void BM_ChanProdCons0(benchmark::State& state) { prod_cons(state, 0); }
void BM_ChanProdCons10(benchmark::State& state) { prod_cons(state, 10); }
void BM_ChanProdCons100(benchmark::State& state) { prod_cons(state, 100); }
CHANFLOW_BENCH_SCALING(BM_ChanProdCons0);
CHANFLOW_BENCH_SCALING(BM_ChanProdCons10);
CHANFLOW_BENCH_SCALING(BM_ChanProdCons100);

// Go's BenchmarkChanSem: `workers` green threads each repeatedly send an empty value into a
// channel of capacity `workers` and take one back out. ns per (send + recv) pair.
void BM_ChanSem(benchmark::State& state) {
  const int64_t n = scaled(4'000'000);
  const int procs = static_cast<int>(state.range(0));
  run_shape(state, n, [n, procs]() -> double {
    struct Empty {};
    cf::Chan<Empty> sem = cf::make_chan<Empty>(static_cast<size_t>(procs));
    cf::WaitGroup wg;
    std::atomic<int64_t> taken{0};
    const auto t = Clock::now();
    wg.add(procs);
    for (int p = 0; p < procs; ++p) {
      cf::go("sem", [&, sem, p]() mutable {
        int64_t mine = 0;
        for (int64_t i = p; i < n; i += procs) {
          sem.send(Empty{});
          if (sem.recv().has_value()) ++mine;
        }
        taken.fetch_add(mine, std::memory_order_relaxed);
        wg.done();
      });
    }
    wg.wait();
    const double secs = seconds_since(t);
    return taken.load() == n ? secs : -1;
  });
}
CHANFLOW_BENCH_WORKERS(BM_ChanSem);

// Go's BenchmarkChanNonblocking: `workers` green threads poll an empty unbuffered channel with
// a non-blocking receive (Go compiles `select { case <-c: default: }` to exactly this).
void BM_ChanNonblocking(benchmark::State& state) {
  const int64_t n = scaled(50'000'000);
  const int procs = static_cast<int>(state.range(0));
  run_shape(state, n, [n, procs]() -> double {
    cf::Chan<int> c = cf::make_chan<int>();
    cf::WaitGroup wg;
    std::atomic<int64_t> misses{0};
    const auto t = Clock::now();
    wg.add(procs);
    for (int p = 0; p < procs; ++p) {
      cf::go("poll", [&, c, p]() mutable {
        int64_t mine = 0;
        for (int64_t i = p; i < n; i += procs) mine += c.try_recv().has_value() ? 0 : 1;
        misses.fetch_add(mine, std::memory_order_relaxed);
        wg.done();
      });
    }
    wg.wait();
    const double secs = seconds_since(t);
    return misses.load() == n ? secs : -1;
  });
}
CHANFLOW_BENCH_WORKERS(BM_ChanNonblocking);

// --- select ------------------------------------------------------------------------------------

// One green thread bounces a token between two cap-1 channels through a 2-case select.
void BM_Select2Uncontended(benchmark::State& state) {
  const int64_t n = scaled(10'000'000);
  run_shape(state, n, [n]() -> double {
    cf::Chan<int> a = cf::make_chan<int>(1);
    cf::Chan<int> b = cf::make_chan<int>(1);
    a.send(0);
    int64_t hits_a = 0;
    const auto t = Clock::now();
    for (int64_t i = 0; i < n; ++i) {
      cf::select(cf::on_recv(a,
                             [&](std::optional<int>) {
                               ++hits_a;
                               b.send(0);
                             }),
                 cf::on_recv(b, [&](std::optional<int>) { a.send(0); }));
    }
    const double secs = seconds_since(t);
    return hits_a == (n + 1) / 2 ? secs : -1;
  });
}
CHANFLOW_BENCH_WORKERS(BM_Select2Uncontended);

// A receive case plus default on an empty unbuffered channel: default always runs.
void BM_SelectDefault(benchmark::State& state) {
  const int64_t n = scaled(50'000'000);
  run_shape(state, n, [n]() -> double {
    cf::Chan<int> c = cf::make_chan<int>();
    int64_t defaults = 0;
    const auto t = Clock::now();
    for (int64_t i = 0; i < n; ++i) {
      cf::select(cf::on_recv(c, [](std::optional<int>) {}), cf::on_default([&] { ++defaults; }));
    }
    const double secs = seconds_since(t);
    return defaults == n ? secs : -1;
  });
}
CHANFLOW_BENCH_WORKERS(BM_SelectDefault);

// A select over N empty cap-1 channels plus default (range(1) = N): nothing is ready, so every
// call takes the locked path (the lock order over N channels, N locks, the locked poll).
void BM_SelectNoneReady(benchmark::State& state) {
  const auto ncases = static_cast<std::size_t>(state.range(1));
  const int64_t n = scaled(20'000'000 / static_cast<int64_t>(ncases + 2));
  run_shape(state, n, [n, ncases]() -> double {
    std::vector<cf::Chan<int>> chans;
    for (std::size_t i = 0; i < ncases; ++i) chans.push_back(cf::make_chan<int>(1));
    std::vector<std::optional<int>> outs(ncases);
    std::vector<cf::SelectCase> cases;
    for (std::size_t i = 0; i < ncases; ++i)
      cases.push_back(cf::SelectCase::recv(chans[i], outs[i]));
    cases.push_back(cf::SelectCase::default_case());
    int64_t defaults = 0;
    const auto t = Clock::now();
    for (int64_t i = 0; i < n; ++i) {
      defaults += cf::select(std::span<cf::SelectCase>(cases)) == ncases ? 1 : 0;
    }
    const double secs = seconds_since(t);
    return defaults == n ? secs : -1;
  });
}
BENCHMARK(BM_SelectNoneReady)
    ->Args({1, 2})
    ->Args({1, 8})
    ->Args({1, 16})
    ->Args({1, 64})
    ->UseManualTime()
    ->Iterations(timed_runs())
    ->Unit(benchmark::kMillisecond);

// Two producer green threads each send n/2 values on their own unbuffered channel and close it;
// the measuring green thread receives everything through a 2-case select. ns per message.
void BM_Select2Producers(benchmark::State& state) {
  const int64_t n = scaled(1'000'000);
  run_shape(state, n, [n]() -> double {
    const int64_t half = n / 2;
    cf::Chan<int> a = cf::make_chan<int>();
    cf::Chan<int> b = cf::make_chan<int>();
    auto producer = [half](cf::Chan<int> c) {
      for (int64_t i = 0; i < half; ++i) c.send(1);
      c.close();
    };
    const auto t = Clock::now();
    cf::go("producer a", [=] { producer(a); });
    cf::go("producer b", [=] { producer(b); });
    int64_t got = 0;
    int open = 2;
    while (open > 0) {
      cf::select(cf::on_recv(a,
                             [&](std::optional<int> v) {
                               if (v) {
                                 got += *v;
                               } else {
                                 a = cf::Chan<int>();  // nil: never fires again
                                 --open;
                               }
                             }),
                 cf::on_recv(b, [&](std::optional<int> v) {
                   if (v) {
                     got += *v;
                   } else {
                     b = cf::Chan<int>();
                     --open;
                   }
                 }));
    }
    const double secs = seconds_since(t);
    return got == 2 * half ? secs : -1;
  });
}
CHANFLOW_BENCH_WORKERS(BM_Select2Producers);

// --- green threads -----------------------------------------------------------------------------

// 100k green threads each send their index once on one unbuffered channel. ns per green thread
// (spawn + run + send + exit).
void BM_Spawn100k(benchmark::State& state) {
  constexpr int64_t kN = 100'000;
  run_shape(state, kN, []() -> double {
    cf::Chan<int64_t> c = cf::make_chan<int64_t>();
    const auto t = Clock::now();
    for (int64_t i = 0; i < kN; ++i) {
      cf::go([c, i]() mutable { c.send(i); });
    }
    int64_t sum = 0;
    for (int64_t i = 0; i < kN; ++i) sum += *c.recv();
    const double secs = seconds_since(t);
    return sum == kN * (kN - 1) / 2 ? secs : -1;
  });
}
CHANFLOW_BENCH_WORKERS(BM_Spawn100k);

// A chain of 10k green threads, each forwarding 1 + what arrives from its right to its left.
// All stages have started (a WaitGroup, not a sleep) before the clock starts; the time is one
// value passing end to end.
void BM_Daisy10k(benchmark::State& state) {
  constexpr int64_t kN = 10'000;
  run_shape(state, 1, []() -> double {
    cf::Chan<int64_t> first = cf::make_chan<int64_t>();
    cf::Chan<int64_t> left = first;
    cf::WaitGroup ready;
    ready.add(static_cast<int>(kN));
    for (int64_t i = 0; i < kN; ++i) {
      cf::Chan<int64_t> right = cf::make_chan<int64_t>();
      cf::go([&ready, left, right]() mutable {
        ready.done();
        left.send(1 + *right.recv());
      });
      left = right;
    }
    ready.wait();
    cf::yield();
    const auto t = Clock::now();
    cf::go([left]() mutable { left.send(0); });
    const int64_t v = *first.recv();
    const double secs = seconds_since(t);
    return v == kN ? secs : -1;
  });
}
CHANFLOW_BENCH_WORKERS(BM_Daisy10k);

void skynet_node(cf::Chan<int64_t> out, int64_t num, int64_t size, int64_t div) {
  if (size == 1) {
    out.send(num);
    return;
  }
  cf::Chan<int64_t> sub = cf::make_chan<int64_t>(static_cast<size_t>(div));
  const int64_t step = size / div;
  for (int64_t i = 0; i < div; ++i) {
    cf::go([sub, num, i, step, div] { skynet_node(sub, num + i * step, step, div); });
  }
  int64_t sum = 0;
  for (int64_t i = 0; i < div; ++i) sum += *sub.recv();
  out.send(sum);
}

// skynet: a 10-ary tree of green threads with 1M leaves (1.11M green threads in all).
void BM_Skynet1M(benchmark::State& state) {
  constexpr int64_t kLeaves = 1'000'000;
  run_shape(state, 1, []() -> double {
    cf::Chan<int64_t> out = cf::make_chan<int64_t>(1);
    const auto t = Clock::now();
    cf::go([out] { skynet_node(out, 0, kLeaves, 10); });
    const int64_t sum = *out.recv();
    const double secs = seconds_since(t);
    return sum == kLeaves * (kLeaves - 1) / 2 ? secs : -1;
  });
}
CHANFLOW_BENCH_WORKERS(BM_Skynet1M);

int64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  long size = 0, resident = 0;
  const int got = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return got == 2 ? resident * sysconf(_SC_PAGESIZE) : -1;
}

// Resident memory per parked green thread: 100k green threads block on one receive; the RSS
// growth from before they were spawned to when all have started, divided by 100k. Measures
// process-wide state, so scripts/bench.py runs it alone in a fresh process per sample
// (--benchmark_filter=ParkedMemory), like the Go peer.
void BM_ParkedMemory100k(benchmark::State& state) {
  constexpr int kN = 100'000;
  cf::Scheduler scheduler({.workers = static_cast<int>(state.range(0))});
  cf::ScopedDefaultScheduler use(scheduler);
  double per_thread = 0;
  for (auto _ : state) {
    const int64_t before = resident_bytes();
    cf::Chan<int> gate = cf::make_chan<int>();
    cf::WaitGroup started, finished;
    started.add(kN);
    finished.add(kN);
    for (int i = 0; i < kN; ++i) {
      cf::go([&started, &finished, gate]() mutable {
        started.done();
        gate.recv();
        finished.done();
      });
    }
    started.wait();
    const int64_t after = resident_bytes();
    gate.close();
    finished.wait();
    if (before < 0 || after < 0) {
      state.SkipWithError("cannot read /proc/self/statm");
      return;
    }
    per_thread = static_cast<double>(after - before) / kN;
    state.SetIterationTime(1);
  }
  state.counters["bytes_per_thread"] = per_thread;
}
BENCHMARK(BM_ParkedMemory100k)->Arg(1)->Arg(2)->UseManualTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
