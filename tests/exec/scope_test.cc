// Scope: slots, lookup through parents, lifetime (a child keeps its parent alive), and
// concurrent access once shared.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "chanflow/exec/scope.h"
#include "chanflow/tensor/tensor.h"

namespace cf = chanflow;

TEST(Scope, FindsVariablesInParents) {
  cf::Scope root = cf::Scope::make(cf::Scope(), {"x", "y"});
  cf::Scope child = cf::Scope::make(root, {"y"});
  root.set("x", cf::Tensor::scalar(1, cf::DType::kInt64));
  child.set("y", cf::Tensor::scalar(2, cf::DType::kInt64));
  EXPECT_EQ(cf::downcast<cf::Tensor>(*child.find("x")).item<int64_t>(), 1);
  EXPECT_EQ(cf::downcast<cf::Tensor>(*child.find("y")).item<int64_t>(), 2);
  EXPECT_FALSE(root.find("y")->defined());  // declared, never written
  EXPECT_FALSE(child.find("z").has_value());
  EXPECT_THROW(child.set("z", cf::ObjectRef()), cf::Error);
  EXPECT_TRUE(child.parent().same_as(root));
}

TEST(Scope, ChildKeepsParentAlive) {
  cf::Scope child;
  {
    cf::Scope root = cf::Scope::make(cf::Scope(), {"x"});
    root.set("x", cf::Tensor::scalar(5, cf::DType::kFloat64));
    child = cf::Scope::make(root, std::vector<std::string>{});
  }
  EXPECT_EQ(cf::downcast<cf::Tensor>(*child.find("x")).item<double>(), 5);
}

TEST(Scope, TakeMovesOnlyWhenNotShared) {
  cf::Scope s = cf::Scope::make(cf::Scope(), {"x"});
  s->set(0, cf::Tensor::scalar(1, cf::DType::kFloat64));
  cf::ObjectRef v = s->take(0);
  EXPECT_TRUE(v.defined());
  EXPECT_FALSE(s->get(0).defined());
  s->set(0, v);
  s->mark_shared();
  cf::ObjectRef w = s->take(0);
  EXPECT_TRUE(s->get(0).defined());  // copied, not moved
}

TEST(Scope, ConcurrentReadersAndWritersOnceShared) {
  cf::Scope s = cf::Scope::make(cf::Scope(), {"a", "b"});
  s->mark_shared();
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        if (t % 2 == 0) {
          s->set(i % 2, cf::Tensor::scalar(i, cf::DType::kInt64));
        } else {
          cf::ObjectRef v = s->get(i % 2);
          if (v.defined()) (void)cf::downcast<cf::Tensor>(v).item<int64_t>();
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_TRUE(s->get(0).defined());
}
