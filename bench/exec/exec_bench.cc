// Per-op dispatch of the executor: a 1M-iteration `while` loop whose body runs trivial ops.
// Reported: ns per op (items_per_second counts ops). Target (PERFORMANCE.md): <= 200 ns/op.
#include <benchmark/benchmark.h>

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

}  // namespace

BENCHMARK_MAIN();
