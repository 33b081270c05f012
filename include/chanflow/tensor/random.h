// random.h — reproducible random tensors: the same seed gives the same values on every platform.
//
//   cf::Tensor w = cf::uniform({128, 64}, -0.1, 0.1, /*seed=*/42, cf::DType::kFloat32);
//   cf::Tensor n = cf::normal({10}, 0.0, 1.0, /*seed=*/7);
//
// The generator is std::mt19937_64 (fully specified by the C++ standard) with chanflow's own
// transforms, because std::uniform_real_distribution and std::normal_distribution are
// implementation-defined: uniform = low + (high - low) * (bits >> 11) * 2^-53; normal uses the
// Box-Muller transform on two such uniforms (the second value of each pair is used, not cached
// across calls). Values are generated in row-major order in double and then converted to dtype.
// Thread-safe (no global generator); never blocks.
#pragma once

#include <cstdint>

#include "chanflow/core/export.h"
#include "chanflow/tensor/tensor.h"

namespace chanflow {

// Uniform values in [low, high). Throws Error unless low <= high, both finite.
CHANFLOW_API Tensor uniform(const Shape& shape, double low, double high, uint64_t seed,
                            DType dtype = DType::kFloat32);
// Normal values with the given mean and standard deviation (stddev >= 0, else Error).
CHANFLOW_API Tensor normal(const Shape& shape, double mean, double stddev, uint64_t seed,
                           DType dtype = DType::kFloat32);

}  // namespace chanflow
