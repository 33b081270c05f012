// init.cc — Paddle's initialisers on top of random.h's reproducible generators.
#include "chanflow/tensor/init.h"

#include <cmath>

#include "chanflow/tensor/random.h"

namespace chanflow {

namespace {

void check_shape(const Shape& shape, const char* op) {
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      CHANFLOW_THROW(ShapeError) << op << ": extent " << i << " of shape " << shape_to_string(shape)
                                 << " is negative";
    }
  }
}

void check_random_dtype(DType dtype, const char* op) {
  if (!is_floating(dtype)) {
    CHANFLOW_THROW(TypeError) << op << ": dtype must be float16, float32 or float64, got " << dtype;
  }
}

bool has_zero_extent(const Shape& shape) {
  for (int64_t e : shape) {
    if (e == 0) return true;
  }
  return false;
}

}  // namespace

Tensor fill_constant(const Shape& shape, double value, DType dtype) {
  check_shape(shape, "fill_constant");
  return Tensor::full(shape, value, dtype);
}

Tensor uniform_random(const Shape& shape, double min, double max, uint64_t seed, DType dtype) {
  check_shape(shape, "uniform_random");
  check_random_dtype(dtype, "uniform_random");
  if (!std::isfinite(min) || !std::isfinite(max) || !(min <= max)) {
    CHANFLOW_THROW(Error) << "uniform_random: need finite min <= max, got min " << min << ", max "
                          << max;
  }
  return uniform(shape, min, max, seed, dtype);
}

Tensor gaussian_random(const Shape& shape, double mean, double std, uint64_t seed, DType dtype) {
  check_shape(shape, "gaussian_random");
  check_random_dtype(dtype, "gaussian_random");
  if (!std::isfinite(mean) || !std::isfinite(std) || std < 0) {
    CHANFLOW_THROW(Error) << "gaussian_random: need a finite mean and a finite std >= 0, got mean "
                          << mean << ", std " << std;
  }
  return normal(shape, mean, std, seed, dtype);
}

Fans compute_fans(const Shape& shape) {
  check_shape(shape, "compute_fans");
  if (shape.empty()) return {1.0, 1.0};
  if (shape.size() == 1) return {static_cast<double>(shape[0]), static_cast<double>(shape[0])};
  if (shape.size() == 2) return {static_cast<double>(shape[0]), static_cast<double>(shape[1])};
  double receptive = 1.0;
  for (size_t i = 2; i < shape.size(); ++i) receptive *= static_cast<double>(shape[i]);
  return {static_cast<double>(shape[1]) * receptive, static_cast<double>(shape[0]) * receptive};
}

Tensor xavier_init(const Shape& shape, bool uniform, uint64_t seed, DType dtype,
                   std::optional<double> fan_in, std::optional<double> fan_out) {
  check_shape(shape, "xavier_init");
  check_random_dtype(dtype, "xavier_init");
  const Fans f = compute_fans(shape);
  const double sum = fan_in.value_or(f.fan_in) + fan_out.value_or(f.fan_out);
  if (!(sum > 0) || !std::isfinite(sum)) {
    if (!fan_in && !fan_out && has_zero_extent(shape)) return Tensor::empty(shape, dtype);
    CHANFLOW_THROW(Error) << "xavier_init: fan_in + fan_out must be positive and finite, got "
                          << sum << " for shape " << shape_to_string(shape);
  }
  if (uniform) {
    const double limit = std::sqrt(6.0 / sum);
    return uniform_random(shape, -limit, limit, seed, dtype);
  }
  return gaussian_random(shape, 0.0, std::sqrt(2.0 / sum), seed, dtype);
}

Tensor msra_init(const Shape& shape, bool uniform, uint64_t seed, DType dtype,
                 std::optional<double> fan_in) {
  check_shape(shape, "msra_init");
  check_random_dtype(dtype, "msra_init");
  const double fi = fan_in.value_or(compute_fans(shape).fan_in);
  if (!(fi > 0) || !std::isfinite(fi)) {
    if (!fan_in && has_zero_extent(shape)) return Tensor::empty(shape, dtype);
    CHANFLOW_THROW(Error) << "msra_init: fan_in must be positive and finite, got " << fi
                          << " for shape " << shape_to_string(shape);
  }
  if (uniform) {
    const double limit = std::sqrt(6.0 / fi);
    return uniform_random(shape, -limit, limit, seed, dtype);
  }
  return gaussian_random(shape, 0.0, std::sqrt(2.0 / fi), seed, dtype);
}

}  // namespace chanflow
