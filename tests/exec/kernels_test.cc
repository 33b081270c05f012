// Compute kernels run through programs, and their shape/dtype inference.
#include <gtest/gtest.h>

#include "chanflow/core/error.h"
#include "chanflow/exec.h"
#include "chanflow/ir/builder.h"

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
