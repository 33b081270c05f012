// fan_in_select — Go's "boring" generators multiplexed with select (Rob Pike, "Go Concurrency
// Patterns"): two producers, one consumer that takes whichever is ready, and a quit channel.
#include <chanflow/chanflow.h>

#include <iostream>
#include <map>
#include <string>

namespace cf = chanflow;

// A generator: a green thread that sends messages until told to quit, then says goodbye.
cf::Chan<std::string> boring(const std::string& name, cf::Chan<cf::Unit> quit) {
  auto out = cf::make_chan<std::string>();
  cf::go(name, [name, out, quit] {
    for (int i = 0;; ++i) {
      bool stop = false;
      cf::select(cf::on_send(out, name + " " + std::to_string(i), [] {}),
                 cf::on_recv(quit, [&](std::optional<cf::Unit>) { stop = true; }));
      if (stop) {
        out.close();
        return;
      }
    }
  });
  return out;
}

int main() {
  auto quit = cf::make_chan<cf::Unit>();
  auto joe = boring("joe", quit);
  auto ann = boring("ann", quit);

  std::map<std::string, int> seen;
  constexpr int kMessages = 2000;
  for (int i = 0; i < kMessages; ++i) {
    // Whichever generator is ready; among ready ones select picks uniformly at random.
    cf::select(cf::on_recv(joe, [&](std::optional<std::string> m) { ++seen[m->substr(0, 3)]; }),
               cf::on_recv(ann, [&](std::optional<std::string> m) { ++seen[m->substr(0, 3)]; }));
  }
  quit.close();  // a closed channel is ready in every select: both generators stop
  for (auto& ch : {joe, ann}) {
    while (ch.recv()) {  // drain until each says goodbye by closing
    }
  }
  std::cout << "fan-in: joe " << seen["joe"] << ", ann " << seen["ann"] << " of " << kMessages
            << " messages\n";
  // select picks uniformly among the cases ready at that moment, but after each receive the
  // generator just served must be scheduled again before it offers its next message, so the shares
  // depend on how fast each generator's worker gets back to it (they are often near 50/50, and can
  // be 10/90 when one worker sleeps while the other spins). What must hold: every message arrives
  // and both generators were heard from.
  return seen["joe"] + seen["ann"] == kMessages && seen["joe"] > 0 && seen["ann"] > 0 ? 0 : 1;
}
