// fashion.cc — the IDX files into one Dataset: train images then test images, labels alike.
#include "fashion.h"

#include <numeric>

#include "chanflow/core/error.h"
#include "chanflow/tensor/tensor_obj.h"
#include "idx.h"

namespace cf = chanflow;

namespace train_fashion {

FashionData load_fashion(const std::string& dir, const cf::Shape& sample_shape,
                         int64_t train_rows) {
  int64_t features = 1;
  for (int64_t d : sample_shape) features *= d;
  if (features != kSide * kSide) {
    CHANFLOW_THROW(cf::ShapeError)
        << "load_fashion: a sample shape of " << cf::shape_to_string(sample_shape)
        << " does not hold one " << kSide << "x" << kSide << " image";
  }
  if (train_rows < 0) {
    CHANFLOW_THROW(cf::Error) << "load_fashion: train_rows must be >= 0, got " << train_rows;
  }
  FashionMnist f = load_fashion_mnist(dir);
  const int64_t n_train = f.train_images.count;
  const int64_t n_test = f.test_images.count;
  if (train_rows > n_train) {
    CHANFLOW_THROW(cf::Error) << "load_fashion: " << train_rows << " training images asked for, "
                              << dir << " has " << n_train;
  }
  FashionData out;
  training::Dataset& d = out.data;
  d.rows = n_train + n_test;
  d.sample_shape = sample_shape;
  d.classes = kClasses;
  d.scale = 1.0f / 255.0f;
  // One copy each, the file's buffer released as soon as it is copied: the peak is the dataset
  // plus one file's images, not twice the dataset.
  d.values.reserve(static_cast<std::size_t>(d.rows * features));
  d.values.insert(d.values.end(), f.train_images.pixels.begin(), f.train_images.pixels.end());
  std::vector<uint8_t>().swap(f.train_images.pixels);
  d.values.insert(d.values.end(), f.test_images.pixels.begin(), f.test_images.pixels.end());
  std::vector<uint8_t>().swap(f.test_images.pixels);
  d.labels.reserve(static_cast<std::size_t>(d.rows));
  for (uint8_t l : f.train_labels.labels) d.labels.push_back(l);
  for (uint8_t l : f.test_labels.labels) d.labels.push_back(l);
  out.split.train.resize(static_cast<std::size_t>(train_rows > 0 ? train_rows : n_train));
  std::iota(out.split.train.begin(), out.split.train.end(), int64_t{0});
  out.split.test.resize(static_cast<std::size_t>(n_test));
  std::iota(out.split.test.begin(), out.split.test.end(), n_train);
  return out;
}

}  // namespace train_fashion
