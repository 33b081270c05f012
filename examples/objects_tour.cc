// objects_tour — a tour of chanflow's object system: one ref-counted, type-indexed protocol for
// every value, shared containers, runtime type checks without RTTI, pools and JSON.
//
//   build/release/examples/objects_tour
#include <chanflow/chanflow.h>

#include <chrono>
#include <iostream>
#include <string>

namespace cf = chanflow;

// A user-defined IR-like node: declared once, it gets type checks, containers and JSON for free.
class LayerObj : public cf::Object {
 public:
  std::string name;
  int64_t units = 0;
  double dropout = 0;
  cf::ObjectRef input;  // the previous layer (or null)
  void visit_fields(cf::FieldVisitor& v) {
    v("name", &name);
    v("units", &units);
    v("dropout", &dropout);
    v("input", &input);
  }
  static constexpr const char* kTypeKey = "example.Layer";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(LayerObj, cf::Object);
};
CHANFLOW_REGISTER_REFLECTION(LayerObj);

int main() {
  // 1. Build a small model description out of objects.
  cf::ObjectRef prev;
  cf::Array<cf::ObjectRef> layers;
  for (auto [name, units] : {std::pair{"embed", 64}, {"hidden", 32}, {"logits", 10}}) {
    auto layer = cf::make_object<LayerObj>();
    layer->name = name;
    layer->units = units;
    layer->dropout = units == 10 ? 0.0 : 0.1;
    layer->input = prev;
    prev = cf::ObjectRef(layer);
    layers.push_back(prev);
  }
  std::cout << "built " << layers.size() << " layers; the last one has type '"
            << layers.back()->type_key() << "' (index " << layers.back()->type_index() << ")\n";

  // 2. Runtime type checks: one compare for final types, no RTTI.
  int count = 0;
  for (cf::ObjectRef l : layers) count += l.as<LayerObj>() != nullptr ? 1 : 0;
  std::cout << "is_instance<LayerObj> holds for " << count << " of them\n";

  // 3. Copy-on-write containers shared by every kind of value.
  cf::Map<cf::String, cf::ObjectRef> model{{"layers", layers}, {"lr", cf::Float(0.05)}};
  cf::Map<cf::String, cf::ObjectRef> variant = model;  // shares the node
  variant.set("lr", cf::Float(0.01));                  // copies, the original is untouched
  std::cout << "model lr=" << cf::downcast<cf::Float>(*model.get("lr")).value()
            << ", variant lr=" << cf::downcast<cf::Float>(*variant.get("lr")).value() << "\n";

  // 4. JSON through reflection: shared references stay shared.
  const std::string json = cf::to_json(model);
  auto loaded = cf::downcast<cf::Map<cf::String, cf::ObjectRef>>(cf::from_json(json));
  auto loaded_layers = cf::downcast<cf::Array<cf::ObjectRef>>(*loaded.get("layers"));
  const bool shared = loaded_layers[2].as<LayerObj>()->input.same_as(loaded_layers[1]);
  std::cout << "JSON: " << json.size() << " bytes; after loading, logits.input is hidden: "
            << (shared ? "yes (shared, not copied)" : "NO") << "\n";

  // 5. An object pool: released objects go back to the pool, not to malloc.
  cf::ObjectPool<LayerObj> pool;
  const auto t0 = std::chrono::steady_clock::now();
  constexpr int kRounds = 1000000;
  for (int i = 0; i < kRounds; ++i) {
    auto l = pool.make();
    l->units = i;
  }
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
      kRounds;
  std::cout << "pool: " << kRounds << " make+release cycles, " << ns << " ns each, "
            << pool.cached() << " chunk(s) cached\n";

  // 6. Errors are typed and say what and where.
  try {
    (void)cf::downcast<cf::String>(layers[0]);
  } catch (const cf::TypeError& e) {
    std::cout << "TypeError: " << e.what() << "\n";
  }
  return shared && count == 3 ? 0 : 1;
}
