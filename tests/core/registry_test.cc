#include <gtest/gtest.h>

#include "chanflow/core.h"

namespace cf = chanflow;

namespace {
class Shape2Obj : public cf::Object {
 public:
  static constexpr const char* kTypeKey = "test.Shape";
  static constexpr uint32_t kTypeChildSlots = 2;
  CHANFLOW_DECLARE_OBJECT_INFO(Shape2Obj, cf::Object);
};
class CircleObj : public Shape2Obj {
 public:
  static constexpr const char* kTypeKey = "test.Circle";
  static constexpr uint32_t kTypeChildSlots = 0;
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(CircleObj, Shape2Obj);
};
// Reuses Circle's key under another parent: must be refused, not silently merged.
class Impostor : public cf::Object {
 public:
  static constexpr const char* kTypeKey = "test.Circle";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(Impostor, cf::Object);
};
}  // namespace

TEST(TypeRegistry, LookupsBothWaysAndDump) {
  auto& reg = cf::TypeRegistry::global();
  const uint32_t circle = CircleObj::runtime_type_index();
  EXPECT_EQ(reg.index_of("test.Circle"), circle);
  EXPECT_EQ(reg.index_of("String"), cf::TypeIndex::kString == cf::StringObj::runtime_type_index()
                                        ? std::optional<uint32_t>(cf::TypeIndex::kString)
                                        : std::nullopt);
  EXPECT_FALSE(reg.index_of("no.such.type").has_value());
  const cf::TypeInfo* info = reg.find(circle);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->key, "test.Circle");
  EXPECT_EQ(info->parent_index, Shape2Obj::runtime_type_index());
  EXPECT_EQ(info->depth, 2u);
  ASSERT_EQ(info->ancestors.size(), 2u);
  EXPECT_EQ(info->ancestors[0], cf::TypeIndex::kObject);
  EXPECT_TRUE(reg.is_descendant(circle, Shape2Obj::runtime_type_index()));
  EXPECT_FALSE(reg.is_descendant(Shape2Obj::runtime_type_index(), circle));
  EXPECT_EQ(reg.find(cf::TypeRegistry::kMaxTypeIndex + 5), nullptr);
  const std::string dump = reg.dump();
  EXPECT_NE(dump.find("test.Shape (child slots 1/2"), std::string::npos) << dump;
  EXPECT_NE(dump.find("    " + std::to_string(circle) + " test.Circle [final]"), std::string::npos)
      << dump;
}

TEST(TypeRegistry, KeyReuseWithAnotherParentIsAnError) {
  (void)CircleObj::runtime_type_index();
  EXPECT_THROW((void)Impostor::runtime_type_index(), cf::Error);
}
