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

namespace {
// An ancestor that forbids overflow (so is_instance<SealedObj> is one range compare) above a child
// that allows it: the grandchildren that do not fit the child's slots must still land inside the
// ancestor's range.
class SealedObj : public cf::Object {
 public:
  static constexpr const char* kTypeKey = "test.Sealed";
  static constexpr uint32_t kTypeChildSlots = 4;
  static constexpr bool kTypeChildSlotsCanOverflow = false;
  CHANFLOW_DECLARE_OBJECT_INFO(SealedObj, cf::Object);
};
class OpenChildObj : public SealedObj {
 public:
  static constexpr const char* kTypeKey = "test.Sealed.OpenChild";
  static constexpr uint32_t kTypeChildSlots = 1;
  static constexpr bool kTypeChildSlotsCanOverflow = true;
  CHANFLOW_DECLARE_OBJECT_INFO(OpenChildObj, SealedObj);
};
// At namespace scope: Clang 14 rejects a constexpr kTypeKey that indexes a static array member of
// the same class template (the array's initializer is not instantiated when kTypeKey's is).
constexpr const char* kGrandchildKeys[] = {"test.Sealed.OpenChild.G0", "test.Sealed.OpenChild.G1",
                                           "test.Sealed.OpenChild.G2", "test.Sealed.OpenChild.G3"};
template <int N>
class GrandchildObj : public OpenChildObj {
 public:
  static constexpr const char* kTypeKey = kGrandchildKeys[N];
  static constexpr uint32_t kTypeChildSlots = 0;
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(GrandchildObj, OpenChildObj);
};
}  // namespace

// Sealed reserves 4 slots: OpenChild takes 2 (itself + its 1 slot), G0 takes OpenChild's slot. G1
// and G2 do not fit OpenChild, which allows overflow, but Sealed forbids it: they go to Sealed's
// 2 free slots, so is_instance<SealedObj> (a range compare only) still sees them. G3 fits nowhere
// and is refused with an error naming the types. Before the fix G1 was put past every range and
// is_instance<SealedObj>() said false.
TEST(TypeRegistry, OverflowBelowAnAncestorThatForbidsItStaysInTheAncestorsRange) {
  auto& reg = cf::TypeRegistry::global();
  const uint32_t sealed = SealedObj::runtime_type_index();
  const uint32_t open = OpenChildObj::runtime_type_index();
  EXPECT_EQ(open, sealed + 1);
  (void)GrandchildObj<0>::runtime_type_index();  // fills OpenChild's one slot

  cf::ObjectRef g1(cf::make_object<GrandchildObj<1>>());
  cf::ObjectRef g2(cf::make_object<GrandchildObj<2>>());
  for (const cf::ObjectRef& g : {g1, g2}) {
    EXPECT_TRUE(g->is_instance<SealedObj>()) << g->type_key() << " index " << g->type_index();
    EXPECT_TRUE(g->is_instance<OpenChildObj>()) << g->type_key();
    EXPECT_TRUE(reg.is_descendant(g->type_index(), sealed));
    EXPECT_TRUE(reg.is_descendant(g->type_index(), open));
    EXPECT_FALSE(g->is_instance<GrandchildObj<0>>());
  }
  EXPECT_FALSE(g1->is_instance<GrandchildObj<2>>());
  EXPECT_FALSE(cf::ObjectRef(cf::make_object<OpenChildObj>())->is_instance<GrandchildObj<1>>());

  try {
    (void)GrandchildObj<3>::runtime_type_index();
    FAIL() << "a fifth descendant of test.Sealed was registered";
  } catch (const cf::Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("type registry: cannot register 'test.Sealed.OpenChild.G3'", 0), 0u) << m;
    EXPECT_NE(m.find("'test.Sealed.OpenChild' has all its 1 child slots taken"), std::string::npos)
        << m;
    EXPECT_NE(m.find("its ancestor 'test.Sealed' forbids overflow"), std::string::npos) << m;
  }
  const std::string dump = reg.dump();
  EXPECT_NE(dump.find("test.Sealed (child slots 4/4)"), std::string::npos) << dump;
}
