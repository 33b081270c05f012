// Uses the installed chanflow through the umbrella header only; prints "consumer ok" on success.
#include <chanflow/chanflow.h>

#include <iostream>

namespace cf = chanflow;

int main() {
  cf::Map<cf::String, cf::Array<cf::Int>> m;
  m.set("primes", cf::Array<cf::Int>{cf::Int(2), cf::Int(3), cf::Int(5)});
  cf::ObjectRef back = cf::from_json(cf::to_json(m));
  auto copy = cf::downcast<cf::Map<cf::String, cf::Array<cf::Int>>>(back);
  if (copy.at("primes")[2].value() != 5) return 1;
  std::cout << "consumer ok\n";
  return 0;
}
