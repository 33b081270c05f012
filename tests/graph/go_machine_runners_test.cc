// How the GoMachine runs nodes (go_machine.cc, "Design"): a waiting node holds no green thread,
// an op that blocks hands the other ready nodes to a new runner, independent nodes spread over
// idle workers, and results stay exact. Workers 1, 2, 4 and 8.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "chanflow/graph.h"
#include "chanflow/runtime.h"
#include "graph_test_util.h"

namespace cf = chanflow;
using cf::DType;
using cf::Tensor;
using namespace std::chrono_literals;

namespace {

using RunnersTest = WorkersTest;

// A custom op passing its first operand through, running `body` first.
template <class F>
cf::Node through(cf::Graph& g, const std::string& name, const std::vector<cf::Node>& in, F body) {
  return g.apply(name, in, in[0].shape(), in[0].dtype(),
                 [body](std::span<const Tensor> a, const cf::OpContext&) {
                   body();
                   return a[0];
                 });
}

TEST_P(RunnersTest, WaitingNodesHoldNoGreenThread) {
  // Gorgonia's GoMachine parks one goroutine per node: 50k nodes would be 50k parked green threads.
  // Here a chain runs on one runner, so at most a handful of green threads are alive at any time.
  cf::Graph g;
  cf::Node x = g.scalar(1.0f, "x");
  std::atomic<std::size_t> peak{0};
  cf::Scheduler* s = &sched();
  for (int i = 0; i < 50000; ++i) {
    x = through(g, "id", {x}, [&peak, s] {
      const std::size_t now = s->live();
      std::size_t seen = peak.load(std::memory_order_relaxed);
      while (now > seen && !peak.compare_exchange_weak(seen, now)) {
      }
    });
  }
  cf::GoMachine m(g);
  m.run();
  m.run();
  EXPECT_EQ(m.result(x).item<float>(), 1.0f);
  EXPECT_GE(peak.load(), 1u);
  EXPECT_LE(peak.load(), 4u) << "green threads alive while a 50k-node chain ran";
}

TEST_P(RunnersTest, AnOpThatBlocksDoesNotStrandReadyNodes) {
  // recv and send are siblings: on one worker the runner takes recv first (the newest ready
  // node), and recv blocks until send has run. Without the hand-off of the runner's other ready
  // nodes when recv parks, send would wait behind it forever (the deadline would fire).
  for (bool receiver_first : {true, false}) {
    auto ch = cf::make_chan<int>();
    cf::Graph g;
    cf::Node src = g.scalar(2.0f, "src");
    auto send = [&] { return through(g, "send", {src}, [ch] { ch.send(7); }); };
    auto recv = [&] {
      return through(g, "recv", {src}, [ch] {
        if (ch.recv() != 7) throw std::runtime_error("wrong value");
      });
    };
    cf::Node a, b;
    if (receiver_first) {
      a = send();
      b = recv();  // pushed last: runs first
    } else {
      a = recv();
      b = send();
    }
    cf::Node out = a + b;
    cf::GoMachine m(g);
    for (int run = 0; run < 20; ++run) {
      ASSERT_NO_THROW(m.run(cf::with_timeout(cf::background(), 20s))) << run;
      EXPECT_EQ(m.result(out).item<float>(), 4.0f);
    }
  }
}

// Builds n sibling ops of one source that spin (never park, so no hand-off helps) until all n of
// the run have started, and runs the graph 10 times: only a machine that gets every ready sibling
// to an idle worker finishes each run before the 20 s bound.
void expect_siblings_run_at_once(int n) {
  cf::Graph g;
  cf::Node src = g.scalar(1.0f, "src");
  std::atomic<int> started{0};
  std::atomic<bool> timed_out{false};
  auto meet = [&, n] {
    const int me = started.fetch_add(1) + 1;
    const int goal = (me + n - 1) / n * n;  // this run's n
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (started.load() < goal) {
      if (std::chrono::steady_clock::now() > until) {
        timed_out = true;
        return;
      }
    }
  };
  cf::Node out = through(g, "s0", {src}, meet);
  for (int i = 1; i < n; ++i) out = out + through(g, "s" + std::to_string(i), {src}, meet);
  cf::GoMachine m(g);
  for (int run = 0; run < 10; ++run) {
    m.run();
    ASSERT_FALSE(timed_out.load())
        << "the " << n << " siblings never ran at once (run " << run << ")";
    EXPECT_EQ(m.result(out).item<float>(), static_cast<float>(n));
  }
}

TEST_P(RunnersTest, IndependentNodesRunOnDifferentWorkers) {
  if (GetParam() < 2) GTEST_SKIP() << "needs two workers";
  expect_siblings_run_at_once(2);
}

TEST_P(RunnersTest, EveryIdleWorkerGetsAReadySibling) {
  if (GetParam() < 3) GTEST_SKIP() << "needs three workers";
  // A runner that kept some of its ready siblings to itself while it spins in one of them (or a
  // spill nobody is coming for) would leave the third waiting.
  expect_siblings_run_at_once(3);
}

TEST_P(RunnersTest, WideLayeredGraphMatchesTape) {
  // Many small independent branches re-joined in layers: splitting, the countdown batches and
  // the fan-in merges must give TapeMachine's values, run after run.
  cf::Graph g;
  cf::Node x = g.input("x", DType::kFloat64, {4});
  std::vector<cf::Node> layer;
  for (int i = 0; i < 64; ++i) layer.push_back(x * static_cast<double>(i + 1));
  for (int depth = 0; depth < 6; ++depth) {
    std::vector<cf::Node> next;
    for (std::size_t i = 0; i + 1 < layer.size(); i += 2) {
      next.push_back(cf::tanh(layer[i] - layer[i + 1] * 0.5));
    }
    layer = next;
  }
  cf::Node out = cf::sum(layer[0]);
  cf::GoMachine go(g);
  cf::TapeMachine tape(g);
  for (int run = 0; run < 30; ++run) {
    Tensor v = Tensor::from_vector<double>({0.1 * run, -0.2, 0.3, 0.01 * run});
    go.run(cf::background(), {{x, v}});
    tape.run({{x, v}});
    EXPECT_EQ(go.result(out).item<double>(), tape.result(out).item<double>()) << run;
  }
}

// run() on a plain OS thread runs a chain's built-in ops itself (go_machine.cc, run_on_caller):
// it finishes while every worker is kept busy by a green thread that never parks. A run that
// needed a worker would wait for them until the deadline.
TEST_P(RunnersTest, CallerRunsAChainOfBuiltInOpsItself) {
  std::atomic<bool> release{false};
  std::atomic<int> spinning{0};
  cf::WaitGroup spinners;
  for (int i = 0; i < GetParam(); ++i) {
    spinners.add();
    cf::go("spinner", [&] {
      spinning.fetch_add(1);
      while (!release.load()) {
      }
      spinners.done();
    });
  }
  while (spinning.load() < GetParam()) std::this_thread::yield();  // every worker is taken
  cf::Graph g;
  cf::Node x = g.input("x", DType::kFloat32, {4});
  cf::Node one = g.constant(Tensor::full({4}, 1.0, DType::kFloat32), "one");
  cf::Node z = x;
  for (int i = 0; i < 9; ++i) z = z + one;
  cf::GoMachine m(g, {.scheduler = &sched()});
  std::string error;
  try {
    m.run(cf::with_timeout(cf::background(), 20s), {{x, Tensor::full({4}, 0.0, DType::kFloat32)}});
  } catch (const std::exception& e) {
    error = e.what();
  }
  release = true;
  spinners.wait();
  EXPECT_EQ(error, "");
  if (error.empty()) {
    EXPECT_TRUE(m.result(z).equal_to(Tensor::full({4}, 9.0, DType::kFloat32)));
  }
}

// ... but never a custom op, which may block on something only a green thread provides.
TEST_P(RunnersTest, CustomOpsRunOnGreenThreadsWhenRunIsCalledFromAnOsThread) {
  cf::Graph g;
  cf::Node x = g.scalar(1.0f, "x");
  std::atomic<int> on_green{0};
  std::atomic<int> calls{0};
  cf::Node y = x + x;
  for (int i = 0; i < 3; ++i) {
    y = through(g, "where", {y}, [&] {
      calls.fetch_add(1);
      if (cf::in_green_thread()) on_green.fetch_add(1);
    });
    y = y * y;
  }
  cf::GoMachine m(g);
  ASSERT_FALSE(cf::in_green_thread());
  m.run();
  EXPECT_EQ(calls.load(), 3);
  EXPECT_EQ(on_green.load(), 3);
  EXPECT_EQ(m.result(y).item<float>(), 256.0f);
}

INSTANTIATE_TEST_SUITE_P(Workers, RunnersTest, ::testing::Values(1, 2, 4, 8));

}  // namespace
