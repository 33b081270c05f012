// shape_util.h — shape arithmetic the rows share (private to the ops layer).
#pragma once

#include <cstdint>

#include "chanflow/tensor/ops.h"
#include "chanflow/tensor/tensor.h"

namespace chanflow {

// The product of extents [from, to) of `s`; -1 when one of them is unknown (-1).
int64_t known_product(const Shape& s, int64_t from, int64_t to);
// The product of extents [from, to) of a shape with no unknown extents.
int64_t shape_product(const Shape& s, int64_t from, int64_t to);
// Whether two shapes can be the same at run time (equal rank, extents equal or unknown).
bool shapes_compatible(const Shape& a, const Shape& b);
// Paddle's `axis` broadcasting: Y (of lower rank) is aligned with X's axes starting at `axis`
// (-1: at the end, as NumPy), giving a view of Y with X's rank; Y as it is otherwise. Throws
// ShapeError naming `op` when Y does not fit.
Tensor align_to(const Tensor& x, const Tensor& y, int64_t axis, const char* op);
// The sum of `g` over the axes it was broadcast along to come from `shape` (NumPy's rules,
// trailing alignment): the gradient of a broadcast operand. `g` itself when the shapes agree.
Tensor sum_to(const Tensor& g, const Shape& shape, const KernelOptions& o);

}  // namespace chanflow
