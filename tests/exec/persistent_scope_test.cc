// PersistentScope: persistable variables live across runs, come back after a failing run, are
// moved (not copied) into a run, and a scope serves one run at a time.
#include "chanflow/exec/persistent_scope.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "chanflow/core/error.h"
#include "chanflow/exec.h"
#include "chanflow/ir/builder.h"
#include "chanflow/runtime.h"

namespace cf = chanflow;
using cf::Attr;
using cf::DType;
using cf::Tensor;

namespace {

// startup: w = 1 (persistable). main: w = 2 * w; y = w + 0.
struct Programs {
  cf::Program startup, main;
};
Programs doubling() {
  Programs p;
  {
    cf::ProgramBuilder b;
    cf::Var w = b.parameter("w", DType::kFloat64, {3});
    b.fill_constant({3}, DType::kFloat64, 1.0, w);
    p.startup = b.build();
  }
  {
    cf::ProgramBuilder b;
    cf::Var w = b.parameter("w", DType::kFloat64, {3});
    b.scale(w, 2.0, 0.0, w);
    b.scale(w, 1.0, 0.0, b.var("y", DType::kFloat64, {3}));
    p.main = b.build();
  }
  return p;
}

TEST(PersistentScope, ParametersLiveAcrossRuns) {
  Programs p = doubling();
  cf::Executor ex;
  cf::PersistentScope scope;
  ex.run(p.startup, scope);
  ASSERT_TRUE(scope.find("w").has_value());
  EXPECT_EQ(scope.find("w")->at<double>({0}), 1.0);
  double last = 0;
  for (int i = 0; i < 3; ++i) last = ex.run(p.main, scope, {}, {"y"}).at("y").at<double>({2});
  EXPECT_EQ(last, 8.0);
  EXPECT_EQ(scope.find("w")->at<double>({1}), 8.0);
  EXPECT_EQ(scope.names(), (std::vector<std::string>{"w"}));
  // Without the scope, the variable starts unset every run: scale of an unset w fails.
  EXPECT_THROW(ex.run(p.main, {}, {"y"}), cf::Error);
}

TEST(PersistentScope, AFeedOverridesTheScopesValue) {
  Programs p = doubling();
  cf::Executor ex;
  cf::PersistentScope scope;
  ex.run(p.startup, scope);
  ex.run(p.main, scope, {{"w", Tensor::full({3}, 5.0, DType::kFloat64)}});
  EXPECT_EQ(scope.find("w")->at<double>({0}), 10.0);
}

TEST(PersistentScope, AFailedRunGivesTheParametersBack) {
  cf::ProgramBuilder b;
  cf::Var w = b.parameter("w", DType::kFloat64, {2});
  b.scale(w, 3.0, 0.0, w);
  // A matmul of (2) by (3, 3) fails after w was updated.
  cf::Var z = b.fill_constant({3, 3}, DType::kFloat64, 1.0);
  b.matmul(w, z);
  const cf::Program p = b.build();
  cf::Executor ex;
  cf::PersistentScope scope;
  scope.set("w", Tensor::full({2}, 1.0, DType::kFloat64));
  EXPECT_THROW(ex.run(p, scope), cf::Error);
  ASSERT_TRUE(scope.find("w").has_value());
  EXPECT_EQ(scope.find("w")->at<double>({0}), 3.0);  // the value the run had reached
  // The scope is free again.
  scope.set("w", Tensor::full({2}, 1.0, DType::kFloat64));
}

TEST(PersistentScope, TheRunHoldsTheOnlyReference) {
  // A parameter the scope alone holds reaches the run without a copy: the run sees the same
  // storage (checked through a fetch of the value in place).
  cf::ProgramBuilder b;
  cf::Var w = b.parameter("w", DType::kFloat64, {4});
  b.assign(w, b.var("y", DType::kFloat64, {4}));
  const cf::Program p = b.build();
  cf::Executor ex;
  cf::PersistentScope scope;
  Tensor t = Tensor::full({4}, 2.0, DType::kFloat64);
  const void* storage = t.data<double>();
  scope.set("w", std::move(t));
  const Tensor y = ex.run(p, scope, {}, {"y"}).at("y");
  EXPECT_EQ(static_cast<const void*>(y.data<double>()), storage);
}

TEST(PersistentScope, AScopeServesOneRunAtATime) {
  cf::ProgramBuilder b;
  b.parameter("w", DType::kFloat64, {1});
  cf::Var in = b.declare_channel("in", cf::VarType::kFP64, 0);
  b.channel_recv(in);
  const cf::Program p = b.build();
  cf::Scheduler s({.workers = 2});
  cf::Executor ex({.scheduler = &s});
  cf::PersistentScope scope;
  scope.set("w", Tensor::full({1}, 1.0, DType::kFloat64));
  cf::Channel ch = cf::Channel::make<cf::TensorObj>(0);
  std::thread first([&] { ex.run(cf::background(), p, scope, {}, {}, {{"in", ch}}); });
  // The first run holds the scope once set() refuses; it is parked on `in` until we send.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool in_use = false;
  while (!in_use && std::chrono::steady_clock::now() < deadline) {
    try {
      scope.set("probe", Tensor::full({1}, 0.0, DType::kFloat64));
      scope.erase("probe");
      std::this_thread::yield();
    } catch (const cf::Error&) {
      in_use = true;
    }
  }
  ASSERT_TRUE(in_use);
  EXPECT_THROW(ex.run(cf::background(), p, scope, {}, {}, {{"in", ch}}), cf::Error);
  ch.send(Tensor::full({1}, 1.0, DType::kFloat64));
  first.join();
  EXPECT_EQ(scope.find("w")->at<double>({0}), 1.0);
}

}  // namespace
