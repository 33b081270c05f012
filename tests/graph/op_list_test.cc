// The op list (chanflow/graph/op_list.h) against what the ops build: every entry names a function
// that builds a node whose op_kind_name is the entry's name (square and batched_matmul, the two
// sugar ops, build mul and matmul nodes), its kind token is the signature it was declared with,
// and every OpKind that an op builds has an entry. So an op added to OpKind without an entry, or
// an entry whose function builds something else, fails here.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "chanflow/graph.h"

namespace cf = chanflow;
using cf::DType;
using cf::Tensor;

namespace {

struct Entry {
  std::string kind;
  std::string name;
  std::string doc;
};

std::vector<Entry> entries() {
  std::vector<Entry> out;
#define CF_TEST_ENTRY(kind, name, doc) out.push_back({#kind, #name, doc});
  CHANFLOW_GRAPH_OPS(CF_TEST_ENTRY)
#undef CF_TEST_ENTRY
  return out;
}

// Builds one node with each entry's function, called through the signature its kind declares (a
// kind token that does not match the declaration fails to compile here).
std::map<std::string, cf::Node> build_each(cf::Graph& g) {
  const cf::Node a = g.input("a", DType::kFloat32, {2, 3, 3});
  const cf::Node b = g.input("b", DType::kFloat32, {2, 3, 3});
  std::map<std::string, cf::Node> out;
#define CF_TEST_CALL_binary(name) cf::name(a, b)
#define CF_TEST_CALL_unary(name) cf::name(a)
#define CF_TEST_CALL_reduce(name) cf::name(a, cf::Axes{1}, true)
#define CF_TEST_CALL_argreduce(name) cf::name(a, std::optional<int64_t>(1), false)
#define CF_TEST_CALL_axis(name) cf::name(a, int64_t{-1})
#define CF_TEST_CALL_shape(name) cf::name(a, cf::Shape{2, 3, 3})
#define CF_TEST_CALL_perm(name) cf::name(a, std::vector<int64_t>{0, 2, 1})
#define CF_TEST_CALL_dtype(name) cf::name(a, DType::kFloat64)
#define CF_TEST_BUILD(kind, name, doc) out[#name] = CF_TEST_CALL_##kind(name);
  CHANFLOW_GRAPH_OPS(CF_TEST_BUILD)
#undef CF_TEST_BUILD
#undef CF_TEST_CALL_binary
#undef CF_TEST_CALL_unary
#undef CF_TEST_CALL_reduce
#undef CF_TEST_CALL_argreduce
#undef CF_TEST_CALL_axis
#undef CF_TEST_CALL_shape
#undef CF_TEST_CALL_perm
#undef CF_TEST_CALL_dtype
  return out;
}

const std::set<std::string> kKinds = {"binary", "unary", "reduce", "argreduce",
                                      "axis",   "shape", "perm",   "dtype"};
// Entries that build a node of another op's kind.
const std::map<std::string, std::string> kSugar = {{"square", "mul"}, {"batched_matmul", "matmul"}};

}  // namespace

TEST(OpList, EveryEntryBuildsTheNodeItNames) {
  cf::Graph g;
  const std::map<std::string, cf::Node> built = build_each(g);
  const std::vector<Entry> list = entries();
  EXPECT_EQ(built.size(), list.size()) << "an op is listed twice";
  for (const Entry& e : list) {
    SCOPED_TRACE(e.name);
    EXPECT_TRUE(kKinds.count(e.kind)) << "unknown kind " << e.kind;
    EXPECT_FALSE(e.doc.empty());
    EXPECT_EQ(e.doc.find('\n'), std::string::npos);
    const auto sugar = kSugar.find(e.name);
    const std::string want = sugar != kSugar.end() ? sugar->second : e.name;
    EXPECT_EQ(cf::op_kind_name(built.at(e.name).op()), want);
  }
}

TEST(OpList, EveryOpKindHasAnEntry) {
  cf::Graph g;
  std::set<std::string> listed;
  for (const auto& [name, node] : build_each(g)) listed.insert(cf::op_kind_name(node.op()));
  // OpKind is a dense enum from kInput to kCustom; the kinds no op function builds are the
  // sources (inputs, constants) and Graph::apply's custom nodes.
  const std::set<cf::OpKind> not_ops = {cf::OpKind::kInput, cf::OpKind::kConstant,
                                        cf::OpKind::kCustom, cf::OpKind::kTable};
  for (int k = 0; k <= static_cast<int>(cf::OpKind::kCustom); ++k) {
    const auto op = static_cast<cf::OpKind>(k);
    if (not_ops.count(op)) continue;
    EXPECT_TRUE(listed.count(cf::op_kind_name(op)))
        << "OpKind " << k << " ('" << cf::op_kind_name(op) << "') has no entry in op_list.h";
  }
}
