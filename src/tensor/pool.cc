// pool.cc — pool2d and pool2d_grad (conv.h): max and average pooling over NCHW planes, a direct
// loop per output element over its window clipped to the input (Paddle's window rule).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "chanflow/tensor/conv.h"
#include "internal.h"

namespace chanflow {

namespace {

struct PoolGeom {
  int64_t planes, h, w, oh, ow;
  int64_t kh, kw, sh, sw, ph, pw;
  bool max, exclusive;
};

int64_t pool_extent(int64_t in, int64_t k, int64_t pad, int64_t stride, bool ceil_mode,
                    const char* op, const char* axis, const Shape& x) {
  if (in < 0) return -1;
  int64_t padded = 0;
  if (pad > (int64_t{1} << 61) || __builtin_add_overflow(in, 2 * pad, &padded)) {
    CHANFLOW_THROW(ShapeError) << op << ": padded " << axis << " overflows int64";
  }
  if (padded < k) {
    CHANFLOW_THROW(ShapeError) << op << ": the window " << axis << " " << k
                               << " exceeds the padded input " << axis << " " << padded
                               << " (input shape " << shape_to_string(x) << ")";
  }
  const int64_t span = padded - k;
  // ceil_mode: (span + stride - 1) / stride, written so that a huge stride cannot overflow.
  return span / stride + (ceil_mode && span % stride != 0 ? 1 : 0) + 1;
}

Shape pool_shape_impl(const Shape& x, const Pool2dParams& p, const char* op) {
  if (x.size() != 4) {
    CHANFLOW_THROW(ShapeError) << op << ": x must be 4-D (N, C, H, W), got shape "
                               << shape_to_string(x);
  }
  for (int64_t e : x) {
    if (e < -1) {
      CHANFLOW_THROW(ShapeError) << op << ": x shape " << shape_to_string(x)
                                 << " has a negative extent (only -1, unknown, is allowed)";
    }
  }
  for (int i = 0; i < 2; ++i) {
    const auto u = static_cast<size_t>(i);
    const char* axis = i == 0 ? "height" : "width";
    if (p.strides[u] < 1) {
      CHANFLOW_THROW(ShapeError) << op << ": strides[" << i << "] (" << axis
                                 << ") must be >= 1, got " << p.strides[u];
    }
    if (p.global_pooling) continue;
    if (p.ksize[u] < 1) {
      CHANFLOW_THROW(ShapeError) << op << ": ksize[" << i << "] (" << axis << ") must be >= 1, got "
                                 << p.ksize[u];
    }
    if (p.paddings[u] < 0) {
      CHANFLOW_THROW(ShapeError) << op << ": paddings[" << i << "] (" << axis
                                 << ") must be >= 0, got " << p.paddings[u];
    }
  }
  if (p.global_pooling) {
    for (size_t i = 2; i < 4; ++i) {
      if (x[i] == 0) {
        CHANFLOW_THROW(ShapeError)
            << op << ": global pooling of an empty plane (x shape " << shape_to_string(x) << ")";
      }
    }
    return {x[0], x[1], 1, 1};
  }
  return {x[0], x[1],
          pool_extent(x[2], p.ksize[0], p.paddings[0], p.strides[0], p.ceil_mode, op, "height", x),
          pool_extent(x[3], p.ksize[1], p.paddings[1], p.strides[1], p.ceil_mode, op, "width", x)};
}

PoolGeom make_geom(const Shape& x, const Shape& out, const Pool2dParams& p) {
  PoolGeom g{};
  g.planes = x[0] * x[1];
  g.h = x[2];
  g.w = x[3];
  g.oh = out[2];
  g.ow = out[3];
  g.kh = p.global_pooling ? x[2] : p.ksize[0];
  g.kw = p.global_pooling ? x[3] : p.ksize[1];
  g.sh = p.strides[0];
  g.sw = p.strides[1];
  g.ph = p.global_pooling ? 0 : p.paddings[0];
  g.pw = p.global_pooling ? 0 : p.paddings[1];
  g.max = p.type == PoolType::kMax;
  g.exclusive = p.exclusive;
  return g;
}

void check_float(const Tensor& t, const char* op, const char* arg) {
  detail::require_defined(t, op);
  if (t.dtype() != DType::kFloat32 && t.dtype() != DType::kFloat64) {
    CHANFLOW_THROW(TypeError) << op << ": " << arg << " has dtype " << dtype_name(t.dtype())
                              << "; only float32 and float64 are supported";
  }
}

// Window of output (i, j) clipped to the input: rows [h0, h1), columns [w0, w1).
struct Window {
  int64_t h0, h1, w0, w1;
};

inline Window window(const PoolGeom& g, int64_t i, int64_t j) {
  Window win{};
  const int64_t hs = i * g.sh - g.ph;
  const int64_t ws = j * g.sw - g.pw;
  // hs < h keeps hs + kh from overflowing under a huge stride.
  win.h0 = std::clamp<int64_t>(hs, 0, g.h);
  win.h1 = hs < g.h ? std::min(hs + g.kh, g.h) : g.h;
  win.w0 = std::clamp<int64_t>(ws, 0, g.w);
  win.w1 = ws < g.w ? std::min(ws + g.kw, g.w) : g.w;
  // A window wholly in the padding is empty.
  win.h1 = std::max(win.h1, win.h0);
  win.w1 = std::max(win.w1, win.w0);
  return win;
}

// The divisor of an average window (0 for an empty exclusive one: its output is 0).
inline int64_t divisor(const PoolGeom& g, const Window& win) {
  return g.exclusive ? (win.h1 - win.h0) * (win.w1 - win.w0) : g.kh * g.kw;
}

// Chunker (internal.h) calls between_chunks before a piece of work (a tile, an output row)
// that would take the work since its last call past one chunk.
using detail::Chunker;

// The common CNN pooling (2x2 windows, stride 2, no padding, every window inside the image) has
// its own loops: no clipping, four loads per output. Same results as the general loops: a NaN in a
// window gives NaN, and the gradient goes to the first maximum (or NaN) in row-major order.
inline bool max_2x2_stride_2(const PoolGeom& g) {
  return g.max && g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 &&
         2 * g.oh <= g.h && 2 * g.ow <= g.w;
}

template <class T>
void max_pool_2x2_forward(const PoolGeom& g, const T* x, T* out, const KernelOptions& o) {
  Chunker chunker(o);
  const int64_t row_work = std::max<int64_t>(1, 4 * g.ow);
  for (int64_t pl = 0; pl < g.planes; ++pl) {
    const T* plane = x + pl * g.h * g.w;
    T* orow = out + pl * g.oh * g.ow;
    for (int64_t i = 0; i < g.oh; ++i, orow += g.ow) {
      chunker.before(row_work);
      const T* r0 = plane + 2 * i * g.w;
      const T* r1 = r0 + g.w;
      for (int64_t j = 0; j < g.ow; ++j) {
        const T a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
        const T m = std::max(std::max(a, b), std::max(c, d));
        const bool nan = (a != a) | (b != b) | (c != c) | (d != d);
        orow[j] = nan ? std::numeric_limits<T>::quiet_NaN() : m;
      }
    }
  }
}

template <class T>
void max_pool_2x2_backward(const PoolGeom& g, const T* x, const T* out, const T* gout, T* gx,
                           const KernelOptions& o) {
  Chunker chunker(o);
  const int64_t row_work = std::max<int64_t>(1, 4 * g.ow);
  for (int64_t pl = 0; pl < g.planes; ++pl) {
    const T* plane = x + pl * g.h * g.w;
    T* gplane = gx + pl * g.h * g.w;
    const T* orow = out + pl * g.oh * g.ow;
    const T* grow = gout + pl * g.oh * g.ow;
    for (int64_t i = 0; i < g.oh; ++i, orow += g.ow, grow += g.ow) {
      chunker.before(row_work);
      const T* r0 = plane + 2 * i * g.w;
      const T* r1 = r0 + g.w;
      T* g0 = gplane + 2 * i * g.w;
      T* g1 = g0 + g.w;
      for (int64_t j = 0; j < g.ow; ++j) {
        const T t = orow[j];
        const bool nan = t != t;
        // The first of the window's four cells that holds the output (row-major); the windows do
        // not overlap, so each input cell is written by one window at most.
        auto hit = [&](T v) { return v == t || (nan && v != v); };
        if (hit(r0[2 * j])) {
          g0[2 * j] += grow[j];
        } else if (hit(r0[2 * j + 1])) {
          g0[2 * j + 1] += grow[j];
        } else if (hit(r1[2 * j])) {
          g1[2 * j] += grow[j];
        } else if (hit(r1[2 * j + 1])) {
          g1[2 * j + 1] += grow[j];
        }
      }
    }
  }
}

template <class T>
void pool_forward(const PoolGeom& g, const T* x, T* out, const KernelOptions& o) {
  if (max_2x2_stride_2(g)) {
    max_pool_2x2_forward(g, x, out, o);
    return;
  }
  // float sums accumulate in double: global pooling sums whole planes.
  using Acc = std::conditional_t<std::is_same_v<T, float>, double, T>;
  Chunker chunker(o);
  const int64_t row_work = std::max<int64_t>(1, g.ow * g.kh * g.kw);
  for (int64_t pl = 0; pl < g.planes; ++pl) {
    const T* plane = x + pl * g.h * g.w;
    T* orow = out + pl * g.oh * g.ow;
    for (int64_t i = 0; i < g.oh; ++i, orow += g.ow) {
      chunker.before(row_work);
      for (int64_t j = 0; j < g.ow; ++j) {
        const Window win = window(g, i, j);
        if (g.max) {
          // A plain running max (vectorisable) and a NaN flag: a NaN anywhere gives NaN.
          T m = -std::numeric_limits<T>::infinity();
          bool nan = false;
          for (int64_t h = win.h0; h < win.h1; ++h) {
            const T* r = plane + h * g.w;
            for (int64_t w = win.w0; w < win.w1; ++w) {
              m = r[w] > m ? r[w] : m;
              nan |= r[w] != r[w];
            }
          }
          orow[j] = nan ? std::numeric_limits<T>::quiet_NaN() : m;
        } else {
          Acc s = 0;
          for (int64_t h = win.h0; h < win.h1; ++h) {
            const T* r = plane + h * g.w;
            for (int64_t w = win.w0; w < win.w1; ++w) s += r[w];
          }
          const int64_t d = divisor(g, win);
          orow[j] = d == 0 ? T{0} : static_cast<T>(s / static_cast<Acc>(d));
        }
      }
    }
  }
}

template <class T>
void pool_backward(const PoolGeom& g, const T* x, const T* out, const T* gout, T* gx,
                   const KernelOptions& o) {
  if (max_2x2_stride_2(g)) {
    max_pool_2x2_backward(g, x, out, gout, gx, o);
    return;
  }
  Chunker chunker(o);
  const int64_t row_work = std::max<int64_t>(1, g.ow * g.kh * g.kw);
  for (int64_t pl = 0; pl < g.planes; ++pl) {
    const T* plane = x + pl * g.h * g.w;
    T* gplane = gx + pl * g.h * g.w;
    const T* orow = out + pl * g.oh * g.ow;
    const T* grow = gout + pl * g.oh * g.ow;
    for (int64_t i = 0; i < g.oh; ++i, orow += g.ow, grow += g.ow) {
      chunker.before(row_work);
      for (int64_t j = 0; j < g.ow; ++j) {
        const Window win = window(g, i, j);
        if (g.max) {
          const T target = orow[j];
          const bool nan = target != target;
          bool found = false;
          for (int64_t h = win.h0; h < win.h1 && !found; ++h) {
            const T* r = plane + h * g.w;
            for (int64_t w = win.w0; w < win.w1; ++w) {
              if (r[w] == target || (nan && r[w] != r[w])) {
                gplane[h * g.w + w] += grow[j];
                found = true;
                break;
              }
            }
          }
        } else {
          const int64_t d = divisor(g, win);
          if (d == 0) continue;
          const T share = grow[j] / static_cast<T>(d);
          for (int64_t h = win.h0; h < win.h1; ++h) {
            T* r = gplane + h * g.w;
            for (int64_t w = win.w0; w < win.w1; ++w) r[w] += share;
          }
        }
      }
    }
  }
}

}  // namespace

Shape pool2d_output_shape(const Shape& x, const Pool2dParams& p) {
  return pool_shape_impl(x, p, "pool2d");
}

Tensor pool2d(const Tensor& x, const Pool2dParams& p, const KernelOptions& o) {
  const char* op = "pool2d";
  check_float(x, op, "x");
  const Shape out_shape = pool_shape_impl(x.shape(), p, op);
  Tensor out = Tensor::empty(out_shape, x.dtype());
  if (out.numel() == 0) return out;
  const PoolGeom g = make_geom(x.shape(), out_shape, p);
  const Tensor xc = x.contiguous();
  if (x.dtype() == DType::kFloat32) {
    pool_forward<float>(g, xc.data<float>(), out.data<float>(), o);
  } else {
    pool_forward<double>(g, xc.data<double>(), out.data<double>(), o);
  }
  return out;
}

Tensor pool2d_grad(const Tensor& x, const Tensor& out, const Tensor& grad_out,
                   const Pool2dParams& p, const KernelOptions& o) {
  const char* op = "pool2d_grad";
  check_float(x, op, "x");
  detail::require_defined(out, op);
  detail::require_defined(grad_out, op);
  for (const auto& [t, name] : {std::pair<const Tensor&, const char*>{out, "out"},
                                std::pair<const Tensor&, const char*>{grad_out, "grad_out"}}) {
    if (t.dtype() != x.dtype()) {
      CHANFLOW_THROW(TypeError) << op << ": " << name << " has dtype " << dtype_name(t.dtype())
                                << " but x has " << dtype_name(x.dtype());
    }
  }
  const Shape out_shape = pool_shape_impl(x.shape(), p, op);
  if (out.shape() != out_shape) {
    CHANFLOW_THROW(ShapeError) << op << ": out shape " << shape_to_string(out.shape())
                               << " != the pool2d output shape " << shape_to_string(out_shape)
                               << " of x shape " << shape_to_string(x.shape());
  }
  if (grad_out.shape() != out_shape) {
    CHANFLOW_THROW(ShapeError) << op << ": grad_out shape " << shape_to_string(grad_out.shape())
                               << " != the pool2d output shape " << shape_to_string(out_shape)
                               << " of x shape " << shape_to_string(x.shape());
  }
  Tensor gx = Tensor::zeros(x.shape(), x.dtype());
  if (gx.numel() == 0 || grad_out.numel() == 0) return gx;
  const PoolGeom g = make_geom(x.shape(), out_shape, p);
  const Tensor xc = x.contiguous();
  const Tensor oc = out.contiguous();
  const Tensor gc = grad_out.contiguous();
  if (x.dtype() == DType::kFloat32) {
    pool_backward<float>(g, xc.data<float>(), oc.data<float>(), gc.data<float>(), gx.data<float>(),
                         o);
  } else {
    pool_backward<double>(g, xc.data<double>(), oc.data<double>(), gc.data<double>(),
                          gx.data<double>(), o);
  }
  return gx;
}

}  // namespace chanflow
