// JSON round trips of object graphs (TVM's SaveJSON/LoadJSON behaviour): shared references stay
// shared, reflected fields survive, malformed input gets a clear error.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "chanflow/core.h"

namespace cf = chanflow;

namespace {
class NodeObj : public cf::Object {
 public:
  int64_t id = 0;
  double weight = 0;
  bool flag = false;
  std::string label;
  cf::ObjectRef left;
  cf::ObjectRef right;
  cf::Array<cf::Int> tags;
  void visit_fields(cf::FieldVisitor& v) {
    v("id", &id);
    v("weight", &weight);
    v("flag", &flag);
    v("label", &label);
    v("left", &left);
    v("right", &right);
    v("tags", &tags);
  }
  static constexpr const char* kTypeKey = "test.Node";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(NodeObj, cf::Object);
};
CHANFLOW_REGISTER_REFLECTION(NodeObj);

cf::ObjectPtr<NodeObj> node(int64_t id, cf::ObjectRef l = {}, cf::ObjectRef r = {}) {
  auto n = cf::make_object<NodeObj>();
  n->id = id;
  n->weight = static_cast<double>(id) / 4;
  n->label = "n" + std::to_string(id);
  n->left = std::move(l);
  n->right = std::move(r);
  n->tags = cf::Array<cf::Int>{cf::Int(id), cf::Int(id * 2)};
  return n;
}
}  // namespace

TEST(TvmJson, RoundTripKeepsSharedReferencesShared) {
  // A diamond: root -> (a, b), a -> shared, b -> shared.
  auto shared = node(1);
  auto root = node(0, node(2, shared), node(3, cf::ObjectRef(), shared));
  const std::string text = cf::to_json(cf::ObjectRef(root));
  cf::ObjectRef back = cf::from_json(text);
  const auto* r = back.as<NodeObj>();
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->id, 0);
  const auto* a = r->left.as<NodeObj>();
  const auto* b = r->right.as<NodeObj>();
  ASSERT_TRUE(a != nullptr && b != nullptr);
  EXPECT_EQ(a->label, "n2");
  EXPECT_DOUBLE_EQ(a->weight, 0.5);
  EXPECT_FALSE(b->left.defined());
  EXPECT_TRUE(a->left.same_as(b->right)) << "one object saved once and loaded once";
  EXPECT_EQ(a->left.as<NodeObj>()->tags[1].value(), 2);
  EXPECT_EQ(cf::to_json(back), text) << "save(load(save(x))) == save(x)";
}

TEST(TvmJson, ContainersAndSpecialDoubles) {
  cf::Map<cf::String, cf::ObjectRef> m;
  m.set("pi", cf::Float(3.25));
  m.set("nan", cf::Float(std::nan("")));
  m.set("inf", cf::Float(-INFINITY));
  m.set("list",
        cf::Array<cf::ObjectRef>{cf::Int(1), cf::String("two"), cf::Bool(true), cf::ObjectRef()});
  cf::ObjectRef back = cf::from_json(cf::to_json(m));
  auto mm = cf::downcast<cf::Map<cf::String, cf::ObjectRef>>(back);
  EXPECT_EQ(cf::downcast<cf::Float>(*mm.get("pi")).value(), 3.25);
  EXPECT_TRUE(std::isnan(cf::downcast<cf::Float>(*mm.get("nan")).value()));
  EXPECT_EQ(cf::downcast<cf::Float>(*mm.get("inf")).value(), -INFINITY);
  auto list = cf::downcast<cf::Array<cf::ObjectRef>>(*mm.get("list"));
  ASSERT_EQ(list.size(), 4u);
  EXPECT_EQ(cf::downcast<cf::String>(list[1]), "two");
  EXPECT_FALSE(list[3].defined());
  EXPECT_FALSE(cf::from_json(cf::to_json(cf::ObjectRef())).defined());
}

TEST(TvmJson, MalformedInputGivesClearErrors) {
  auto expect_error = [](const std::string& text, const std::string& needle) {
    try {
      (void)cf::from_json(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const cf::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
          << "message '" << e.what() << "' lacks '" << needle << "'";
    }
  };
  const std::string head = R"({"format":"chanflow.json","version":1,)";
  expect_error("{", "malformed JSON");
  expect_error("[]", "not a chanflow object graph");
  expect_error(R"({"format":"chanflow.json","version":9,"root":null,"nodes":[]})", "version");
  expect_error(head + R"("root":0,"nodes":[{"type":"Nope","fields":{}}]})", "unknown type 'Nope'");
  expect_error(head + R"("root":0,"nodes":[{"type":"Int","value":"x"}]})", "Int value");
  expect_error(head + R"("root":0,"nodes":[{"type":"Array","items":[0]}]})", "not defined before");
  expect_error(head + R"("root":5,"nodes":[]})", "root refers to node 5");
  // A reflected node with a missing field, an ill-typed field, an extra field.
  const std::string fields =
      R"("id":1,"weight":2,"flag":true,"label":"x","left":null,"right":null)";
  expect_error(head + R"("root":0,"nodes":[{"type":"test.Node","fields":{)" + fields + "}}]}",
               "missing field 'tags'");
  expect_error(head + R"("root":1,"nodes":[{"type":"String","value":"s"},)" +
                   R"({"type":"test.Node","fields":{)" + fields + R"(,"tags":0}}]})",
               "must be a Array<Int>");
  expect_error(head + R"("root":0,"nodes":[{"type":"test.Node","fields":{)" + fields +
                   R"(,"tags":null,"extra":1}}]})",
               "fields it does not declare");
}

TEST(TvmJson, CyclesAreRejected) {
  auto a = cf::make_object<NodeObj>();
  auto b = cf::make_object<NodeObj>();
  a->left = cf::ObjectRef(b);
  b->left = cf::ObjectRef(a);
  EXPECT_THROW((void)cf::to_json(cf::ObjectRef(a)), cf::Error);
  b->left = cf::ObjectRef();  // break the cycle so both are freed
}

// JSON holds Unicode text only: a String with bytes that are not UTF-8 is an Error, not an escaped
// library exception (found by the ir fuzzer through a program name).
TEST(TvmJson, NonUtf8StringIsAnError) {
  try {
    (void)cf::to_json(cf::String(std::string("bad\xff", 4)));
    ADD_FAILURE() << "accepted";
  } catch (const cf::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not valid UTF-8"), std::string::npos) << e.what();
  }
}

TEST(TvmJson, DeepChainsDoNotOverflowTheStack) {
  cf::ObjectRef head;
  for (int i = 0; i < 100000; ++i) head = cf::ObjectRef(node(i, head));
  cf::ObjectRef back = cf::from_json(cf::to_json(head));
  int depth = 0;
  for (const auto* n = back.as<NodeObj>(); n != nullptr; n = n->left.as<NodeObj>()) ++depth;
  EXPECT_EQ(depth, 100000);
  // Release iteratively: a 100k-deep recursive destructor chain would overflow the stack.
  for (cf::ObjectRef* list : {&head, &back}) {
    while (list->defined()) {
      cf::ObjectRef next = list->as<NodeObj>()->left;
      const_cast<NodeObj*>(list->as<NodeObj>())->left = cf::ObjectRef();
      *list = next;
    }
  }
}
