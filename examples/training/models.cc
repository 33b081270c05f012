// models.cc — the MLP and LeNet forward passes as graph nodes.
#include "models.h"

#include <fmt/format.h>

#include "chanflow/core/error.h"
#include "chanflow/graph/ops.h"
#include "chanflow/graph/table_ops.h"

namespace cf = chanflow;

namespace training {

Mlp::Mlp(const MlpShape& s) : shape_(s) {
  if (s.inputs < 1 || s.hidden < 1 || s.classes < 2) {
    CHANFLOW_THROW(cf::ShapeError) << "Mlp: inputs and hidden must be >= 1 and classes >= 2, got "
                                   << s.inputs << "-" << s.hidden << "-" << s.classes;
  }
  params_ = {{"w1", {s.inputs, s.hidden}, s.inputs},
             {"b1", {s.hidden}, 0},
             {"w2", {s.hidden, s.classes}, s.hidden},
             {"b2", {s.classes}, 0}};
}

std::string Mlp::describe() const {
  return fmt::format("MLP {}-{}-{}", shape_.inputs, shape_.hidden, shape_.classes);
}

cf::Node Mlp::logits(const cf::Node& x, const std::vector<cf::Node>& p) const {
  const cf::Node h = cf::relu(cf::matmul(x, p[0]) + p[1]);
  return cf::matmul(h, p[2]) + p[3];
}

namespace {

constexpr int64_t kKernel = 5;

// Height or width after a valid 5x5 convolution and a 2x2 stride-2 pool.
int64_t conv_pool(int64_t n) { return (n - kKernel + 1) / 2; }

cf::Node conv_relu_pool(const cf::Node& x, const cf::Node& w, const cf::Node& b, int64_t filters) {
  const cf::Node y = cf::conv2d(x, w) + cf::reshape(b, {filters, 1, 1});
  cf::Pool2dParams pool;
  pool.type = cf::PoolType::kMax;
  pool.ksize = {2, 2};
  pool.strides = {2, 2};
  return cf::pool2d(cf::relu(y), pool);
}

}  // namespace

LeNet::LeNet(const LeNetShape& s) : shape_(s) {
  const int64_t h = conv_pool(conv_pool(s.height));
  const int64_t w = conv_pool(conv_pool(s.width));
  if (s.channels < 1 || s.conv1 < 1 || s.conv2 < 1 || s.hidden < 1 || s.classes < 2 || h < 1 ||
      w < 1 || conv_pool(s.height) < kKernel || conv_pool(s.width) < kKernel) {
    CHANFLOW_THROW(cf::ShapeError)
        << "LeNet: a " << s.channels << "x" << s.height << "x" << s.width
        << " image is too small for two 5x5 convolutions and 2x2 pools, or a layer is empty";
  }
  flat_ = s.conv2 * h * w;
  const int64_t k2 = kKernel * kKernel;
  params_ = {{"c1w", {s.conv1, s.channels, kKernel, kKernel}, s.channels * k2},
             {"c1b", {s.conv1}, 0},
             {"c2w", {s.conv2, s.conv1, kKernel, kKernel}, s.conv1 * k2},
             {"c2b", {s.conv2}, 0},
             {"f1w", {flat_, s.hidden}, flat_},
             {"f1b", {s.hidden}, 0},
             {"f2w", {s.hidden, s.classes}, s.hidden},
             {"f2b", {s.classes}, 0}};
}

std::string LeNet::describe() const {
  return fmt::format("LeNet CNN {}x{}x{} -conv5x5 {}-pool-conv5x5 {}-pool-fc {}-fc {}",
                     shape_.channels, shape_.height, shape_.width, shape_.conv1, shape_.conv2,
                     shape_.hidden, shape_.classes);
}

cf::Node LeNet::logits(const cf::Node& x, const std::vector<cf::Node>& p) const {
  const cf::Node a1 = conv_relu_pool(x, p[0], p[1], shape_.conv1);
  const cf::Node a2 = conv_relu_pool(a1, p[2], p[3], shape_.conv2);
  const cf::Node h = cf::relu(cf::matmul(cf::flatten(a2, 1), p[4]) + p[5]);
  return cf::matmul(h, p[6]) + p[7];
}

}  // namespace training
