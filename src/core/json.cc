// JSON save/load of object graphs. Saving walks the graph depth-first with an explicit stack (deep
// graphs such as long IR chains must not overflow the C++ stack), emitting children before parents
// so every reference points backwards; loading then builds nodes in order.
#include "chanflow/core/json.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "chanflow/core/array.h"
#include "chanflow/core/boxed.h"
#include "chanflow/core/map.h"
#include "chanflow/core/reflection.h"
#include "chanflow/core/string.h"
#include "chanflow/core/type_registry.h"

namespace chanflow {
namespace {

using Json = nlohmann::json;
constexpr const char* kFormat = "chanflow.json";
constexpr int kVersion = 1;

Json encode_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

// Collects an object's children (the handles it holds), in a stable order.
class ChildCollector final : public FieldVisitor {
 public:
  explicit ChildCollector(std::vector<const Object*>* out) : out_(out) {}
  void visit(std::string_view, int64_t*) override {}
  void visit(std::string_view, double*) override {}
  void visit(std::string_view, bool*) override {}
  void visit(std::string_view, std::string*) override {}
  void visit(std::string_view, ObjectRef* value, const RefFieldType&) override {
    if (value->defined()) out_->push_back(value->get());
  }

 private:
  std::vector<const Object*>* out_;
};

class Saver {
 public:
  std::string save(const ObjectRef& root) {
    Json doc;
    doc["format"] = kFormat;
    doc["version"] = kVersion;
    doc["root"] = root.defined() ? Json(visit_graph(root.get())) : Json(nullptr);
    doc["nodes"] = std::move(nodes_);
    try {
      return doc.dump();
    } catch (const Json::type_error& e) {  // a String that is not valid UTF-8
      throw Error(std::string("to_json: a string is not valid UTF-8 (JSON holds Unicode text "
                              "only): ") +
                  e.what());
    }
  }

 private:
  struct Frame {
    const Object* obj;
    std::vector<const Object*> children;
    size_t next = 0;
  };

  int64_t visit_graph(const Object* root) {
    std::vector<Frame> stack;
    std::unordered_set<const Object*> in_progress;
    auto push = [&](const Object* obj) {
      in_progress.insert(obj);
      stack.push_back(Frame{obj, children_of(obj)});
    };
    push(root);
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next < top.children.size()) {
        const Object* child = top.children[top.next++];
        if (index_.count(child) != 0) continue;
        if (in_progress.count(child) != 0) {
          CHANFLOW_THROW(Error) << "to_json: the object graph has a cycle through an object of "
                                   "type '"
                                << child->type_key() << "'";
        }
        push(child);  // invalidates `top`
        continue;
      }
      const Object* obj = top.obj;
      in_progress.erase(obj);
      stack.pop_back();
      index_[obj] = static_cast<int64_t>(nodes_.size());
      nodes_.push_back(encode(obj));
    }
    return index_.at(root);
  }

  static std::vector<const Object*> children_of(const Object* obj) {
    std::vector<const Object*> out;
    switch (obj->type_index()) {
      case TypeIndex::kString:
      case TypeIndex::kInt:
      case TypeIndex::kFloat:
      case TypeIndex::kBool:
        return out;
      case TypeIndex::kArray:
        for (const ObjectRef& e : static_cast<const ArrayObj*>(obj)->data) {
          if (e.defined()) out.push_back(e.get());
        }
        return out;
      case TypeIndex::kMap:
        for (const auto& e : static_cast<const MapObj*>(obj)->entries) {
          if (e.key.defined()) out.push_back(e.key.get());
          if (e.value.defined()) out.push_back(e.value.get());
        }
        return out;
      default: {
        auto info = reflection_or_throw(obj);
        ChildCollector collector(&out);
        info.visit_fields(const_cast<Object*>(obj), collector);
        return out;
      }
    }
  }

  static ReflectionInfo reflection_or_throw(const Object* obj) {
    auto info = find_reflection(obj->type_index());
    if (!info) {
      CHANFLOW_THROW(Error) << "to_json: type '" << obj->type_key()
                            << "' has no reflection (declare visit_fields and register it with "
                               "CHANFLOW_REGISTER_REFLECTION)";
    }
    return *info;
  }

  Json ref(const ObjectRef& r) const {
    return r.defined() ? Json(index_.at(r.get())) : Json(nullptr);
  }

  class FieldWriter final : public FieldVisitor {
   public:
    FieldWriter(const Saver* saver, Json* fields) : saver_(saver), fields_(fields) {}
    void visit(std::string_view name, int64_t* v) override { (*fields_)[std::string(name)] = *v; }
    void visit(std::string_view name, double* v) override {
      (*fields_)[std::string(name)] = encode_double(*v);
    }
    void visit(std::string_view name, bool* v) override { (*fields_)[std::string(name)] = *v; }
    void visit(std::string_view name, std::string* v) override {
      (*fields_)[std::string(name)] = *v;
    }
    void visit(std::string_view name, ObjectRef* v, const RefFieldType&) override {
      (*fields_)[std::string(name)] = saver_->ref(*v);
    }

   private:
    const Saver* saver_;
    Json* fields_;
  };

  Json encode(const Object* obj) const {
    Json node;
    node["type"] = std::string(obj->type_key());
    switch (obj->type_index()) {
      case TypeIndex::kString:
        node["value"] = static_cast<const StringObj*>(obj)->data;
        break;
      case TypeIndex::kInt:
        node["value"] = static_cast<const IntObj*>(obj)->value;
        break;
      case TypeIndex::kFloat:
        node["value"] = encode_double(static_cast<const FloatObj*>(obj)->value);
        break;
      case TypeIndex::kBool:
        node["value"] = static_cast<const BoolObj*>(obj)->value;
        break;
      case TypeIndex::kArray: {
        Json items = Json::array();
        for (const ObjectRef& e : static_cast<const ArrayObj*>(obj)->data) items.push_back(ref(e));
        node["items"] = std::move(items);
        break;
      }
      case TypeIndex::kMap: {
        Json keys = Json::array();
        Json values = Json::array();
        for (const auto& e : static_cast<const MapObj*>(obj)->entries) {
          keys.push_back(ref(e.key));
          values.push_back(ref(e.value));
        }
        node["keys"] = std::move(keys);
        node["values"] = std::move(values);
        break;
      }
      default: {
        Json fields = Json::object();
        FieldWriter writer(this, &fields);
        reflection_or_throw(obj).visit_fields(const_cast<Object*>(obj), writer);
        node["fields"] = std::move(fields);
        break;
      }
    }
    return node;
  }

  std::unordered_map<const Object*, int64_t> index_;
  Json nodes_ = Json::array();
};

class Loader {
 public:
  ObjectRef load(std::string_view text) {
    Json doc;
    try {
      doc = Json::parse(text.begin(), text.end());
    } catch (const Json::parse_error& e) {
      CHANFLOW_THROW(Error) << "from_json: malformed JSON: " << e.what();
    }
    if (!doc.is_object() || !doc.contains("format") || doc["format"] != kFormat) {
      CHANFLOW_THROW(Error) << R"(from_json: not a chanflow object graph (missing "format": ")"
                            << kFormat << R"("))";
    }
    if (!doc.contains("version") || doc["version"] != kVersion) {
      CHANFLOW_THROW(Error) << "from_json: unsupported version "
                            << doc.value("version", Json()).dump() << " (this build reads version "
                            << kVersion << ")";
    }
    if (!doc.contains("nodes") || !doc["nodes"].is_array()) {
      CHANFLOW_THROW(Error) << "from_json: \"nodes\" must be an array";
    }
    const Json& nodes = doc["nodes"];
    built_.reserve(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      current_ = i;
      built_.push_back(decode(nodes[i]));
    }
    current_ = built_.size();
    if (!doc.contains("root")) CHANFLOW_THROW(Error) << "from_json: missing \"root\"";
    return ref(doc["root"], "root");
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    CHANFLOW_THROW(Error) << "from_json: node " << current_ << ": " << problem;
    std::abort();  // unreachable: the thrower throws
  }

  ObjectRef ref(const Json& j, const std::string& what) const {
    if (j.is_null()) return {};
    if (!j.is_number_integer()) fail(what + " must be a node index or null");
    const int64_t idx = j.get<int64_t>();
    if (idx < 0 || static_cast<size_t>(idx) >= current_) {
      fail(what + " refers to node " + std::to_string(idx) +
           ", which is not defined before it (references must point backwards; cycles are not "
           "allowed)");
    }
    return built_[static_cast<size_t>(idx)];
  }

  double to_double(const Json& j, const std::string& what) const {
    if (j.is_number()) return j.get<double>();
    if (j.is_string()) {
      const auto& s = j.get_ref<const std::string&>();
      if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
      if (s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-inf") return -std::numeric_limits<double>::infinity();
    }
    fail(what + " must be a number");
  }

  const Json& member(const Json& node, const char* name) const {
    if (!node.contains(name)) fail(std::string("missing \"") + name + "\"");
    return node[name];
  }

  class FieldReader final : public FieldVisitor {
   public:
    FieldReader(const Loader* loader, const Json* fields, std::string type)
        : loader_(loader), fields_(fields), type_(std::move(type)) {}
    void visit(std::string_view name, int64_t* v) override {
      const Json& j = get(name);
      if (!j.is_number_integer()) bad(name, "an integer");
      *v = j.get<int64_t>();
    }
    void visit(std::string_view name, double* v) override {
      *v = loader_->to_double(get(name), where(name));
    }
    void visit(std::string_view name, bool* v) override {
      const Json& j = get(name);
      if (!j.is_boolean()) bad(name, "a boolean");
      *v = j.get<bool>();
    }
    void visit(std::string_view name, std::string* v) override {
      const Json& j = get(name);
      if (!j.is_string()) bad(name, "a string");
      *v = j.get<std::string>();
    }
    void visit(std::string_view name, ObjectRef* v, const RefFieldType& type) override {
      ObjectRef value = loader_->ref(get(name), where(name));
      if (!type.accepts(value)) {
        loader_->fail(where(name) + " must be a " + type.name() + ", got '" +
                      std::string(value->type_key()) + "'");
      }
      *v = std::move(value);
    }
    size_t seen() const { return seen_; }

   private:
    std::string where(std::string_view name) const {
      return "field '" + std::string(name) + "' of '" + type_ + "'";
    }
    const Json& get(std::string_view name) {
      auto it = fields_->find(std::string(name));
      if (it == fields_->end()) loader_->fail("missing " + where(name));
      ++seen_;
      return *it;
    }
    [[noreturn]] void bad(std::string_view name, const char* want) const {
      loader_->fail(where(name) + " must be " + want);
    }
    const Loader* loader_;
    const Json* fields_;
    std::string type_;
    size_t seen_ = 0;
  };

  ObjectRef decode(const Json& node) {
    if (!node.is_object() || !node.contains("type") || !node["type"].is_string()) {
      fail("must be an object with a string \"type\"");
    }
    const std::string type = node["type"].get<std::string>();
    if (type == "String") {
      const Json& v = member(node, "value");
      if (!v.is_string()) fail("String value must be a string");
      return String(v.get<std::string>());
    }
    if (type == "Int") {
      const Json& v = member(node, "value");
      if (!v.is_number_integer()) fail("Int value must be an integer");
      return Int(v.get<int64_t>());
    }
    if (type == "Float") return Float(to_double(member(node, "value"), "Float value"));
    if (type == "Bool") {
      const Json& v = member(node, "value");
      if (!v.is_boolean()) fail("Bool value must be a boolean");
      return Bool(v.get<bool>());
    }
    if (type == "Array") {
      const Json& items = member(node, "items");
      if (!items.is_array()) fail("Array items must be an array");
      Array<ObjectRef> a;
      a.reserve(items.size());
      for (const Json& item : items) a.push_back(ref(item, "Array item"));
      return a;
    }
    if (type == "Map") {
      const Json& keys = member(node, "keys");
      const Json& values = member(node, "values");
      if (!keys.is_array() || !values.is_array() || keys.size() != values.size()) {
        fail("Map keys and values must be arrays of equal length");
      }
      Map<ObjectRef, ObjectRef> m;
      for (size_t i = 0; i < keys.size(); ++i) {
        m.set(ref(keys[i], "Map key"), ref(values[i], "Map value"));
      }
      if (m.size() != keys.size()) fail("Map has duplicate keys");
      return m;
    }
    auto index = TypeRegistry::global().index_of(type);
    std::optional<ReflectionInfo> info;
    if (index) info = find_reflection(*index);
    if (!info) {
      fail("unknown type '" + type +
           "' (not registered, or registered without reflection in this program)");
    }
    const Json& fields = member(node, "fields");
    if (!fields.is_object()) fail("\"fields\" must be an object");
    ObjectRef obj = info->create();
    FieldReader reader(this, &fields, type);
    info->visit_fields(const_cast<Object*>(obj.get()), reader);
    if (reader.seen() != fields.size()) fail("'" + type + "' has fields it does not declare");
    return obj;
  }

  std::vector<ObjectRef> built_;
  size_t current_ = 0;
};

}  // namespace

std::string to_json(const ObjectRef& root) { return Saver().save(root); }

ObjectRef from_json(std::string_view text) { return Loader().load(text); }

}  // namespace chanflow
