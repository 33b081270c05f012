// nn_bench — the memory-bound kernels of nn.h next to memcpy of 32 MiB in the same run (Google
// Benchmark). bytes_per_second counts the traffic each kernel must do at least: memcpy reads and
// writes 32 MiB (2 x); leaky_relu, batch_norm_infer, concat, split 2 x; relu_grad, sigmoid_grad,
// leaky_relu_grad, dropout_grad, dropout (x read, out and mask written) 3 x; batch_norm_train 2 x
// (x read, y written: what the op requires, although this implementation reads x twice, once for
// the statistics and once to normalise, so it moves 3 x and its ceiling in this count is 2/3 of
// memcpy's rate). Target (docs/tensor.md): >= 0.8 of memcpy's bytes_per_second. 32 MiB buffers are
// the largest the tensor buffer cache recycles, so the fresh outputs of these kernels are not page
// faults on every call.
//
//   build/release/bench/tensor/chanflow_nn_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "chanflow/tensor.h"

namespace cf = chanflow;

namespace {

constexpr int64_t kBytes = int64_t{32} << 20;
constexpr int64_t kN = kBytes / 4;

void BM_Memcpy(benchmark::State& state) {
  std::vector<char> src(kBytes, 1);
  std::vector<char> dst(kBytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kBytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * kBytes);
}

const cf::Tensor& x();
const cf::Tensor& g();

// The inputs are made before the timed loop: a first iteration that also filled them would
// count tens of milliseconds of random numbers against a kernel of a few (and be the whole
// figure when one iteration reaches --benchmark_min_time).
template <class F>
void run(benchmark::State& state, int64_t traffic, F&& f) {
  benchmark::DoNotOptimize(x()->raw_data());
  benchmark::DoNotOptimize(g()->raw_data());
  for (auto _ : state) {
    auto r = f();
    benchmark::DoNotOptimize(r);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * traffic * kBytes);
}

const cf::Tensor& x() {
  static const cf::Tensor t = cf::uniform({kN}, -1, 1, 1);
  return t;
}
const cf::Tensor& g() {
  static const cf::Tensor t = cf::uniform({kN}, -1, 1, 2);
  return t;
}

void BM_LeakyRelu(benchmark::State& s) {
  run(s, 2, [] { return cf::leaky_relu(x(), 0.02f); });
}
void BM_ReluGrad(benchmark::State& s) {
  run(s, 3, [] { return cf::relu_grad(x(), g()); });
}
void BM_SigmoidGrad(benchmark::State& s) {
  run(s, 3, [] { return cf::sigmoid_grad(x(), g()); });
}
void BM_LeakyReluGrad(benchmark::State& s) {
  run(s, 3, [] { return cf::leaky_relu_grad(x(), g(), 0.1f); });
}
void BM_DropoutTrain(benchmark::State& s) {
  run(s, 3, [] { return cf::dropout(x(), 0.5f, false, 7); });
}
void BM_DropoutGrad(benchmark::State& s) {
  run(s, 3, [] { return cf::dropout_grad(x(), g()); });
}
void BM_BatchNormInferNCHW(benchmark::State& s) {
  const cf::Tensor x4 = x().reshape({32, 64, 64, 64});
  const cf::Tensor c = cf::Tensor::ones({64}, cf::DType::kFloat32);
  const cf::Tensor z = cf::Tensor::zeros({64}, cf::DType::kFloat32);
  run(s, 2, [&] { return cf::batch_norm_infer(x4, c, z, z, c, 1e-5f, cf::DataLayout::kNCHW); });
}
void BM_BatchNormTrainNCHW(benchmark::State& s) {
  const cf::Tensor x4 = x().reshape({32, 64, 64, 64});
  const cf::Tensor c = cf::Tensor::ones({64}, cf::DType::kFloat32);
  const cf::Tensor z = cf::Tensor::zeros({64}, cf::DType::kFloat32);
  run(s, 2,
      [&] { return cf::batch_norm_train(x4, c, z, z, c, 0.9f, 1e-5f, cf::DataLayout::kNCHW).y; });
}
void BM_BatchNormTrainNHWC(benchmark::State& s) {
  const cf::Tensor x4 = x().reshape({32, 64, 64, 64});
  const cf::Tensor c = cf::Tensor::ones({64}, cf::DType::kFloat32);
  const cf::Tensor z = cf::Tensor::zeros({64}, cf::DType::kFloat32);
  run(s, 2,
      [&] { return cf::batch_norm_train(x4, c, z, z, c, 0.9f, 1e-5f, cf::DataLayout::kNHWC).y; });
}
void BM_ConcatAxis1(benchmark::State& s) {
  const cf::Tensor a = x().reshape({4096, 2048}).slice(1, 0, 1024).contiguous();
  const cf::Tensor b = g().reshape({4096, 2048}).slice(1, 0, 1024).contiguous();
  run(s, 2, [&] { return cf::concat({a, b}, 1); });
}
void BM_SplitAxis1(benchmark::State& s) {
  const cf::Tensor m = x().reshape({4096, 2048});
  run(s, 2, [&] { return cf::split(m, 2, 1); });
}

#define NN_BENCH(name) BENCHMARK(name)->Unit(benchmark::kMillisecond)->UseRealTime()
NN_BENCH(BM_Memcpy);
NN_BENCH(BM_LeakyRelu);
NN_BENCH(BM_ReluGrad);
NN_BENCH(BM_SigmoidGrad);
NN_BENCH(BM_LeakyReluGrad);
NN_BENCH(BM_DropoutTrain);
NN_BENCH(BM_DropoutGrad);
NN_BENCH(BM_BatchNormInferNCHW);
NN_BENCH(BM_BatchNormTrainNCHW);
NN_BENCH(BM_BatchNormTrainNHWC);
NN_BENCH(BM_ConcatAxis1);
NN_BENCH(BM_SplitAxis1);
#undef NN_BENCH

}  // namespace

BENCHMARK_MAIN();
