// The op table: every exec kernel has a schema and every built-in schema a kernel (unless marked
// kernel_elsewhere), kernels read only attributes their schema declares with its types, and an
// attribute of the wrong type is a typed error naming the op and the attribute.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "chanflow/core/error.h"
#include "chanflow/exec.h"
#include "chanflow/exec/channels.h"
#include "chanflow/ir/builder.h"
#include "chanflow/ir/op_schema.h"

namespace cf = chanflow;
using cf::DType;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A registry with the built-in schemas, `replace` swapped in for the one of its type (or, when it
// has no parameters and no attributes, left out).
std::unique_ptr<cf::OpSchemaRegistry> builtin_with(const cf::OpSchema& replace) {
  auto builtin = cf::OpSchemaRegistry::with_builtin_ops();
  auto reg = std::make_unique<cf::OpSchemaRegistry>();
  const bool drop =
      replace.inputs().empty() && replace.outputs().empty() && replace.attrs().empty();
  for (const std::string& type : builtin->op_types()) {
    if (type != replace.type()) {
      reg->add(*builtin->find(type));
    } else if (!drop) {
      reg->add(replace);
    }
  }
  return reg;
}

TEST(OpTable, KernelsAndSchemasMatch) {
  auto reg = cf::OpSchemaRegistry::with_builtin_ops();
  std::set<std::string> schemas;
  for (const std::string& type : reg->op_types()) {
    if (reg->find(type)->kernel_location().empty()) schemas.insert(type);
  }
  const std::vector<std::string> kernels = cf::exec_kernel_types();
  EXPECT_EQ(std::set<std::string>(kernels.begin(), kernels.end()), schemas);
  EXPECT_EQ(std::set<std::string>(kernels.begin(), kernels.end()).size(), kernels.size())
      << "an op has two kernel rows";
  cf::register_exec_kernels(*reg);
  for (const std::string& type : kernels) EXPECT_TRUE(cf::has_kernel(type, *reg)) << type;
}

TEST(OpTable, KernelWithoutSchemaIsAnErrorAndAttachesNothing) {
  auto reg = builtin_with(cf::OpSchema("matmul"));  // no matmul schema
  try {
    cf::register_exec_kernels(*reg);
    FAIL() << "no error";
  } catch (const cf::Error& e) {
    EXPECT_TRUE(contains(e.what(), "'matmul'")) << e.what();
    EXPECT_TRUE(contains(e.what(), "no schema")) << e.what();
  }
  EXPECT_FALSE(cf::has_kernel("relu", *reg));
}

TEST(OpTable, KernelReadingAnUndeclaredOrMistypedAttributeIsAnError) {
  auto mistyped = builtin_with(cf::OpSchema("matmul")
                                   .input("X")
                                   .input("Y")
                                   .output("Out")
                                   .attr("transpose_X", cf::AttrType::kBoolean)
                                   .attr("transpose_Y", cf::AttrType::kBoolean)
                                   .attr("alpha", cf::AttrType::kString));
  try {
    cf::register_exec_kernels(*mistyped);
    FAIL() << "no error";
  } catch (const cf::Error& e) {
    EXPECT_TRUE(contains(e.what(), "'matmul'")) << e.what();
    EXPECT_TRUE(contains(e.what(), "'alpha' as FLOAT, its schema declares STRING")) << e.what();
  }
  auto undeclared = builtin_with(cf::OpSchema("softmax").input("X").output("Out"));
  try {
    cf::register_exec_kernels(*undeclared);
    FAIL() << "no error";
  } catch (const cf::Error& e) {
    EXPECT_TRUE(contains(e.what(), "'softmax' reads attribute 'axis'")) << e.what();
  }
}

TEST(OpTable, InferenceOfAMistypedAttributeNamesOpAndAttribute) {
  const cf::OpDesc mm = cf::OpDesc::make("matmul", {{"X", {"a"}}, {"Y", {"b"}}}, {{"Out", {"c"}}},
                                         {{"alpha", cf::Attr::s("2")}});
  try {
    cf::infer_op(mm, {{DType::kFloat32, {2, 3}}, {DType::kFloat32, {3, 4}}});
    FAIL() << "no error";
  } catch (const cf::TypeError& e) {
    EXPECT_TRUE(contains(e.what(), "matmul: attribute 'alpha' is STRING, the kernel reads FLOAT"))
        << e.what();
  }
  // Omitted attributes are the schema's defaults: reduce_sum's dim [0].
  const cf::OpDesc red = cf::OpDesc::make("reduce_sum", {{"X", {"a"}}}, {{"Out", {"c"}}});
  EXPECT_EQ(cf::infer_op(red, {{DType::kFloat32, {3, 4}}})[0].shape, (std::vector<int64_t>{4}));
}

// A channel's element type is carried as values (kind, dtype), and binding a channel to a program
// variable compares those, not the key's text.
TEST(ChannelElem, CarriedAsValues) {
  using Kind = cf::ChannelElem::Kind;
  const cf::ChannelElem i64 = cf::channel_elem(*cf::make_tensor_channel(DType::kInt64).get());
  EXPECT_EQ(i64.kind, Kind::kTensor);
  EXPECT_EQ(i64.dtype, DType::kInt64);
  EXPECT_EQ(cf::channel_elem(*cf::make_channel_of("Tensor(float16)").get()).dtype, DType::kFloat16);
  const cf::ChannelElem any = cf::channel_elem(*cf::Channel::make<cf::TensorObj>().get());
  EXPECT_EQ(any.kind, Kind::kTensor);
  EXPECT_FALSE(any.dtype.has_value());
  EXPECT_EQ(cf::channel_elem(*cf::Channel::make<cf::ChannelObj>().get()).kind, Kind::kChannel);
  EXPECT_EQ(cf::channel_elem(*cf::make_channel_of("Object").get()).kind, Kind::kOther);

  cf::ProgramBuilder b;
  cf::Var c = b.declare_channel("c", cf::VarType::kInt64, 1);
  b.channel_send(c, b.fill_constant({1}, DType::kInt64, 7));
  const cf::Program p = b.build();
  cf::Executor ex;
  for (const cf::Channel& ok :
       {cf::make_tensor_channel(DType::kInt64, 1), cf::Channel::make<cf::TensorObj>(1)}) {
    ex.run(p, {}, {}, {{"c", ok}});
    EXPECT_EQ(ok.try_recv()->as<cf::TensorObj>()->dtype(), DType::kInt64);
  }
  for (const cf::Channel& bad :
       {cf::make_tensor_channel(DType::kFloat32, 1), cf::Channel::make<cf::ChannelObj>(1),
        cf::make_channel_of("Object", 1)}) {
    try {
      ex.run(p, {}, {}, {{"c", bad}});
      ADD_FAILURE() << "no error for " << bad->elem_type();
    } catch (const cf::TypeError& e) {
      EXPECT_TRUE(contains(e.what(), "the variable is a channel of INT64")) << e.what();
    }
  }
}

}  // namespace
