// shape_util.cc — see shape_util.h.
#include "shape_util.h"

#include "chanflow/core/error.h"

namespace chanflow {

int64_t known_product(const Shape& s, int64_t from, int64_t to) {
  int64_t p = 1;
  for (int64_t i = from; i < to; ++i) {
    if (s[static_cast<size_t>(i)] < 0) return -1;
    p *= s[static_cast<size_t>(i)];
  }
  return p;
}

int64_t shape_product(const Shape& s, int64_t from, int64_t to) {
  int64_t p = 1;
  for (int64_t i = from; i < to; ++i) p *= s[static_cast<size_t>(i)];
  return p;
}

bool shapes_compatible(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] >= 0 && b[i] >= 0 && a[i] != b[i]) return false;
  }
  return true;
}

Tensor align_to(const Tensor& x, const Tensor& y, int64_t axis, const char* op) {
  if (y.ndim() >= x.ndim()) return y;
  const int64_t start = axis < 0 ? x.ndim() - y.ndim() : axis;
  if (start + y.ndim() > x.ndim()) {
    CHANFLOW_THROW(ShapeError) << op << ": axis " << axis << " does not fit Y of shape "
                               << shape_to_string(y.shape()) << " into X of shape "
                               << shape_to_string(x.shape());
  }
  Shape s(static_cast<size_t>(start), 1);
  s.insert(s.end(), y.shape().begin(), y.shape().end());
  s.resize(static_cast<size_t>(x.ndim()), 1);
  return y.reshape(s);
}

Tensor sum_to(const Tensor& g, const Shape& shape, const KernelOptions& o) {
  if (g.shape() == shape) return g;
  const int64_t lead = g.ndim() - static_cast<int64_t>(shape.size());
  if (lead < 0) {
    CHANFLOW_THROW(ShapeError) << "sum_to: gradient of shape " << shape_to_string(g.shape())
                               << " cannot come from a broadcast of " << shape_to_string(shape);
  }
  Axes axes;
  for (int64_t i = 0; i < g.ndim(); ++i) {
    if (i < lead) {
      axes.push_back(i);
    } else if (shape[static_cast<size_t>(i - lead)] == 1 &&
               g.shape()[static_cast<size_t>(i)] != 1) {
      axes.push_back(i);
    } else if (shape[static_cast<size_t>(i - lead)] != g.shape()[static_cast<size_t>(i)]) {
      CHANFLOW_THROW(ShapeError) << "sum_to: gradient of shape " << shape_to_string(g.shape())
                                 << " cannot come from a broadcast of " << shape_to_string(shape);
    }
  }
  Tensor r = axes.empty() ? g : sum(g, axes, true, o);
  return r.reshape(shape).cast(g.dtype());
}

}  // namespace chanflow
