#include "tools/plan/pattern.h"

#include "seam/errors.h"

namespace seam::plan {

using namespace boundary;

void check_pattern(std::string_view pattern) {
  if (pattern.empty()) throw ValueError("--pattern: empty layer pattern");
  for (char c : pattern)
    if (c != 'A' && c != 'F' && c != 'E' && c != 'M')
      throw ValueError(std::string("--pattern: unknown stage letter '") + c + "' (use A, F, E, M)");
}

void check_stack(std::string_view pattern, int64_t layers, int64_t max_stages) {
  check_pattern(pattern);
  if (static_cast<int64_t>(pattern.size()) * layers > max_stages)
    throw ValueError("--layers: the stack (--pattern x --layers) may have at most " + std::to_string(max_stages) +
                     " stages");
}

bool take_stack_flag(cli::ArgReader& in, std::string& pattern, int& layers, int max_stages) {
  if (in.flag() == "--pattern") pattern = in.value();
  else if (in.flag() == "--layers") layers = in.int_number(1, max_stages);
  else return false;
  return true;
}

std::vector<StageDeclaration> declare_pattern(std::string_view pattern) {
  check_pattern(pattern);
  std::vector<StageDeclaration> decls;
  for (size_t i = 0; i < pattern.size(); ++i) {
    switch (pattern[i]) {
      case 'A': decls.push_back(declare_attn()); break;
      case 'M': decls.push_back(declare_attn({.reduction = ProducerReduction::SCOPED, .gathers_tp_input = false})); break;
      case 'F':
      case 'E': {
        bool next_sparse = pattern[i] == 'E';  // the last FFN has no successor: treat as same kind
        for (size_t j = i + 1; j < pattern.size(); ++j)
          if (pattern[j] == 'F' || pattern[j] == 'E') {
            next_sparse = pattern[j] == 'E';
            break;
          }
        decls.push_back(declare_ffn({.sparse = pattern[i] == 'E', .next_sparse = next_sparse}));
        break;
      }
      default: break;  // refused by check_pattern()
    }
  }
  return decls;
}

std::vector<std::vector<StageBoundary>> build_partitions(const PlanContext& ctx, const std::vector<StageDeclaration>& decls,
                                                         int pp) {
  const int n = static_cast<int>(decls.size());
  if (pp < 1 || pp > n) throw ValueError("--pp: must be between 1 and the number of stages (" + std::to_string(n) + ")");
  // The neighbours a rank is told about are the connected declarations of the stages around it,
  // exactly what the engine would pass; connect the whole stack once to get them.
  // Each cut marks the FFN whose rows cross it, as both ranks beside the cut describe it.
  std::vector<StageDeclaration> connected;
  for (int r = 0; r < pp; ++r)
    for (int i = static_cast<int>(int64_t{n} * r / pp), end = static_cast<int>(int64_t{n} * (r + 1) / pp); i < end; ++i) {
      connected.push_back(i == 0 ? decls[0].entering_stack() : decls[i].with_previous(connected.back()));
      if (i + 1 == end && r + 1 < pp) connected.back() = connected.back().before_pipeline_cut();
    }

  std::vector<std::vector<StageBoundary>> partitions;
  for (int r = 0; r < pp; ++r) {
    const int begin = n * r / pp, end = n * (r + 1) / pp;
    std::vector<StageSpec> specs;
    for (int i = begin; i < end; ++i) specs.push_back({decls[i]});
    StageNeighbours around;
    if (begin > 0) around.previous = connected[begin - 1];
    if (end < n) around.following = decls[end].with_previous(connected[end - 1]);
    around.terminal = end == n;
    around.hands_off_to_pipeline = end < n;
    partitions.push_back(make_stages(ctx, std::move(specs), around));
  }
  return partitions;
}

}  // namespace seam::plan
