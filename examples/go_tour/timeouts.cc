// timeouts — select with a timer (Go's `case <-time.After(d)`) and a context deadline for a whole
// conversation (Go's context.WithTimeout).
#include <chanflow/chanflow.h>

#include <chrono>
#include <iostream>

namespace cf = chanflow;
using namespace std::chrono_literals;

// Every server green thread, so main can wait for the late ones before it returns.
cf::WaitGroup g_servers;

// A server that answers each request after `delay` (into a buffered channel: a late answer that
// nobody reads does not block the server).
cf::Chan<int> slow_server(std::chrono::milliseconds delay, int answer) {
  auto reply = cf::make_chan<int>(1);
  g_servers.add(1);
  cf::go("server", [reply, delay, answer] {
    cf::sleep_for(delay);  // parks only this green thread
    reply.send(answer);
    g_servers.done();
  });
  return reply;
}

int main() {
  int failures = 0;

  // 1. A reply that arrives in time wins the select.
  auto fast = slow_server(5ms, 42);
  int got = 0;
  cf::select(cf::on_recv(fast, [&](std::optional<int> v) { got = *v; }),
             cf::on_recv(cf::after(2s), [&](auto) { got = -1; }));
  std::cout << "fast server: " << (got == 42 ? "answered 42" : "timed out") << "\n";
  failures += got == 42 ? 0 : 1;

  // 2. A reply that is too slow loses to the timer.
  auto slow = slow_server(300ms, 7);
  const auto t0 = cf::Clock::now();
  cf::select(cf::on_recv(slow, [&](std::optional<int> v) { got = *v; }),
             cf::on_recv(cf::after(20ms), [&](auto) { got = -1; }));
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(cf::Clock::now() - t0);
  std::cout << "slow server: " << (got == -1 ? "timed out" : "answered") << " after "
            << waited.count() << " ms\n";
  failures += got == -1 ? 0 : 1;

  // 3. A deadline for a whole conversation: the context's done() channel closes at the deadline.
  cf::Context ctx = cf::with_timeout(cf::background(), 500ms);
  int answered = 0;
  for (bool open = true; open;) {
    auto reply = slow_server(20ms, 1);
    cf::select(cf::on_recv(reply, [&](std::optional<int>) { ++answered; }),
               cf::on_recv(ctx.done(), [&](auto) { open = false; }));
  }
  bool deadline = false;
  try {
    std::rethrow_exception(ctx.err());
  } catch (const cf::DeadlineExceededError& e) {
    deadline = true;
    std::cout << "conversation: " << answered << " answers before the deadline (" << e.what()
              << ")\n";
  }
  failures += deadline && answered >= 1 ? 0 : 1;
  g_servers.wait();  // the servers that lost their race still finish: nothing is left running
  return failures == 0 ? 0 : 1;
}
