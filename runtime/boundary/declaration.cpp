#include "runtime/boundary/declaration.h"

#include <vector>

#include "seam/errors.h"

namespace seam::boundary {

namespace {
// Each source may be set once; a second, different kind of source is the guide's error.
StageDeclaration with_source(const StageDeclaration& decl, StageDeclaration::Source source,
                             const StageDeclaration* producer) {
  using Source = StageDeclaration::Source;
  const bool has_previous = decl.source == Source::PREVIOUS || source == Source::PREVIOUS;
  const bool has_prepared = decl.source == Source::PREPARED_FROM || source == Source::PREPARED_FROM;
  if (has_previous && has_prepared) throw ValueError("choose a previous output or a prepared branch input");
  StageDeclaration out = decl;
  out.source = source;
  // A non-const object: the destructor may take its source over when it holds the last reference.
  out.source_decl = producer ? std::make_shared<StageDeclaration>(*producer) : nullptr;
  return out;
}
}  // namespace

StageDeclaration::~StageDeclaration() {
  // Unlink each source this declaration owns alone before it dies, so no destructor recurses.
  std::shared_ptr<const StageDeclaration> next = std::move(source_decl);
  while (next && next.use_count() == 1) {
    std::shared_ptr<const StageDeclaration> after = std::move(const_cast<StageDeclaration&>(*next).source_decl);
    next = std::move(after);
  }
}

StageDeclaration StageDeclaration::with_previous(const StageDeclaration& producer) const {
  return with_source(*this, Source::PREVIOUS, &producer);
}
StageDeclaration StageDeclaration::entering_stack() const {
  if (source == Source::PREPARED_FROM) throw ValueError("choose a previous output or a prepared branch input");
  return with_source(*this, Source::STACK_ENTRY, nullptr);
}
StageDeclaration StageDeclaration::with_prepared_from(const StageDeclaration& src) const {
  return with_source(*this, Source::PREPARED_FROM, &src);
}
StageDeclaration StageDeclaration::as_terminal() const {
  StageDeclaration out = *this;
  out.terminal = true;
  return out;
}

StageDeclaration StageDeclaration::before_pipeline_cut() const {
  // Attention stages leave the residual where the FFN before them put it, so that FFN's rows cross.
  // A loop, not recursion: a run of mixers may be tens of thousands of stages long.
  std::vector<const StageDeclaration*> run;  // this, then each attention stage upstream
  const StageDeclaration* d = this;
  while (d->kind == StageKind::ATTENTION) {
    run.push_back(d);
    d = d->previous();
    if (!d) return *this;
  }
  StageDeclaration marked = *d;
  marked.hands_off_to_pipeline = true;
  for (auto it = run.rbegin(); it != run.rend(); ++it) marked = (*it)->with_previous(marked);
  return marked;
}

std::optional<HandoffRows> StageDeclaration::exit_rows() const {
  if (handoff_rows) return handoff_rows;
  if (kind == StageKind::FFN && !sparse && next_sparse) return HandoffRows::TBO_SPLIT;
  return std::nullopt;
}

namespace {
bool same_fields(const StageDeclaration& a, const StageDeclaration& b) {
  return a.kind == b.kind && a.read == b.read && a.update == b.update && a.reduction == b.reduction &&
         a.sparse == b.sparse && a.next_sparse == b.next_sparse && a.gathers_tp_input == b.gathers_tp_input &&
         a.dense_tp_size == b.dense_tp_size && a.handoff_rows == b.handoff_rows &&
         a.output_transform == b.output_transform && a.terminal == b.terminal &&
         a.hands_off_to_pipeline == b.hands_off_to_pipeline && a.source == b.source;
}
}  // namespace

bool StageDeclaration::operator==(const StageDeclaration& o) const {
  // Walk both source chains together; a shared node ends the walk (equal from there on).
  const StageDeclaration* a = this;
  const StageDeclaration* b = &o;
  while (a != b) {
    if (!same_fields(*a, *b)) return false;
    if (!a->source_decl || !b->source_decl) return !a->source_decl && !b->source_decl;
    a = a->source_decl.get();
    b = b->source_decl.get();
  }
  return true;
}

namespace {
// What every stage declares: its kind, read, update, reduction and output transform.
template <class Options>
StageDeclaration declaration_of(StageKind kind, const Options& o) {
  StageDeclaration d;
  d.kind = kind;
  d.read = o.read;
  d.update = o.update;
  d.reduction = o.reduction;
  d.output_transform = o.output_transform;
  return d;
}
}  // namespace

StageDeclaration declare_attn(const AttnOptions& o) {
  if (o.reduction == ProducerReduction::LOCAL_TAIL)
    throw ValueError("LOCAL_TAIL is not supported for attention stages");
  if (o.output_transform && o.reduction != ProducerReduction::PARTIAL)
    throw ValueError("an attention output transform requires ALWAYS_PARTIAL");
  StageDeclaration d = declaration_of(StageKind::ATTENTION, o);
  d.gathers_tp_input = o.gathers_tp_input;
  return d;
}

StageDeclaration declare_ffn(const FfnOptions& o) {
  if (o.reduction == ProducerReduction::PARTIAL) throw ValueError("PARTIAL is not supported for ffn stages");
  if (o.dense_tp_size && *o.dense_tp_size < 1)
    throw ValueError("dense FFN rows support local compute or the full TP group");
  StageDeclaration d = declaration_of(StageKind::FFN, o);
  d.sparse = o.sparse;
  d.next_sparse = o.next_sparse;
  d.dense_tp_size = o.dense_tp_size;
  d.handoff_rows = o.handoff_rows;
  return d;
}

std::string_view stage_kind_name(StageKind kind) { return kind == StageKind::ATTENTION ? "attn" : "ffn"; }

std::string_view reduction_name(ProducerReduction r) {
  switch (r) {
    case ProducerReduction::PARTIAL: return "PARTIAL";
    case ProducerReduction::SCOPED: return "SCOPED";
    case ProducerReduction::LOCAL_TAIL: return "LOCAL_TAIL";
  }
  return "?";
}

}  // namespace seam::boundary
