#include <gtest/gtest.h>

#include "chanflow/core/boxed.h"
#include "chanflow/core/object.h"
#include "chanflow/core/string.h"
#include "chanflow/core/type_registry.h"

namespace cf = chanflow;

TEST(Object, HeaderIs16Bytes) { EXPECT_EQ(sizeof(cf::Object), 16u); }

TEST(Object, StringBasics) {
  cf::String s = "go";
  EXPECT_EQ(s, "go");
  EXPECT_TRUE(s->is_instance<cf::StringObj>());
  EXPECT_EQ(s->type_key(), "String");
  EXPECT_EQ(s->type_index(), cf::TypeIndex::kString);
  cf::ObjectRef r = s;
  EXPECT_EQ(r.as<cf::IntObj>(), nullptr);
  EXPECT_THROW(cf::downcast<cf::Int>(r), cf::TypeError);
}
