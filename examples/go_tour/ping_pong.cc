// ping_pong — two green threads bat a ball back and forth over unbuffered channels (the Go talk
// "Advanced Go Concurrency Patterns"). Every hit is a rendezvous: a send hands the ball straight to
// the waiting receiver.
#include <chanflow/chanflow.h>

#include <chrono>
#include <iostream>
#include <string>

namespace cf = chanflow;

struct Ball {
  int hits = 0;
};

int main() {
  constexpr int kHits = 100000;
  auto table = cf::make_chan<Ball>();
  auto done = cf::make_chan<Ball>();

  auto player = [table, done](const std::string& name) {
    cf::go(name, [table, done] {
      for (;;) {
        std::optional<Ball> ball = table.recv();
        if (!ball) return;  // the table was closed: game over
        if (++ball->hits == kHits) {
          done.send(*ball);
          return;
        }
        table.send(*ball);
      }
    });
  };
  player("ping");
  player("pong");

  const auto t0 = std::chrono::steady_clock::now();
  table.send(Ball{});  // serve from main: blocking calls work on OS threads too
  Ball ball = *done.recv();
  table.close();  // the other player is parked in recv: closing wakes it
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "ping-pong: " << ball.hits << " hits in " << us / 1000 << " ms ("
            << us * 1000 / ball.hits << " ns per hit)\n";
  return ball.hits == kHits ? 0 : 1;
}
