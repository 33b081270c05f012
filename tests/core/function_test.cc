// The global function registry (chanflow/core/function.h), the core built-ins and the runtime's
// green-thread functions (chanflow/runtime/functions.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "chanflow/core.h"
#include "chanflow/runtime.h"

namespace cf = chanflow;
using Args = std::span<const cf::ObjectRef>;

namespace {

cf::ObjectRef add_ints(Args args) {
  cf::check_arg_count("test.add", args, 2);
  return cf::Int(cf::arg_as<cf::Int>("test.add", args, 0).value() +
                 cf::arg_as<cf::Int>("test.add", args, 1).value());
}

// Removes a test's registrations however the test ends.
struct Cleanup {
  std::vector<std::string> names;
  ~Cleanup() {
    for (const std::string& n : names) cf::remove_global_func(n);
  }
};

// Runs `fn` on a green thread and waits for it.
template <class F>
void run_in_green_thread(F fn) {
  cf::Group g;
  g.go(std::move(fn));
  g.wait();
}

std::string thrown_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<nothing thrown>";
}

}  // namespace

// Registered while the test binary loads, by the macro.
CHANFLOW_REGISTER_GLOBAL_FUNC("test.loaded",
                              [](Args args) { return cf::Int(static_cast<int64_t>(args.size())); });

TEST(Function, TypeIsStaticAndFinal) {
  EXPECT_EQ(cf::FunctionObj::runtime_type_index(), cf::TypeIndex::kFunction);
  const cf::Function f(add_ints);
  EXPECT_EQ(f->type_key(), "Function");
  EXPECT_TRUE(f->is_instance<cf::FunctionObj>());
  EXPECT_EQ(cf::TypeRegistry::global().index_of("Function"), cf::TypeIndex::kFunction);
}

TEST(Function, CallsWithSpanAndVariadicArguments) {
  const cf::Function add(add_ints);
  EXPECT_EQ(cf::downcast<cf::Int>(add(cf::Int(2), cf::Int(40))).value(), 42);
  const std::vector<cf::ObjectRef> args{cf::Int(1), cf::Int(2)};
  EXPECT_EQ(cf::downcast<cf::Int>(add(args)).value(), 3);
  // A body may return the null object, and receive null arguments.
  const cf::Function count_nulls([](Args a) {
    return cf::Int(std::count_if(a.begin(), a.end(), [](const auto& r) { return !r.defined(); }));
  });
  EXPECT_EQ(
      cf::downcast<cf::Int>(count_nulls(cf::ObjectRef(), cf::Int(1), cf::ObjectRef())).value(), 2);
  const cf::Function nothing([](Args) { return cf::ObjectRef(); });
  EXPECT_FALSE(nothing().defined());
}

TEST(Function, CallingANullFunctionIsAnError) {
  const cf::Function null;
  EXPECT_EQ(thrown_message([&] { null(cf::Int(1)); }), "call of a null Function");
}

TEST(Function, ExceptionsPropagateWithTheirClass) {
  const cf::Function shape(
      [](Args) -> cf::ObjectRef { throw cf::ShapeError("matmul: [2, 3] x [4, 5]"); });
  EXPECT_THROW(shape(), cf::ShapeError);
  EXPECT_EQ(thrown_message([&] { shape(); }), "matmul: [2, 3] x [4, 5]");
  const cf::Function std_error([](Args) -> cf::ObjectRef { throw std::out_of_range("index 7"); });
  EXPECT_THROW(std_error(), std::out_of_range);
}

TEST(Function, ArgumentHelpersNameTheFunctionAndTheArgument) {
  const cf::Function add(add_ints);
  EXPECT_EQ(thrown_message([&] { add(cf::Int(1)); }), "test.add: expected 2 arguments, got 1");
  EXPECT_THROW(add(cf::Int(1)), cf::TypeError);
  EXPECT_EQ(thrown_message([&] { add(cf::Int(1), cf::String("x")); }),
            "test.add: argument 1 must be a 'Int', got a 'String'");
  EXPECT_EQ(thrown_message([&] { add(cf::ObjectRef(), cf::Int(1)); }),
            "test.add: argument 0 must be a 'Int', got null");
  const std::vector<cf::ObjectRef> none;
  EXPECT_EQ(thrown_message([&] { cf::arg_as<cf::String>("f", none, 0); }),
            "f: argument 0 (a 'String') is missing: got 0 arguments");
  EXPECT_EQ(thrown_message([&] { cf::check_arg_count("f", none, 1, SIZE_MAX); }),
            "f: expected at least 1 argument, got 0");
  EXPECT_EQ(thrown_message([&] { cf::check_arg_count("f", none, 2, 3); }),
            "f: expected 2 to 3 arguments, got 0");
  // ObjectRef takes anything, null included.
  const std::vector<cf::ObjectRef> one_null{cf::ObjectRef()};
  EXPECT_FALSE(cf::arg_as<cf::ObjectRef>("f", one_null, 0).defined());
}

TEST(Registry, RegisterGetListRemove) {
  Cleanup c{{"test.b.add", "test.a.add"}};
  cf::register_func("test.b.add", cf::Function(add_ints));
  cf::register_func("test.a.add", cf::Function(add_ints));
  const std::optional<cf::Function> f = cf::get_global_func("test.b.add");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(cf::downcast<cf::Int>((*f)(cf::Int(5), cf::Int(6))).value(), 11);
  EXPECT_FALSE(cf::get_global_func("test.nope").has_value());

  const std::vector<std::string> names = cf::list_global_funcs();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  const auto a = std::find(names.begin(), names.end(), "test.a.add");
  const auto b = std::find(names.begin(), names.end(), "test.b.add");
  ASSERT_NE(a, names.end());
  ASSERT_NE(b, names.end());
  EXPECT_LT(a, b);

  EXPECT_TRUE(cf::remove_global_func("test.b.add"));
  EXPECT_FALSE(cf::remove_global_func("test.b.add"));
  EXPECT_FALSE(cf::get_global_func("test.b.add").has_value());
  // The handle got before the removal still works: it holds its own reference.
  EXPECT_EQ(cf::downcast<cf::Int>((*f)(cf::Int(1), cf::Int(1))).value(), 2);
  EXPECT_EQ(thrown_message([] { cf::require_global_func("test.b.add"); }),
            "no global function named 'test.b.add' is registered");
}

TEST(Registry, DuplicatesNeedOverride) {
  Cleanup c{{"test.dup"}};
  cf::register_func("test.dup", cf::Function([](Args) { return cf::Int(1); }));
  EXPECT_EQ(thrown_message([] {
              cf::register_func("test.dup", cf::Function([](Args) { return cf::Int(2); }));
            }),
            "register_func: a global function named 'test.dup' is already registered (pass "
            "override=true to replace it)");
  EXPECT_EQ(cf::downcast<cf::Int>(cf::require_global_func("test.dup")()).value(), 1);
  cf::register_func("test.dup", cf::Function([](Args) { return cf::Int(2); }), true);
  EXPECT_EQ(cf::downcast<cf::Int>(cf::require_global_func("test.dup")()).value(), 2);
}

TEST(Registry, BadRegistrationsAreErrors) {
  EXPECT_EQ(thrown_message([] { cf::register_func("", cf::Function(add_ints)); }),
            "register_func: the name must not be empty");
  EXPECT_EQ(thrown_message([] { cf::register_func("test.null", cf::Function()); }),
            "register_func: the function registered as 'test.null' is null");
  EXPECT_FALSE(cf::get_global_func("test.null").has_value());
}

TEST(Registry, MacroRegistersWhileLoading) {
  const cf::Function f = cf::require_global_func("test.loaded");
  EXPECT_EQ(cf::downcast<cf::Int>(f(cf::Int(1), cf::Int(2), cf::Int(3))).value(), 3);
}

TEST(Registry, RemovalDuringACallLetsTheCallFinish) {
  Cleanup c{{"test.slow"}};
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  // The body's captures die with the function object: count them to see when that happens.
  auto alive = std::make_shared<int>(0);
  std::weak_ptr<int> watch = alive;
  cf::register_func("test.slow", cf::Function([&entered, released, alive](Args) {
                      entered.set_value();
                      released.wait();
                      return cf::Int(7);
                    }));
  alive.reset();
  std::thread caller(
      [] { EXPECT_EQ(cf::downcast<cf::Int>(cf::require_global_func("test.slow")()).value(), 7); });
  entered.get_future().wait();
  EXPECT_TRUE(cf::remove_global_func("test.slow"));  // does not wait for the call
  EXPECT_FALSE(watch.expired());                     // the caller's handle keeps it alive
  release.set_value();
  caller.join();
  EXPECT_TRUE(watch.expired());  // the caller's reference was the last one
}

// Several threads register, call, override and remove at once; every call sees one of the
// functions that was registered under the name, never a torn state, and nothing is lost.
TEST(Registry, ConcurrentRegistrationAndCalls) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 200;
  Cleanup c{{"test.shared"}};
  cf::register_func("test.shared", cf::Function([](Args) { return cf::Int(0); }));
  std::atomic<int64_t> calls{0};
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kPerThread; ++i) {
        const std::string name = "test.t" + std::to_string(t) + "." + std::to_string(i);
        const int64_t want = t * 1000 + i;
        cf::register_func(name, cf::Function([want, &calls](Args) {
                            calls.fetch_add(1, std::memory_order_relaxed);
                            return cf::Int(want);
                          }));
        // Another thread's function, if it exists yet (registration order between threads is
        // not fixed), must return its own value.
        const std::string other =
            "test.t" + std::to_string((t + 1) % kThreads) + "." + std::to_string(i);
        if (std::optional<cf::Function> f = cf::get_global_func(other)) {
          EXPECT_EQ(cf::downcast<cf::Int>((*f)()).value(), ((t + 1) % kThreads) * 1000 + i);
        }
        EXPECT_EQ(cf::downcast<cf::Int>(cf::require_global_func(name)()).value(), want);
        // Overridden by everyone: whichever version a caller gets is one somebody registered.
        cf::register_func("test.shared", cf::Function([t](Args) { return cf::Int(t); }), true);
        const int64_t shared =
            cf::downcast<cf::Int>(cf::require_global_func("test.shared")()).value();
        EXPECT_TRUE(shared >= 0 && shared < kThreads) << shared;
        if (i % 2 == 1) {
          EXPECT_TRUE(cf::remove_global_func(name));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_GE(calls.load(), int64_t{kThreads} * kPerThread);  // every own call, plus others'
  const std::vector<std::string> names = cf::list_global_funcs();
  int left = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) {
      const std::string name = "test.t" + std::to_string(t) + "." + std::to_string(i);
      const bool listed = std::binary_search(names.begin(), names.end(), name);
      EXPECT_EQ(listed, i % 2 == 0) << name;
      left += listed ? 1 : 0;
      cf::remove_global_func(name);
    }
  }
  EXPECT_EQ(left, kThreads * kPerThread / 2);
}

// ---- core built-ins ----

TEST(CoreFunctions, JsonRoundTrip) {
  const cf::Array<cf::ObjectRef> value{cf::Int(1), cf::String("two"), cf::Float(3.5)};
  const cf::ObjectRef text = cf::require_global_func("core.to_json")(value);
  ASSERT_NE(text.as<cf::StringObj>(), nullptr);
  EXPECT_EQ(cf::downcast<cf::String>(text).str(), cf::to_json(value));
  const auto back =
      cf::downcast<cf::Array<cf::ObjectRef>>(cf::require_global_func("core.from_json")(text));
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(cf::downcast<cf::Int>(back[0]).value(), 1);
  EXPECT_EQ(cf::downcast<cf::String>(back[1]), "two");
  EXPECT_EQ(cf::downcast<cf::Float>(back[2]).value(), 3.5);
  EXPECT_THROW(cf::require_global_func("core.from_json")(cf::String("{not json")), cf::Error);
  EXPECT_EQ(thrown_message([] { cf::require_global_func("core.from_json")(cf::Int(1)); }),
            "core.from_json: argument 0 must be a 'String', got a 'Int'");
  // A Function is not reflected: to_json names its type.
  EXPECT_NE(thrown_message([] {
              cf::require_global_func("core.to_json")(cf::require_global_func("core.to_json"));
            }).find("Function"),
            std::string::npos);
}

TEST(CoreFunctions, TypeKeyAndIndex) {
  const cf::Function key = cf::require_global_func("core.type_key");
  const cf::Function index = cf::require_global_func("core.type_index");
  EXPECT_EQ(cf::downcast<cf::String>(key(cf::Float(1))), "Float");
  EXPECT_EQ(cf::downcast<cf::String>(key(key)), "Function");
  EXPECT_EQ(cf::downcast<cf::Int>(index(cf::String("s"))).value(), cf::TypeIndex::kString);
  EXPECT_EQ(cf::downcast<cf::Int>(index(key)).value(), cf::TypeIndex::kFunction);
  EXPECT_EQ(thrown_message([&] { key(cf::ObjectRef()); }),
            "core.type_key: argument 0 must be an object, got null");
  EXPECT_EQ(thrown_message([&] { index(); }), "core.type_index: expected 1 argument, got 0");
}

TEST(CoreFunctions, MakeArray) {
  const cf::Function make = cf::require_global_func("core.make_array");
  const auto empty = cf::downcast<cf::Array<cf::ObjectRef>>(make());
  EXPECT_EQ(empty.size(), 0u);
  const auto a =
      cf::downcast<cf::Array<cf::ObjectRef>>(make(cf::Int(1), cf::ObjectRef(), cf::Bool(true)));
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(cf::downcast<cf::Int>(a[0]).value(), 1);
  EXPECT_FALSE(a[1].defined());
  EXPECT_TRUE(cf::downcast<cf::Bool>(a[2]).value());
}

TEST(CoreFunctions, AreListed) {
  const std::vector<std::string> names = cf::list_global_funcs();
  for (const char* n :
       {"core.from_json", "core.make_array", "core.to_json", "core.type_index", "core.type_key",
        "runtime.call_in_green_thread", "runtime.map_in_green_threads"}) {
    EXPECT_TRUE(std::binary_search(names.begin(), names.end(), n)) << n;
  }
}

// ---- runtime built-ins ----

TEST(RuntimeFunctions, CallInGreenThreadFromAnOsThread) {
  cf::register_runtime_functions();  // idempotent
  const cf::Function where([](Args args) {
    return cf::downcast<cf::Array<cf::ObjectRef>>(cf::require_global_func("core.make_array")(
        cf::Bool(cf::in_green_thread()), args.empty() ? cf::ObjectRef() : args[0]));
  });
  const auto r = cf::downcast<cf::Array<cf::ObjectRef>>(
      cf::require_global_func("runtime.call_in_green_thread")(where, cf::String("x")));
  EXPECT_TRUE(cf::downcast<cf::Bool>(r[0]).value());
  EXPECT_EQ(cf::downcast<cf::String>(r[1]), "x");
  EXPECT_FALSE(cf::in_green_thread());
}

TEST(RuntimeFunctions, CallInGreenThreadFromAGreenThreadAndErrors) {
  const cf::Function call = cf::require_global_func("runtime.call_in_green_thread");
  run_in_green_thread([&] {
    EXPECT_EQ(cf::downcast<cf::Int>(call(cf::Function(add_ints), cf::Int(3), cf::Int(4))).value(),
              7);
  });
  EXPECT_THROW(call(cf::Function(add_ints), cf::Int(3)), cf::TypeError);  // add_ints' own error
  EXPECT_EQ(thrown_message([&] { call(cf::Int(1)); }),
            "runtime.call_in_green_thread: argument 0 must be a 'Function', got a 'Int'");
  EXPECT_EQ(thrown_message([&] { call(); }),
            "runtime.call_in_green_thread: expected at least 1 argument, got 0");
}

TEST(RuntimeFunctions, MapInGreenThreadsKeepsOrderAndRunsConcurrently) {
  constexpr int kItems = 64;
  // Every call waits until all kItems have started: this completes only if they run at once.
  auto started = std::make_shared<cf::WaitGroup>();
  started->add(kItems);
  const cf::Function square([started](Args args) {
    started->done();
    started->wait();
    const int64_t v = cf::arg_as<cf::Int>("square", args, 0).value();
    return cf::Int(v * v);
  });
  cf::Array<cf::ObjectRef> items;
  for (int i = 0; i < kItems; ++i) items.push_back(cf::Int(i));
  const auto out = cf::downcast<cf::Array<cf::ObjectRef>>(
      cf::require_global_func("runtime.map_in_green_threads")(square, items));
  ASSERT_EQ(out.size(), static_cast<size_t>(kItems));
  for (int i = 0; i < kItems; ++i) EXPECT_EQ(cf::downcast<cf::Int>(out[i]).value(), i * i);
}

TEST(RuntimeFunctions, MapInGreenThreadsRethrowsAfterAllFinished) {
  std::atomic<int> finished{0};
  const cf::Function f([&finished](Args args) -> cf::ObjectRef {
    const int64_t v = cf::arg_as<cf::Int>("f", args, 0).value();
    finished.fetch_add(1);
    if (v == 3 || v == 7) throw cf::ShapeError("item " + std::to_string(v));
    return cf::Int(v);
  });
  cf::Array<cf::ObjectRef> items;
  for (int i = 0; i < 10; ++i) items.push_back(cf::Int(i));
  const cf::Function map = cf::require_global_func("runtime.map_in_green_threads");
  // Both 3 and 7 fail, in whatever order the green threads run: the first by position wins.
  EXPECT_EQ(thrown_message([&] { map(f, items); }), "item 3");
  EXPECT_EQ(finished.load(), 10);
  EXPECT_THROW(map(f, cf::Int(1)), cf::TypeError);
  EXPECT_EQ(cf::downcast<cf::Array<cf::ObjectRef>>(map(f, cf::Array<cf::ObjectRef>())).size(), 0u);
}
