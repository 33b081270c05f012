// Property test: random DAGs (up to 2,000 nodes) of random ops over shapes that type-check give
// identical results on the GoMachine and the TapeMachine (forward and backward nodes), and their
// gradients match central finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "chanflow/graph.h"
#include "chanflow/runtime.h"
#include "graph_test_util.h"

namespace cf = chanflow;
using cf::DType;
using cf::Tensor;

namespace {

struct RandomDag {
  cf::Graph g;
  std::vector<cf::Node> inputs;
  std::vector<Tensor> values;
  std::vector<cf::Node> pool;  // every float64 node built so far
  cf::Node loss;
  std::vector<cf::Node> grads;
};

Tensor random_tensor(const cf::Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.5, 1.5);
  std::vector<double> v(static_cast<std::size_t>(cf::shape_numel(shape)));
  for (double& x : v) x = u(rng);
  return Tensor::from_vector<double>(v, shape);
}

// Builds a DAG of about `size` nodes. Each step picks an op and operands whose shapes fit.
RandomDag build(int size, uint32_t seed) {
  RandomDag d;
  std::mt19937 rng(seed);
  const std::vector<cf::Shape> shapes = {{}, {4}, {3, 4}, {4, 3}, {2, 3, 4}, {3, 1}};
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  for (int i = 0; i < 4; ++i) {
    const cf::Shape& s = shapes[static_cast<std::size_t>(pick(static_cast<int>(shapes.size())))];
    d.inputs.push_back(d.g.input("in" + std::to_string(i), DType::kFloat64, s));
    d.values.push_back(random_tensor(s, rng));
    d.pool.push_back(d.inputs.back());
  }
  d.pool.push_back(d.g.constant(random_tensor({4}, rng), "c4"));
  d.pool.push_back(d.g.constant(random_tensor({3, 4}, rng), "c34"));
  auto any = [&]() -> cf::Node {
    // Prefer recent nodes so the DAG is deep as well as wide.
    const int n = static_cast<int>(d.pool.size());
    const int window = std::min(n, 24);
    return pick(4) == 0 ? d.pool[static_cast<std::size_t>(pick(n))]
                        : d.pool[static_cast<std::size_t>(n - 1 - pick(window))];
  };
  auto broadcastable = [](const cf::Shape& a, const cf::Shape& b) {
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      const int64_t x = a[a.size() - 1 - i];
      const int64_t y = b[b.size() - 1 - i];
      if (x != y && x != 1 && y != 1) return false;
    }
    return true;
  };
  while (d.g.size() < size) {
    cf::Node a = any();
    cf::Node r;
    switch (pick(12)) {
      case 0:
      case 1:
      case 2: {  // binary elementwise with a partner that broadcasts
        cf::Node b;
        for (int tries = 0; tries < 8 && !b.valid(); ++tries) {
          cf::Node c = any();
          if (broadcastable(a.shape(), c.shape())) b = c;
        }
        if (!b.valid()) b = a;
        switch (pick(6)) {
          case 0:
            r = a + b;
            break;
          case 1:
            r = a - b;
            break;
          case 2:
            r = a * b;
            break;
          case 3:
            r = cf::maximum(a, b);
            break;
          case 4:
            r = cf::minimum(a, b);
            break;
          default:
            r = a / (cf::sigmoid(b) + 0.5);
            break;
        }
        break;
      }
      case 3:
      case 4: {  // bounded unary
        switch (pick(6)) {
          case 0:
            r = cf::tanh(a);
            break;
          case 1:
            r = cf::sigmoid(a);
            break;
          case 2:
            r = -a;
            break;
          case 3:
            r = cf::exp(cf::tanh(a));
            break;
          case 4:
            r = cf::sqrt(cf::square(a) + 1.0);
            break;
          default:
            r = cf::log(cf::sigmoid(a));
            break;
        }
        break;
      }
      case 5: {  // reduction
        if (a.shape().empty()) {
          r = cf::tanh(a);
          break;
        }
        const int64_t ax = pick(static_cast<int>(a.shape().size()));
        const bool keep = pick(2) == 0;
        switch (pick(3)) {
          case 0:
            r = cf::sum(a, {ax}, keep);
            break;
          case 1:
            r = cf::mean(a, {ax}, keep);
            break;
          default:
            r = cf::max(a, {ax}, keep);
            break;
        }
        break;
      }
      case 6: {  // matmul with a partner of a fitting shape
        if (a.shape().size() < 2) {
          r = cf::relu(a) + cf::abs(a);
          break;
        }
        cf::Node b;
        for (int tries = 0; tries < 16 && !b.valid(); ++tries) {
          cf::Node c = any();
          if (c.shape().size() >= 1 && c.shape().size() <= 2 && c.shape()[0] == a.shape().back()) {
            b = c;
          }
        }
        r = b.valid() ? cf::tanh(cf::matmul(a, b)) : cf::transpose(a);
        break;
      }
      case 7:
        r = a.shape().size() >= 2 ? cf::transpose(a) : cf::reshape(a, {-1});
        break;
      case 8:
        r = a.shape().empty() ? a * 2.0 : cf::softmax(a, -1);
        break;
      case 9:
        r = a.shape().empty() ? a + 1.0 : cf::log_softmax(a, 0);
        break;
      case 10:
        r = cf::reshape(a, {cf::shape_numel(a.shape())});
        break;
      default:
        r = cf::tanh(a) * a;
        break;
    }
    d.pool.push_back(r);
  }
  // loss: a weighted sum of a few late nodes, so most of the DAG feeds it.
  cf::Node loss;
  for (int k = 0; k < 4; ++k) {
    cf::Node n =
        d.pool[d.pool.size() - 1 -
               static_cast<std::size_t>(pick(std::min<int>(40, static_cast<int>(d.pool.size()))))];
    cf::Node term = cf::sum(n * d.g.constant(random_tensor(n.shape(), rng)));
    loss = loss.valid() ? loss + term : term;
  }
  d.loss = loss;
  d.grads = cf::grad(loss, d.inputs);
  return d;
}

cf::Bindings bindings(const RandomDag& d, const std::vector<Tensor>& values) {
  cf::Bindings b;
  for (std::size_t i = 0; i < d.inputs.size(); ++i) b.emplace_back(d.inputs[i], values[i]);
  return b;
}

using RandomDags = WorkersTest;

TEST_P(RandomDags, GoMachineEqualsTapeMachine) {
  const bool long_mode = std::getenv("CHANFLOW_STRESS_LONG") != nullptr;
  const std::vector<int> sizes = long_mode ? std::vector<int>{50, 200, 500, 1000, 2000, 2000, 2000}
                                           : std::vector<int>{30, 300, 2000};
  uint32_t seed = 100 + static_cast<uint32_t>(GetParam());
  for (int size : sizes) {
    RandomDag d = build(size, seed++);
    SCOPED_TRACE("size " + std::to_string(size) + " seed " + std::to_string(seed - 1));
    cf::TapeMachine t(d.g);
    cf::GoMachine m(d.g);
    for (int rerun = 0; rerun < 2; ++rerun) {
      std::vector<Tensor> values = d.values;
      if (rerun == 1) {
        for (Tensor& v : values) v = cf::mul(v, Tensor::scalar(0.5, DType::kFloat64));
      }
      t.run(cf::background(), bindings(d, values));
      m.run(cf::background(), bindings(d, values));
      for (const cf::Node& n : d.g.nodes()) {
        Tensor a = t.result(n);
        Tensor b = m.result(n);
        ASSERT_EQ(a.shape(), b.shape()) << n.name();
        ASSERT_TRUE(a.equal_to(b)) << n.name() << " (" << cf::op_kind_name(n.op()) << ")";
      }
    }
  }
}

TEST_P(RandomDags, GradientsMatchFiniteDifferences) {
  const int dags = std::getenv("CHANFLOW_STRESS_LONG") != nullptr ? 40 : 8;
  std::mt19937 pick_rng(7);
  for (int k = 0; k < dags; ++k) {
    const auto seed = static_cast<uint32_t>(1000 + 31 * k + GetParam());
    RandomDag d = build(40 + 5 * (k % 6), seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    cf::GoMachine m(d.g);
    cf::TapeMachine t(d.g);
    m.run(cf::background(), bindings(d, d.values));
    const double eps = 1e-6;
    for (std::size_t i = 0; i < d.inputs.size(); ++i) {
      Tensor analytic = m.result(d.grads[i]).contiguous();
      for (int trial = 0; trial < 3; ++trial) {
        const int64_t e =
            static_cast<int64_t>(pick_rng() % static_cast<uint32_t>(d.values[i].numel()));
        std::vector<Tensor> plus = d.values;
        std::vector<Tensor> minus = d.values;
        plus[i] = d.values[i].clone();
        minus[i] = d.values[i].clone();
        plus[i].data<double>()[e] += eps;
        minus[i].data<double>()[e] -= eps;
        t.run(cf::background(), bindings(d, plus));
        const double lp = t.result(d.loss).item<double>();
        t.run(cf::background(), bindings(d, minus));
        const double lm = t.result(d.loss).item<double>();
        const double numeric = (lp - lm) / (2 * eps);
        EXPECT_NEAR(analytic.data<double>()[e], numeric, 1e-4 * std::max(1.0, std::abs(numeric)))
            << "input " << i << " element " << e;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Workers, RandomDags, ::testing::Values(1, 2, 4));

}  // namespace
