// linear_regression — fit y = w·x + b by gradient descent, with gradients from cf::grad.
//
// The graph computes the mean squared error of a prediction; grad(loss, {w, b}) appends the
// backward nodes to the same graph, and the GoMachine runs forward and backward nodes alike, one
// green threads (docs/graph.md). Each step re-binds the inputs w and b and re-runs the same
// machine.
//
//   build/release/examples/linear_regression
#include <cmath>
#include <cstdio>
#include <vector>

#include "chanflow/graph.h"
#include "chanflow/runtime.h"

namespace cf = chanflow;

int main() {
  cf::Scheduler scheduler({.workers = 2});
  cf::ScopedDefaultScheduler use(scheduler);

  // Data: y = 3x + 2 with a little deterministic noise.
  const int n = 100;
  std::vector<double> xs(n);
  std::vector<double> ys(n);
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    xs[k] = static_cast<double>(i) / n;
    ys[k] = 3.0 * xs[k] + 2.0 + 0.02 * std::sin(7.0 * i);
  }

  cf::Graph g;
  cf::Node x = g.constant(cf::Tensor::from_vector<double>(xs, {n}), "x");
  cf::Node y = g.constant(cf::Tensor::from_vector<double>(ys, {n}), "y");
  cf::Node w = g.input("w", cf::DType::kFloat64, {});
  cf::Node b = g.input("b", cf::DType::kFloat64, {});
  cf::Node loss = cf::mean(cf::square(w * x + b - y));
  const std::vector<cf::Node> grads = cf::grad(loss, {w, b});  // d loss/dw, d loss/db

  cf::GoMachine machine(g);
  double wv = 0.0;
  double bv = 0.0;
  const double learning_rate = 0.5;
  for (int step = 0; step <= 300; ++step) {
    machine.run(cf::background(), {{w, cf::Tensor::scalar(wv, cf::DType::kFloat64)},
                                   {b, cf::Tensor::scalar(bv, cf::DType::kFloat64)}});
    if (step % 50 == 0) {
      std::printf("step %4d  loss %.6f  w %.4f  b %.4f\n", step,
                  machine.result(loss).item<double>(), wv, bv);
    }
    wv -= learning_rate * machine.result(grads[0]).item<double>();
    bv -= learning_rate * machine.result(grads[1]).item<double>();
  }
  std::printf("fitted y = %.3f x + %.3f (data: y = 3x + 2 + noise)\n", wv, bv);
  const bool ok = std::abs(wv - 3.0) < 0.05 && std::abs(bv - 2.0) < 0.05;
  if (!ok) std::fprintf(stderr, "linear_regression: did not converge\n");
  return ok ? 0 : 1;
}
