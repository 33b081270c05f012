// Unit tests: graph building, shape/dtype inference errors, TapeMachine, grad vs finite
// differences.
#include <gtest/gtest.h>

#include <cmath>

#include "chanflow/graph.h"
#include "graph_test_util.h"
#include "support/text.h"

namespace cf = chanflow;
using cf::DType;
using cf::Tensor;
using chanflow::testing_support::occurrences;

namespace {

Tensor f64(std::vector<double> v, cf::Shape s) { return Tensor::from_vector<double>(v, s); }

}  // namespace

TEST(Graph, IdsNamesAndInference) {
  cf::Graph g;
  cf::Node x = g.input("x", DType::kFloat32, {2, 3});
  cf::Node w = g.constant(Tensor::ones({3, 4}, DType::kFloat32), "w");
  cf::Node y = cf::relu(cf::matmul(x, w) + g.scalar(1.0f));
  EXPECT_EQ(x.id(), 0);
  EXPECT_EQ(w.id(), 1);
  EXPECT_EQ(y.shape(), (cf::Shape{2, 4}));
  EXPECT_EQ(y.dtype(), DType::kFloat32);
  EXPECT_EQ(x.name(), "x");
  EXPECT_EQ(y.name(), "relu" + std::to_string(y.id()));
  EXPECT_EQ(g.size(), 6);  // x, w, matmul, scalar, add, relu
  cf::Node s = cf::sum(y, {0}, true);
  EXPECT_EQ(s.shape(), (cf::Shape{1, 4}));
  EXPECT_EQ(cf::mean(cf::cast(x, DType::kInt32)).dtype(), DType::kFloat64);
  EXPECT_EQ(cf::transpose(x).shape(), (cf::Shape{3, 2}));
  EXPECT_EQ(cf::reshape(x, {-1}).shape(), (cf::Shape{6}));
  EXPECT_EQ(cf::argmax(x, 1).shape(), (cf::Shape{2}));
  EXPECT_EQ(cf::less(x, x).dtype(), DType::kBool);
}

TEST(Graph, ShapeErrorNamesNodeAndShapes) {
  cf::Graph g;
  cf::Node a = g.input("a", DType::kFloat32, {2, 3});
  cf::Node b = g.input("b", DType::kFloat32, {4, 5});
  try {
    (void)cf::matmul(a, b);
    FAIL() << "no ShapeError";
  } catch (const cf::ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("matmul2"), std::string::npos) << m;
    EXPECT_NE(m.find("'a'"), std::string::npos) << m;
    EXPECT_NE(m.find("(2, 3)"), std::string::npos) << m;
    EXPECT_NE(m.find("(4, 5)"), std::string::npos) << m;
  }
  EXPECT_THROW((void)(a + b), cf::ShapeError);
  EXPECT_THROW((void)cf::reshape(a, {4}), cf::ShapeError);
  EXPECT_THROW((void)cf::sum(a, {2}), cf::ShapeError);
  EXPECT_THROW((void)cf::transpose(a, {0, 0}), cf::ShapeError);
  cf::Node bl = g.input("bl", DType::kBool, {2, 3});
  EXPECT_THROW((void)cf::sub(bl, bl), cf::TypeError);
  EXPECT_THROW(g.set(a, Tensor::zeros({3, 2}, DType::kFloat32)), cf::ShapeError);
  EXPECT_THROW(g.set(a, Tensor::zeros({2, 3}, DType::kFloat64)), cf::TypeError);
  cf::Graph other;
  cf::Node o = other.input("o", DType::kFloat32, {2, 3});
  EXPECT_THROW((void)(a + o), cf::Error);
  EXPECT_THROW((void)(cf::Node() + a), cf::Error);
}

TEST(Graph, NodeShapesMustBeOnesATensorMayHold) {
  cf::Graph g;
  const int64_t big = int64_t{1} << 40;
  auto expect_shape_error = [](auto build, const std::string& expected) {
    try {
      build();
      FAIL() << "no ShapeError; expected: " << expected;
    } catch (const cf::ShapeError& e) {
      EXPECT_EQ(std::string(e.what()), expected);
    }
  };
  expect_shape_error(
      [&] {
        g.input("x", DType::kFloat32, {big, big});
      },
      "node 'x' (input #0): shape (1099511627776, 1099511627776) has more elements "
      "than int64 can count");
  expect_shape_error([&] { g.input("y", DType::kFloat64, {int64_t{1} << 61}); },
                     "node 'y' (input #0): shape (2305843009213693952,) of float64 needs more "
                     "bytes than int64 can count");
  expect_shape_error(
      [&] {
        g.input("z", DType::kFloat32, {2, -1});
      },
      "node 'z' (input #0): shape (2, -1) has a negative extent");
  EXPECT_EQ(g.size(), 0);  // a refused node is not left in the graph
  cf::Node col = g.input("col", DType::kFloat32, {big, 1});
  cf::Node row = g.input("row", DType::kFloat32, {1, big});
  expect_shape_error([&] { (void)(col + row); },
                     "node 'add2' (add #2): shape (1099511627776, 1099511627776) has more "
                     "elements than int64 can count");
  expect_shape_error(
      [&] {
        g.apply("f", {col}, {big, big}, DType::kFloat32,
                [](std::span<const Tensor> in, const cf::OpContext&) { return in[0]; });
      },
      "node 'f' (custom #2): shape (1099511627776, 1099511627776) has more elements than int64 "
      "can count");
  EXPECT_EQ(g.size(), 2);
  // The largest shapes that fit still build (no tensor is made for them).
  EXPECT_EQ(g.input("max", DType::kInt8, {INT64_MAX}).shape(), (cf::Shape{INT64_MAX}));
}

TEST(Graph, ToDot) {
  cf::Graph g;
  cf::Node a = g.scalar(1.0f, "a");
  cf::Node b = g.scalar(2.0f, "b");
  (void)(a - b);
  std::string dot = g.to_dot();
  EXPECT_NE(dot.find("digraph"), std::string::npos);
  EXPECT_NE(dot.find("n0 -> n2 [label=\"0\"]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n1 -> n2 [label=\"1\"]"), std::string::npos) << dot;
}

TEST(TapeMachine, ComputesAndRebinds) {
  cf::Graph g;
  cf::Node x = g.input("x", DType::kFloat64, {2});
  cf::Node y = x * 3.0 - 1.0;
  g.set(x, f64({1, 2}, {2}));
  cf::TapeMachine t(g);
  t.run();
  EXPECT_DOUBLE_EQ(t.result(y).at<double>({1}), 5.0);
  EXPECT_DOUBLE_EQ(t.result(x).at<double>({0}), 1.0);
  t.run(cf::background(), {{x, f64({10, 20}, {2})}});
  EXPECT_DOUBLE_EQ(t.result(y).at<double>({1}), 59.0);
  cf::Graph g2;
  cf::Node u = g2.input("u", DType::kFloat64, {2});
  (void)(u + u);
  cf::TapeMachine t2(g2);
  EXPECT_THROW(t2.run(), cf::Error);
}

// A context that is done stops the TapeMachine between nodes with the context's own error: before
// the first node, and after a node that cancels it (the next node never runs).
TEST(TapeMachine, StopsBetweenNodesWhenTheContextIsDone) {
  cf::Graph g;
  cf::Context ctx = cf::with_cancel(cf::background());
  int second_ran = 0;
  cf::Node x = g.input("x", DType::kFloat64, {1});
  cf::Node a = g.apply("cancels", {x}, {1}, DType::kFloat64,
                       [&](std::span<const Tensor> in, const cf::OpContext&) {
                         ctx.cancel();
                         return in[0];
                       });
  (void)g.apply("second", {a}, {1}, DType::kFloat64,
                [&](std::span<const Tensor> in, const cf::OpContext&) {
                  ++second_ran;
                  return in[0];
                });
  g.set(x, f64({1}, {1}));
  cf::TapeMachine t(g);
  EXPECT_THROW(t.run(ctx), cf::CanceledError);
  EXPECT_EQ(second_ran, 0);
  EXPECT_THROW(t.run(ctx), cf::CanceledError);  // done before the first node
  EXPECT_THROW(t.result(a), cf::Error);         // no completed run
  EXPECT_THROW(t.run(cf::with_deadline(cf::background(), cf::Clock::now())),
               cf::DeadlineExceededError);
  EXPECT_EQ(second_ran, 0);
  t.run();
  EXPECT_EQ(second_ran, 1);
}

// A failing node makes the TapeMachine throw a MachineError labelled by the machine that failed:
// "TapeMachine: ...", once (it used to say "GoMachine: ...", the other machine).
TEST(TapeMachine, FailureIsLabelledTapeMachineOnce) {
  cf::Graph g = graph_with_failing_node();
  cf::TapeMachine t(g);
  try {
    t.run();
    FAIL() << "no MachineError";
  } catch (const cf::MachineError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("TapeMachine: 1 node(s) failed\n  node 1 'boom': the op failed", 0), 0u) << m;
    EXPECT_EQ(occurrences(m, "TapeMachine"), 1u) << m;
    EXPECT_EQ(occurrences(m, "GoMachine"), 0u) << m;
    EXPECT_EQ(e.machine(), "TapeMachine");
  }
}

// softplus: values against the naive log(1 + e^x) in long double (whose range holds e^800 and
// whose precision keeps 1 + e^-50), its gradient sigmoid(x) likewise, over |x| up to 800, where
// the naive double formula overflows or rounds to 0; the GoMachine and the TapeMachine give the
// same bits; integer operands give a float node.
TEST(GraphOps, SoftplusIsStableAndBothMachinesAgree) {
  const std::vector<double> xs = {-800, -50, -30, -2, -1e-4, 0, 1e-4, 3, 30, 50, 800};
  cf::Graph g;
  cf::Node x = g.input("x", DType::kFloat64, {static_cast<int64_t>(xs.size())});
  cf::Node y = cf::softplus(x);
  EXPECT_EQ(y.op(), cf::OpKind::kSoftplus);
  EXPECT_EQ(y.dtype(), DType::kFloat64);
  cf::Node dx = cf::grad(cf::sum(y), {x})[0];
  g.set(x, Tensor::from_vector<double>(xs));
  cf::TapeMachine tape(g);
  cf::GoMachine gom(g);
  tape.run();
  gom.run(cf::background());
  EXPECT_TRUE(tape.result(y).equal_to(gom.result(y)));
  EXPECT_TRUE(tape.result(dx).equal_to(gom.result(dx)));
  const Tensor v = tape.result(y).contiguous();
  const Tensor d = tape.result(dx).contiguous();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const long double e = std::exp(static_cast<long double>(xs[i]));
    const auto want = static_cast<double>(std::log1p(e));
    const auto want_d = static_cast<double>(e / (1 + e));
    EXPECT_NEAR(v.data<double>()[i], want, 1e-15 * want) << "x = " << xs[i];
    EXPECT_NEAR(d.data<double>()[i], want_d, 1e-15 * want_d) << "x = " << xs[i];
  }
  EXPECT_EQ(cf::softplus(g.input("i", DType::kInt32, {2})).dtype(), DType::kFloat64);
  EXPECT_EQ(cf::softplus(g.input("f", DType::kFloat32, {2})).dtype(), DType::kFloat32);
}
