// Port of TVM's object protocol tests (object_protocol_test.cc and tvm-ffi's type tests): the
// type hierarchy with child slots and overflow, the last-slot regression, non-zero base offset,
// exception safety of make_object, and concurrent registration.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "chanflow/core.h"

namespace cf = chanflow;

namespace {

// ObjBase reserves one child slot. ObjA takes it; ObjB overflows; ObjAA (final) is under ObjA.
class ObjBase : public cf::Object {
 public:
  static constexpr const char* kTypeKey = "test.ObjBase";
  static constexpr uint32_t kTypeChildSlots = 1;
  static constexpr bool kTypeChildSlotsCanOverflow = true;
  CHANFLOW_DECLARE_OBJECT_INFO(ObjBase, cf::Object);
};
class ObjA : public ObjBase {
 public:
  static constexpr const char* kTypeKey = "test.ObjA";
  static constexpr uint32_t kTypeChildSlots = 0;
  CHANFLOW_DECLARE_OBJECT_INFO(ObjA, ObjBase);
};
class ObjB : public ObjBase {
 public:
  static constexpr const char* kTypeKey = "test.ObjB";
  static constexpr uint32_t kTypeChildSlots = 0;
  CHANFLOW_DECLARE_OBJECT_INFO(ObjB, ObjBase);
};
class ObjAA : public ObjA {
 public:
  static constexpr const char* kTypeKey = "test.ObjAA";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(ObjAA, ObjA);
};

struct ARef : cf::ObjectRef {
  CHANFLOW_DEFINE_OBJECT_REF(ARef, cf::ObjectRef, ObjA);
};

template <class T>
bool is(const cf::ObjectRef& r) {
  return r->is_instance<T>();
}

}  // namespace

TEST(TvmObjectProtocol, IsInstanceMatrix) {
  // Register in the order TVM's test does, so ObjA takes ObjBase's only slot and ObjB overflows.
  const uint32_t base = ObjBase::runtime_type_index();
  const uint32_t a = ObjA::runtime_type_index();
  const uint32_t b = ObjB::runtime_type_index();
  EXPECT_EQ(a, base + 1) << "ObjA takes ObjBase's reserved slot";
  EXPECT_GT(b, base + 1) << "ObjB overflows the slots";
  EXPECT_GT(ObjAA::runtime_type_index(), a) << "a child's index is greater than its parent's";

  cf::ObjectRef ra(cf::make_object<ObjA>());
  cf::ObjectRef rb(cf::make_object<ObjB>());
  cf::ObjectRef raa(cf::make_object<ObjAA>());

  EXPECT_TRUE(is<cf::Object>(ra));
  EXPECT_TRUE(is<ObjBase>(ra));
  EXPECT_TRUE(is<ObjA>(ra));
  EXPECT_FALSE(is<ObjB>(ra));
  EXPECT_FALSE(is<ObjAA>(ra));

  EXPECT_TRUE(is<cf::Object>(raa));
  EXPECT_TRUE(is<ObjBase>(raa));
  EXPECT_TRUE(is<ObjA>(raa));
  EXPECT_TRUE(is<ObjAA>(raa));
  EXPECT_FALSE(is<ObjB>(raa));

  EXPECT_TRUE(is<cf::Object>(rb));
  EXPECT_TRUE(is<ObjBase>(rb));
  EXPECT_TRUE(is<ObjB>(rb));
  EXPECT_FALSE(is<ObjA>(rb));
  EXPECT_FALSE(is<ObjAA>(rb));

  // as<> follows is_instance; downcast throws a TypeError naming both types.
  EXPECT_NE(ra.as<ObjBase>(), nullptr);
  EXPECT_EQ(rb.as<ObjA>(), nullptr);
  try {
    (void)cf::downcast<ARef>(rb);
    ADD_FAILURE() << "downcast did not throw";
  } catch (const cf::TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("test.ObjA"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test.ObjB"), std::string::npos) << e.what();
  }
}

namespace {
// A parent with 3 slots and overflow disabled: every one of its 3 children must be an instance
// (TVM #17901 compared with < against the last slot and rejected the third child).
class SlotParent : public cf::Object {
 public:
  static constexpr const char* kTypeKey = "test.SlotParent";
  static constexpr uint32_t kTypeChildSlots = 3;
  static constexpr bool kTypeChildSlotsCanOverflow = false;
  CHANFLOW_DECLARE_OBJECT_INFO(SlotParent, cf::Object);
};
// At namespace scope: Clang 14 rejects a constexpr kTypeKey that indexes a static array member of
// the same class template (the array's initializer is not instantiated when kTypeKey's is).
constexpr const char* kSlotChildKeys[] = {"test.SlotChild0", "test.SlotChild1", "test.SlotChild2",
                                          "test.SlotChild3"};
template <int N>
class SlotChild : public SlotParent {
 public:
  static constexpr const char* kTypeKey = kSlotChildKeys[N];
  static constexpr uint32_t kTypeChildSlots = 0;
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(SlotChild, SlotParent);
};
}  // namespace

TEST(TvmObjectProtocol, LastChildSlotIsAnInstance) {
  const uint32_t p = SlotParent::runtime_type_index();
  cf::ObjectRef c0(cf::make_object<SlotChild<0>>());
  cf::ObjectRef c1(cf::make_object<SlotChild<1>>());
  cf::ObjectRef c2(cf::make_object<SlotChild<2>>());
  EXPECT_EQ(c2->type_index(), p + 3) << "the third child occupies the last reserved slot";
  EXPECT_TRUE(c0->is_instance<SlotParent>());
  EXPECT_TRUE(c1->is_instance<SlotParent>());
  EXPECT_TRUE(c2->is_instance<SlotParent>());
  // A fourth child does not fit and overflow is forbidden: a clear error, not a wrong answer.
  try {
    (void)cf::make_object<SlotChild<3>>();
    ADD_FAILURE() << "a child beyond the slots of a no-overflow parent was accepted";
  } catch (const cf::Error& e) {
    EXPECT_NE(std::string(e.what()).find("test.SlotParent"), std::string::npos) << e.what();
  }
}

namespace {
struct Padding {
  int64_t words[3] = {11, 22, 33};
};
// The Object base is not at offset 0: every cast must adjust the pointer.
class OffsetObj : public Padding, public cf::Object {
 public:
  explicit OffsetObj(int64_t v) : value(v) {}
  int64_t value;
  static constexpr const char* kTypeKey = "test.OffsetObj";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(OffsetObj, cf::Object);
};
}  // namespace

TEST(TvmObjectProtocol, NonZeroOffsetObjectBase) {
  cf::ObjectPtr<OffsetObj> p = cf::make_object<OffsetObj>(7);
  const auto* as_object = static_cast<const cf::Object*>(p.get());
  ASSERT_NE(static_cast<const void*>(as_object), static_cast<const void*>(p.get()))
      << "the test needs a non-zero offset";
  cf::ObjectRef r = p;
  const OffsetObj* back = r.as<OffsetObj>();
  ASSERT_EQ(back, p.get());
  EXPECT_EQ(back->value, 7);
  EXPECT_EQ(back->words[0], 11);
  EXPECT_EQ(back->words[2], 33);
  EXPECT_EQ(r->type_key(), "test.OffsetObj");
  EXPECT_EQ(r.use_count(), 2);
  p.reset();
  EXPECT_EQ(r.use_count(), 1);  // the last release runs the right deleter (ASan checks)
}

namespace {
int g_constructed = 0;
int g_destroyed = 0;
class ThrowingObj : public cf::Object {
 public:
  explicit ThrowingObj(bool fail) : member_(++g_constructed) {
    if (fail) throw std::runtime_error("constructor failed");
  }
  ~ThrowingObj() { ++g_destroyed; }
  static constexpr const char* kTypeKey = "test.ThrowingObj";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(ThrowingObj, cf::Object);

 private:
  int member_;
};
}  // namespace

TEST(TvmObjectProtocol, MakeObjectPropagatesConstructorExceptionWithoutLeaking) {
  const int64_t live = cf::live_object_count();
  g_constructed = g_destroyed = 0;
  EXPECT_THROW((void)cf::make_object<ThrowingObj>(true), std::runtime_error);
  EXPECT_EQ(g_destroyed, 0) << "a half-built object is not destroyed";
  EXPECT_EQ(cf::live_object_count(), live) << "a failed make_object is not counted as live";
  { auto ok = cf::make_object<ThrowingObj>(false); }
  EXPECT_EQ(g_destroyed, 1);
  // (Memory of the failed allocation is checked by LeakSanitizer in the asan preset.)
}

namespace {
constexpr int kConcurrentTypes = 24;
constexpr const char* kConcurrentKeys[kConcurrentTypes] = {
    "test.Conc0",  "test.Conc1",  "test.Conc2",  "test.Conc3",  "test.Conc4",  "test.Conc5",
    "test.Conc6",  "test.Conc7",  "test.Conc8",  "test.Conc9",  "test.Conc10", "test.Conc11",
    "test.Conc12", "test.Conc13", "test.Conc14", "test.Conc15", "test.Conc16", "test.Conc17",
    "test.Conc18", "test.Conc19", "test.Conc20", "test.Conc21", "test.Conc22", "test.Conc23"};

class ConcRoot : public cf::Object {
 public:
  static constexpr const char* kTypeKey = "test.ConcRoot";
  static constexpr uint32_t kTypeChildSlots = 8;  // some children fit, the rest overflow
  CHANFLOW_DECLARE_OBJECT_INFO(ConcRoot, cf::Object);
};
template <int N>
class ConcObj : public ConcRoot {
 public:
  static constexpr const char* kTypeKey = kConcurrentKeys[N];
  static constexpr uint32_t kTypeChildSlots = 0;
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(ConcObj, ConcRoot);
};

template <int... Ns>
bool check_all(std::integer_sequence<int, Ns...>, int rotate) {
  bool ok = true;
  // Each thread creates the types in a different order, racing on first registration.
  auto one = [&](auto tag) {
    constexpr int n = decltype(tag)::value;
    cf::ObjectRef r(cf::make_object<ConcObj<n>>());
    ok = ok && r->is_instance<ConcRoot>() && r->is_instance<ConcObj<n>>() &&
         r->type_key() == kConcurrentKeys[n];
    if constexpr (n > 0) ok = ok && !r->is_instance<ConcObj<n - 1>>();
  };
  for (int k = 0; k < kConcurrentTypes; ++k) {
    const int target = (k + rotate) % kConcurrentTypes;
    ((Ns == target ? one(std::integral_constant<int, Ns>{}) : void()), ...);
  }
  return ok;
}
}  // namespace

TEST(TvmObjectProtocol, ConcurrentRegistrationAndIsInstance) {
  constexpr int kThreads = 8;
  std::atomic<int> ready{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      for (int round = 0; round < 50; ++round) {
        if (!check_all(std::make_integer_sequence<int, kConcurrentTypes>{}, t * 3 + round)) {
          failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  // Every type got exactly one index, all distinct.
  std::set<uint32_t> indices;
  for (const char* key : kConcurrentKeys) {
    auto idx = cf::TypeRegistry::global().index_of(key);
    ASSERT_TRUE(idx.has_value()) << key;
    indices.insert(*idx);
  }
  EXPECT_EQ(indices.size(), static_cast<size_t>(kConcurrentTypes));
}
