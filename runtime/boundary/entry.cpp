#include "runtime/boundary/entry.h"

#include "seam/errors.h"

namespace seam::boundary {

namespace {
constexpr Layout kDp = Layout::of({TokenAxis::ATTN_DP});
constexpr Layout kCp = Layout::of({TokenAxis::ATTN_CP});
constexpr Layout kTp = Layout::of({TokenAxis::ATTN_TP_SCATTER});

[[noreturn]] void unsupported(const EdgeDecl& e) {
  throw NotSupportedError("produced=" + describe(e.produced) + " residual=" + e.residual.to_string() +
                          " need=" + e.need->layout.to_string());
}

// An owed sum (or a CP gather) the consumer cannot complete: the residual's rows play no part (§2.7).
[[noreturn]] void unsupported_sum(const EdgeDecl& e) {
  throw NotSupportedError("produced=" + describe(e.produced) + " need=" + e.need->layout.to_string());
}

bool owes_one_of(std::optional<SumGroup> owes, std::initializer_list<SumGroup> allowed) {
  if (!owes) return true;
  for (SumGroup g : allowed)
    if (*owes == g) return true;
  return false;
}
}  // namespace

RowMove RowMove::checked(Layout from, Layout to) {
  const Layout gathered = from - to, cut = to - from;
  if ((!gathered.empty() && !cut.empty()) || from.has(TokenAxis::ATTN_CP) || to.has(TokenAxis::ATTN_CP))
    throw NotSupportedError("rows=" + from.to_string() + " to=" + to.to_string());
  return {from, to};
}

CpMoves CpMoves::of(const Topology& t, BatchVariant v) {
  CpMoves cp;
  cp.exist = v == BatchVariant::CONTEXT_PARALLEL;
  cp.over_attn_cp = cp.exist && t.cp_over_attn_cp;
  cp.reduce_scatter = cp.over_attn_cp && t.attn_dp == 1 && t.attn_tp == 1;
  return cp;
}

EntryStep select_entry_step(const EdgeDecl& e, bool plain, bool enters_stack, const CpMoves& cp) {
  const StageOutput& p = e.produced;
  const StageInput& need = *e.need;
  const Layout residual = e.residual;
  const Layout residual_to = *e.residual_to;
  if (p.always_leaves && !p.group) throw NotSupportedError("produced=" + describe(p));
  // An attention output transform runs inside the read on the complete sum: no fused kernels.
  const bool norms_plainly = need.read.norms_plainly && !p.transform;
  const bool joins_sum = e.residual_joins_sum && !p.transform;
  const std::optional<SumGroup> owes = p.declared_sum();
  const Layout gathered = p.layout - need.layout - need.gathers_itself;
  const Layout sliced = need.layout - p.layout;

  EntryStep s;
  s.enters_stack = enters_stack;

  // A: a head-parallel mixer consumed full context; the residual stays on this rank's CP shard.
  if (residual_to - p.layout == kCp) {
    if (residual != residual_to || !cp.exist || !owes_one_of(owes, {SumGroup::ATTN_CP}) || (owes && !cp.reduce_scatter))
      unsupported(e);
    s.pre_move = owes ? PreMove::CP_REDUCE_SCATTER : PreMove::CP_TAKE_BACK;
    return s;
  }
  // B: the consumer runs on attention-TP slices of the produced rows.
  if (!sliced.empty()) {
    if (sliced != kTp || !gathered.empty() || !owes_one_of(owes, {SumGroup::ATTN_TP}) || residual_to != need.layout ||
        (residual != p.layout && residual != need.layout))
      unsupported(e);
    s.pre_move = owes ? PreMove::ATTN_TP_REDUCE_SCATTER : PreMove::ATTN_TP_SLICE;
    if (residual != residual_to) s.residual_move = ResidualMove::ATTN_TP_SLICE;
    return s;
  }
  if (residual_to - p.layout == kTp) {
    // C1: the residual already sits on slices (MHC on an input-scattered batch): read on the slice,
    // gather the read input back to full rows.
    if (residual == residual_to) {
      if (!gathered.empty() || !owes_one_of(owes, {SumGroup::ATTN_TP})) unsupported(e);
      s.pre_move = owes ? PreMove::ATTN_TP_REDUCE_SCATTER : PreMove::ATTN_TP_SLICE;
      s.input_move = InputMove::ATTN_TP_GATHER;
      return s;
    }
    // C2: the input-scattered attention entry moves full rows onto slices first.
    if (!owes_one_of(owes, {SumGroup::TP}) || !residual.empty() || !need.gathers_itself.has(TokenAxis::ATTN_TP_SCATTER) ||
        residual_to != kTp)
      unsupported(e);
    s.pre_move = owes ? PreMove::TP_REDUCE_SCATTER : PreMove::TP_SLICE;
    s.residual_move = ResidualMove::ATTN_TP_SLICE;  // the residual is sliced the same way (attn_tp == tp here)
    return s;
  }
  // D: gather over CP after selecting the step on this rank's own chunk.
  if (gathered == kCp) {
    if (!cp.exist) unsupported_sum(e);
    if (!plain && !cp.over_attn_cp) throw NotSupportedError("MHC with a gather over attention CP");
    EdgeDecl own_chunk = e;
    own_chunk.need->layout = p.layout;
    EntryStep inner = select_entry_step(own_chunk, plain, enters_stack, cp);
    inner.input_move = InputMove::CP_GATHER;
    return inner;
  }
  // E: read on the slice, then the attention-TP gather of the read input.
  if (gathered == kTp) {
    if (owes || residual != residual_to || residual_to != p.layout) unsupported(e);
    s.input_move = InputMove::ATTN_TP_GATHER;
    return s;
  }
  // F: same rows, possibly gathered over DP (and CP).
  const Layout residual_extra = residual - residual_to;
  if (residual_to != p.layout || !(gathered.empty() || gathered == kDp || gathered == (kDp | kCp)) ||
      !(residual_extra.empty() || residual_extra == kTp))
    unsupported(e);
  const bool gathers_residual = residual != residual_to;
  if (gathers_residual) s.residual_move = ResidualMove::ATTN_TP_GATHER;
  if (gathered.empty()) {
    if (!owes) return s;
    if (gathers_residual && joins_sum) {
      if (owes != SumGroup::ATTN_TP || !plain) unsupported(e);
      s.residual_move = ResidualMove::NONE;  // the residual joins the partial on its own slice
      s.read = ReadKind::RESIDUAL_JOINS_SUM;
      s.all_reduce = owes;
      return s;
    }
    // A TP sum completes only on rows every TP rank holds.
    if (!(owes == SumGroup::ATTN_TP || owes == SumGroup::ATTN_CP || (owes == SumGroup::TP && p.layout.empty())))
      unsupported_sum(e);
    s.all_reduce = owes;
    s.tries_fusions = plain && norms_plainly;
    return s;
  }
  if (!owes_one_of(owes, {SumGroup::ATTN_TP, SumGroup::ATTN_CP})) unsupported_sum(e);
  s.places_cp_shards = gathered.has(TokenAxis::ATTN_CP);
  if (s.places_cp_shards && !plain && !cp.over_attn_cp) throw NotSupportedError("MHC with a gather over attention CP");
  if (owes == SumGroup::ATTN_TP && !need.read.before_gather && plain && norms_plainly) {
    s.read = ReadKind::DP_PARTIAL_GATHER;  // the gather's sum completes the attention-TP sum
  } else {
    s.read = ReadKind::DP_REPLICATE_GATHER;
    s.all_reduce = owes;
  }
  return s;
}

const EntryPaths& BoundEntry::paths_for(bool adds_plainly, bool has_residual) const {
  if (plain && non_plain) return adds_plainly && has_residual ? *plain : *non_plain;
  const std::optional<EntryPaths>& only = plain ? plain : non_plain;
  if (!only) throw UsageError("producer update has no bound input path");
  if (has_residual && adds_plainly != plain.has_value())
    throw UsageError("producer update does not match the boundary's capability");
  return *only;
}

BoundEntry bind_entry(const EdgeDecl& edge, bool enters_stack, const CpMoves& cp) {
  if (edge.capabilities.empty()) throw ValueError("an arrival must declare its update capabilities");
  if (!edge.need || !edge.residual_to) throw ValueError("a boundary needs at least one declared side");
  EdgeDecl completed_edge = edge;
  completed_edge.produced.always_leaves = false;

  auto bind = [&](bool plain) {
    EntryPaths paths;
    paths.step = select_entry_step(edge, plain, enters_stack, cp);
    if (edge.produced.always_leaves) paths.completed = select_entry_step(completed_edge, plain, enters_stack, cp);
    // A written stream is complete: its step neither enters the stack nor completes a sum.
    if (enters_stack) paths.written = select_entry_step(completed_edge, plain, false, cp);
    return paths;
  };
  BoundEntry b;
  if (edge.capabilities.plain) b.plain = bind(true);
  if (edge.capabilities.non_plain) b.non_plain = bind(false);
  b.input_move = (b.plain ? b.plain : b.non_plain)->step.input_move;
  if (b.plain && b.non_plain && b.plain->step.input_move != b.non_plain->step.input_move)
    throw NotSupportedError("update capabilities require different input moves");
  b.input_sum = edge.produced.declared_sum();
  b.capture_moves = *edge.residual_to != edge.produced.layout;
  b.capture_move_allocates = !(*edge.residual_to - edge.produced.layout).empty();
  return b;
}

}  // namespace seam::boundary
