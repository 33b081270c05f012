// models.h — the models the training examples use: an MLP and a LeNet-style CNN, each a
// training::Model (model.h) with its evaluation program (an executor program that takes the
// parameters as feeds by the same names; see mlp_eval.pbtxt and lenet_eval.pbtxt).
//
//   Mlp mlp({.inputs = 784, .hidden = 256, .classes = 10});   // fc, relu, fc
//   LeNet cnn({});                                           // 28x28x1 in, 10 classes out
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model.h"

namespace training {

struct MlpShape {
  int64_t inputs = 784;
  int64_t hidden = 256;
  int64_t classes = 10;
};

// logits = relu(x w1 + b1) w2 + b2, x (rows, inputs). Parameters w1 (inputs, hidden), b1
// (hidden), w2 (hidden, classes), b2 (classes).
class Mlp final : public Model {
 public:
  explicit Mlp(const MlpShape& shape);
  std::string describe() const override;
  chanflow::Shape sample_shape() const override { return {shape_.inputs}; }
  int64_t classes() const override { return shape_.classes; }
  const std::vector<ParamSpec>& params() const override { return params_; }
  chanflow::Node logits(const chanflow::Node& x,
                        const std::vector<chanflow::Node>& p) const override;

 private:
  MlpShape shape_;
  std::vector<ParamSpec> params_;
};

struct LeNetShape {
  int64_t channels = 1, height = 28, width = 28;
  int64_t conv1 = 20, conv2 = 50;  // filters of the two 5x5 convolutions
  int64_t hidden = 500;            // the first fully connected layer
  int64_t classes = 10;
};

// LeNet as Caffe's MNIST example has it: conv 5x5 (conv1 filters, stride 1, no padding) + bias,
// relu, max-pool 2x2 stride 2; conv 5x5 (conv2) + bias, relu, max-pool 2x2; flatten; fc hidden,
// relu; fc classes. x (rows, channels, height, width). Parameters c1w (conv1, channels, 5, 5),
// c1b (conv1), c2w (conv2, conv1, 5, 5), c2b (conv2), f1w (conv2 * ph * pw, hidden), f1b,
// f2w (hidden, classes), f2b. Throws chanflow::ShapeError when the image is too small for the
// two convolutions and pools.
class LeNet final : public Model {
 public:
  explicit LeNet(const LeNetShape& shape);
  std::string describe() const override;
  chanflow::Shape sample_shape() const override {
    return {shape_.channels, shape_.height, shape_.width};
  }
  int64_t classes() const override { return shape_.classes; }
  const std::vector<ParamSpec>& params() const override { return params_; }
  chanflow::Node logits(const chanflow::Node& x,
                        const std::vector<chanflow::Node>& p) const override;

 private:
  LeNetShape shape_;
  int64_t flat_ = 0;  // conv2 * height and width after the second pool
  std::vector<ParamSpec> params_;
};

}  // namespace training
