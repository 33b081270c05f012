// Compute kernels run through programs, and their shape/dtype inference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "chanflow/core/error.h"
#include "chanflow/exec.h"
#include "chanflow/ir/builder.h"
#include "chanflow/tensor/ops.h"

namespace cf = chanflow;
using cf::DType;
using cf::Var;

namespace {

TEST(Kernels, ElementwiseCompareAndLogic) {
  cf::ProgramBuilder b;
  Var x = b.fill_constant({2, 3}, DType::kFloat32, 6);
  Var y = b.fill_constant({3}, DType::kFloat32, 2);
  Var add = b.elementwise_add(x, y), sub = b.elementwise_sub(x, y), mul = b.elementwise_mul(x, y),
      div = b.elementwise_div(x, y), mx = b.elementwise_max(x, y), mn = b.elementwise_min(x, y);
  Var lt = b.less_than(y, x), eq = b.equal(x, x), ne = b.not_equal(x, x), le = b.less_equal(x, y),
      gt = b.greater_than(x, y);
  Var land = b.logical_and(lt, gt), lor = b.logical_or(ne, le), lnot = b.logical_not(ne);
  cf::Executor ex;
  auto o =
      ex.run(b.build(), {},
             {add.name(), sub.name(), mul.name(), div.name(), mx.name(), mn.name(), lt.name(),
              eq.name(), ne.name(), le.name(), gt.name(), land.name(), lor.name(), lnot.name()});
  EXPECT_EQ(o[add.name()].shape(), (cf::Shape{2, 3}));
  EXPECT_EQ(o[add.name()].at<float>({1, 2}), 8);
  EXPECT_EQ(o[sub.name()].at<float>({0, 0}), 4);
  EXPECT_EQ(o[mul.name()].at<float>({0, 1}), 12);
  EXPECT_EQ(o[div.name()].at<float>({1, 1}), 3);
  EXPECT_EQ(o[mx.name()].at<float>({0, 0}), 6);
  EXPECT_EQ(o[mn.name()].at<float>({0, 0}), 2);
  EXPECT_TRUE(o[lt.name()].at<bool>({0, 0}));
  EXPECT_TRUE(o[eq.name()].at<bool>({1, 2}));
  EXPECT_FALSE(o[ne.name()].at<bool>({1, 2}));
  EXPECT_FALSE(o[le.name()].at<bool>({0, 0}));
  EXPECT_TRUE(o[gt.name()].at<bool>({0, 0}));
  EXPECT_TRUE(o[land.name()].at<bool>({0, 0}));
  EXPECT_FALSE(o[lor.name()].at<bool>({0, 0}));
  EXPECT_TRUE(o[lnot.name()].at<bool>({0, 0}));
}

TEST(Kernels, MatmulActivationsAndReductions) {
  cf::ProgramBuilder b;
  Var a = b.fill_constant({2, 3}, DType::kFloat64, 1);
  Var c = b.fill_constant({2, 3}, DType::kFloat64, 2);
  Var m = b.matmul(a, c, false, true);  // (2,3) @ (3,2) -> all 6
  Var s = b.reduce_sum(m, {1});
  Var mean = b.reduce_mean(m, {0, 1});
  Var sm = b.softmax(a);
  Var r = b.relu(b.scale(a, -1.0));
  Var sg = b.sigmoid(b.fill_constant({1}, DType::kFloat64, 0));
  Var th = b.tanh(b.fill_constant({1}, DType::kFloat64, 0));
  cf::Executor ex;
  auto o = ex.run(b.build(), {},
                  {m.name(), s.name(), mean.name(), sm.name(), r.name(), sg.name(), th.name()});
  EXPECT_EQ(o[m.name()].shape(), (cf::Shape{2, 2}));
  EXPECT_EQ(o[m.name()].at<double>({1, 0}), 6);
  EXPECT_EQ(o[s.name()].shape(), (cf::Shape{2}));
  EXPECT_EQ(o[s.name()].at<double>({0}), 12);
  EXPECT_EQ(o[mean.name()].item<double>(), 6);
  EXPECT_NEAR(o[sm.name()].at<double>({0, 1}), 1.0 / 3, 1e-12);
  EXPECT_EQ(o[r.name()].at<double>({0, 0}), 0);
  EXPECT_EQ(o[sg.name()].item<double>(), 0.5);
  EXPECT_EQ(o[th.name()].item<double>(), 0);
}

// softplus = log(1 + exp(x)) keeps full relative precision where the naive formula overflows
// (x = 1000: inf) or rounds to 0 (x = -40: 1 + 4e-18 is 1); checked against long double.
TEST(Kernels, SoftplusIsStableForLargeMagnitudes) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> xs = {-1000, -745, -40, -1,   -1e-10, 0,   1e-10,
                                  1,     20,   40,  1000, inf,    -inf};
  const auto n = static_cast<int64_t>(xs.size());
  cf::ProgramBuilder b;
  b.var("x", DType::kFloat64, {n});
  b.var("x32", DType::kFloat32, {n});
  b.var("i", DType::kInt32, {3});
  b.var("out", DType::kFloat64, {n});
  b.var("out32", DType::kFloat32, {n});
  b.var("outi", DType::kFloat64, {3});
  b.append_op("softplus", {{"X", {"x"}}}, {{"Out", {"out"}}});
  b.append_op("softplus", {{"X", {"x32"}}}, {{"Out", {"out32"}}});
  b.append_op("softplus", {{"X", {"i"}}}, {{"Out", {"outi"}}});
  std::vector<float> xs32(xs.begin(), xs.end());
  cf::Executor ex;
  auto o = ex.run(b.build(),
                  {{"x", cf::Tensor::from_vector<double>(xs)},
                   {"x32", cf::Tensor::from_vector<float>(xs32)},
                   {"i", cf::Tensor::from_vector<int32_t>({-50, 0, 50})}},
                  {"out", "out32", "outi"});
  auto reference = [](long double x) -> long double {
    return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  };
  for (int64_t k = 0; k < n; ++k) {
    const long double want = reference(xs[static_cast<size_t>(k)]);
    const double got = o["out"].at<double>({k});
    const float got32 = o["out32"].at<float>({k});
    if (std::isinf(static_cast<double>(want))) {
      EXPECT_EQ(got, static_cast<double>(want)) << xs[static_cast<size_t>(k)];
      EXPECT_EQ(got32, static_cast<float>(want)) << xs[static_cast<size_t>(k)];
      continue;
    }
    // Relative precision, down to the smallest subnormal (x = -745 rounds to it).
    EXPECT_NEAR(got, static_cast<double>(want),
                std::max(4e-16L * std::fabs(want),
                         static_cast<long double>(std::numeric_limits<double>::denorm_min())))
        << "x = " << xs[static_cast<size_t>(k)];
    const long double want32 = reference(xs32[static_cast<size_t>(k)]);
    EXPECT_NEAR(got32, static_cast<double>(want32), std::max(2e-7L * std::fabs(want32), 1e-45L))
        << "x = " << xs32[static_cast<size_t>(k)];
  }
  EXPECT_GT(o["out"].at<double>({2}), 0.0);  // -40: 4.2e-18, not 0
  EXPECT_EQ(o["outi"].dtype(), DType::kFloat64);
  EXPECT_NEAR(o["outi"].at<double>({1}), std::log(2.0), 1e-15);
  EXPECT_NEAR(o["outi"].at<double>({2}), 50.0, 1e-15);
  const cf::OpDesc sp = cf::OpDesc::make("softplus", {{"X", {"a"}}}, {{"Out", {"b"}}});
  EXPECT_EQ(cf::infer_op(sp, {{DType::kFloat32, {2, 3}}})[0].dtype, DType::kFloat32);
  EXPECT_EQ(cf::infer_op(sp, {{DType::kInt64, {2}}})[0].dtype, DType::kFloat64);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(cf::softplus(cf::Tensor::from_vector<float>({nan})).at<float>({0})));
}

TEST(Kernels, ShapeAndTypeOps) {
  cf::ProgramBuilder b;
  Var x = b.fill_constant({2, 3}, DType::kInt32, 7);
  Var rs = b.reshape(x, {3, -1});
  Var tr = b.transpose(x, {1, 0});
  Var cs = b.cast(x, DType::kFloat64);
  Var sc = b.scale(cs, 2.0, 1.0);
  Var i = b.fill_constant({1}, DType::kInt64, 41);
  b.increment(i, 1.0, i);
  b.print(i, "i is");
  cf::Executor ex;
  auto o = ex.run(b.build(), {}, {rs.name(), tr.name(), cs.name(), sc.name(), i.name()});
  EXPECT_EQ(o[rs.name()].shape(), (cf::Shape{3, 2}));
  EXPECT_EQ(o[tr.name()].shape(), (cf::Shape{3, 2}));
  EXPECT_EQ(o[cs.name()].dtype(), DType::kFloat64);
  EXPECT_EQ(o[sc.name()].at<double>({1, 2}), 15);
  EXPECT_EQ(o[i.name()].item<int64_t>(), 42);
}

TEST(Kernels, KernelErrorsArePositioned) {
  cf::ProgramBuilder b;
  Var a = b.fill_constant({2, 3}, DType::kFloat32, 1);
  Var c = b.fill_constant({4, 5}, DType::kFloat32, 1);
  b.matmul(a, c);
  cf::Executor ex;
  try {
    ex.run(b.build());
    FAIL();
  } catch (const cf::ProgramError& e) {
    EXPECT_EQ(e.op_type(), "matmul");
    EXPECT_EQ(e.op_index(), 2);
  }
}

TEST(OpInference, DtypesAndShapes) {
  using cf::OpDesc;
  auto add = OpDesc::make("elementwise_add", {{"X", {"a"}}, {"Y", {"b"}}}, {{"Out", {"c"}}});
  auto o = cf::infer_op(add, {{DType::kFloat32, {2, 3}}, {DType::kFloat64, {3}}});
  EXPECT_EQ(o[0].dtype, DType::kFloat64);
  EXPECT_EQ(o[0].shape, (std::vector<int64_t>{2, 3}));
  auto lt = OpDesc::make("less_than", {{"X", {"a"}}, {"Y", {"b"}}}, {{"Out", {"c"}}});
  EXPECT_EQ(cf::infer_op(lt, {{DType::kInt64, {1}}, {DType::kInt64, {1}}})[0].dtype, DType::kBool);
  auto mm = OpDesc::make("matmul", {{"X", {"a"}}, {"Y", {"b"}}}, {{"Out", {"c"}}});
  EXPECT_EQ(cf::infer_op(mm, {{DType::kFloat32, {5, 2, 3}}, {DType::kFloat32, {3, 4}}})[0].shape,
            (std::vector<int64_t>{5, 2, 4}));
  EXPECT_THROW(cf::infer_op(mm, {{DType::kFloat32, {2, 3}}, {DType::kFloat32, {4, 5}}}),
               cf::ShapeError);
  auto rs = OpDesc::make("reshape", {{"X", {"a"}}}, {{"Out", {"c"}}},
                         {{"shape", cf::Attr::ints({-1, 2})}});
  EXPECT_EQ(cf::infer_op(rs, {{DType::kInt8, {3, 4}}})[0].shape, (std::vector<int64_t>{6, 2}));
  auto red = OpDesc::make("reduce_mean", {{"X", {"a"}}}, {{"Out", {"c"}}},
                          {{"dim", cf::Attr::ints({1})}, {"keep_dim", cf::Attr::b(true)}});
  auto r = cf::infer_op(red, {{DType::kInt32, {3, 4}}});
  EXPECT_EQ(r[0].dtype, DType::kFloat64);
  EXPECT_EQ(r[0].shape, (std::vector<int64_t>{3, 1}));
  auto go = OpDesc::make("go", {}, {}, {{"sub_block", cf::Attr::block(1)}});
  EXPECT_THROW(cf::infer_op(go, {}), cf::Error);
  EXPECT_TRUE(cf::has_kernel("select"));
  EXPECT_TRUE(cf::has_kernel("channel_recv"));
}

}  // namespace
