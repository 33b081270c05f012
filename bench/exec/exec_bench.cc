// Per-op dispatch of the executor: a 1M-iteration `while` loop whose body runs trivial ops.
// Reported: ns per op (items_per_second counts ops). Target (docs/benchmarks.md): <= 200 ns/op.
// Also: building and running a daisy chain of go blocks (builder capture analysis, spawn cost),
// and one warm run of a small program, the C++ side of the Python Executor.run comparison.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "chanflow/exec.h"
#include "chanflow/ir/builder.h"

namespace cf = chanflow;

namespace {

// while (i < n) { i += 1; [extra assigns]; cond = i < n }: 2 + extra ops per iteration.
cf::Program loop_program(int64_t n, int extra) {
  cf::ProgramBuilder b;
  cf::Var i = b.fill_constant({1}, cf::DType::kInt64, 0, b.var("i", cf::DType::kInt64, {1}));
  cf::Var limit = b.fill_constant({1}, cf::DType::kInt64, static_cast<double>(n));
  cf::Var cond = b.less_than(i, limit);
  cf::Var copy = b.var("copy", cf::DType::kInt64, {1});
  {
    auto w = b.while_loop(cond);
    b.increment(i, 1.0, i);
    for (int k = 0; k < extra; ++k) b.assign(i, copy);
    b.less_than(i, limit, cond);
  }
  return b.build();
}

void BM_WhileLoopDispatch(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int extra = static_cast<int>(state.range(1));
  cf::Program p = loop_program(n, extra);
  cf::Executor ex;
  ex.prepare(p);
  for (auto _ : state) {
    auto out = ex.run(p, {}, {"i"});
    if (out["i"].item<int64_t>() != n) state.SkipWithError("wrong loop count");
  }
  const int64_t ops_per_run = n * (2 + extra);
  state.SetItemsProcessed(state.iterations() * ops_per_run);
  state.counters["ns_per_op"] =
      benchmark::Counter(static_cast<double>(state.iterations() * ops_per_run),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_WhileLoopDispatch)
    ->Args({1000000, 0})
    ->Args({1000000, 4})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A daisy chain of n go blocks: block k receives from channel k and sends value + 1 on channel
// k + 1. Building it exercises the builder's capture analysis once per go block.
cf::Program daisy_chain_program(int64_t n) {
  cf::ProgramBuilder b;
  std::vector<cf::Var> chans;
  chans.reserve(static_cast<size_t>(n) + 1);
  for (int64_t k = 0; k <= n; ++k) chans.push_back(b.make_channel(cf::DType::kInt64, 0));
  for (int64_t k = 0; k < n; ++k) {
    auto go = b.go();
    auto [v, ok] = b.channel_recv(chans[static_cast<size_t>(k)]);
    b.channel_send(chans[static_cast<size_t>(k) + 1], b.increment(v, 1.0));
  }
  b.channel_send(chans.front(), b.fill_constant({1}, cf::DType::kInt64, 1));
  auto [result, ok] = b.channel_recv(chans.back(), b.var("result", cf::DType::kInt64, {1}));
  return b.build();
}

// Builder cost per go block (no target; the point is that it stays linear).
void BM_BuildDaisyChain(benchmark::State& state) {
  const int64_t n = state.range(0);
  for (auto _ : state) benchmark::DoNotOptimize(daisy_chain_program(n));
  state.counters["us_per_go_block"] =
      benchmark::Counter(static_cast<double>(state.iterations() * n) / 1e6,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_BuildDaisyChain)->Arg(300)->Arg(3000)->Unit(benchmark::kMillisecond)->UseRealTime();

// Running that program: one green thread per go block, n channel hand-offs.
void BM_RunDaisyChain(benchmark::State& state) {
  const int64_t n = state.range(0);
  cf::Program p = daisy_chain_program(n);
  cf::Executor ex;
  ex.prepare(p);
  for (auto _ : state) {
    auto out = ex.run(p, {}, {"result"});
    if (out["result"].item<int64_t>() != n + 1) state.SkipWithError("wrong chain result");
  }
  state.counters["us_per_go_block"] =
      benchmark::Counter(static_cast<double>(state.iterations() * n) / 1e6,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_RunDaisyChain)->Arg(10000)->Unit(benchmark::kMillisecond)->UseRealTime();

// One warm Executor::run of bench/exec/ten_ops.pbtxt (fill_constant and nine elementwise_adds on
// float32[4]; feed x, fetch z8): the C++ call that scripts/bench.py compares with the same run
// called from Python (bench/python/python_bench.py exec: chanflow.Executor.run and
// fluid.Executor.run, target <= 1.2 x this + 10 us). Prepared once; the feed tensor made once.
void BM_RunTenOps(benchmark::State& state) {
  const cf::Program p =
      cf::Program::from_file(std::string(CHANFLOW_BENCH_EXEC_DIR) + "/ten_ops.pbtxt");
  cf::Executor ex;
  ex.prepare(p);
  const std::map<std::string, cf::Tensor> feed{{"x", cf::Tensor::zeros({4}, cf::DType::kFloat32)}};
  const std::vector<std::string> fetch{"z8"};
  std::map<std::string, cf::Tensor> out = ex.run(p, feed, fetch);
  if (!out.at("z8").equal_to(cf::Tensor::full({4}, 9.0, cf::DType::kFloat32))) {
    state.SkipWithError("ten_ops.pbtxt: z8 is not 9");
    return;
  }
  for (auto _ : state) {
    out = ex.run(p, feed, fetch);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_RunTenOps)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
