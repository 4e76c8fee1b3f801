#include "layouts/layout.h"

namespace seam {

std::string_view token_axis_name(TokenAxis axis) {
  switch (axis) {
    case TokenAxis::ATTN_DP: return "ATTN_DP";
    case TokenAxis::ATTN_CP: return "ATTN_CP";
    case TokenAxis::ATTN_TP_SCATTER: return "ATTN_TP_SCATTER";
  }
  return "?";
}

std::string Layout::to_string() const {
  std::string out = "{";
  for (TokenAxis a : {TokenAxis::ATTN_DP, TokenAxis::ATTN_CP, TokenAxis::ATTN_TP_SCATTER}) {
    if (!has(a)) continue;
    if (out.size() > 1) out += ',';
    out += token_axis_name(a);
  }
  return out + "}";
}

std::string_view sum_group_name(SumGroup group) {
  switch (group) {
    case SumGroup::ATTN_TP: return "ATTN_TP";
    case SumGroup::ATTN_CP: return "ATTN_CP";
    case SumGroup::TP: return "TP";
    case SumGroup::MOE_OUTPUT: return "MOE_OUTPUT";
  }
  return "?";
}

std::string_view sum_group_name(std::optional<SumGroup> group) {
  return group ? sum_group_name(*group) : std::string_view("none");
}

}  // namespace seam
