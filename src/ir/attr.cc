// Attr: constructors, typed access and structural equality of attribute values.
#include "chanflow/ir/attr.h"

#include <array>
#include <cmath>
#include <sstream>
#include <type_traits>

#include "chanflow/core/error.h"
#include "chanflow/core/reflection.h"

namespace chanflow {
namespace {

constexpr std::array<std::string_view, 10> kAttrTypeNames = {
    "INT", "FLOAT", "STRING", "INTS", "FLOATS", "STRINGS", "BOOLEAN", "BOOLEANS", "BLOCK", "LONG"};

template <class T, class Box, class V>
Attr make_list(AttrType t, const std::vector<V>& values) {
  Array<Box> items;
  items.reserve(values.size());
  for (const auto& v : values) items.push_back(Box(static_cast<T>(v)));
  return Attr(make_object<AttrObj>(static_cast<int64_t>(t), items));
}

[[noreturn]] void wrong_type(const Attr& a, std::string_view wanted) {
  throw TypeError("attribute is " + std::string(attr_type_name(a.type())) + ", not " +
                  std::string(wanted));
}

template <class Box>
bool list_of(const ObjectRef& v) {
  const auto* arr = v.as<ArrayObj>();
  if (arr == nullptr) return false;
  for (const ObjectRef& e : arr->data) {
    if (e.as<typename Box::ContainerType>() == nullptr) return false;
  }
  return true;
}

// Values compare equal when they are equal or both NaN (a program with a NaN attribute equals
// itself after a round trip).
template <class V>
bool same_value(V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(a) && std::isnan(b)) return true;
  }
  return a == b;
}

template <class Box>
bool same_list(const ObjectRef& a, const ObjectRef& b) {
  const auto& x = a.as<ArrayObj>()->data;
  const auto& y = b.as<ArrayObj>()->data;
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!same_value(x[i].as<typename Box::ContainerType>()->value,
                    y[i].as<typename Box::ContainerType>()->value)) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string_view attr_type_name(AttrType t) noexcept {
  const auto i = static_cast<int64_t>(t);
  if (!is_valid_attr_type(i)) return "?";
  return kAttrTypeNames[static_cast<size_t>(i)];
}

void AttrObj::visit_fields(FieldVisitor& v) {
  v("type", &type);
  v("value", &value);
}

Attr Attr::i(int64_t v) { return Attr(make_object<AttrObj>(int64_t{0}, Int(v))); }
Attr Attr::f(double v) {
  return Attr(make_object<AttrObj>(int64_t{1}, Float(static_cast<float>(v))));
}
Attr Attr::s(std::string v) { return Attr(make_object<AttrObj>(int64_t{2}, String(std::move(v)))); }
Attr Attr::ints(const std::vector<int64_t>& v) {
  return make_list<int64_t, Int>(AttrType::kInts, v);
}
Attr Attr::floats(const std::vector<double>& v) {
  std::vector<double> rounded;
  rounded.reserve(v.size());
  for (double x : v) rounded.push_back(static_cast<float>(x));
  return make_list<double, Float>(AttrType::kFloats, rounded);
}
Attr Attr::strings(const std::vector<std::string>& v) {
  Array<String> items;
  for (const auto& s : v) items.push_back(String(s));
  return Attr(make_object<AttrObj>(static_cast<int64_t>(AttrType::kStrings), items));
}
Attr Attr::b(bool v) { return Attr(make_object<AttrObj>(int64_t{6}, Bool(v))); }
Attr Attr::bools(const std::vector<bool>& v) {
  Array<Bool> items;
  for (bool x : v) items.push_back(Bool(x));
  return Attr(make_object<AttrObj>(static_cast<int64_t>(AttrType::kBooleans), items));
}
Attr Attr::block(int64_t block_index) {
  return Attr(make_object<AttrObj>(int64_t{8}, Int(block_index)));
}
Attr Attr::l(int64_t v) { return Attr(make_object<AttrObj>(int64_t{9}, Int(v))); }

int64_t Attr::as_int() const {
  if ((type() != AttrType::kInt && type() != AttrType::kLong) || !well_formed()) {
    wrong_type(*this, "INT");
  }
  return get()->value.as<IntObj>()->value;
}
double Attr::as_float() const {
  if (type() != AttrType::kFloat || !well_formed()) wrong_type(*this, "FLOAT");
  return get()->value.as<FloatObj>()->value;
}
const std::string& Attr::as_string() const {
  if (type() != AttrType::kString || !well_formed()) wrong_type(*this, "STRING");
  return get()->value.as<StringObj>()->data;
}
std::vector<int64_t> Attr::as_ints() const {
  if (type() != AttrType::kInts || !well_formed()) wrong_type(*this, "INTS");
  std::vector<int64_t> out;
  for (const ObjectRef& e : get()->value.as<ArrayObj>()->data) out.push_back(e.as<IntObj>()->value);
  return out;
}
std::vector<double> Attr::as_floats() const {
  if (type() != AttrType::kFloats || !well_formed()) wrong_type(*this, "FLOATS");
  std::vector<double> out;
  for (const ObjectRef& e : get()->value.as<ArrayObj>()->data) {
    out.push_back(e.as<FloatObj>()->value);
  }
  return out;
}
std::vector<std::string> Attr::as_strings() const {
  if (type() != AttrType::kStrings || !well_formed()) wrong_type(*this, "STRINGS");
  std::vector<std::string> out;
  for (const ObjectRef& e : get()->value.as<ArrayObj>()->data) {
    out.push_back(e.as<StringObj>()->data);
  }
  return out;
}
bool Attr::as_bool() const {
  if (type() != AttrType::kBoolean || !well_formed()) wrong_type(*this, "BOOLEAN");
  return get()->value.as<BoolObj>()->value;
}
std::vector<bool> Attr::as_bools() const {
  if (type() != AttrType::kBooleans || !well_formed()) wrong_type(*this, "BOOLEANS");
  std::vector<bool> out;
  for (const ObjectRef& e : get()->value.as<ArrayObj>()->data)
    out.push_back(e.as<BoolObj>()->value);
  return out;
}
int64_t Attr::as_block() const {
  if (type() != AttrType::kBlock || !well_formed()) wrong_type(*this, "BLOCK");
  return get()->value.as<IntObj>()->value;
}

bool Attr::well_formed() const noexcept {
  if (!defined()) return false;
  const ObjectRef& v = get()->value;
  switch (static_cast<AttrType>(get()->type)) {
    case AttrType::kInt:
    case AttrType::kLong:
    case AttrType::kBlock:
      return v.as<IntObj>() != nullptr;
    case AttrType::kFloat:
      return v.as<FloatObj>() != nullptr;
    case AttrType::kString:
      return v.as<StringObj>() != nullptr;
    case AttrType::kBoolean:
      return v.as<BoolObj>() != nullptr;
    case AttrType::kInts:
      return list_of<Int>(v);
    case AttrType::kFloats:
      return list_of<Float>(v);
    case AttrType::kStrings:
      return list_of<String>(v);
    case AttrType::kBooleans:
      return list_of<Bool>(v);
  }
  return false;
}

bool Attr::equals(const Attr& other) const noexcept {
  if (!well_formed() || !other.well_formed() || get()->type != other->type) return false;
  const ObjectRef& a = get()->value;
  const ObjectRef& b = other->value;
  switch (type()) {
    case AttrType::kInt:
    case AttrType::kLong:
    case AttrType::kBlock:
      return a.as<IntObj>()->value == b.as<IntObj>()->value;
    case AttrType::kFloat:
      return same_value(a.as<FloatObj>()->value, b.as<FloatObj>()->value);
    case AttrType::kString:
      return a.as<StringObj>()->data == b.as<StringObj>()->data;
    case AttrType::kBoolean:
      return a.as<BoolObj>()->value == b.as<BoolObj>()->value;
    case AttrType::kInts:
      return same_list<Int>(a, b);
    case AttrType::kFloats:
      return same_list<Float>(a, b);
    case AttrType::kStrings: {
      const auto& x = a.as<ArrayObj>()->data;
      const auto& y = b.as<ArrayObj>()->data;
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (x[i].as<StringObj>()->data != y[i].as<StringObj>()->data) return false;
      }
      return true;
    }
    case AttrType::kBooleans:
      return same_list<Bool>(a, b);
  }
  return false;
}

std::string Attr::to_string() const {
  std::ostringstream os;
  os << attr_type_name(type()) << ' ';
  if (!well_formed()) return os.str() + "<ill-formed>";
  auto list = [&os](const auto& items, auto&& print) {
    os << '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) os << ", ";
      print(items[i]);
    }
    os << ']';
  };
  switch (type()) {
    case AttrType::kInt:
    case AttrType::kLong:
    case AttrType::kBlock:
      os << get()->value.as<IntObj>()->value;
      break;
    case AttrType::kFloat:
      os << as_float();
      break;
    case AttrType::kString:
      os << '"' << as_string() << '"';
      break;
    case AttrType::kBoolean:
      os << (as_bool() ? "true" : "false");
      break;
    case AttrType::kInts:
      list(as_ints(), [&os](int64_t v) { os << v; });
      break;
    case AttrType::kFloats:
      list(as_floats(), [&os](double v) { os << v; });
      break;
    case AttrType::kStrings:
      list(as_strings(), [&os](const std::string& v) { os << '"' << v << '"'; });
      break;
    case AttrType::kBooleans:
      list(as_bools(), [&os](bool v) { os << (v ? "true" : "false"); });
      break;
  }
  return os.str();
}

}  // namespace chanflow
