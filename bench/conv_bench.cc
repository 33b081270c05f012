// conv_bench — conv2d on the LeNet Fashion-MNIST shapes at batch 64 (float32, NCHW, stride 1, no
// padding), the shapes of the peer script bench/peers/conv_torch.py (PyTorch 1.13, oneDNN):
//   LeNet1: input 64x1x28x28,  filter 20x1x5x5  -> 64x20x24x24
//   LeNet2: input 64x20x12x12, filter 50x20x5x5 -> 64x50x8x8
// BM_Conv2dLeNet{1,2}Forward times conv2d; BM_Conv2dLeNet{1,2}Backward times conv2d_grad_input
// plus conv2d_grad_filter (the two gradients a training step needs, as the peer's
// aten::convolution_backward computes them). BM_Conv2dLeNet{1,2}Step times one training step's
// convolution work, conv2d + conv2d_grad_input + conv2d_grad_filter, on one thread and on two
// threads at once (->Threads(2)), each thread on its own batch, as two green-thread workers run
// two batches: with UseRealTime Google Benchmark reports wall time / the iterations of both
// threads, the time per batch at that throughput. OpenBLAS runs single-threaded (chanflow's
// kernels do not parallelise inside one call); compare with the peer at torch.set_num_threads(1)
// and 2.
//
//   build/release/bench/tensor/chanflow_conv_bench --benchmark_min_time=1
//   OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/peers/conv_torch.py --threads 1
//
// `chanflow_conv_bench --rss=LeNet2` (one shape per process) prints instead how much the peak RSS
// grows over five forward + backward passes at batch 64 after a warm-up pass at batch 16, the
// measurement the peer makes with --rss. The peak is the process's VmHWM (/proc/self/status), not
// getrusage's ru_maxrss: Linux carries the parent's peak RSS into ru_maxrss across fork + exec, so
// a child started by a larger process (scripts/bench.py) would read growth 0 below that level.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "chanflow/tensor.h"

namespace cf = chanflow;

namespace {

struct LeNetShape {
  cf::Shape x;
  cf::Shape w;
};

const LeNetShape kLeNet[2] = {{{64, 1, 28, 28}, {20, 1, 5, 5}}, {{64, 20, 12, 12}, {50, 20, 5, 5}}};

void forward(benchmark::State& state, const LeNetShape& s) {
  const cf::Tensor x = cf::uniform(s.x, -1, 1, 1);
  const cf::Tensor w = cf::uniform(s.w, -1, 1, 2);
  for (auto _ : state) {
    cf::Tensor y = cf::conv2d(x, w, {});
    benchmark::DoNotOptimize(y->raw_data());
  }
  const cf::Shape o = cf::conv2d_output_shape(s.x, s.w, {});
  state.counters["GFLOPS"] = benchmark::Counter(
      static_cast<double>(2 * cf::shape_numel(o) * s.w[1] * s.w[2] * s.w[3]),
      benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void backward(benchmark::State& state, const LeNetShape& s) {
  const cf::Tensor x = cf::uniform(s.x, -1, 1, 1);
  const cf::Tensor w = cf::uniform(s.w, -1, 1, 2);
  const cf::Shape o = cf::conv2d_output_shape(s.x, s.w, {});
  const cf::Tensor gy = cf::uniform(o, -1, 1, 3);
  for (auto _ : state) {
    cf::Tensor gx = cf::conv2d_grad_input(gy, w, s.x, {});
    cf::Tensor gw = cf::conv2d_grad_filter(gy, x, s.w, {});
    benchmark::DoNotOptimize(gx->raw_data());
    benchmark::DoNotOptimize(gw->raw_data());
  }
  state.counters["GFLOPS"] = benchmark::Counter(
      static_cast<double>(4 * cf::shape_numel(o) * s.w[1] * s.w[2] * s.w[3]),
      benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// One thread's inputs are its own (made by the thread before its loop), as a worker's batch is.
void step(benchmark::State& state, const LeNetShape& s) {
  const cf::Tensor x = cf::uniform(s.x, -1, 1, 1);
  const cf::Tensor w = cf::uniform(s.w, -1, 1, 2);
  const cf::Shape o = cf::conv2d_output_shape(s.x, s.w, {});
  const cf::Tensor gy = cf::uniform(o, -1, 1, 3);
  for (auto _ : state) {
    cf::Tensor y = cf::conv2d(x, w, {});
    cf::Tensor gx = cf::conv2d_grad_input(gy, w, s.x, {});
    cf::Tensor gw = cf::conv2d_grad_filter(gy, x, s.w, {});
    benchmark::DoNotOptimize(y->raw_data());
    benchmark::DoNotOptimize(gx->raw_data());
    benchmark::DoNotOptimize(gw->raw_data());
  }
  state.counters["GFLOPS"] = benchmark::Counter(
      static_cast<double>(6 * cf::shape_numel(o) * s.w[1] * s.w[2] * s.w[3]),
      benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void BM_Conv2dLeNet1Forward(benchmark::State& state) { forward(state, kLeNet[0]); }
void BM_Conv2dLeNet2Forward(benchmark::State& state) { forward(state, kLeNet[1]); }
void BM_Conv2dLeNet1Backward(benchmark::State& state) { backward(state, kLeNet[0]); }
void BM_Conv2dLeNet2Backward(benchmark::State& state) { backward(state, kLeNet[1]); }
BENCHMARK(BM_Conv2dLeNet1Forward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Conv2dLeNet1Backward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Conv2dLeNet2Forward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Conv2dLeNet2Backward)->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_Conv2dLeNet1Step(benchmark::State& state) { step(state, kLeNet[0]); }
void BM_Conv2dLeNet2Step(benchmark::State& state) { step(state, kLeNet[1]); }
BENCHMARK(BM_Conv2dLeNet1Step)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Threads(1)
    ->Threads(2);
BENCHMARK(BM_Conv2dLeNet2Step)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Threads(1)
    ->Threads(2);

// This process's peak resident set (VmHWM) in KiB; -1 when /proc/self/status has no VmHWM line.
long max_rss_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

int rss(const LeNetShape& s, const char* name) {
  const cf::Tensor x = cf::uniform(s.x, -1, 1, 1);
  const cf::Tensor w = cf::uniform(s.w, -1, 1, 2);
  const cf::Tensor gy = cf::uniform(cf::conv2d_output_shape(s.x, s.w, {}), -1, 1, 3);
  const auto step = [&](int64_t n) {
    const cf::Tensor xn = x.slice(0, 0, n);
    const cf::Tensor gn = gy.slice(0, 0, n);
    benchmark::DoNotOptimize(cf::conv2d(xn, w, {})->raw_data());
    benchmark::DoNotOptimize(cf::conv2d_grad_input(gn, w, xn.shape(), {})->raw_data());
    benchmark::DoNotOptimize(cf::conv2d_grad_filter(gn, xn, s.w, {})->raw_data());
  };
  step(16);
  const long r0 = max_rss_kib();
  for (int i = 0; i < 5; ++i) step(s.x[0]);
  std::printf("{\"name\": \"Conv2d%sPeakRssGrowth\", \"kib\": %ld}\n", name, max_rss_kib() - r0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rss=LeNet1") == 0) return rss(kLeNet[0], "LeNet1");
    if (std::strcmp(argv[i], "--rss=LeNet2") == 0) return rss(kLeNet[1], "LeNet2");
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
