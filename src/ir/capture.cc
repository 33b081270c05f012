// Which variables a block (and its nested blocks) uses from enclosing blocks.
#include <algorithm>
#include <unordered_map>

#include "capture_impl.h"
#include "chanflow/core/error.h"
#include "chanflow/ir/select_case.h"

namespace chanflow {
namespace ir_detail {
namespace {

class Collector {
 public:
  void add(const std::string& name, bool write) {
    auto& list = write ? out_.writes : out_.reads;
    auto& seen = write ? seen_writes_ : seen_reads_;
    if (seen.insert(name).second) list.push_back(name);
    if (seen_uses_.insert(name).second) out_.uses.push_back(name);
  }
  BlockCaptures take() { return std::move(out_); }

 private:
  BlockCaptures out_;
  std::unordered_set<std::string> seen_reads_, seen_writes_, seen_uses_;
};

}  // namespace

BlockCaptures compute_captures(const std::vector<CaptureBlockView>& blocks, int64_t root,
                               int64_t scan_from) {
  const auto n = static_cast<int64_t>(blocks.size());
  const int64_t first = std::clamp<int64_t>(scan_from, 0, n);
  // member[b - first]: b's parent chain reaches root (within n steps, so cycles end).
  std::vector<char> member(static_cast<size_t>(n - first), 0);
  for (int64_t b = first; b < n; ++b) {
    int64_t cur = b;
    for (int64_t steps = 0; cur >= 0 && cur < n && steps <= n; ++steps) {
      if (cur == root) {
        member[static_cast<size_t>(b - first)] = 1;
        break;
      }
      cur = blocks[static_cast<size_t>(cur)].parent;
    }
  }
  auto in_subtree = [&](int64_t b) { return b >= first && member[static_cast<size_t>(b - first)]; };
  // Whether `name`, used in block `b`, resolves to a declaration outside the subtree.
  auto is_outer = [&](int64_t b, const std::string& name) {
    int64_t cur = b;
    for (int64_t steps = 0; cur >= 0 && cur < n && steps <= n; ++steps) {
      const auto& view = blocks[static_cast<size_t>(cur)];
      if (view.declared != nullptr && view.declared->count(name) != 0) {
        return !in_subtree(cur);
      }
      cur = view.parent;
    }
    return false;  // undeclared: the verifier's business
  };
  Collector c;
  auto visit_args = [&](int64_t b, const ArgumentMap& m, bool write) {
    if (!m.defined()) return;
    for (const MapObj::Entry& e : m->entries) {
      const auto* names = e.value.as<ArrayObj>();
      if (names == nullptr) continue;
      for (const ObjectRef& nref : names->data) {
        const auto* s = nref.as<StringObj>();
        if (s != nullptr && is_outer(b, s->data)) c.add(s->data, write);
      }
    }
  };
  for (int64_t b = first; b < n; ++b) {
    if (!in_subtree(b) || blocks[static_cast<size_t>(b)].ops == nullptr) {
      continue;
    }
    for (const OpDesc& op : *blocks[static_cast<size_t>(b)].ops) {
      if (!op.defined()) continue;
      visit_args(b, op->inputs, false);
      visit_args(b, op->outputs, true);
      if (op->type != "select") continue;
      auto cases = op.attr("cases");
      if (!cases || cases->type() != AttrType::kStrings || !cases->well_formed()) continue;
      for (const std::string& text : cases->as_strings()) {
        SelectCaseAttr sc;
        try {
          sc = parse_select_case(text);
        } catch (const ProgramError&) {
          continue;
        }
        if (sc.kind == SelectCaseKind::kDefault) continue;
        if (is_outer(b, sc.channel)) c.add(sc.channel, false);
        if (is_outer(b, sc.var)) c.add(sc.var, sc.kind == SelectCaseKind::kRecv);
      }
    }
  }
  return c.take();
}

}  // namespace ir_detail

BlockCaptures captured_variables(const Program& program, int64_t block) {
  const auto n = static_cast<int64_t>(program.num_blocks());
  if (block < 0 || block >= n) {
    throw ProgramError("captured_variables: the program has no block " + std::to_string(block),
                       static_cast<int>(block));
  }
  std::vector<std::unordered_set<std::string>> declared(static_cast<size_t>(n));
  std::vector<std::vector<OpDesc>> ops(static_cast<size_t>(n));
  std::vector<ir_detail::CaptureBlockView> views(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const auto* b = program->blocks->data[static_cast<size_t>(i)].as<BlockObj>();
    auto& view = views[static_cast<size_t>(i)];
    if (b == nullptr) continue;
    view.parent = b->parent_idx;
    if (b->vars.defined()) {
      for (const ObjectRef& v : b->vars->data) {
        if (const auto* vd = v.as<VarDescObj>()) declared[static_cast<size_t>(i)].insert(vd->name);
      }
    }
    if (b->ops.defined()) {
      for (const ObjectRef& o : b->ops->data) {
        if (o.as<OpDescObj>() != nullptr) {
          ops[static_cast<size_t>(i)].push_back(OpDesc(detail::ObjectUnsafe::ptr(o)));
        }
      }
    }
    view.declared = &declared[static_cast<size_t>(i)];
    view.ops = &ops[static_cast<size_t>(i)];
  }
  // A cyclic chain from `block` is reported rather than analysed.
  int64_t cur = block;
  for (int64_t steps = 0; cur != -1; ++steps) {
    if (cur < 0 || cur >= n || steps > n) {
      throw ProgramError("captured_variables: block " + std::to_string(block) +
                             " has a broken or cyclic parent chain",
                         static_cast<int>(block));
    }
    cur = views[static_cast<size_t>(cur)].parent;
  }
  return ir_detail::compute_captures(views, block);
}

}  // namespace chanflow
