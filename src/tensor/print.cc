// print.cc — NumPy-like text for tensors: nested brackets, aligned columns, elision when large.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "chanflow/tensor/detail/dispatch.h"
#include "chanflow/tensor/tensor.h"

namespace chanflow {

namespace {

constexpr int64_t kThreshold = 1000;  // NumPy's default print threshold
constexpr int64_t kEdge = 3;          // elements kept at each end of an elided axis

std::string format_element(const Tensor& t, int64_t off, bool all_integral) {
  return detail::dispatch_dtype(t.dtype(), [&](auto tag) -> std::string {
    using T = typename decltype(tag)::type;
    const T v = static_cast<const T*>(t->raw_data())[off];
    if constexpr (std::is_same_v<T, bool>) {
      return v ? "True" : "False";
    } else if constexpr (std::is_integral_v<T>) {
      return fmt::format("{}", static_cast<int64_t>(v));
    } else {
      const auto d = detail::convert<double>(v);
      if (std::isnan(d)) return "nan";
      if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
      if (all_integral && std::fabs(d) < 1e16) return fmt::format("{:.0f}.", d);
      const int digits = std::is_same_v<T, double> ? 8 : (std::is_same_v<T, float> ? 8 : 4);
      return fmt::format("{:.{}g}", d, digits);
    }
  });
}

struct Printer {
  const Tensor& t;
  bool elide;
  bool all_integral = true;
  size_t width = 0;

  // Visits kept indices of axis `d`; -1 stands for the "..." marker.
  std::vector<int64_t> kept(int64_t d) const {
    const int64_t n = t.shape()[static_cast<size_t>(d)];
    std::vector<int64_t> k;
    // An empty tensor shows no element; without this, shape (0, 10^12) — never elided, since it
    // holds nothing — would enumerate 10^12 indices of its second axis (found by the fuzzer).
    if (t.numel() == 0) return k;
    if (elide && n > 2 * kEdge) {
      for (int64_t i = 0; i < kEdge; ++i) k.push_back(i);
      k.push_back(-1);
      for (int64_t i = n - kEdge; i < n; ++i) k.push_back(i);
    } else {
      for (int64_t i = 0; i < n; ++i) k.push_back(i);
    }
    return k;
  }

  template <class F>
  void for_each_shown(int64_t d, int64_t off, F&& f) const {
    if (d == t.ndim()) {
      f(off);
      return;
    }
    for (int64_t i : kept(d)) {
      if (i >= 0) for_each_shown(d + 1, off + i * t.strides()[static_cast<size_t>(d)], f);
    }
  }

  void render(int64_t d, int64_t off, size_t indent, std::string& out) const {
    if (d == t.ndim()) {
      std::string s = format_element(t, off, all_integral);
      out.append(width - std::min(width, s.size()), ' ');
      out += s;
      return;
    }
    out += '[';
    const auto idx = kept(d);
    bool first = true;
    for (int64_t i : idx) {
      if (!first) {
        if (d == t.ndim() - 1) {
          out += ", ";
        } else {
          out += ',';
          out.append(static_cast<size_t>(t.ndim() - 1 - d), '\n');
          out.append(indent + static_cast<size_t>(d) + 1, ' ');
        }
      }
      first = false;
      if (i < 0) {
        out += "...";
        continue;
      }
      render(d + 1, off + i * t.strides()[static_cast<size_t>(d)], indent, out);
    }
    out += ']';
  }
};

}  // namespace

std::string to_string(const Tensor& t) {
  if (!t.defined()) return "tensor(null)";
  Printer p{t, t.numel() > kThreshold};
  if (is_floating(t.dtype())) {
    p.for_each_shown(0, 0, [&](int64_t off) {
      detail::dispatch_dtype(t.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const auto v = detail::convert<double>(static_cast<const T*>(t->raw_data())[off]);
        if (std::isfinite(v) && v != std::floor(v)) p.all_integral = false;
      });
    });
  }
  p.for_each_shown(0, 0, [&](int64_t off) {
    p.width = std::max(p.width, format_element(t, off, p.all_integral).size());
  });
  std::string out = "tensor(";
  if (t.numel() == 0 && t.ndim() > 0) {
    out += "[]";
  } else {
    p.render(0, 0, 7, out);
  }
  out += ", shape=" + shape_to_string(t.shape()) + ", dtype=" + std::string(dtype_name(t.dtype())) +
         ")";
  return out;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << to_string(t); }

}  // namespace chanflow
