// The channel's and the wait queue's invariants (chan_base.h C1-C4, wait.h Q1-Q3): each check
// reports its invariant when the state breaks it, and in debug and sanitizer builds a broken
// invariant stops the process where the lock is released or the queue is changed.
#include <gtest/gtest.h>

#include <string>

#include "chan_ops.h"
#include "chanflow/core/check.h"
#include "chanflow/runtime/detail/chan_base.h"

namespace chanflow::detail {

// Breaks a channel's invariants on purpose (chan_base.h: friend). Single-threaded, so it reads and
// writes the guarded state without the lock; the analysis is told so per accessor.
struct ChanBaseTestPeer {
  static std::string broken(const ChanBase& c) CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
    const char* b = c.broken_invariant();
    return b != nullptr ? b : "";
  }
  static void set_count(ChanBase& c, std::size_t n) CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
    c.count_.store(n);
  }
  static void set_closed(ChanBase& c) CHANFLOW_NO_THREAD_SAFETY_ANALYSIS { c.closed_.store(true); }
  static WaitQueue& recvq(ChanBase& c) CHANFLOW_NO_THREAD_SAFETY_ANALYSIS { return c.recvq_; }
  static WaitQueue& sendq(ChanBase& c) CHANFLOW_NO_THREAD_SAFETY_ANALYSIS { return c.sendq_; }
};

}  // namespace chanflow::detail

namespace {

using chanflow::detail::ChanAlgo;
using chanflow::detail::ChanBase;
using chanflow::detail::ElemOpsOf;
using chanflow::detail::Waiter;
using chanflow::detail::WaitQueue;
using Peer = chanflow::detail::ChanBaseTestPeer;

constexpr const chanflow::detail::ElemOps* kInt = &ElemOpsOf<int>::kOps;

// Starts with the invariant's name ("C2: ...").
bool names(const std::string& report, const std::string& invariant) {
  return report.rfind(invariant + ":", 0) == 0;
}

TEST(ChanInvariants, HoldOnChannelsInUse) {
  ChanBase buffered(4, kInt);
  ChanBase unbuffered(0, kInt);
  EXPECT_EQ(Peer::broken(buffered), "");
  EXPECT_EQ(Peer::broken(unbuffered), "");
  int v = 7;
  ASSERT_TRUE(chanflow::detail::chan_try_send(&buffered, &v));
  EXPECT_EQ(Peer::broken(buffered), "");
  chanflow::detail::chan_close(&unbuffered);
  EXPECT_EQ(Peer::broken(unbuffered), "");
}

TEST(ChanInvariants, C1CountWithinSlotsWithinCapacity) {
  ChanBase c(4, kInt);
  Peer::set_count(c, 5);
  EXPECT_TRUE(names(Peer::broken(c), "C1")) << Peer::broken(c);
  Peer::set_count(c, 0);
}

TEST(ChanInvariants, C2NoBufferedValueWhileAReceiverWaits) {
  ChanBase c(4, kInt);
  int v = 1;
  ASSERT_TRUE(chanflow::detail::chan_try_send(&c, &v));
  Waiter w;
  Peer::recvq(c).push_back(&w);
  EXPECT_TRUE(names(Peer::broken(c), "C2")) << Peer::broken(c);
  Peer::recvq(c).remove(&w);
  EXPECT_EQ(Peer::broken(c), "");
}

TEST(ChanInvariants, C3NoFreeSlotWhileASenderWaits) {
  ChanBase c(4, kInt);
  Waiter w;
  w.is_send = true;
  Peer::sendq(c).push_back(&w);
  EXPECT_TRUE(names(Peer::broken(c), "C3")) << Peer::broken(c);
  Peer::sendq(c).remove(&w);
}

TEST(ChanInvariants, C4NoWaiterOnAClosedChannel) {
  ChanBase c(0, kInt);  // unbuffered: C2 and C3 cannot fire
  Waiter w;
  Peer::recvq(c).push_back(&w);
  EXPECT_EQ(Peer::broken(c), "");  // a parked receiver on an open channel is fine
  Peer::set_closed(c);
  EXPECT_TRUE(names(Peer::broken(c), "C4")) << Peer::broken(c);
  Peer::recvq(c).remove(&w);
}

// Where the checks are compiled in, a broken invariant ends the process at the next release of
// the channel's lock, or at the queue operation that meets it.
class InvariantChecks : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CHANFLOW_INVARIANT_CHECKS) GTEST_SKIP() << "release build: invariant checks compiled out";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

TEST_F(InvariantChecks, ReleasingABrokenChannelAborts) {
  EXPECT_DEATH(
      {
        ChanBase c(4, kInt);
        Waiter w;
        w.is_send = true;
        ChanAlgo::lock(&c);
        Peer::sendq(c).push_back(&w);
        ChanAlgo::unlock(&c);
      },
      "channel invariant broken .*C3: a free slot while a sender is parked");
}

TEST_F(InvariantChecks, LinkingAWaiterTwiceAborts) {
  EXPECT_DEATH(
      {
        WaitQueue a;
        WaitQueue b;
        Waiter w;
        a.push_back(&w);
        b.push_back(&w);
      },
      "wait queue: Q2");
}

TEST_F(InvariantChecks, RemovingAWaiterWithBrokenLinksAborts) {
  EXPECT_DEATH(
      {
        WaitQueue q;
        Waiter first;
        Waiter second;
        q.push_back(&first);
        q.push_back(&second);
        second.prev = nullptr;  // as if the links were corrupted
        q.remove(&second);
      },
      "wait queue: Q3");
}

}  // namespace

namespace {

// The lock assertions that stand in for the analysis where it cannot follow (chan_ops.h
// ChanAlgo::assert_held, spinlock.h SpinLock::assert_held).
TEST_F(InvariantChecks, AssertingAnUnheldLockAborts) {
  chanflow::os::SpinLock lock;
  lock.lock();
  lock.assert_held();  // held: passes
  lock.unlock();
  EXPECT_DEATH(lock.assert_held(), "spin lock not held");
  ChanBase c(1, kInt);
  EXPECT_DEATH(ChanAlgo::assert_held(&c), "spin lock not held");
}

}  // namespace
