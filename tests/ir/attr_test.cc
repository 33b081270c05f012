// Attr: typed constructors and access, type errors, equality; VarType <-> DType; select cases.
#include <gtest/gtest.h>

#include "test_util.h"

namespace cf = chanflow;

TEST(Attr, TypedAccess) {
  EXPECT_EQ(cf::Attr::i(3).as_int(), 3);
  EXPECT_EQ(cf::Attr::l(int64_t{1} << 50).as_int(), int64_t{1} << 50);
  EXPECT_FLOAT_EQ(static_cast<float>(cf::Attr::f(0.1).as_float()), 0.1f);
  EXPECT_EQ(cf::Attr::s("x").as_string(), "x");
  EXPECT_EQ(cf::Attr::ints({1, 2}).as_ints(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(cf::Attr::floats({0.5}).as_floats(), std::vector<double>{0.5});
  EXPECT_EQ(cf::Attr::strings({"a", "b"}).as_strings(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(cf::Attr::b(true).as_bool());
  EXPECT_EQ(cf::Attr::bools({true, false}).as_bools(), (std::vector<bool>{true, false}));
  EXPECT_EQ(cf::Attr::block(2).as_block(), 2);
  EXPECT_EQ(cf::Attr::block(2).type(), cf::AttrType::kBlock);
}

TEST(Attr, WrongTypeIsTypeError) {
  try {
    (void)cf::Attr::block(1).as_float();
    ADD_FAILURE();
  } catch (const cf::TypeError& e) {
    EXPECT_STREQ(e.what(), "attribute is BLOCK, not FLOAT");
  }
  EXPECT_THROW((void)cf::Attr::i(1).as_block(), cf::TypeError);
  EXPECT_THROW((void)cf::Attr::s("1").as_int(), cf::TypeError);
}

TEST(Attr, EqualityAndRendering) {
  EXPECT_TRUE(cf::Attr::ints({1, 2}).equals(cf::Attr::ints({1, 2})));
  EXPECT_FALSE(cf::Attr::ints({1, 2}).equals(cf::Attr::ints({1})));
  EXPECT_FALSE(cf::Attr::i(1).equals(cf::Attr::l(1)));
  EXPECT_EQ(cf::Attr::ints({1, 2}).to_string(), "INTS [1, 2]");
  EXPECT_EQ(cf::Attr::s("go").to_string(), "STRING \"go\"");
  // An ill-formed attribute (e.g. from JSON) is detected, never dereferenced blindly.
  cf::Attr bad(cf::make_object<cf::AttrObj>(int64_t{0}, cf::String("not an int")));
  EXPECT_FALSE(bad.well_formed());
  EXPECT_THROW((void)bad.as_int(), cf::TypeError);
}

TEST(VarType, FluidNumberingAndDTypes) {
  EXPECT_EQ(static_cast<int>(cf::VarType::kInt64), 3);
  EXPECT_EQ(static_cast<int>(cf::VarType::kLoDTensor), 7);
  EXPECT_EQ(static_cast<int>(cf::VarType::kChannel), 16);
  EXPECT_EQ(cf::var_type_name(cf::VarType::kFP64), "FP64");
  EXPECT_EQ(cf::var_type_from_name("CHANNEL"), cf::VarType::kChannel);
  EXPECT_FALSE(cf::var_type_from_name("nope").has_value());
  for (int d = 0; d < cf::kNumDTypes; ++d) {
    const auto dt = static_cast<cf::DType>(d);
    EXPECT_EQ(cf::dtype_from_var_type(cf::var_type_from_dtype(dt)), dt);
  }
  EXPECT_THROW(cf::dtype_from_var_type(cf::VarType::kLoDTensor), cf::TypeError);
}

// The VarType column of the dtype table is Paddle's numbering, exactly: each element type by its
// number as Fluid's framework.proto spells it, and no other number is an element type.
TEST(VarType, ElementNumbersArePaddlesExactly) {
  const std::pair<int, cf::DType> paddle[] = {
      {0, cf::DType::kBool},    {1, cf::DType::kInt16},   {2, cf::DType::kInt32},
      {3, cf::DType::kInt64},   {4, cf::DType::kFloat16}, {5, cf::DType::kFloat32},
      {6, cf::DType::kFloat64}, {20, cf::DType::kUInt8},  {21, cf::DType::kInt8}};
  for (const auto& [number, dt] : paddle) {
    EXPECT_EQ(static_cast<int>(cf::var_type_from_dtype(dt)), number) << cf::dtype_name(dt);
    EXPECT_EQ(cf::dtype_from_var_type(static_cast<cf::VarType>(number)), dt) << number;
  }
  int elements = 0;
  for (int v = 0; v <= 21; ++v) elements += cf::is_element_type(static_cast<cf::VarType>(v));
  EXPECT_EQ(elements, 9);
  EXPECT_FALSE(cf::is_element_type(cf::VarType::kSizeT));
  EXPECT_THROW(cf::dtype_from_var_type(cf::VarType::kChannel), cf::TypeError);
}

TEST(SelectCaseAttr, ParseAndFormat) {
  cf::SelectCaseAttr c = cf::parse_select_case("1,2,quit,v");
  EXPECT_EQ(c.index, 1);
  EXPECT_EQ(c.kind, cf::SelectCaseKind::kRecv);
  EXPECT_EQ(c.channel, "quit");
  EXPECT_EQ(c.var, "v");
  EXPECT_EQ(cf::format_select_case(c), "1,2,quit,v");
  EXPECT_EQ(cf::parse_select_case("0,0,,").kind, cf::SelectCaseKind::kDefault);
  for (const char* bad :
       {"", "0,1,ch", "0,1,ch,v,extra", "x,1,ch,v", "-1,1,ch,v", "0,3,ch,v", "0,1,,v", "0,2,ch,",
        "0,0,ch,", "0, 1,ch,v", "99999999999999999999,1,c,v"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(cf::parse_select_case(bad), cf::ProgramError);
  }
}
