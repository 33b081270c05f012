// GoMachine benchmarks (docs/benchmarks.md, "Targets", graph rows), each against its TapeMachine in
// the same run; the oneTBB flow-graph side of the per-node rows is
// bench/peers/cpp/tbb_flow_peer.cc.
//
//   chain/fanout   100k nodes of a trivial op (identity): wall-clock ns per node for one run of a
//                  built graph (counter "ns_per_node", from real time), workers = 1 or 2.
//   ensemble       8 independent MLPs (real sgemm work), 2 workers: GoMachine vs TapeMachine,
//                  and the ceiling: two TapeMachines on two OS threads (4 MLPs each).
//   deep_chain     a chain of matmul+tanh layers (no parallelism to find): GoMachine vs Tape.
//   stream         16 items through a 4-stage MLP pipeline: stream() vs a loop of run().
//   run10          a 10-op graph, one warm run + result: the C++ side of the Python row.
#include <benchmark/benchmark.h>

#include <memory>
#include <thread>

#include "chanflow/graph.h"
#include "chanflow/runtime.h"
#include "chanflow/tensor.h"

namespace cf = chanflow;
using cf::DType;
using cf::Tensor;

namespace {

// A trivial op: passes its first operand through (no kernel, no allocation).
cf::Node identity(cf::Graph& g, const std::vector<cf::Node>& in) {
  return g.apply("id", in, in[0].shape(), in[0].dtype(),
                 [](std::span<const Tensor> a, const cf::OpContext&) { return a[0]; });
}

cf::Graph chain_graph(int n) {
  cf::Graph g;
  cf::Node x = g.scalar(1.0f, "x");
  for (int i = 1; i < n; ++i) x = identity(g, {x});
  return g;
}

cf::Graph fanout_graph(int n) {
  cf::Graph g;
  cf::Node src = g.scalar(1.0f, "src");
  std::vector<cf::Node> mids;
  mids.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n - 2; ++i) mids.push_back(identity(g, {src}));
  (void)identity(g, mids);  // the sink merges every branch
  return g;
}

struct WithScheduler {
  explicit WithScheduler(int workers)
      : sched(cf::SchedulerOptions{.workers = workers}), use(sched) {}
  cf::Scheduler sched;
  cf::ScopedDefaultScheduler use;
};

template <class Build>
void per_node_go(benchmark::State& state, Build build) {
  const int n = static_cast<int>(state.range(0));
  WithScheduler ws(static_cast<int>(state.range(1)));
  cf::Graph g = build(n);
  cf::GoMachine m(g);
  m.run();  // a first run touches the arenas and the tensor cache
  for (auto _ : state) m.run();
  state.counters["ns_per_node"] =
      benchmark::Counter(static_cast<double>(n) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

template <class Build>
void per_node_tape(benchmark::State& state, Build build) {
  const int n = static_cast<int>(state.range(0));
  cf::Graph g = build(n);
  cf::TapeMachine t(g);
  for (auto _ : state) t.run();
  state.counters["ns_per_node"] =
      benchmark::Counter(static_cast<double>(n) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_GoChain(benchmark::State& s) { per_node_go(s, chain_graph); }
void BM_GoFanout(benchmark::State& s) { per_node_go(s, fanout_graph); }
void BM_TapeChain(benchmark::State& s) { per_node_tape(s, chain_graph); }
void BM_TapeFanout(benchmark::State& s) { per_node_tape(s, fanout_graph); }
// Real (wall) time, like the oneTBB peer's hand timing: CPU time would leave out the worker
// threads (the benchmark thread only waits) and any time spent parked or asleep.
BENCHMARK(BM_GoChain)
    ->Args({100000, 1})
    ->Args({100000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_GoFanout)
    ->Args({100000, 1})
    ->Args({100000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_TapeChain)->Args({100000, 1})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TapeFanout)->Args({100000, 1})->Unit(benchmark::kMillisecond)->UseRealTime();

Tensor weights(const cf::Shape& s, float scale) {
  return cf::mul(
      cf::uniform(s, -1, 1, /*seed=*/static_cast<uint64_t>(s[0] * 131 + s[1]), DType::kFloat32),
      Tensor::scalar(scale, DType::kFloat32));
}

// `mlps` independent 3-layer MLPs over one batch, their outputs summed.
cf::Graph ensemble_graph(int mlps = 8) {
  cf::Graph g;
  cf::Node x = g.constant(weights({128, 256}, 1.0f), "x");
  cf::Node total;
  for (int k = 0; k < mlps; ++k) {
    cf::Node h = cf::relu(cf::matmul(x, g.constant(weights({256, 256}, 0.06f))));
    h = cf::relu(cf::matmul(h, g.constant(weights({256, 256}, 0.06f))));
    cf::Node o = cf::softmax(cf::matmul(h, g.constant(weights({256, 16}, 0.06f))));
    total = total.valid() ? total + o : o;
  }
  return g;
}

cf::Graph deep_chain_graph() {
  cf::Graph g;
  cf::Node h = g.constant(weights({128, 256}, 1.0f), "x");
  cf::Node w = g.constant(weights({256, 256}, 0.06f), "w");
  for (int i = 0; i < 24; ++i) h = cf::tanh(cf::matmul(h, w));
  return g;
}

void BM_EnsembleGo(benchmark::State& state) {
  WithScheduler ws(static_cast<int>(state.range(0)));
  cf::Graph g = ensemble_graph();
  cf::GoMachine m(g);
  m.run();
  for (auto _ : state) m.run();
}
void BM_EnsembleTape(benchmark::State& state) {
  cf::Graph g = ensemble_graph();
  cf::TapeMachine t(g);
  for (auto _ : state) t.run();
}
// The ceiling for any 2-thread runtime on this machine in this run: the same 8 MLPs split in
// two halves of 4, each run by a TapeMachine on its own OS thread. Its speed-up over
// BM_EnsembleTape is what two OS threads get (on a loaded machine, well under 2).
void BM_EnsembleTwoOsThreads(benchmark::State& state) {
  cf::Graph g1 = ensemble_graph(4);
  cf::Graph g2 = ensemble_graph(4);
  cf::TapeMachine t1(g1);
  cf::TapeMachine t2(g2);
  for (auto _ : state) {
    std::thread other([&t2] { t2.run(); });
    t1.run();
    other.join();
  }
}
void BM_DeepChainGo(benchmark::State& state) {
  WithScheduler ws(static_cast<int>(state.range(0)));
  cf::Graph g = deep_chain_graph();
  cf::GoMachine m(g);
  m.run();
  for (auto _ : state) m.run();
}
void BM_DeepChainTape(benchmark::State& state) {
  cf::Graph g = deep_chain_graph();
  cf::TapeMachine t(g);
  for (auto _ : state) t.run();
}
BENCHMARK(BM_EnsembleGo)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EnsembleTape)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EnsembleTwoOsThreads)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DeepChainGo)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DeepChainTape)->Unit(benchmark::kMillisecond)->UseRealTime();

// A 4-stage pipeline (one layer per stage) fed 16 items.
struct Pipeline {
  cf::Graph g;
  cf::Node x;
  cf::Node out;
  std::vector<cf::Bindings> items;
};
Pipeline pipeline() {
  Pipeline p;
  p.x = p.g.input("x", DType::kFloat32, {128, 256});
  cf::Node h = p.x;
  for (int i = 0; i < 4; ++i) h = cf::tanh(cf::matmul(h, p.g.constant(weights({256, 256}, 0.06f))));
  p.out = h;
  for (int i = 0; i < 16; ++i) {
    p.items.push_back(
        {{p.x, cf::uniform({128, 256}, -1, 1, static_cast<uint64_t>(i), DType::kFloat32)}});
  }
  return p;
}
void BM_StreamPipeline(benchmark::State& state) {
  WithScheduler ws(2);
  Pipeline p = pipeline();
  cf::GoMachine m(p.g, {.window = 4});
  m.run(cf::background(), p.items[0]);
  for (auto _ : state) benchmark::DoNotOptimize(m.stream(cf::background(), p.items, {p.out}));
}
void BM_RepeatedRunPipeline(benchmark::State& state) {
  WithScheduler ws(2);
  Pipeline p = pipeline();
  cf::GoMachine m(p.g);
  m.run(cf::background(), p.items[0]);
  for (auto _ : state) {
    for (const cf::Bindings& b : p.items) m.run(cf::background(), b);
  }
}
BENCHMARK(BM_StreamPipeline)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RepeatedRunPipeline)->Unit(benchmark::kMillisecond)->UseRealTime();

// The 10-op graph of the Python-vs-C++ rows (below).
struct TenOps {
  cf::Graph g;
  cf::Node x, z;
  cf::Bindings bindings;
  TenOps() {
    x = g.input("x", DType::kFloat32, {4});
    const cf::Node one = g.constant(Tensor::ones({4}, DType::kFloat32), "one");
    z = x;
    for (int k = 0; k < 9; ++k) z = z + one;
    bindings = {{x, Tensor::zeros({4}, DType::kFloat32)}};
  }
};

// One warm GoMachine::run + result of the 10-op graph that bench/python/python_bench.py's `graph`
// mode builds the same way from Python: input x (float32[4]), a constant `one` (float32[4]) and
// nine adds z_k = z_{k-1} + one; bind x = 0, read z8 (= 9). scripts/bench.py compares it with the
// same call from Python (target <= 1.2 x this + 10 us). Both sides run on the process's default
// scheduler, called from the main OS thread.
void BM_GoMachineRunTenOps(benchmark::State& state) {
  TenOps t;
  cf::GoMachine m(t.g);
  m.run(cf::background(), t.bindings);
  if (!m.result(t.z).equal_to(Tensor::full({4}, 9.0, DType::kFloat32))) {
    state.SkipWithError("the 10-op graph: z8 is not 9");
    return;
  }
  for (auto _ : state) {
    m.run(cf::background(), t.bindings);
    Tensor out = m.result(t.z);
    benchmark::DoNotOptimize(out);
  }
}
// The same on a TapeMachine (no thread hand-off): with python_bench.py's TapeMachine figure, the
// cost of the Python binding alone.
void BM_TapeMachineRunTenOps(benchmark::State& state) {
  TenOps t;
  cf::TapeMachine m(t.g);
  m.run(cf::background(), t.bindings);
  if (!m.result(t.z).equal_to(Tensor::full({4}, 9.0, DType::kFloat32))) {
    state.SkipWithError("the 10-op graph: z8 is not 9");
    return;
  }
  for (auto _ : state) {
    m.run(cf::background(), t.bindings);
    Tensor out = m.result(t.z);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_GoMachineRunTenOps)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_TapeMachineRunTenOps)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
