// The peers of the tensor benchmarks (bench/tensor/, written by the tensor layer): OpenBLAS sgemm
// called directly on 1024x1024 float32 matrices, and memcpy of 64 MiB (the bandwidth bound that
// elementwise add/mul on 64 MiB float32 is compared against).
//   g++ -O2 -std=c++20 blas_memcpy_peer.cc -lbenchmark -lopenblas -pthread -o blas_memcpy_peer
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstring>
#include <vector>

namespace {

void BM_SgemmDirect(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<float> a(static_cast<size_t>(n) * n), b(a.size()), c(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i % 17) * 0.25f;
    b[i] = static_cast<float>(i % 13) * 0.5f;
  }
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["flops"] =
      benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SgemmDirect)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Memcpy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  // Memory traffic: one read and one write per byte (bench/tensor_bench.cc counts the same way).
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 *
                          static_cast<int64_t>(bytes));
}
BENCHMARK(BM_Memcpy)->Arg(64 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
