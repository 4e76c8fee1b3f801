#include "runtime/boundary/declaration.h"

#include "layouts/errors.h"

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
  out.source_decl = producer ? std::make_shared<const StageDeclaration>(*producer) : nullptr;
  return out;
}
}  // namespace

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

std::optional<HandoffRows> StageDeclaration::exit_rows() const {
  if (handoff_rows) return handoff_rows;
  if (kind == StageKind::FFN && !sparse && next_sparse) return HandoffRows::TBO_SPLIT;
  return std::nullopt;
}

bool StageDeclaration::operator==(const StageDeclaration& o) const {
  const bool same_source = source == o.source && (source_decl == o.source_decl ||
                                                  (source_decl && o.source_decl && *source_decl == *o.source_decl));
  return kind == o.kind && read == o.read && update == o.update && reduction == o.reduction && sparse == o.sparse &&
         next_sparse == o.next_sparse && gathers_tp_input == o.gathers_tp_input && dense_tp_size == o.dense_tp_size &&
         handoff_rows == o.handoff_rows && output_transform == o.output_transform && terminal == o.terminal &&
         same_source;
}

StageDeclaration declare_attn(const AttnOptions& o) {
  if (o.reduction == ProducerReduction::LOCAL_TAIL)
    throw ValueError("LOCAL_TAIL is not supported for attention stages");
  if (o.output_transform && o.reduction != ProducerReduction::PARTIAL)
    throw ValueError("an attention output transform requires ALWAYS_PARTIAL");
  StageDeclaration d;
  d.kind = StageKind::ATTENTION;
  d.read = o.read;
  d.update = o.update;
  d.reduction = o.reduction;
  d.gathers_tp_input = o.gathers_tp_input;
  d.output_transform = o.output_transform;
  return d;
}

StageDeclaration declare_ffn(const FfnOptions& o) {
  if (o.reduction == ProducerReduction::PARTIAL) throw ValueError("PARTIAL is not supported for ffn stages");
  if (o.dense_tp_size && *o.dense_tp_size < 1)
    throw ValueError("dense FFN rows support local compute or the full TP group");
  StageDeclaration d;
  d.kind = StageKind::FFN;
  d.sparse = o.sparse;
  d.read = o.read;
  d.update = o.update;
  d.output_transform = o.output_transform;
  d.next_sparse = o.next_sparse;
  d.dense_tp_size = o.dense_tp_size;
  d.reduction = o.reduction;
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
