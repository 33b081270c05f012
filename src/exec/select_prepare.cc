// select_prepare.cc — parses a select op's `cases` attribute into PreparedCases.
#include "chanflow/ir/select_case.h"
#include "kernel.h"

namespace chanflow::exec_detail {

void prep_select_cases(PrepareCtx& c) {
  for (const std::string& text : c.attr("cases").as_strings()) {
    SelectCaseAttr parsed = parse_select_case(text);
    PreparedCase pc;
    pc.index = parsed.index;
    pc.kind = static_cast<PreparedCase::Kind>(static_cast<int32_t>(parsed.kind));
    if (pc.kind != PreparedCase::kDefault) {
      pc.channel = c.resolve(parsed.channel);
      pc.var = c.resolve(parsed.var);
      pc.channel_name = parsed.channel;
      pc.var_name = parsed.var;
      pc.decl = find_decl(c, parsed.var);
    }
    c.op().cases.push_back(std::move(pc));
  }
}

}  // namespace chanflow::exec_detail
