// GoMachine beyond the Gorgonia cases: streaming (pipelined items, in order), tracing (node slices
// in the runtime's trace, one track per node), re-use across runs, with 1, 2 and 4 workers.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "chanflow/graph.h"
#include "chanflow/runtime.h"
#include "graph_test_util.h"
#include "support/text.h"

namespace cf = chanflow;
using cf::DType;
using cf::Tensor;
using namespace std::chrono_literals;

namespace {

using GoMachineTest = WorkersTest;

TEST_P(GoMachineTest, StreamGivesResultsInInputOrder) {
  cf::Graph g;
  cf::Node x = g.input("x", DType::kFloat64, {2});
  cf::Node y = cf::sum(x * x) + 1.0;
  cf::Node z = y * 2.0;
  cf::GoMachine m(g, {.window = 3});
  std::vector<cf::Bindings> items;
  for (int i = 0; i < 50; ++i) {
    items.push_back({{x, Tensor::from_vector<double>({double(i), 1.0})}});
  }
  auto out = m.stream(cf::background(), items, {y, z});
  ASSERT_EQ(out.size(), 50u);
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(out[i].size(), 2u);
    EXPECT_EQ(out[i][0].item<double>(), double(i) * i + 2.0) << i;
    EXPECT_EQ(out[i][1].item<double>(), 2.0 * (double(i) * i + 2.0)) << i;
  }
  EXPECT_EQ(m.result(y).item<double>(), 49.0 * 49.0 + 2.0);  // the last item
  m.run(cf::background(), {{x, Tensor::from_vector<double>({3.0, 0.0})}});
  EXPECT_EQ(m.result(z).item<double>(), 20.0);
  EXPECT_TRUE(m.stream(cf::background(), {}, {y}).empty());
}

TEST_P(GoMachineTest, StreamOverlapsItemsInDifferentNodes) {
  // stage2 processing item 0 waits until stage1 has started item 1: only a pipelined machine can
  // finish (a sequential one would hit the 20 s deadline instead of hanging).
  cf::Graph g;
  cf::Node x = g.input("x", DType::kFloat64, {});
  auto stage1_item1 = cf::make_chan<int>(1);
  cf::Node s1 = g.apply("stage1", {x}, {}, DType::kFloat64,
                        [stage1_item1](std::span<const Tensor> a, const cf::OpContext&) {
                          if (a[0].item<double>() == 1.0) stage1_item1.send(1);
                          return cf::add(a[0], Tensor::scalar(10.0, DType::kFloat64));
                        });
  cf::Node s2 = g.apply("stage2", {s1}, {}, DType::kFloat64,
                        [stage1_item1](std::span<const Tensor> a, const cf::OpContext& c) {
                          if (a[0].item<double>() == 10.0) {
                            cf::select(cf::on_recv(stage1_item1, [](std::optional<int>) {}),
                                       cf::on_recv(c.ctx().done(), [](std::optional<cf::Unit>) {}));
                            c.check();
                          }
                          return cf::mul(a[0], Tensor::scalar(2.0, DType::kFloat64));
                        });
  cf::GoMachine m(g, {.window = 2});
  std::vector<cf::Bindings> items;
  for (int i = 0; i < 4; ++i) items.push_back({{x, Tensor::scalar(double(i), DType::kFloat64)}});
  auto out = m.stream(cf::with_timeout(cf::background(), 20s), items, {s2});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i][0].item<double>(), 2.0 * (i + 10)) << i;
}

TEST_P(GoMachineTest, StreamStopsAtAFailure) {
  cf::Graph g;
  cf::Node x = g.input("x", DType::kFloat64, {});
  cf::Node f = g.apply("fails_on_3", {x}, {}, DType::kFloat64,
                       [](std::span<const Tensor> a, const cf::OpContext&) {
                         if (a[0].item<double>() == 3.0) throw cf::Error("three");
                         return a[0];
                       });
  cf::Node y = f + 1.0;
  cf::GoMachine m(g, {.window = 2});
  std::vector<cf::Bindings> items;
  for (int i = 0; i < 8; ++i) items.push_back({{x, Tensor::scalar(double(i), DType::kFloat64)}});
  try {
    (void)m.stream(cf::background(), items, {y});
    FAIL() << "no MachineError";
  } catch (const cf::MachineError& e) {
    ASSERT_EQ(e.failures().size(), 1u);
    EXPECT_EQ(e.failures()[0].node_name, "fails_on_3");
  }
  // The machine is intact afterwards.
  m.run(cf::background(), {{x, Tensor::scalar(5.0, DType::kFloat64)}});
  EXPECT_EQ(m.result(y).item<double>(), 6.0);
}

// A GoMachine failure is labelled "GoMachine: ...", once; the TapeMachine's counterpart is in
// graph_test.cc.
TEST_P(GoMachineTest, FailureIsLabelledGoMachineOnce) {
  cf::Graph g = graph_with_failing_node();
  cf::GoMachine m(g);
  try {
    m.run(cf::background());
    FAIL() << "no MachineError";
  } catch (const cf::MachineError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("GoMachine: 1 node(s) failed\n  node 1 'boom': the op failed", 0), 0u)
        << msg;
    EXPECT_EQ(cf::testing_support::occurrences(msg, "Machine"), 1u) << msg;
    EXPECT_EQ(e.machine(), "GoMachine");
  }
}

TEST_P(GoMachineTest, TraceHasOneTrackPerNodeAndASliceWithInputsPerRun) {
  cf::Graph g;
  cf::Node a = g.scalar(40.0f, "n1");
  cf::Node b = g.scalar(2.0f, "n2");
  cf::Node c = a - b;
  cf::GoMachine m(g);
  cf::trace::start();
  m.run();
  m.run();
  cf::trace::stop();
  m.run();  // off: not recorded
  nlohmann::json doc = nlohmann::json::parse(cf::trace::to_json());
  std::map<std::pair<int, int>, std::string> track_names;
  int gomachine = 0;
  std::map<int, std::vector<nlohmann::json>> slices;  // by node id
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      track_names[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"];
    } else if (e["ph"] == "M" && e["args"]["name"] == "gomachine") {
      gomachine = e["pid"].get<int>();
    } else if (e.value("cat", "") == "node") {
      slices[e["args"]["node"].get<int>()].push_back(e);
    }
  }
  ASSERT_NE(gomachine, 0);
  ASSERT_EQ(slices.size(), 3u);
  for (const cf::Node& n : {a, b, c}) {
    const std::vector<nlohmann::json>& ss = slices[static_cast<int>(n.id())];
    ASSERT_EQ(ss.size(), 2u) << n.name();  // two traced runs
    for (std::size_t k = 0; k < ss.size(); ++k) {
      EXPECT_EQ(ss[k]["name"], n.name());
      EXPECT_EQ(ss[k]["pid"], gomachine);
      const std::pair<int, int> track{gomachine, ss[k]["tid"].get<int>()};
      EXPECT_EQ(track_names[track], n.name() + " (" + cf::op_kind_name(n.op()) + ")");
      EXPECT_EQ(ss[k]["args"]["run"].get<int>(), static_cast<int>(k));
      EXPECT_GE(ss[k]["dur"].get<double>(), 0.0);
    }
  }
  EXPECT_EQ(slices[static_cast<int>(c.id())][0]["args"]["inputs"],
            nlohmann::json::array({a.id(), b.id()}));
  EXPECT_EQ(slices[static_cast<int>(a.id())][0]["args"]["inputs"], nlohmann::json::array());
}

TEST_P(GoMachineTest, LargeGraphRerunAndResultOfEveryNode) {
  cf::Graph g;
  cf::Node x = g.input("x", DType::kFloat64, {4});
  std::vector<cf::Node> layer{x};
  for (int depth = 0; depth < 50; ++depth) {
    std::vector<cf::Node> next;
    for (std::size_t i = 0; i < 8; ++i) {
      const cf::Node& l = layer[i % layer.size()];
      const cf::Node& r = layer[(i + 1) % layer.size()];
      next.push_back(cf::tanh(l * 0.5 + r * 0.25));
    }
    layer = next;
  }
  cf::Node out = cf::sum(layer[0] + layer[7]);
  cf::TapeMachine t(g);
  cf::GoMachine m(g);
  for (int run = 0; run < 5; ++run) {
    cf::Bindings b{{x, Tensor::from_vector<double>({run * 0.1, 0.2, -0.3, 0.4})}};
    t.run(cf::background(), b);
    m.run(cf::background(), b);
    for (const cf::Node& n : g.nodes()) {
      ASSERT_TRUE(t.result(n).equal_to(m.result(n))) << n.name();
    }
  }
  (void)out;
}

// A node that computes for `busy` (when its operand is positive) without looking at the run's
// context (a bounded op that does not cooperate with cancellation), then returns operand + 1.
cf::Node busy_op(cf::Graph& g, const cf::Node& in, std::chrono::milliseconds busy) {
  return g.apply("busy", {in}, in.shape(), in.dtype(),
                 [busy](std::span<const Tensor> a, const cf::OpContext&) {
                   const auto until = std::chrono::steady_clock::now() +
                                      (a[0].item<double>() > 0 ? busy : busy * 0);
                   while (std::chrono::steady_clock::now() < until) {
                   }
                   return cf::add(a[0], Tensor::scalar(1.0, DType::kFloat64));
                 });
}

TEST_P(GoMachineTest, DeadlineReturnsWhileEveryWorkerIsBusy) {
  // More busy ops than workers: every worker is inside an op that ignores the context when the
  // deadline passes. run must still return at the deadline (the caller waits on the context
  // itself), and the machine stays usable: the next run waits for the abandoned one to drain.
  cf::Graph g;
  cf::Node x = g.input("x", DType::kFloat64, {});
  std::vector<cf::Node> ops;
  for (int i = 0; i < GetParam() + 1; ++i) ops.push_back(busy_op(g, x, 300ms));
  cf::Node total = ops[0];
  for (std::size_t i = 1; i < ops.size(); ++i) total = total + ops[i];
  cf::GoMachine m(g);
  // A quick first run (x = 0: the ops do not spin) warms the machine up, so the deadline below
  // finds every node started and the run begun (under TSan starting them alone takes a while).
  m.run(cf::background(), {{x, Tensor::scalar(0.0, DType::kFloat64)}});
  cf::trace::start();
  const cf::Bindings b{{x, Tensor::scalar(1.0, DType::kFloat64)}};
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(m.run(cf::with_timeout(cf::background(), 50ms), b), cf::DeadlineExceededError);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 250ms);
  EXPECT_THROW((void)m.result(total), cf::Error);  // no completed run
  // The next run waits for the abandoned one to drain: every node of it ended (its slice).
  m.run(cf::background(), b);
  cf::trace::stop();
  const nlohmann::json trace = nlohmann::json::parse(cf::trace::to_json());
  std::map<int, int> runs_per_node;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("cat", "") == "node") ++runs_per_node[e["args"]["node"].get<int>()];
  }
  EXPECT_EQ(runs_per_node.size(), static_cast<std::size_t>(g.size()));
  for (const auto& [node, runs] : runs_per_node) EXPECT_EQ(runs, 2) << node;
  EXPECT_EQ(m.result(total).item<double>(), 2.0 * static_cast<double>(ops.size()));
  // An abandoned stream drains before close returns (the destructor would do the same).
  EXPECT_THROW((void)m.stream(cf::with_timeout(cf::background(), 20ms), {b, b, b}, {total}),
               cf::DeadlineExceededError);
  m.close();
  EXPECT_TRUE(m.closed());
}

TEST_P(GoMachineTest, WideFanInMatchesTape) {
  // 1,500 producers feeding one node: its inbox fills in batches (the node yields instead of
  // being woken per value); every operand must still land at its own position. TSan pays
  // milliseconds per green thread created (its per-fiber state), so it runs a 300-wide fan-in.
  cf::Graph g;
  cf::Node x = g.input("x", DType::kFloat64, {});
  std::vector<cf::Node> mids;
#if defined(__SANITIZE_THREAD__)
  constexpr int kWidth = 300;
#else
  constexpr int kWidth = 1500;
#endif
  for (int i = 0; i < kWidth; ++i) mids.push_back(x * static_cast<double>(i));
  cf::Node weighted = g.apply("weighted", mids, {}, DType::kFloat64,
                              [](std::span<const Tensor> a, const cf::OpContext&) {
                                double s = 0;
                                for (std::size_t i = 0; i < a.size(); ++i) {
                                  s += static_cast<double>(i % 7) * a[i].item<double>();
                                }
                                return Tensor::scalar(s, DType::kFloat64);
                              });
  cf::TapeMachine t(g);
  cf::GoMachine m(g);
  for (double v : {1.0, -2.5}) {
    const cf::Bindings b{{x, Tensor::scalar(v, DType::kFloat64)}};
    t.run(cf::background(), b);
    m.run(cf::background(), b);
    EXPECT_EQ(m.result(weighted).item<double>(), t.result(weighted).item<double>());
  }
}

// GoMachineOptions::scheduler: the nodes run on that scheduler's workers, not on the default one
// (the fixture's) nor on the caller's, whether run is called from an OS thread or from a green
// thread of another scheduler.
TEST_P(GoMachineTest, OptionsSchedulerRunsTheNodes) {
  cf::Scheduler own(cf::SchedulerOptions{.workers = 3});
  cf::Graph g;
  cf::Node x = g.scalar(1.0, "x");
  std::vector<cf::Node> branches;
  std::vector<const cf::Scheduler*> seen(4, nullptr);
  for (std::size_t i = 0; i < seen.size(); ++i) {
    branches.push_back(g.apply("where" + std::to_string(i), {x}, {}, DType::kFloat64,
                               [&seen, i](std::span<const Tensor> a, const cf::OpContext&) {
                                 seen[i] = cf::current_scheduler();
                                 return a[0];
                               }));
  }
  cf::GoMachine m(g, {.scheduler = &own});
  auto check = [&] {
    for (const cf::Scheduler* s : seen) EXPECT_EQ(s, &own);
    std::fill(seen.begin(), seen.end(), nullptr);
  };
  m.run();
  check();
  cf::Chan<int> done = cf::make_chan<int>(1);
  cf::go([&] {
    m.run();
    done.send(1);
  });
  (void)done.recv();
  check();
  m.close();
}

INSTANTIATE_TEST_SUITE_P(Workers, GoMachineTest, ::testing::Values(1, 2, 4));

}  // namespace
