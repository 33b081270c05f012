// Releasing deeply nested objects takes constant stack (src/core/release.cc): a chain of a
// million nested containers, each held only by the next, is released on a green thread, whose
// stack (256 KiB by default) holds a few thousand nested destructor calls at most. Without the
// pending list in the release path each of these tests ends the process ("stack overflow in green
// thread"); with it they pass, and the objects are destroyed exactly once, outer first, before the
// release returns (the leak check of tests/support/test_main.cc counts the rest).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "chanflow/core.h"
#include "chanflow/runtime.h"

namespace cf = chanflow;

namespace {

constexpr int64_t kDeep = 1'000'000;

// Runs fn on a green thread (the default stack size) and waits for it.
void on_green_thread(const std::function<void()>& fn) {
  cf::Scheduler s({.workers = 1});
  cf::WaitGroup wg;
  wg.add(1);
  s.go("deep release", [&] {
    fn();
    wg.done();
  });
  wg.wait();
}

// Records the order in which probes are destroyed.
std::vector<int64_t> g_destroyed;

class ProbeObj : public cf::Object {
 public:
  explicit ProbeObj(int64_t id) : id_(id) {}
  ~ProbeObj() { g_destroyed.push_back(id_); }
  static constexpr const char* kTypeKey = "test.DeepReleaseProbe";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(ProbeObj, cf::Object);

 private:
  int64_t id_;
};

// A user-defined link type (no container of core): the mechanism is in the release path, so
// every object kind gets it, whatever its deleter (here the pool's).
class LinkObj : public cf::Object {
 public:
  explicit LinkObj(cf::ObjectPtr<LinkObj> next) : next_(std::move(next)) {}
  static constexpr const char* kTypeKey = "test.DeepReleaseLink";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(LinkObj, cf::Object);

 private:
  cf::ObjectPtr<LinkObj> next_;
};

TEST(DeepRelease, MillionNestedArraysReleaseOnAGreenThread) {
  on_green_thread([] {
    cf::Array<cf::ObjectRef> chain;
    // The element as an ObjectRef: {chain} with the Array itself is a copy for Clang (CWG 2137)
    // and a one-element list for GCC.
    for (int64_t i = 0; i < kDeep; ++i) chain = cf::Array<cf::ObjectRef>{cf::ObjectRef(chain)};
    EXPECT_EQ(chain.size(), 1u);
    chain = cf::Array<cf::ObjectRef>();  // the last reference to the outermost array
  });
}

TEST(DeepRelease, MillionNestedMapsReleaseOnAGreenThread) {
  on_green_thread([] {
    const cf::String key("next");  // one key object shared by every map
    cf::Map<cf::String, cf::ObjectRef> chain;
    for (int64_t i = 0; i < kDeep; ++i) {
      cf::Map<cf::String, cf::ObjectRef> outer;
      outer.set(key, chain);
      chain = std::move(outer);
    }
    EXPECT_EQ(chain.size(), 1u);
    chain = cf::Map<cf::String, cf::ObjectRef>();
  });
}

// Each capacity-1 channel buffers the previous one: releasing the outermost destroys its buffer,
// which holds the last reference to the next channel, and so on.
TEST(DeepRelease, MillionChannelsBufferingTheNextReleaseOnAGreenThread) {
  on_green_thread([] {
    cf::Channel chain = cf::Channel::make<cf::ChannelObj>(1);
    for (int64_t i = 0; i < kDeep; ++i) {
      cf::Channel outer = cf::Channel::make<cf::ChannelObj>(1);
      ASSERT_TRUE(outer.try_send(std::move(chain)));
      chain = std::move(outer);
    }
    EXPECT_EQ(chain->size(), 1u);
    chain = cf::Channel();
  });
}

TEST(DeepRelease, MillionPooledLinksReleaseOnAGreenThread) {
  cf::ObjectPool<LinkObj> pool;
  on_green_thread([&] {
    cf::ObjectPtr<LinkObj> chain;
    for (int64_t i = 0; i < kDeep; ++i) chain = pool.make(std::move(chain));
    chain.reset();
  });
}

// Array i holds [probe i, array i-1]. Recursive destruction would destroy probe i, then the
// rest of the chain inside array i's destructor: probes N-1, N-2, ..., 0. The pending list keeps
// that order, destroys each once and finishes before the release returns.
TEST(DeepRelease, NestedArraysAreDestroyedOnceOuterFirstBeforeTheReleaseReturns) {
  constexpr int64_t kN = 100'000;
  g_destroyed.clear();
  g_destroyed.reserve(kN);
  on_green_thread([] {
    cf::Array<cf::ObjectRef> chain;
    for (int64_t i = 0; i < kN; ++i) {
      chain = cf::Array<cf::ObjectRef>{cf::ObjectRef(cf::make_object<ProbeObj>(i)), chain};
    }
    EXPECT_TRUE(g_destroyed.empty());
    chain = cf::Array<cf::ObjectRef>();
    ASSERT_EQ(g_destroyed.size(), static_cast<size_t>(kN)) << "all destroyed when reset returns";
  });
  for (int64_t k = 0; k < kN; ++k) {
    ASSERT_EQ(g_destroyed[static_cast<size_t>(k)], kN - 1 - k) << "position " << k;
  }
}

// Siblings keep their order too, also where deleters are queued (deeper than 16 levels): an
// array of arrays, each holding a probe, at the bottom of a chain of 100 arrays destroys probe 0
// first, as a recursive ~vector would.
TEST(DeepRelease, SiblingsAreDestroyedInOrder) {
  constexpr int64_t kN = 10'000;
  g_destroyed.clear();
  {
    std::vector<cf::ObjectRef> items;
    for (int64_t i = 0; i < kN; ++i) {
      items.emplace_back(cf::Array<cf::ObjectRef>{cf::ObjectRef(cf::make_object<ProbeObj>(i))});
    }
    cf::Array<cf::ObjectRef> chain(std::move(items));
    for (int i = 0; i < 100; ++i) chain = cf::Array<cf::ObjectRef>{cf::ObjectRef(chain)};
  }
  ASSERT_EQ(g_destroyed.size(), static_cast<size_t>(kN));
  for (int64_t k = 0; k < kN; ++k) ASSERT_EQ(g_destroyed[static_cast<size_t>(k)], k);
}

// A destructor that makes and releases objects of its own while it runs (their release is
// deferred like any other) still leaves nothing behind when the outer release returns.
class ChurnObj : public cf::Object {
 public:
  ~ChurnObj() {
    for (int i = 0; i < 100; ++i) {
      cf::Array<cf::Int> tmp{cf::Int(i)};
      EXPECT_EQ(tmp[0].value(), i);
    }
  }
  static constexpr const char* kTypeKey = "test.DeepReleaseChurn";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(ChurnObj, cf::Object);
};

TEST(DeepRelease, DestructorsThatReleaseTheirOwnTemporariesLeaveNothingBehind) {
  const int64_t before = cf::live_object_count();
  {
    cf::Array<cf::ObjectRef> chain;
    for (int i = 0; i < 1000; ++i) {
      chain = cf::Array<cf::ObjectRef>{cf::ObjectRef(cf::make_object<ChurnObj>()), chain};
    }
  }
  EXPECT_EQ(cf::live_object_count(), before);
}

}  // namespace
