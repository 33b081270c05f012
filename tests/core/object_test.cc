// White-box tests of the object header, ObjectPtr and ObjectRef.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "chanflow/core.h"

namespace cf = chanflow;

namespace {
std::atomic<int> g_destroyed{0};
class CountedObj : public cf::Object {
 public:
  explicit CountedObj(int v = 0) : value(v) {}
  ~CountedObj() { g_destroyed.fetch_add(1); }
  int value;
  static constexpr const char* kTypeKey = "test.Counted";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(CountedObj, cf::Object);
};
class Counted : public cf::ObjectRef {
 public:
  CHANFLOW_DEFINE_OBJECT_REF(Counted, cf::ObjectRef, CountedObj);
};
}  // namespace

TEST(Object, HeaderIs16Bytes) { EXPECT_EQ(sizeof(cf::Object), 16u); }

TEST(ObjectPtr, CountsCopiesMovesAndResets) {
  g_destroyed = 0;
  cf::ObjectPtr<CountedObj> a = cf::make_object<CountedObj>(3);
  EXPECT_EQ(a.use_count(), 1);
  EXPECT_TRUE(a.unique());
  {
    cf::ObjectPtr<CountedObj> b = a;
    EXPECT_EQ(a.use_count(), 2);
    cf::ObjectPtr<cf::Object> base = b;  // upcast shares the count
    EXPECT_EQ(a.use_count(), 3);
    cf::ObjectPtr<CountedObj> c = std::move(b);
    EXPECT_EQ(b, nullptr);
    EXPECT_EQ(a.use_count(), 3);
  }
  EXPECT_EQ(a.use_count(), 1);
  EXPECT_EQ(g_destroyed.load(), 0);
  // Self-assignment is harmless; through a reference, as it arrives in real code (a direct `a = a`
  // is a compiler warning).
  const cf::ObjectPtr<CountedObj>& same = a;
  a = same;
  EXPECT_EQ(a->value, 3);
  a.reset();
  EXPECT_EQ(g_destroyed.load(), 1);
  EXPECT_FALSE(a);
}

TEST(ObjectRef, TypedHandlesAndDowncast) {
  Counted c(cf::make_object<CountedObj>(5));
  EXPECT_EQ(c->value, 5);
  cf::ObjectRef any = c;
  EXPECT_EQ(any.use_count(), 2);
  EXPECT_EQ(any->type_key(), "test.Counted");
  EXPECT_EQ(any.as<CountedObj>()->value, 5);
  EXPECT_EQ(any.as<cf::StringObj>(), nullptr);
  Counted back = cf::downcast<Counted>(any);
  EXPECT_TRUE(back.same_as(c));
  EXPECT_FALSE(cf::downcast<Counted>(cf::ObjectRef()).defined()) << "null downcasts to null";
  try {
    (void)cf::downcast<cf::String>(any);
    ADD_FAILURE();
  } catch (const cf::TypeError& e) {
    EXPECT_STREQ(e.what(), "downcast: expected an object of type 'String' but got 'test.Counted'");
  }
}

TEST(ObjectRef, ConcurrentCopiesAndReleasesFreeExactlyOnce) {
  g_destroyed = 0;
  constexpr int kThreads = 4;
  constexpr int kRounds = 2000;
  for (int round = 0; round < 20; ++round) {
    cf::ObjectRef shared(cf::make_object<CountedObj>(round));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([copy = shared] {
        for (int i = 0; i < kRounds; ++i) {
          cf::ObjectRef local = copy;  // inc and dec racing with the other threads
          const CountedObj* obj = local.as<CountedObj>();
          ASSERT_NE(obj, nullptr);
          ASSERT_GE(obj->value, 0);
        }
      });
    }
    shared = cf::ObjectRef();  // the main thread may or may not be the last owner
    for (auto& th : threads) th.join();
  }
  EXPECT_EQ(g_destroyed.load(), 20);
}

namespace {
int g_custom_deleter_runs = 0;
alignas(CountedObj) unsigned char g_arena[sizeof(CountedObj)];
}  // namespace

TEST(Object, AdoptWithCustomDeleter) {
  g_custom_deleter_runs = 0;
  auto* obj = new (g_arena) CountedObj(9);
  {
    cf::ObjectPtr<CountedObj> p = cf::adopt_object(obj, [](cf::Object* o) {
      static_cast<CountedObj*>(o)->~CountedObj();
      ++g_custom_deleter_runs;
#if defined(CHANFLOW_OBJECT_TRACKING)
      cf::detail::track_object_destroyed();
#endif
    });
    EXPECT_EQ(p->value, 9);
    EXPECT_TRUE(p->is_instance<CountedObj>());
  }
  EXPECT_EQ(g_custom_deleter_runs, 1);
}

TEST(Object, LiveObjectCountTracksCreationAndRelease) {
  const int64_t before = cf::live_object_count();
  if (before < 0) GTEST_SKIP() << "object tracking is compiled out in this build";
  {
    cf::String s("x");
    cf::Array<cf::Int> a{cf::Int(1), cf::Int(2)};
    EXPECT_EQ(cf::live_object_count(), before + 4);
  }
  EXPECT_EQ(cf::live_object_count(), before);
}

// A message quoting hostile input keeps everything after a NUL (what() is a C string) and cannot
// send escape sequences to a terminal; line breaks and tabs stay as they are.
TEST(Error, ControlBytesInTheMessageAreEscaped) {
  using namespace std::string_literals;
  const cf::Error e("variable 'a\0b' and '\x1b[2Jred\x7f'\n\tnext line"s);
  EXPECT_STREQ(e.what(), "variable 'a\\x00b' and '\\x1b[2Jred\\x7f'\n\tnext line");
  const cf::ProgramError p("op 'x\0y'"s, 0, 1, "fill_constant");
  EXPECT_STREQ(p.what(), "op 'x\\x00y'");
  EXPECT_STREQ(cf::Error("plain UTF-8: \xc3\xa9").what(), "plain UTF-8: \xc3\xa9");
}
