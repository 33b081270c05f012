// fashion.h — Fashion-MNIST (Zalando's 28x28 grey images of 10 kinds of clothing) as the training
// pipeline's Dataset, read from the IDX files of Debian's dataset-fashion-mnist (idx.h).
//
//   FashionData f = load_fashion("/usr/share/datasets/fashion-mnist", {1, 28, 28});
//   training::train(cnn, f.data, f.split, config);
//
// Thread-safety: blocks on file I/O; call before any green thread starts. The result is
// immutable.
#pragma once

#include <cstdint>
#include <string>

#include "chanflow/tensor/tensor.h"
#include "training/dataset.h"

namespace train_fashion {

inline constexpr int64_t kSide = 28;
inline constexpr int64_t kClasses = 10;
inline constexpr int64_t kTrainRows = 60000;
inline constexpr int64_t kTestRows = 10000;

struct FashionData {
  training::Dataset data;  // the training images, then the test images; values scaled by 1/255
  training::Split split;   // train: the first train_rows training images; test: every test image
};

// Reads the four IDX files in `dir` (idx.h's checks: every defect is an IdxError naming the
// file). `sample_shape` is how a model sees one image: {784} for the MLP, {1, 28, 28} for the CNN
// (chanflow::ShapeError unless it holds 784 elements). `train_rows` > 0 keeps only the first
// train_rows training images (0: all 60,000; more than the file has: an error).
FashionData load_fashion(const std::string& dir, const chanflow::Shape& sample_shape,
                         int64_t train_rows = 0);

}  // namespace train_fashion
