// init.h — parameter initialisers with Paddle Fluid 1.x's formulas: fill_constant,
// uniform_random, gaussian_random, Xavier (Glorot) and MSRA (He), and Paddle's fan rule.
//
//   cf::Tensor w = cf::xavier_init({784, 256}, /*uniform=*/true, /*seed=*/1);  // fc weight
//   cf::Tensor k = cf::msra_init({64, 3, 7, 7}, /*uniform=*/false, /*seed=*/2); // conv filter
//   cf::Tensor b = cf::fill_constant({256}, 0.0, cf::DType::kFloat32);
//
// Random values come from random.h (std::mt19937_64 and chanflow's own transforms), so a seed
// gives the same tensor on every platform. The distributions are Paddle's; the values are not
// Paddle's (its ops use std:: distributions, whose algorithms are implementation-defined). The
// seed is used as given: Paddle's rule that seed 0 means "the program's random_seed" belongs to
// the caller that reads the program. Every function returns a fresh tensor, is thread-safe and
// never blocks. Errors: a negative extent is a ShapeError; a non-float dtype for a random
// initialiser is a TypeError; bad bounds, deviations or fans are Errors naming the op.
#pragma once

#include <cstdint>
#include <optional>

#include "chanflow/core/export.h"
#include "chanflow/tensor/tensor.h"

namespace chanflow {

// Paddle's fill_constant op: every element is `value` converted to dtype (any dtype).
CHANFLOW_API Tensor fill_constant(const Shape& shape, double value, DType dtype = DType::kFloat32);

// Paddle's uniform_random op: values in [min, max). Error unless both are finite and
// min <= max. dtype float16/float32/float64.
CHANFLOW_API Tensor uniform_random(const Shape& shape, double min, double max, uint64_t seed,
                                   DType dtype = DType::kFloat32);

// Paddle's gaussian_random op: normal values with mean `mean` and standard deviation `std`.
// Error unless both are finite and std >= 0. dtype float16/float32/float64.
CHANFLOW_API Tensor gaussian_random(const Shape& shape, double mean, double std, uint64_t seed,
                                    DType dtype = DType::kFloat32);

// Paddle's fan rule (Initializer._compute_fans): a 0-d shape gives (1, 1); 1-d (n) gives (n, n);
// 2-d, an fc weight [in, out], gives (in, out); more axes, a conv filter [M, C, k...], give
// (C * r, M * r) with r the product of the trailing extents (kh * kw for 2-d convolution).
struct Fans {
  double fan_in;
  double fan_out;
};
CHANFLOW_API Fans compute_fans(const Shape& shape);

// Xavier/Glorot (Paddle's XavierInitializer): uniform in [-l, l) with l = sqrt(6 / (fan_in +
// fan_out)), or normal with mean 0 and std sqrt(2 / (fan_in + fan_out)). fan_in/fan_out default
// to compute_fans(shape). Error when fan_in + fan_out is not positive and finite (a shape with a
// zero extent and no explicit fans gives an empty tensor).
CHANFLOW_API Tensor xavier_init(const Shape& shape, bool uniform, uint64_t seed,
                                DType dtype = DType::kFloat32,
                                std::optional<double> fan_in = std::nullopt,
                                std::optional<double> fan_out = std::nullopt);

// MSRA/He (Paddle's MSRAInitializer): uniform in [-l, l) with l = sqrt(6 / fan_in), or normal
// with mean 0 and std sqrt(2 / fan_in). fan_in defaults to compute_fans(shape).fan_in. Error
// when fan_in is not positive and finite (a shape with a zero extent gives an empty tensor).
CHANFLOW_API Tensor msra_init(const Shape& shape, bool uniform, uint64_t seed,
                              DType dtype = DType::kFloat32,
                              std::optional<double> fan_in = std::nullopt);

}  // namespace chanflow
