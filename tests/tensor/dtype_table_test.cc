// The one dtype list (CHANFLOW_DTYPES): every row round-trips through names, storage types,
// .npy files and DLPack, with NumPy's and DLPack's own spellings as the oracle.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "chanflow/core/error.h"
#include "chanflow/tensor/detail/dispatch.h"
#include "chanflow/tensor/npy.h"
#include "chanflow/tensor/tensor.h"

namespace cf = chanflow;
using cf::DType;

namespace {

struct Expected {
  DType dtype;
  const char* npy_descr;  // what NumPy writes: np.dtype(name).str
  uint8_t dl_code;        // DLPack: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBool 6
  int bits;
};
// NumPy's and DLPack's spellings, written out independently of the table.
constexpr Expected kExpected[] = {
    {DType::kBool, "|b1", 6, 8},     {DType::kInt8, "|i1", 0, 8},
    {DType::kInt16, "<i2", 0, 16},   {DType::kInt32, "<i4", 0, 32},
    {DType::kInt64, "<i8", 0, 64},   {DType::kUInt8, "|u1", 1, 8},
    {DType::kFloat16, "<f2", 2, 16}, {DType::kFloat32, "<f4", 2, 32},
    {DType::kFloat64, "<f8", 2, 64},
};
static_assert(std::size(kExpected) == cf::kNumDTypes);

TEST(DTypeTable, RowsAreConsistent) {
  for (int i = 0; i < cf::kNumDTypes; ++i) {
    const auto d = static_cast<DType>(i);
    const cf::DTypeInfo& info = cf::dtype_info(d);
    EXPECT_EQ(info.dtype, d);
    EXPECT_EQ(cf::dtype_from_name(cf::dtype_name(d)), d);
    EXPECT_EQ(cf::dtype_from_kind(info.kind, info.size), d);
    cf::detail::dispatch_dtype(d, [&](auto tag) {
      using T = typename decltype(tag)::type;
      EXPECT_EQ(cf::dtype_size(d), static_cast<int64_t>(sizeof(T))) << cf::dtype_name(d);
      EXPECT_EQ(cf::dtype_of<T>(), d);
    });
  }
  EXPECT_FALSE(cf::dtype_from_kind('u', 2).has_value());
  EXPECT_FALSE(cf::dtype_from_kind('c', 8).has_value());
  EXPECT_THROW(cf::dtype_from_name("bfloat16"), cf::TypeError);
}

TEST(DTypeTable, NpyRoundTrips) {
  for (const Expected& e : kExpected) {
    const cf::Tensor t = cf::Tensor::full({2, 3}, 1.0, e.dtype);
    const std::string bytes = cf::serialize_npy(t);
    EXPECT_NE(bytes.find(std::string("'descr': '") + e.npy_descr + "'"), std::string::npos)
        << e.npy_descr;
    const cf::Tensor u = cf::parse_npy(bytes.data(), bytes.size(), "t.npy");
    ASSERT_EQ(u.dtype(), e.dtype) << e.npy_descr;
    ASSERT_EQ(u.shape(), t.shape());
    EXPECT_EQ(std::memcmp(u->raw_data(), t->raw_data(), static_cast<size_t>(t.nbytes())), 0);
  }
  // A descr outside the table is a TypeError naming it.
  std::string bytes = cf::serialize_npy(cf::Tensor::zeros({1}, DType::kInt16));
  bytes.replace(bytes.find("<i2"), 3, "<u2");
  try {
    (void)cf::parse_npy(bytes.data(), bytes.size(), "u2.npy");
    FAIL() << "no error";
  } catch (const cf::TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("'<u2' is not supported"), std::string::npos) << e.what();
  }
}

TEST(DTypeTable, DLPackRoundTrips) {
  for (const Expected& e : kExpected) {
    const DLDataType dl = cf::to_dl_dtype(e.dtype);
    EXPECT_EQ(dl.code, e.dl_code) << cf::dtype_name(e.dtype);
    EXPECT_EQ(dl.bits, e.bits) << cf::dtype_name(e.dtype);
    EXPECT_EQ(dl.lanes, 1);
    EXPECT_EQ(cf::from_dl_dtype(dl), e.dtype);
  }
  EXPECT_THROW(cf::from_dl_dtype(DLDataType{kDLUInt, 16, 1}), cf::TypeError);
  EXPECT_THROW(cf::from_dl_dtype(DLDataType{kDLFloat, 32, 4}), cf::TypeError);
}

}  // namespace
