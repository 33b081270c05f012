// Unit tests of the tensor layer: the object and its DLPack header, creation, views, copy on
// write, float16, printing, errors, .npy files, DLPack ownership, random tensors, BLAS policy and
// chunked kernels. Kernel values are checked against NumPy in numpy_oracle_test.cc.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <thread>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>

#include "chanflow/tensor.h"

namespace cf = chanflow;
using cf::DType;
using cf::Tensor;

namespace {

std::string temp_path(const std::string& name) {
  return testing::TempDir() + "/chanflow_tensor_" + name;
}

template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return {};
}

}  // namespace

TEST(Tensor, IsAnObjectWithStaticTypeIndex) {
  Tensor t = Tensor::zeros({2, 3}, DType::kFloat32);
  EXPECT_EQ(t->type_index(), cf::TypeIndex::kTensor);
  EXPECT_EQ(t->type_key(), "Tensor");
  cf::ObjectRef any = t;
  EXPECT_NE(any.as<cf::TensorObj>(), nullptr);
  Tensor back = cf::downcast<Tensor>(any);
  EXPECT_TRUE(back.same_as(t));
}

TEST(Tensor, HeaderIsADLTensor) {
  Tensor t = Tensor::zeros({2, 3}, DType::kFloat32);
  const DLTensor& dl = t->dl_tensor();
  EXPECT_EQ(dl.ndim, 2);
  EXPECT_EQ(dl.shape[0], 2);
  EXPECT_EQ(dl.shape[1], 3);
  EXPECT_EQ(dl.strides[0], 3);
  EXPECT_EQ(dl.strides[1], 1);
  EXPECT_EQ(dl.dtype.code, kDLFloat);
  EXPECT_EQ(dl.dtype.bits, 32);
  EXPECT_EQ(dl.device.device_type, kDLCPU);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(dl.data) % 64, 0u) << "storage is 64-byte aligned";
}

TEST(Tensor, Creation) {
  EXPECT_EQ(Tensor::zeros({2, 3}, DType::kFloat32).at<float>({1, 2}), 0.0f);
  EXPECT_EQ(Tensor::ones({4}, DType::kInt8).at<int>({3}), 1);
  EXPECT_EQ(Tensor::full({2, 2}, 2.5, DType::kFloat64).at<double>({1, 1}), 2.5);
  EXPECT_EQ(Tensor::full({1}, 300, DType::kUInt8).item<int>(), 44);  // astype wraps
  Tensor r = Tensor::arange(5);
  EXPECT_EQ(r.dtype(), DType::kInt64);
  EXPECT_EQ(r.shape(), cf::Shape({5}));
  EXPECT_EQ(r.at<int64_t>({4}), 4);
  Tensor f = Tensor::arange(0.0, 1.0, 0.25, DType::kFloat32);
  EXPECT_EQ(f.numel(), 4);
  EXPECT_EQ(f.at<float>({3}), 0.75f);
  EXPECT_EQ(Tensor::arange(1.0, 0.0, 1.0).numel(), 0);
  EXPECT_THROW(Tensor::arange(0.0, 1.0, 0.0), cf::Error);
  Tensor v = Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(v.at<int>({1, 0}), 4);
  EXPECT_EQ(v.at<int>({-1, -1}), 6);
  Tensor b = Tensor::from_vector<bool>({true, false, true});
  EXPECT_EQ(b.dtype(), DType::kBool);
  EXPECT_TRUE(b.at<bool>({2}));
  EXPECT_EQ(Tensor::scalar(3, DType::kInt32).ndim(), 0);
  EXPECT_EQ(Tensor::scalar(3, DType::kInt32).item<int>(), 3);
  EXPECT_EQ(Tensor::from_vector<float>({7.0f}, {}).ndim(), 0);
  EXPECT_THROW(Tensor::from_vector<float>({1, 2, 3}, {2, 2}), cf::ShapeError);
  EXPECT_THROW(Tensor::zeros({2, -1}, DType::kFloat32), cf::ShapeError);
  EXPECT_THROW(Tensor::empty({int64_t{1} << 40, int64_t{1} << 40}, DType::kFloat32),
               cf::ShapeError);
  EXPECT_THROW((void)v.at<int>({2, 0}), cf::ShapeError);
  EXPECT_THROW((void)v.item<int>(), cf::ShapeError);
  EXPECT_THROW((void)v.data<float>(), cf::TypeError);
}

TEST(Tensor, EmptyAndZeroSize) {
  Tensor e = Tensor::empty({0, 3}, DType::kFloat32);
  EXPECT_EQ(e.numel(), 0);
  EXPECT_TRUE(e.is_contiguous());
  Tensor s = cf::add(e, Tensor::ones({1, 3}, DType::kFloat32));
  EXPECT_EQ(s.shape(), cf::Shape({0, 3}));
  EXPECT_EQ(cf::sum(e).item<float>(), 0.0f);
  EXPECT_EQ(cf::sum(e, {0}).shape(), cf::Shape({3}));
  EXPECT_EQ(e.reshape({3, 0}).shape(), cf::Shape({3, 0}));
  EXPECT_EQ(e.transpose().shape(), cf::Shape({3, 0}));
}

TEST(Tensor, ViewsShareStorage) {
  Tensor a = Tensor::arange(12).reshape({3, 4});
  Tensor t = a.transpose();
  EXPECT_EQ(t.shape(), cf::Shape({4, 3}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_TRUE(t->storage() == a->storage());
  EXPECT_EQ(t.at<int>({3, 1}), 7);
  Tensor s = a.slice(1, 1, 4, 2);  // columns 1 and 3
  EXPECT_EQ(s.shape(), cf::Shape({3, 2}));
  EXPECT_TRUE(s->storage() == a->storage());
  EXPECT_EQ(s.at<int>({2, 1}), 11);
  EXPECT_EQ(a.slice(0, -2, 100).shape(), cf::Shape({2, 4}));
  EXPECT_EQ(a.slice(0, 5, 1).shape(), cf::Shape({0, 4}));
  Tensor r = a.reshape({2, -1});
  EXPECT_EQ(r.shape(), cf::Shape({2, 6}));
  EXPECT_TRUE(r->storage() == a->storage()) << "reshape of a contiguous tensor is a view";
  Tensor rt = t.reshape({12});
  EXPECT_FALSE(rt->storage() == a->storage()) << "reshape of a transposed tensor copies";
  EXPECT_EQ(rt.at<int>({1}), 4);
  EXPECT_EQ(a.unsqueeze(0).shape(), cf::Shape({1, 3, 4}));
  EXPECT_EQ(a.unsqueeze(2).squeeze(2).shape(), cf::Shape({3, 4}));
  Tensor p = Tensor::arange(24).reshape({2, 3, 4}).transpose({2, 0, 1});
  EXPECT_EQ(p.shape(), cf::Shape({4, 2, 3}));
  EXPECT_EQ(p.at<int>({3, 1, 2}), 1 * 12 + 2 * 4 + 3);
  EXPECT_THROW(a.reshape({5, -1}), cf::ShapeError);
  EXPECT_THROW(a.transpose({0, 0}), cf::ShapeError);
  EXPECT_THROW(a.slice(2, 0, 1), cf::ShapeError);
  EXPECT_THROW(a.squeeze(0), cf::ShapeError);
}

TEST(Tensor, CopyOnWriteKeepsSharedTensorsUnchanged) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor sent = a;  // e.g. a value sent on a channel
  EXPECT_TRUE(a.is_shared());
  float* p = a.data<float>();
  p[0] = 42;
  EXPECT_EQ(a.at<float>({0, 0}), 42.0f);
  EXPECT_EQ(sent.at<float>({0, 0}), 1.0f) << "the receiver never sees the sender's writes";
  EXPECT_FALSE(a.is_shared());
  const float* again = a.data<float>();
  EXPECT_EQ(static_cast<const void*>(again), static_cast<const void*>(a.data<float>()))
      << "a unique tensor is written in place";

  // Views share storage: writing through one must not change the other.
  Tensor base = Tensor::arange(6, DType::kInt32).reshape({2, 3});
  Tensor view = base.transpose();
  int32_t* vp = view.data<int32_t>();  // copies (shared storage, and not contiguous)
  EXPECT_TRUE(view.is_contiguous());
  vp[0] = -1;
  EXPECT_EQ(base.at<int>({0, 0}), 0);
  EXPECT_EQ(view.at<int>({0, 0}), -1);
  EXPECT_EQ(view.at<int>({2, 1}), 5);

  Tensor f = Tensor::zeros({3}, DType::kFloat64);
  Tensor g = f;
  f.fill(2.0);
  EXPECT_EQ(f.at<double>({1}), 2.0);
  EXPECT_EQ(g.at<double>({1}), 0.0);
  Tensor h = g;
  g.assign(Tensor::from_vector<int32_t>({7}));
  EXPECT_EQ(g.at<double>({2}), 7.0);
  EXPECT_EQ(h.at<double>({2}), 0.0);
  g.assign(g.slice(0, 0, 1));  // source aliasing the destination
  EXPECT_EQ(g.at<double>({0}), 7.0);
  EXPECT_THROW(g.assign(Tensor::zeros({2}, DType::kFloat64)), cf::ShapeError);
}

TEST(Tensor, KernelsNeverChangeTheirInputs) {
  Tensor a = Tensor::from_vector<float>({1, -2, 3});
  Tensor b = a;
  Tensor c = cf::relu(a);
  c.data<float>()[0] = 100;
  EXPECT_EQ(a.at<float>({0}), 1.0f);
  EXPECT_EQ(b.at<float>({1}), -2.0f);
}

TEST(Half, RoundTripsEveryHalfValue) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const cf::Half h = cf::Half::from_bits(static_cast<uint16_t>(bits));
    const float f = static_cast<float>(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(cf::Half(f))));
      continue;
    }
    ASSERT_EQ(cf::Half(f).bits, bits) << "half bits " << bits;
  }
}

TEST(Half, RoundsToNearestEven) {
  EXPECT_EQ(static_cast<float>(cf::Half(1.0f)), 1.0f);
  EXPECT_EQ(static_cast<float>(cf::Half(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(static_cast<float>(cf::Half(65520.0f))));
  EXPECT_EQ(static_cast<float>(cf::Half(65519.0f)), 65504.0f);
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1).
  EXPECT_EQ(static_cast<float>(cf::Half(1.0f + 0x1.0p-11f)), 1.0f);
  EXPECT_EQ(static_cast<float>(cf::Half(1.0f + 0x1.8p-11f)), 1.0f + 0x1.0p-10f);
  EXPECT_EQ(static_cast<float>(cf::Half(0x1.0p-24f)), 0x1.0p-24f);  // smallest subnormal
  EXPECT_EQ(static_cast<float>(cf::Half(0x1.0p-25f)), 0.0f);        // tie to even: zero
  EXPECT_EQ(static_cast<float>(cf::Half(0x1.8p-25f)), 0x1.0p-24f);
  EXPECT_EQ(cf::Half(-0.0f).bits, 0x8000);
}

// The float -> integer/bool table of docs/tensor.md ("Casts"): NumPy 1.24's results on x86-64,
// measured there (check_cast_numpy.py compares the same casts with NumPy itself). Every entry is
// one a plain static_cast gets wrong or leaves undefined: NaN, infinities and values out of range
// take the integer minimum (of int64 for int64, of int32 first for the narrower types, which then
// wrap); in-range values truncate toward zero; bool is x != 0.
TEST(Cast, FloatToIntegerAsNumPyOnX86) {
  const double nan = std::nan("");
  const double inf = HUGE_VAL;
  const std::vector<double> x = {nan, inf,  -inf,    1e20,   -1e20, 200.5,       -0.9,
                                 3e9, -3e9, 70000.7, -129.5, -1.5,  2147483648., 1e10};
  const int64_t m32 = INT32_MIN;
  const int64_t m64 = INT64_MIN;
  const std::vector<std::pair<DType, std::vector<int64_t>>> rows = {
      {DType::kInt8, {0, 0, 0, 0, 0, -56, 0, 0, 0, 112, 127, -1, 0, 0}},
      {DType::kInt16, {0, 0, 0, 0, 0, 200, 0, 0, 0, 4464, -129, -1, 0, 0}},
      {DType::kInt32, {m32, m32, m32, m32, m32, 200, 0, m32, m32, 70000, -129, -1, m32, m32}},
      {DType::kInt64,
       {m64, m64, m64, m64, m64, 200, 0, 3000000000, -3000000000, 70000, -129, -1, 2147483648,
        10000000000}},
      {DType::kUInt8, {0, 0, 0, 0, 0, 200, 0, 0, 0, 112, 127, 255, 0, 0}},
      {DType::kBool, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
  };
  const auto n = static_cast<int64_t>(x.size());
  std::vector<double> twice;  // x and x again: a (2, n) tensor whose transpose is strided
  twice.insert(twice.end(), x.begin(), x.end());
  twice.insert(twice.end(), x.begin(), x.end());
  for (DType from : {DType::kFloat64, DType::kFloat32, DType::kFloat16}) {
    const Tensor contiguous = Tensor::from_vector<double>(x).cast(from);
    const Tensor strided = Tensor::from_vector<double>(twice, {2, n}).cast(from).transpose();
    for (const auto& [to, want] : rows) {
      const Tensor a = contiguous.cast(to).cast(DType::kInt64);
      const Tensor b = strided.cast(to).cast(DType::kInt64);
      for (int64_t i = 0; i < n; ++i) {
        const double v = contiguous.at<double>({i});
        // float16 turns the values beyond 65504 into infinities, which cast as infinities do.
        int64_t w = want[static_cast<size_t>(i)];
        if (from == DType::kFloat16 && std::isinf(v) && !std::isinf(x[static_cast<size_t>(i)])) {
          w = want[v > 0 ? 1 : 2];  // as +inf / -inf
        }
        EXPECT_EQ(a.at<int64_t>({i}), w) << cf::dtype_name(from) << " " << x[static_cast<size_t>(i)]
                                         << " -> " << cf::dtype_name(to);
        EXPECT_EQ(b.at<int64_t>({i, 1}), w)
            << "strided " << cf::dtype_name(from) << " " << x[static_cast<size_t>(i)] << " -> "
            << cf::dtype_name(to);
      }
    }
  }
}

// trunc_div: C++'s integer `/` (toward zero) in the promoted integer dtype, without its undefined
// cases: a zero divisor throws, min / -1 wraps to min. Floats divide as div().
TEST(TruncDiv, IntegersTruncateTowardZero) {
  const Tensor a = Tensor::from_vector<int8_t>({-7, 7, -7, -128, 5});
  const Tensor b = Tensor::from_vector<int8_t>({2, 2, -2, -1, 7});
  const Tensor q = cf::trunc_div(a, b);
  ASSERT_EQ(q.dtype(), DType::kInt8);
  const std::vector<int64_t> want = {-3, 3, 3, -128, 0};
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(q.cast(DType::kInt64).at<int64_t>({i}), want[i]);
  // Mixed dtypes promote first (int8 / uint8 -> int16), and broadcast.
  const Tensor m = cf::trunc_div(a, Tensor::from_vector<uint8_t>({200}));
  EXPECT_EQ(m.dtype(), DType::kInt16);
  EXPECT_EQ(
      cf::trunc_div(Tensor::from_vector<int64_t>({INT64_MIN}), Tensor::from_vector<int64_t>({-1}))
          .item<int64_t>(),
      INT64_MIN);
  const std::string err = error_of<cf::Error>([&] {
    cf::trunc_div(Tensor::from_vector<int32_t>({1, 2}), Tensor::from_vector<int32_t>({1, 0}));
  });
  EXPECT_NE(err.find("trunc_div: integer division by zero"), std::string::npos) << err;
  const Tensor f = cf::trunc_div(Tensor::from_vector<float>({-7}), Tensor::from_vector<float>({2}));
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  EXPECT_EQ(f.item<double>(), -3.5);
}

// dtype_holds decides which fill values are errors: those the conversion would change.
TEST(DType, HoldsExactlyTheValuesItsConversionKeeps) {
  EXPECT_TRUE(cf::dtype_holds(DType::kInt32, 2147483647.0));
  EXPECT_FALSE(cf::dtype_holds(DType::kInt32, 2147483648.0));
  EXPECT_TRUE(cf::dtype_holds(DType::kInt32, -2147483648.0));
  EXPECT_FALSE(cf::dtype_holds(DType::kInt8, 128));
  EXPECT_FALSE(cf::dtype_holds(DType::kInt8, 0.5));
  EXPECT_FALSE(cf::dtype_holds(DType::kInt64, std::nan("")));
  EXPECT_FALSE(cf::dtype_holds(DType::kInt64, 9223372036854775808.0));
  EXPECT_TRUE(cf::dtype_holds(DType::kInt64, -9223372036854775808.0));
  EXPECT_FALSE(cf::dtype_holds(DType::kUInt8, -1));
  EXPECT_FALSE(cf::dtype_holds(DType::kBool, 0.5));
  EXPECT_TRUE(cf::dtype_holds(DType::kFloat16, 65504));
  EXPECT_TRUE(cf::dtype_holds(DType::kFloat16, 65519));  // rounds to 65504
  EXPECT_FALSE(cf::dtype_holds(DType::kFloat16, 65520));
  EXPECT_TRUE(cf::dtype_holds(DType::kFloat16, std::nan("")));
  EXPECT_TRUE(cf::dtype_holds(DType::kFloat32, 0.1));
  EXPECT_FALSE(cf::dtype_holds(DType::kFloat32, 1e39));
  EXPECT_TRUE(cf::dtype_holds(DType::kFloat64, 1e308));
  for (int d = 0; d < cf::kNumDTypes; ++d) {
    const auto t = static_cast<DType>(d);
    EXPECT_FALSE(cf::dtype_range_text(t).empty()) << cf::dtype_name(t);
  }
}

TEST(Tensor, PrintsLikeNumpy) {
  EXPECT_EQ(cf::to_string(Tensor::arange(6, DType::kFloat32).reshape({2, 3})),
            "tensor([[0., 1., 2.],\n        [3., 4., 5.]], shape=(2, 3), dtype=float32)");
  EXPECT_EQ(cf::to_string(Tensor::from_vector<int32_t>({1, -20, 300})),
            "tensor([  1, -20, 300], shape=(3,), dtype=int32)");
  EXPECT_EQ(cf::to_string(Tensor::from_vector<double>({0.5, -1.25})),
            "tensor([  0.5, -1.25], shape=(2,), dtype=float64)");
  EXPECT_EQ(cf::to_string(Tensor::from_vector<bool>({true, false})),
            "tensor([ True, False], shape=(2,), dtype=bool)");
  EXPECT_EQ(cf::to_string(Tensor::scalar(2, DType::kInt64)), "tensor(2, shape=(), dtype=int64)");
  EXPECT_EQ(cf::to_string(Tensor::zeros({0, 2}, DType::kFloat32)),
            "tensor([], shape=(0, 2), dtype=float32)");
  EXPECT_EQ(cf::to_string(Tensor()), "tensor(null)");
  const std::string big = cf::to_string(Tensor::arange(2000));
  EXPECT_EQ(big, "tensor([   0,    1,    2, ..., 1997, 1998, 1999], shape=(2000,), dtype=int64)");
  const std::string big2 = cf::to_string(Tensor::arange(40 * 50).reshape({40, 50}));
  EXPECT_NE(big2.find("...,\n"), std::string::npos) << big2;
  EXPECT_LT(big2.size(), 600u);
  std::ostringstream os;
  os << Tensor::from_vector<float>({1.5f});
  EXPECT_EQ(os.str(), "tensor([1.5], shape=(1,), dtype=float32)");
}

TEST(Tensor, ErrorsNameShapesAndOp) {
  const Tensor a = Tensor::zeros({2, 3}, DType::kFloat32);
  const Tensor b = Tensor::zeros({4, 3}, DType::kFloat32);
  std::string m = error_of<cf::ShapeError>([&] { (void)cf::add(a, b); });
  EXPECT_NE(m.find("add"), std::string::npos) << m;
  EXPECT_NE(m.find("(2, 3)"), std::string::npos) << m;
  EXPECT_NE(m.find("(4, 3)"), std::string::npos) << m;
  m = error_of<cf::ShapeError>([&] { (void)cf::matmul(a, a); });
  EXPECT_NE(m.find("matmul"), std::string::npos) << m;
  EXPECT_NE(m.find("(2, 3)"), std::string::npos) << m;
  m = error_of<cf::TypeError>([&] { (void)cf::neg(Tensor::zeros({1}, DType::kBool)); });
  EXPECT_NE(m.find("bool"), std::string::npos) << m;
  EXPECT_THROW((void)cf::add(a, Tensor()), cf::Error);
}

TEST(Npy, RoundTripEveryDtypeAndView) {
  for (int d = 0; d < cf::kNumDTypes; ++d) {
    const auto dt = static_cast<DType>(d);
    const Tensor t = cf::uniform({3, 4, 5}, -50, 50, 9, dt).transpose({2, 0, 1});
    const std::string path = temp_path("rt.npy");
    cf::save_npy(t, path);
    const Tensor u = cf::load_npy(path);
    EXPECT_EQ(u.dtype(), dt);
    EXPECT_EQ(u.shape(), t.shape());
    EXPECT_TRUE(u.equal_to(t)) << cf::dtype_name(dt);
    std::remove(path.c_str());
  }
  const std::string bytes = cf::serialize_npy(Tensor::zeros({2}, DType::kFloat32));
  EXPECT_EQ(bytes.size(), 128u + 8u) << "header padded to 64 bytes, as numpy does";
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
}

TEST(Npy, CorruptInputNeverOverReads) {
  const std::string good = cf::serialize_npy(Tensor::arange(10, DType::kFloat64));
  // Every prefix is either rejected with an Error or (the whole file) parsed.
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<char> copy(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_THROW((void)cf::parse_npy(copy.data(), copy.size(), "prefix"), cf::Error) << n;
  }
  EXPECT_EQ(cf::parse_npy(good.data(), good.size()).numel(), 10);
  // A header claiming more data than present.
  std::string lie = good;
  lie.replace(lie.find("(10,)"), 5, "(99,)");
  const std::string m =
      error_of<cf::Error>([&] { (void)cf::parse_npy(lie.data(), lie.size(), "lie.npy"); });
  EXPECT_NE(m.find("lie.npy"), std::string::npos) << m;
  EXPECT_NE(m.find("truncated"), std::string::npos) << m;
  EXPECT_THROW((void)cf::load_npy(temp_path("does_not_exist.npy")), cf::Error);
  EXPECT_THROW(cf::save_npy(Tensor::zeros({1}, DType::kFloat32), "/nonexistent/dir/x.npy"),
               cf::Error);
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A .npy header (format 1.0) declaring `shape_text` of int64, without data.
std::string npy_header(const std::string& shape_text) {
  const std::string dict =
      "{'descr': '<i8', 'fortran_order': False, 'shape': " + shape_text + ", }\n";
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(dict.size() & 0xFF);
  bytes += static_cast<char>(dict.size() >> 8);
  return bytes + dict;
}

// Feeds `bytes` to load_npy through a FIFO (a stream without a size) and returns its error text,
// or "" when it loaded. The writer closes its end after writing.
std::string load_through_fifo(const std::string& bytes, std::uint64_t max_bytes) {
  const std::string path = temp_path("feed.fifo");
  std::remove(path.c_str());
  EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
  std::thread writer([&] {
    const int fd = ::open(path.c_str(), O_WRONLY);
    size_t at = 0;
    while (at < bytes.size()) {
      const ssize_t w = ::write(fd, bytes.data() + at, bytes.size() - at);
      if (w <= 0) break;  // the reader stopped reading (EPIPE, SIGPIPE ignored)
      at += static_cast<size_t>(w);
    }
    ::close(fd);
  });
  std::string error;
  try {
    (void)cf::load_npy(path, max_bytes);
  } catch (const cf::Error& e) {
    error = e.what();
  }
  writer.join();
  std::remove(path.c_str());
  return error;
}

// load_npy reads the header first and then only the data it declares: a file that is not .npy
// (/dev/zero, a large text file) costs its first 8 bytes; a directory is refused by name; a file
// whose data is longer or shorter than declared is an Error naming it; the size bound is a
// LimitError before any data is allocated. (It read the whole file into memory first: /dev/zero
// took the machine's memory, then std::bad_alloc.)
TEST(Npy, LoadReadsOnlyWhatTheHeaderDeclares) {
  std::signal(SIGPIPE, SIG_IGN);
  const std::string good = cf::serialize_npy(Tensor::arange(3, DType::kInt64));
  std::string m = error_of<cf::Error>([] { (void)cf::load_npy("/dev/zero"); });
  EXPECT_NE(m.find("'/dev/zero': not a .npy file (bad magic string)"), std::string::npos) << m;
  m = error_of<cf::Error>([] { (void)cf::load_npy(testing::TempDir()); });
  EXPECT_NE(m.find("is a directory, not a .npy file"), std::string::npos) << m;

  const std::string longer = temp_path("longer.npy");
  write_file(longer, good + "extra");
  m = error_of<cf::Error>([&] { (void)cf::load_npy(longer); });
  EXPECT_NE(m.find(longer + "': 5 bytes after the data that the header declares (shape (3,) of "
                            "int64, 24 bytes)"),
            std::string::npos)
      << m;
  m = error_of<cf::Error>([&] { (void)cf::parse_npy((good + "x").data(), good.size() + 1, "m"); });
  EXPECT_NE(m.find("'m': 1 bytes after the data"), std::string::npos) << m;
  const std::string shorter = temp_path("shorter.npy");
  write_file(shorter, good.substr(0, good.size() - 1));
  m = error_of<cf::Error>([&] { (void)cf::load_npy(shorter); });
  EXPECT_NE(m.find(shorter + "': truncated data: shape (3,) of int64 needs 24 bytes, 23 present"),
            std::string::npos)
      << m;
  // The bound: the header's promise decides, before the data is read.
  const std::string ok = temp_path("ok.npy");
  write_file(ok, good);
  EXPECT_EQ(cf::load_npy(ok, good.size()).numel(), 3);
  try {
    (void)cf::load_npy(ok, good.size() - 1);
    ADD_FAILURE() << "a file past max_bytes was read";
  } catch (const cf::LimitError& e) {
    EXPECT_EQ(e.limit(), "max_bytes");
    EXPECT_NE(
        std::string(e.what()).find(ok + ": the .npy file declares " + std::to_string(good.size()) +
                                   " bytes (header and data), more than the limit of " +
                                   std::to_string(good.size() - 1) + " bytes"),
        std::string::npos)
        << e.what();
  }
  for (const std::string& path : {longer, shorter, ok}) std::remove(path.c_str());

  // Streams: no size to check up front.
  EXPECT_EQ(load_through_fifo(good, cf::kDefaultMaxNpyBytes), "");
  m = load_through_fifo(good + "more", cf::kDefaultMaxNpyBytes);
  EXPECT_NE(m.find("more bytes after the data that the header declares"), std::string::npos) << m;
  m = load_through_fifo(good.substr(0, good.size() - 8), cf::kDefaultMaxNpyBytes);
  EXPECT_NE(m.find("truncated data: shape (3,) of int64 needs 24 bytes, 16 present"),
            std::string::npos)
      << m;
  // A header promising 8 TiB on a stream: refused by the bound, nothing allocated.
  m = load_through_fifo(npy_header("(1099511627776,)") + std::string(4096, '\0'),
                        cf::kDefaultMaxNpyBytes);
  EXPECT_NE(m.find("declares 8796093022288 bytes (header and data), more than the limit of "
                   "4294967296 bytes (max_bytes; `chanflow` sets it with --max-feed-size)"),
            std::string::npos)
      << m;
  m = load_through_fifo(std::string(1 << 16, 'x'), cf::kDefaultMaxNpyBytes);
  EXPECT_NE(m.find("not a .npy file (bad magic string)"), std::string::npos) << m;
}

// Regression (found by the .npy fuzzer): an empty Fortran-order array of a huge shape. Its
// transposed strides, scaled to bytes, overflowed int64 inside the copy kernel (UBSan).
TEST(Npy, EmptyFortranArrayOfHugeShape) {
  const std::string header =
      "{'descr': '<f8', 'fortran_order': True, 'shape': (54, 2203, 22222222222222, 0), }";
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() + 1);
  bytes += '\0';
  bytes += header + "\n";
  const Tensor t = cf::parse_npy(bytes.data(), bytes.size(), "empty_fortran.npy");
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.shape(), (cf::Shape{54, 2203, 22222222222222, 0}));
  const Tensor big = Tensor::empty({0, 22222222222222, 2203, 54}, DType::kFloat64).transpose();
  EXPECT_EQ(big.contiguous().numel(), 0) << "copying an empty view never scales its strides";
  EXPECT_EQ(cf::add(big, big).numel(), 0);
}

namespace {
struct Producer {
  std::vector<float> buffer;
  int64_t shape[2] = {2, 3};
  int* deletes;
  DLManagedTensor managed{};
};
void producer_deleter(DLManagedTensor* m) {
  auto* p = static_cast<Producer*>(m->manager_ctx);
  ++*p->deletes;
  delete p;
}
DLManagedTensor* make_producer(int* deletes) {
  auto* p = new Producer{{1, 2, 3, 4, 5, 6}, {2, 3}, deletes, {}};
  p->managed.dl_tensor.data = p->buffer.data();
  p->managed.dl_tensor.device = {kDLCPU, 0};
  p->managed.dl_tensor.ndim = 2;
  p->managed.dl_tensor.dtype = {kDLFloat, 32, 1};
  p->managed.dl_tensor.shape = p->shape;
  p->managed.dl_tensor.strides = nullptr;
  p->managed.manager_ctx = p;
  p->managed.deleter = &producer_deleter;
  return &p->managed;
}
}  // namespace

TEST(DLPack, ImportKeepsPointerAndDeletesOnce) {
  int deletes = 0;
  DLManagedTensor* m = make_producer(&deletes);
  void* data = m->dl_tensor.data;
  {
    Tensor t = cf::from_dlpack(m);
    EXPECT_EQ(t->raw_data(), data) << "zero copy";
    EXPECT_EQ(t.at<float>({1, 2}), 6.0f);
    Tensor view = t.transpose();
    Tensor sum = cf::sum(view, {0});
    t = Tensor();
    EXPECT_EQ(deletes, 0) << "a view still holds the storage";
    EXPECT_EQ(view.at<float>({2, 1}), 6.0f);
    EXPECT_EQ(sum.at<float>({1}), 15.0f);
  }
  EXPECT_EQ(deletes, 1);
}

TEST(DLPack, FailedImportDoesNotTakeOwnership) {
  int deletes = 0;
  DLManagedTensor* m = make_producer(&deletes);
  m->dl_tensor.device.device_type = kDLCUDA;
  EXPECT_THROW((void)cf::from_dlpack(m), cf::TypeError);
  m->dl_tensor.device.device_type = kDLCPU;
  m->dl_tensor.dtype = {kDLFloat, 32, 4};
  EXPECT_THROW((void)cf::from_dlpack(m), cf::TypeError);
  m->dl_tensor.dtype = {kDLUInt, 16, 1};
  EXPECT_THROW((void)cf::from_dlpack(m), cf::TypeError);
  EXPECT_EQ(deletes, 0);
  m->deleter(m);
  EXPECT_EQ(deletes, 1);
  EXPECT_THROW((void)cf::from_dlpack(nullptr), cf::Error);
}

// A producer's shape, strides and byte_offset are not trusted: a span past int64 (the extent
// (shape - 1) * stride summed, times the element size, plus the offset) was signed overflow (UB)
// and a storage size that lied. Each is a ShapeError (negative extents too; negative strides are
// an Error), and a refused import leaves the tensor to its producer.
TEST(DLPack, ShapesAndStridesThatOverflowAreRefused) {
  struct Case {
    std::vector<int64_t> shape;
    std::vector<int64_t> strides;  // empty: NULL (C order)
    uint64_t byte_offset;
    const char* want;
  };
  const Case cases[] = {
      {{2, 3}, {INT64_MAX, 1}, 0, "spans more bytes than int64 can count"},  // 1 * INT64_MAX * 4
      {{3, 3}, {INT64_MAX / 2 + 1, 1}, 0, "spans more bytes than int64 can count"},  // 2 * stride
      {{1LL << 40, 1LL << 40}, {}, 0, "has more elements than int64 can count"},
      {{1LL << 31, 1LL << 31}, {}, 0, "spans more bytes than int64 can count"},  // 2^62 * 4
      {{2, 3}, {1LL << 61, 1}, 0, "spans more bytes than int64 can count"},  // 2^61 elements * 4
      {{2, 3}, {3, 1}, uint64_t{1} << 63, "spans more bytes than int64 can count"},
      {{2, 3}, {3, 1}, uint64_t(INT64_MAX) - 8, "spans more bytes than int64 can count"},
      {{2, -3}, {}, 0, "has a negative extent"},
  };
  for (const Case& c : cases) {
    int deletes = 0;
    DLManagedTensor* m = make_producer(&deletes);
    std::vector<int64_t> shape = c.shape, strides = c.strides;
    m->dl_tensor.ndim = static_cast<int32_t>(shape.size());
    m->dl_tensor.shape = shape.data();
    m->dl_tensor.strides = strides.empty() ? nullptr : strides.data();
    m->dl_tensor.byte_offset = c.byte_offset;
    const std::string what = error_of<cf::ShapeError>([&] { (void)cf::from_dlpack(m); });
    EXPECT_NE(what.find(c.want), std::string::npos) << what;
    EXPECT_EQ(deletes, 0) << what;
    m->deleter(m);
    EXPECT_EQ(deletes, 1);
  }
  // The largest span that fits is accepted (never read: the tensor only records it).
  int deletes = 0;
  DLManagedTensor* m = make_producer(&deletes);
  std::vector<int64_t> strides = {(INT64_MAX / 4 - 2) / 2 / 4 * 4, 1};
  m->dl_tensor.strides = strides.data();
  m->dl_tensor.shape[0] = 3;  // extent 2 * stride + 3 elements of 4 bytes: below 2^63
  {
    const Tensor t = cf::from_dlpack(m);
    EXPECT_EQ(t.strides()[0], strides[0]);
  }
  EXPECT_EQ(deletes, 1);
}

TEST(DLPack, ExportRoundTripKeepsPointerAndFreesOnce) {
  const int64_t live_before = cf::live_object_count();
  {
    Tensor a = cf::uniform({3, 4}, 0, 1, 3).transpose();
    const void* data = a->raw_data();
    DLManagedTensor* m = cf::to_dlpack(a);
    EXPECT_EQ(static_cast<char*>(m->dl_tensor.data) + m->dl_tensor.byte_offset, data);
    EXPECT_EQ(m->dl_tensor.strides[0], 1);
    EXPECT_EQ(m->dl_tensor.strides[1], 4);
    EXPECT_TRUE(a.is_shared()) << "the export holds a reference";
    Tensor b = cf::from_dlpack(m);  // consumer takes ownership of m
    EXPECT_EQ(b->raw_data(), data);
    EXPECT_TRUE(b.equal_to(a));
    a = Tensor();
    EXPECT_EQ(b.at<float>({1, 2}), b.at<float>({1, 2}));  // storage still alive through m
  }
  if (live_before >= 0) {
    EXPECT_EQ(cf::live_object_count(), live_before);
  }
  // An export that is deleted without import releases its reference.
  Tensor c = Tensor::ones({2}, DType::kInt16);
  DLManagedTensor* m = cf::to_dlpack(c);
  EXPECT_EQ(c.use_count(), 2);
  m->deleter(m);
  EXPECT_EQ(c.use_count(), 1);
}

TEST(Random, ReproducibleAndWellDistributed) {
  const Tensor a = cf::uniform({1000}, -1, 3, 1234, DType::kFloat64);
  const Tensor b = cf::uniform({1000}, -1, 3, 1234, DType::kFloat64);
  const Tensor c = cf::uniform({1000}, -1, 3, 1235, DType::kFloat64);
  EXPECT_TRUE(a.equal_to(b));
  EXPECT_FALSE(a.equal_to(c));
  EXPECT_GE(cf::min(a).item<double>(), -1.0);
  EXPECT_LT(cf::max(a).item<double>(), 3.0);
  EXPECT_NEAR(cf::mean(a).item<double>(), 1.0, 0.15);
  // The exact algorithm: (mt19937_64 >> 11) * 2^-53 scaled to [low, high).
  std::mt19937_64 g(1234);
  const double u0 = static_cast<double>(g() >> 11) * 0x1.0p-53;
  EXPECT_EQ(a.at<double>({0}), -1.0 + 4.0 * u0);
  const Tensor n = cf::normal({20000}, 2.0, 3.0, 77, DType::kFloat64);
  EXPECT_TRUE(n.equal_to(cf::normal({20000}, 2.0, 3.0, 77, DType::kFloat64)));
  const double mu = cf::mean(n).item<double>();
  const double var = cf::mean(cf::mul(cf::sub(n, Tensor::scalar(mu, DType::kFloat64)),
                                      cf::sub(n, Tensor::scalar(mu, DType::kFloat64))))
                         .item<double>();
  EXPECT_NEAR(mu, 2.0, 0.1);
  EXPECT_NEAR(std::sqrt(var), 3.0, 0.1);
  EXPECT_THROW(cf::uniform({2}, 1, 0, 1), cf::Error);
  EXPECT_THROW(cf::normal({2}, 0, -1, 1), cf::Error);
}

TEST(Blas, SingleThreadedByDefault) {
  if (std::getenv("CHANFLOW_BLAS_THREADS") == nullptr &&
      std::getenv("OPENBLAS_NUM_THREADS") == nullptr) {
    EXPECT_EQ(cf::blas_threads(), 1);
  }
  EXPECT_THROW(cf::set_blas_threads(0), cf::Error);
}

TEST(Kernels, ChunkCallbackRunsBetweenChunksAndCanCancel) {
  const Tensor a = cf::uniform({1000, 10}, 0, 1, 5);
  const Tensor b = cf::uniform({10}, 0, 1, 6);
  int calls = 0;
  cf::KernelOptions opts;
  opts.chunk_elements = 1000;
  opts.between_chunks = [&] { ++calls; };
  const Tensor chunked = cf::add(a, b, opts);
  EXPECT_EQ(calls, 9) << "10000 elements in chunks of 1000";
  EXPECT_TRUE(chunked.equal_to(cf::add(a, b)));
  calls = 0;
  const Tensor s = cf::sum(a, {0}, false, opts);
  EXPECT_EQ(calls, 9);
  EXPECT_LT(cf::max(cf::abs(cf::sub(s, cf::sum(a, {0})))).item<float>(), 1e-3f);
  calls = 0;
  const Tensor mm = cf::matmul(a, cf::uniform({10, 20}, 0, 1, 7), opts);  // 200 MACs per row
  EXPECT_EQ(calls, 199) << "5 rows per chunk";
  EXPECT_EQ(mm.shape(), cf::Shape({1000, 20}));
  // Cancellation: the callback throws, the kernel stops, nothing leaks.
  calls = 0;
  opts.between_chunks = [&] {
    if (++calls == 3) throw cf::CanceledError("canceled");
  };
  EXPECT_THROW((void)cf::exp(a, opts), cf::CanceledError);
  EXPECT_EQ(calls, 3);
}

TEST(Kernels, OutputBufferIsReusedWhenUnique) {
  const Tensor a = cf::uniform({64}, 0, 1, 1);
  cf::KernelOptions opts;
  opts.out = Tensor::empty({64}, DType::kFloat32);
  const void* buf = opts.out->raw_data();
  Tensor r = cf::mul(a, a, opts);
  EXPECT_EQ(r->raw_data(), buf);
  EXPECT_TRUE(r.equal_to(cf::mul(a, a)));
  // A shared `out` is never written: the result goes to fresh memory.
  Tensor keep = opts.out;
  const Tensor before = keep.clone();
  Tensor r2 = cf::add(a, a, opts);
  EXPECT_NE(r2->raw_data(), buf);
  EXPECT_TRUE(keep.equal_to(before));
}

// softplus = log(1 + e^x) against the naive formula in long double (whose range holds e^800 and
// whose precision keeps 1 + e^-50): no overflow for large x, e^x's relative precision for very
// negative x (where 1 + e^x rounds to 1 in double), infinities and NaN as the limits say.
TEST(Kernels, SoftplusIsStableForLargeMagnitudes) {
  const std::vector<double> xs = {-800, -700, -50, -30, -5, -1e-3, 0, 1e-3, 2, 30, 50, 700, 800};
  const Tensor r64 = cf::softplus(Tensor::from_vector<double>(xs));
  ASSERT_EQ(r64.dtype(), DType::kFloat64);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const long double x = xs[i];
    const auto want = static_cast<double>(std::log1p(std::exp(x)));
    const double got = r64.data<double>()[i];
    EXPECT_NEAR(got, want, 1e-15 * std::abs(want)) << "x = " << xs[i];
    // Positive wherever the true value is a double (e^-800 is not), where naive 1 + e^x gives 0.
    if (want > 0) {
      EXPECT_GT(got, 0.0) << "x = " << xs[i];
    }
  }
  const std::vector<float> fs = {-80.0F, -20.0F, -1.0F, 0.0F, 1.0F, 20.0F, 80.0F, 100.0F};
  const Tensor r32 = cf::softplus(Tensor::from_vector<float>(fs));
  ASSERT_EQ(r32.dtype(), DType::kFloat32);
  for (std::size_t i = 0; i < fs.size(); ++i) {
    const long double x = fs[i];
    const auto want = static_cast<float>(std::log1p(std::exp(x)));
    EXPECT_NEAR(r32.data<float>()[i], want, 2e-7F * std::abs(want)) << "x = " << fs[i];
  }
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor edge = cf::softplus(Tensor::from_vector<double>({inf, -inf, std::nan("")}));
  EXPECT_EQ(edge.data<double>()[0], inf);
  EXPECT_EQ(edge.data<double>()[1], 0.0);
  EXPECT_TRUE(std::isnan(edge.data<double>()[2]));
}
