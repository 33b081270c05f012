// core_bench — chanflow's object layer under Google Benchmark: make_object, is_instance (range
// fast path and overflow path), ObjectPool, Array<Int>, Map<Int, Int>, and one function call
// through each layer of the FFI (a direct C++ call, std::function, Function, the registry, the C
// ABI by handle and by name), all with the same body. The std:: peers of these
// shapes (make_shared, dynamic_cast, new/delete, std::vector, std::unordered_map) are in
// bench/peers/cpp/std_baselines.cc with the same loop bodies; scripts/bench.py runs both and
// prints the ratios against the targets (docs/benchmarks.md, "Targets").
//
//   build/release/bench/chanflow_core_bench --benchmark_filter=MakeObject
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <vector>

#include "chanflow/c_api.h"
#include "chanflow/core/array.h"
#include "chanflow/core/boxed.h"
#include "chanflow/core/function.h"
#include "chanflow/core/map.h"
#include "chanflow/core/object.h"
#include "chanflow/core/object_pool.h"

namespace cf = chanflow;

namespace {

// --- object types ----------------------------------------------------------------------------

// The payload of the allocation benchmarks: one int64, like std_baselines.cc's Payload.
class PayloadObj : public cf::Object {
 public:
  explicit PayloadObj(int64_t v) : value(v) {}
  int64_t value;
  static constexpr const char* kTypeKey = "bench.Payload";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(PayloadObj, cf::Object);
};

// Fast path: ExprObj reserves child slots, so AddObj/MulObj fall in its index range and
// is_instance<ExprObj> is one subtract-and-compare. VarObj is a sibling that is not an Expr.
class ExprObj : public cf::Object {
 public:
  static constexpr const char* kTypeKey = "bench.Expr";
  static constexpr uint32_t kTypeChildSlots = 8;
  CHANFLOW_DECLARE_OBJECT_INFO(ExprObj, cf::Object);
};
class AddObj : public ExprObj {
 public:
  static constexpr const char* kTypeKey = "bench.Add";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(AddObj, ExprObj);
};
class MulObj : public ExprObj {
 public:
  static constexpr const char* kTypeKey = "bench.Mul";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(MulObj, ExprObj);
};
class VarObj : public cf::Object {
 public:
  static constexpr const char* kTypeKey = "bench.Var";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(VarObj, cf::Object);
};

// Overflow path: DeepBaseObj reserves no child slots, so DeepLeafObj (a grandchild) is found
// through the ancestor table, not the range check.
class DeepBaseObj : public cf::Object {
 public:
  static constexpr const char* kTypeKey = "bench.DeepBase";
  static constexpr uint32_t kTypeChildSlots = 0;
  static constexpr bool kTypeChildSlotsCanOverflow = true;
  CHANFLOW_DECLARE_OBJECT_INFO(DeepBaseObj, cf::Object);
};
class DeepMidObj : public DeepBaseObj {
 public:
  static constexpr const char* kTypeKey = "bench.DeepMid";
  static constexpr uint32_t kTypeChildSlots = 0;
  static constexpr bool kTypeChildSlotsCanOverflow = true;
  CHANFLOW_DECLARE_OBJECT_INFO(DeepMidObj, DeepBaseObj);
};
class DeepLeafObj : public DeepMidObj {
 public:
  static constexpr const char* kTypeKey = "bench.DeepLeaf";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(DeepLeafObj, DeepMidObj);
};

constexpr int kMix = 64;  // objects per is_instance sweep; type pattern i % 3 as in the peer

// --- allocation --------------------------------------------------------------------------------

void BM_MakeObject(benchmark::State& state) {
  int64_t i = 0;
  for (auto _ : state) {
    cf::ObjectPtr<PayloadObj> p = cf::make_object<PayloadObj>(i++);
    benchmark::DoNotOptimize(p.get());
  }
}
BENCHMARK(BM_MakeObject);

void BM_PoolMake(benchmark::State& state) {
  cf::ObjectPool<PayloadObj> pool;
  int64_t i = 0;
  for (auto _ : state) {
    cf::ObjectPtr<PayloadObj> p = pool.make(i++);
    benchmark::DoNotOptimize(p.get());
  }
}
BENCHMARK(BM_PoolMake);

// --- is_instance -------------------------------------------------------------------------------

std::vector<cf::ObjectRef> fast_path_mix() {
  std::vector<cf::ObjectRef> v;
  for (int i = 0; i < kMix; ++i) {
    switch (i % 3) {
      case 0:
        v.emplace_back(cf::make_object<AddObj>());
        break;
      case 1:
        v.emplace_back(cf::make_object<MulObj>());
        break;
      default:
        v.emplace_back(cf::make_object<VarObj>());
        break;
    }
  }
  return v;
}

void BM_IsInstanceFast(benchmark::State& state) {
  std::vector<cf::ObjectRef> objs = fast_path_mix();
  std::vector<const cf::Object*> ptrs;
  for (auto& o : objs) ptrs.push_back(o.get());
  for (auto _ : state) {
    int hits = 0;
    for (const cf::Object* p : ptrs) {
      benchmark::DoNotOptimize(p);
      hits += p->is_instance<ExprObj>() ? 1 : 0;
    }
    if (hits != 43) state.SkipWithError("is_instance fast path: wrong answer");
    benchmark::DoNotOptimize(hits);
  }
  state.SetItemsProcessed(state.iterations() * kMix);
  state.counters["ops_per_iter"] = static_cast<double>(kMix);
}
BENCHMARK(BM_IsInstanceFast);

void BM_IsInstanceOverflow(benchmark::State& state) {
  std::vector<cf::ObjectRef> objs;
  for (int i = 0; i < kMix; ++i) {
    if (i % 3 == 2) {
      objs.emplace_back(cf::make_object<VarObj>());
    } else {
      objs.emplace_back(cf::make_object<DeepLeafObj>());
    }
  }
  std::vector<const cf::Object*> ptrs;
  for (auto& o : objs) ptrs.push_back(o.get());
  for (auto _ : state) {
    int hits = 0;
    for (const cf::Object* p : ptrs) {
      benchmark::DoNotOptimize(p);
      hits += p->is_instance<DeepBaseObj>() ? 1 : 0;
    }
    if (hits != 43) state.SkipWithError("is_instance overflow path: wrong answer");
    benchmark::DoNotOptimize(hits);
  }
  state.SetItemsProcessed(state.iterations() * kMix);
  state.counters["ops_per_iter"] = static_cast<double>(kMix);
}
BENCHMARK(BM_IsInstanceOverflow);

// --- containers --------------------------------------------------------------------------------

constexpr int64_t kElems = 1000;

void BM_ArrayPushBack(benchmark::State& state) {
  for (auto _ : state) {
    cf::Array<cf::Int> a;
    for (int64_t i = 0; i < kElems; ++i) a.push_back(cf::Int(i));
    benchmark::DoNotOptimize(a.get());
  }
  state.SetItemsProcessed(state.iterations() * kElems);
  state.counters["ops_per_iter"] = static_cast<double>(kElems);
}
BENCHMARK(BM_ArrayPushBack);

void BM_ArrayIndex(benchmark::State& state) {
  cf::Array<cf::Int> a;
  for (int64_t i = 0; i < kElems; ++i) a.push_back(cf::Int(i));
  for (auto _ : state) {
    int64_t sum = 0;
    for (size_t i = 0; i < a.size(); ++i) sum += a[i].value();
    if (sum != kElems * (kElems - 1) / 2) state.SkipWithError("Array index: wrong sum");
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * kElems);
  state.counters["ops_per_iter"] = static_cast<double>(kElems);
}
BENCHMARK(BM_ArrayIndex);

// 1k int keys (spread, not dense), looked up in a shuffled order, as in the unordered_map peer.
std::vector<int64_t> map_keys() {
  std::vector<int64_t> keys;
  for (int64_t i = 0; i < kElems; ++i) keys.push_back(i * 7919 + 13);
  return keys;
}
std::vector<int64_t> shuffled(std::vector<int64_t> keys) {
  std::mt19937_64 rng(42);
  std::shuffle(keys.begin(), keys.end(), rng);
  return keys;
}

void BM_MapLookup(benchmark::State& state) {
  const std::vector<int64_t> keys = map_keys();
  cf::Map<cf::Int, cf::Int> m;
  for (int64_t k : keys) m.set(cf::Int(k), cf::Int(k + 1));
  const std::vector<int64_t> order = shuffled(keys);
  int64_t expect = 0;
  for (int64_t k : keys) expect += k + 1;
  for (auto _ : state) {
    int64_t sum = 0;
    for (int64_t k : order) sum += m.get(k)->value();
    if (sum != expect) state.SkipWithError("Map lookup: wrong sum");
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * kElems);
  state.counters["ops_per_iter"] = static_cast<double>(kElems);
}
BENCHMARK(BM_MapLookup);

// Borrowing lookup (Map::find returns the stored value object, no reference-count traffic) — the
// same contract as std::unordered_map::find, so this is the row compared with it.
void BM_MapFind(benchmark::State& state) {
  const std::vector<int64_t> keys = map_keys();
  cf::Map<cf::Int, cf::Int> m;
  for (int64_t k : keys) m.set(cf::Int(k), cf::Int(k + 1));
  const std::vector<int64_t> order = shuffled(keys);
  int64_t expect = 0;
  for (int64_t k : keys) expect += k + 1;
  for (auto _ : state) {
    int64_t sum = 0;
    for (int64_t k : order) sum += m.find(k)->value;
    if (sum != expect) state.SkipWithError("Map find: wrong sum");
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * kElems);
  state.counters["ops_per_iter"] = static_cast<double>(kElems);
}
BENCHMARK(BM_MapFind);

// The same with boxed Int keys (the generic K path: hash and compare through the key object).
void BM_MapLookupBoxedKey(benchmark::State& state) {
  const std::vector<int64_t> keys = map_keys();
  cf::Map<cf::Int, cf::Int> m;
  for (int64_t k : keys) m.set(cf::Int(k), cf::Int(k + 1));
  std::vector<cf::Int> order;
  for (int64_t k : shuffled(keys)) order.emplace_back(k);
  int64_t expect = 0;
  for (int64_t k : keys) expect += k + 1;
  for (auto _ : state) {
    int64_t sum = 0;
    for (const cf::Int& k : order) sum += m.get(k)->value();
    if (sum != expect) state.SkipWithError("Map lookup: wrong sum");
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * kElems);
  state.counters["ops_per_iter"] = static_cast<double>(kElems);
}
BENCHMARK(BM_MapLookupBoxedKey);

// --- function calls (the FFI) ------------------------------------------------------------------
// One body everywhere: return the argument (an Int), so each call takes and drops one reference
// to the result, as any call returning an object does. Each loop checks the result.

[[gnu::noinline]] cf::ObjectRef identity(std::span<const cf::ObjectRef> args) { return args[0]; }

constexpr const char* kBenchFunc = "bench.identity";

void check_int(benchmark::State& state, const cf::ObjectRef& r, int64_t want) {
  const auto* i = r.as<cf::IntObj>();
  if (i == nullptr || i->value != want) state.SkipWithError("function call: wrong result");
}

// A direct call of the body (not inlined): the floor.
void BM_DirectCall(benchmark::State& state) {
  const std::array<cf::ObjectRef, 1> args{cf::Int(7)};
  for (auto _ : state) {
    cf::ObjectRef r = identity(args);
    benchmark::DoNotOptimize(r.get());
  }
  check_int(state, identity(args), 7);
}
BENCHMARK(BM_DirectCall);

// The body behind a std::function (what FunctionObj holds).
void BM_StdFunctionCall(benchmark::State& state) {
  const std::function<cf::ObjectRef(std::span<const cf::ObjectRef>)> f(identity);
  const std::array<cf::ObjectRef, 1> args{cf::Int(7)};
  benchmark::DoNotOptimize(&f);
  for (auto _ : state) {
    cf::ObjectRef r = f(args);
    benchmark::DoNotOptimize(r.get());
  }
  check_int(state, f(args), 7);
}
BENCHMARK(BM_StdFunctionCall);

// A Function handle called from C++.
void BM_FunctionCall(benchmark::State& state) {
  const cf::Function f(identity);
  const std::array<cf::ObjectRef, 1> args{cf::Int(7)};
  for (auto _ : state) {
    cf::ObjectRef r = f(args);
    benchmark::DoNotOptimize(r.get());
  }
  check_int(state, f(args), 7);
}
BENCHMARK(BM_FunctionCall);

// Look the function up by name in the registry, then call it: what a call by name costs in C++.
void BM_RegistryLookupCall(benchmark::State& state) {
  cf::register_func(kBenchFunc, cf::Function(identity), true);
  const std::array<cf::ObjectRef, 1> args{cf::Int(7)};
  for (auto _ : state) {
    cf::ObjectRef r = (*cf::get_global_func(kBenchFunc))(args);
    benchmark::DoNotOptimize(r.get());
  }
  check_int(state, cf::require_global_func(kBenchFunc)(args), 7);
  cf::remove_global_func(kBenchFunc);
}
BENCHMARK(BM_RegistryLookupCall);

// chanflow_func_call through the C ABI on a handle got once, releasing each result handle.
void BM_CApiCallHandle(benchmark::State& state) {
  cf::register_func(kBenchFunc, cf::Function(identity), true);
  chanflow_object_t f = nullptr, arg = nullptr, out = nullptr;
  if (chanflow_func_get(kBenchFunc, &f) != 0 || chanflow_int_new(7, &arg) != 0) {
    state.SkipWithError(chanflow_last_error());
    return;
  }
  for (auto _ : state) {
    if (chanflow_func_call(f, &arg, 1, &out) != 0) state.SkipWithError(chanflow_last_error());
    chanflow_object_release(out);
  }
  int64_t v = 0;
  if (chanflow_func_call(f, &arg, 1, &out) != 0 || chanflow_int_value(out, &v) != 0 || v != 7) {
    state.SkipWithError("C ABI call: wrong result");
  }
  chanflow_object_release(out);
  chanflow_object_release(arg);
  chanflow_object_release(f);
  cf::remove_global_func(kBenchFunc);
}
BENCHMARK(BM_CApiCallHandle);

// chanflow_func_call_by_name: the registry lookup on every call.
void BM_CApiCallByName(benchmark::State& state) {
  cf::register_func(kBenchFunc, cf::Function(identity), true);
  chanflow_object_t arg = nullptr, out = nullptr;
  if (chanflow_int_new(7, &arg) != 0) {
    state.SkipWithError(chanflow_last_error());
    return;
  }
  for (auto _ : state) {
    if (chanflow_func_call_by_name(kBenchFunc, &arg, 1, &out) != 0) {
      state.SkipWithError(chanflow_last_error());
    }
    chanflow_object_release(out);
  }
  int64_t v = 0;
  if (chanflow_func_call_by_name(kBenchFunc, &arg, 1, &out) != 0 ||
      chanflow_int_value(out, &v) != 0 || v != 7) {
    state.SkipWithError("C ABI call by name: wrong result");
  }
  chanflow_object_release(out);
  chanflow_object_release(arg);
  cf::remove_global_func(kBenchFunc);
}
BENCHMARK(BM_CApiCallByName);

}  // namespace

BENCHMARK_MAIN();
