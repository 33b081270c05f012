// The plain C++ peers of bench/core_bench.cc, same loop bodies under Google Benchmark:
// std::make_shared, new/delete, dynamic_cast on a hierarchy shaped like core_bench's object types,
// std::vector<int64_t> and std::unordered_map<int64_t, int64_t> with 1k keys.
//   g++ -O2 -std=c++20 std_baselines.cc -lbenchmark -pthread -o std_baselines
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

namespace {

struct Payload {
  explicit Payload(int64_t v) : value(v) {}
  int64_t value;
};

// The hierarchies of core_bench.cc as C++ classes: Node is the polymorphic root (cf::Object).
struct Node {
  virtual ~Node() = default;
};
struct Expr : Node {};
struct Add final : Expr {};
struct Mul final : Expr {};
struct Var final : Node {};
struct DeepBase : Node {};
struct DeepMid : DeepBase {};
struct DeepLeaf final : DeepMid {};

constexpr int kMix = 64;

void BM_MakeShared(benchmark::State& state) {
  int64_t i = 0;
  for (auto _ : state) {
    std::shared_ptr<Payload> p = std::make_shared<Payload>(i++);
    benchmark::DoNotOptimize(p.get());
  }
}
BENCHMARK(BM_MakeShared);

void BM_NewDelete(benchmark::State& state) {
  int64_t i = 0;
  for (auto _ : state) {
    Payload* p = new Payload(i++);
    benchmark::DoNotOptimize(p);
    delete p;
  }
}
BENCHMARK(BM_NewDelete);

template <class Target>
void run_casts(benchmark::State& state, const std::vector<std::unique_ptr<Node>>& objs) {
  std::vector<const Node*> ptrs;
  for (auto& o : objs) ptrs.push_back(o.get());
  for (auto _ : state) {
    int hits = 0;
    for (const Node* p : ptrs) {
      benchmark::DoNotOptimize(p);
      hits += dynamic_cast<const Target*>(p) != nullptr ? 1 : 0;
    }
    if (hits != 43) state.SkipWithError("dynamic_cast: wrong answer");
    benchmark::DoNotOptimize(hits);
  }
  state.SetItemsProcessed(state.iterations() * kMix);
  state.counters["ops_per_iter"] = static_cast<double>(kMix);
}

// Peer of BM_IsInstanceFast: is this Add/Mul/Var an Expr?
void BM_DynamicCastShallow(benchmark::State& state) {
  std::vector<std::unique_ptr<Node>> objs;
  for (int i = 0; i < kMix; ++i) {
    switch (i % 3) {
      case 0:
        objs.push_back(std::make_unique<Add>());
        break;
      case 1:
        objs.push_back(std::make_unique<Mul>());
        break;
      default:
        objs.push_back(std::make_unique<Var>());
        break;
    }
  }
  run_casts<Expr>(state, objs);
}
BENCHMARK(BM_DynamicCastShallow);

// Peer of BM_IsInstanceOverflow: is this DeepLeaf/Var a DeepBase (two levels up)?
void BM_DynamicCastDeep(benchmark::State& state) {
  std::vector<std::unique_ptr<Node>> objs;
  for (int i = 0; i < kMix; ++i) {
    if (i % 3 == 2) {
      objs.push_back(std::make_unique<Var>());
    } else {
      objs.push_back(std::make_unique<DeepLeaf>());
    }
  }
  run_casts<DeepBase>(state, objs);
}
BENCHMARK(BM_DynamicCastDeep);

constexpr int64_t kElems = 1000;

void BM_VectorPushBack(benchmark::State& state) {
  for (auto _ : state) {
    std::vector<int64_t> a;
    for (int64_t i = 0; i < kElems; ++i) a.push_back(i);
    benchmark::DoNotOptimize(a.data());
  }
  state.SetItemsProcessed(state.iterations() * kElems);
  state.counters["ops_per_iter"] = static_cast<double>(kElems);
}
BENCHMARK(BM_VectorPushBack);

void BM_VectorIndex(benchmark::State& state) {
  std::vector<int64_t> a;
  for (int64_t i = 0; i < kElems; ++i) a.push_back(i);
  for (auto _ : state) {
    benchmark::DoNotOptimize(a.data());
    int64_t sum = 0;
    for (size_t i = 0; i < a.size(); ++i) sum += a[i];
    if (sum != kElems * (kElems - 1) / 2) state.SkipWithError("vector index: wrong sum");
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * kElems);
  state.counters["ops_per_iter"] = static_cast<double>(kElems);
}
BENCHMARK(BM_VectorIndex);

void BM_UnorderedMapLookup(benchmark::State& state) {
  std::vector<int64_t> keys;
  for (int64_t i = 0; i < kElems; ++i) keys.push_back(i * 7919 + 13);
  std::unordered_map<int64_t, int64_t> m;
  for (int64_t k : keys) m.emplace(k, k + 1);
  int64_t expect = 0;
  for (int64_t k : keys) expect += k + 1;
  std::mt19937_64 rng(42);
  std::shuffle(keys.begin(), keys.end(), rng);
  for (auto _ : state) {
    int64_t sum = 0;
    for (int64_t k : keys) sum += m.find(k)->second;
    if (sum != expect) state.SkipWithError("unordered_map lookup: wrong sum");
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * kElems);
  state.counters["ops_per_iter"] = static_cast<double>(kElems);
}
BENCHMARK(BM_UnorderedMapLookup);

}  // namespace

BENCHMARK_MAIN();
