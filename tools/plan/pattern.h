// Layer patterns for seam_plan: one letter per stage — A attention, F dense FFN, E sparse (MoE)
// FFN, M single-stage mixer (a SCOPED attention-kind stage, as Nemotron-H declares its Mamba and
// attention mixers) — turned into declarations and built per pipeline partition.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/boundary/factories.h"
#include "tools/common/cli.h"

namespace seam::plan {

/// Throws ValueError naming --pattern for an empty pattern or an unknown letter.
void check_pattern(std::string_view pattern);
/// check_pattern, then ValueError naming --layers when pattern x layers exceeds max_stages stages.
void check_stack(std::string_view pattern, int64_t layers, int64_t max_stages);

/// Takes the current flag of `in` when it is --pattern (one period of the stack) or --layers (its
/// repeats, 1 to max_stages); false for any other flag.
bool take_stack_flag(cli::ArgReader& in, std::string& pattern, int& layers, int max_stages);

/// Declarations for `pattern`; an FFN's next_sparse comes from the next FFN in the pattern.
/// Throws ValueError for an unknown letter or an empty pattern.
std::vector<boundary::StageDeclaration> declare_pattern(std::string_view pattern);

/// Builds the stack split into `pp` contiguous partitions, each with make_stages() and only its
/// neighbours' declarations, as separate pipeline ranks would.
std::vector<std::vector<boundary::StageBoundary>> build_partitions(const boundary::PlanContext& ctx,
                                                                   const std::vector<boundary::StageDeclaration>& decls,
                                                                   int pp);

}  // namespace seam::plan
