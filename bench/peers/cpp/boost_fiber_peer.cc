// The Boost.Fiber side of chanflow's side-by-side benchmarks: the runtime shapes Boost.Fiber can
// express (it has no select), on one OS thread with the default round_robin scheduler and 16 KiB
// fixed-size stacks. Run with
//   GLIBC_TUNABLES=glibc.malloc.trim_threshold=4000000000:glibc.malloc.mmap_threshold=4000000000
// so freed fiber stacks stay faulted in (otherwise spawn measures page faults, not Boost.Fiber).
#include <boost/fiber/all.hpp>

#include <memory>
#include <vector>

#include "peer_harness.h"

namespace fibers = boost::fibers;

namespace {

fibers::fixedsize_stack stack_allocator() { return fibers::fixedsize_stack(16 * 1024); }

// One round trip: main pushes on `req`, the echo fiber pops and pushes the successor on `resp`.
double ping_pong(int n) {
  fibers::unbuffered_channel<int> req, resp;
  fibers::fiber echo(std::allocator_arg, stack_allocator(), [&] {
    int x;
    while (req.pop(x) == fibers::channel_op_status::success) resp.push(x + 1);
  });
  int v = 0;
  auto t = peer::Clock::now();
  for (int i = 0; i < n; ++i) {
    req.push(v);
    resp.pop(v);
  }
  double ns = peer::ns_since(t) / n;
  req.close();
  echo.join();
  if (v != n) peer::fail("pingpong value");
  return ns;
}

// A producer fiber streams n ints through a buffered channel to the main fiber. Boost's
// buffered_channel needs a power-of-two capacity; 128 is one. ns per message.
double buffered(int n, std::size_t capacity) {
  fibers::buffered_channel<long> c(capacity);
  auto t = peer::Clock::now();
  fibers::fiber prod(std::allocator_arg, stack_allocator(), [&] {
    for (int i = 0; i < n; ++i) c.push(i);
    c.close();
  });
  long sum = 0, x;
  while (c.pop(x) == fibers::channel_op_status::success) sum += x;
  double ns = peer::ns_since(t) / n;
  prod.join();
  if (sum != static_cast<long>(n) * (n - 1) / 2) peer::fail("buffered sum");
  return ns;
}

// n fibers each push their index once on one unbuffered channel; main pops all of them.
double spawn(int n) {
  fibers::unbuffered_channel<int> c;
  std::vector<fibers::fiber> fs;
  fs.reserve(n);
  auto t = peer::Clock::now();
  for (int i = 0; i < n; ++i) {
    fs.emplace_back(std::allocator_arg, stack_allocator(), [&c, i] { c.push(i); });
  }
  long sum = 0;
  int x;
  for (int i = 0; i < n; ++i) {
    c.pop(x);
    sum += x;
  }
  for (auto& f : fs) f.join();
  double ns = peer::ns_since(t) / n;
  if (sum != static_cast<long>(n) * (n - 1) / 2) peer::fail("spawn sum");
  return ns;
}

// n fibers in a chain, each forwarding 1 + what it receives from its right to its left channel.
// Every stage is parked on its pop before the clock starts (one yield lets them all run up to it
// on a single-threaded round_robin scheduler). Returns ms for one value to pass end to end.
double daisy(int n) {
  using Ch = fibers::unbuffered_channel<int>;
  std::vector<std::unique_ptr<Ch>> chans;
  chans.reserve(n + 1);
  for (int i = 0; i <= n; ++i) chans.push_back(std::make_unique<Ch>());
  std::vector<fibers::fiber> fs;
  fs.reserve(n + 1);
  for (int i = 0; i < n; ++i) {
    Ch* left = chans[i].get();
    Ch* right = chans[i + 1].get();
    fs.emplace_back(std::allocator_arg, stack_allocator(), [left, right] {
      int x;
      right->pop(x);
      left->push(x + 1);
    });
  }
  boost::this_fiber::yield();
  auto t = peer::Clock::now();
  fs.emplace_back(std::allocator_arg, stack_allocator(), [&] { chans[n]->push(0); });
  int v;
  chans[0]->pop(v);
  double ms = peer::ns_since(t) / 1e6;
  for (auto& f : fs) f.join();
  if (v != n) peer::fail("daisy value");
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  peer::Options o = peer::parse(argc, argv);
  std::printf("# Boost %d.%d Boost.Fiber, 1 thread, round_robin, 16 KiB fixedsize stacks\n",
              BOOST_VERSION / 100000, BOOST_VERSION / 100 % 1000);
  peer::run(o, "pingpong", "ns", [&] { return ping_pong(peer::scaled(o, 1000000)); });
  peer::run(o, "buffered128", "ns", [&] { return buffered(peer::scaled(o, 10000000), 128); });
  peer::run(o, "spawn100k", "ns", [&] { return spawn(100000); });
  peer::run(o, "daisy10k", "ms", [&] { return daisy(10000); });
}
