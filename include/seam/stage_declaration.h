// Model-facing stage declarations (§1.5–§1.7): what a stage's compute does with its rows and its
// output sum, plus the capabilities of its residual update and input read. A declaration holds no
// norm, no tensors and no plan; make_stages() connects declarations and builds plans.
#pragma once

#include <cstdint>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "seam/tensor.h"

namespace seam::boundary {

/// A boundary role, not a compute type: a Mamba mixer is an ATTENTION stage.
enum class StageKind : uint8_t { ATTENTION, FFN };

/// How compute cooperates with its output sum.
enum class ProducerReduction : uint8_t {
  PARTIAL,     ///< attention only: always returns a partial sum, published with finish()
  SCOPED,      ///< obeys the exit's decision (flags), published through exit()
  LOCAL_TAIL,  ///< FFN only: adds a replicated component after its internal sum (never deferred)
};

/// Rows an FFN must leave its output on at the layer exit.
enum class HandoffRows : uint8_t {
  ATTENTION,  ///< attention rows
  TBO_SPLIT,  ///< attention rows when dense FFNs are fully DP and two-batch overlap is on
};

/// Capabilities of a producer's residual update (the StageUpdate protocol's facts).
struct UpdateFacts {
  std::string_view name = "ADD";
  bool adds_plainly = true;            ///< plain add: may join a partial before the sum, may fuse with add+norm
  bool at_producer = false;            ///< the producer writes the residual at its exit
  bool can_defer_across_layers = true; ///< parameters and state outlive the producer layer
  bool operator==(const UpdateFacts&) const = default;
};

/// Capabilities of a consumer's read (the StageRead protocol's facts).
struct ReadFacts {
  std::string_view name = "NORM_READ";
  bool norms_plainly = true;   ///< input = norm(+quant) of the residual, residual unchanged: fused kernels allowed
  bool before_gather = false;  ///< read on the source rows before a DP gather
  bool operator==(const ReadFacts&) const = default;
};

/// The reference's plain add + RMSNorm family and the MHC forms (§5).
inline constexpr UpdateFacts ADD{"ADD", true, false, true};
inline constexpr UpdateFacts MHC_ATTENTION_UPDATE{"MHC_POST", false, false, false};
inline constexpr UpdateFacts MHC_FFN_UPDATE{"MHC_POST_AT_EXIT", false, true, false};
inline constexpr ReadFacts NORM_READ{"NORM_READ", true, false};
inline constexpr ReadFacts NORM_QUANT_READ{"NORM_QUANT_READ", true, false};
inline constexpr ReadFacts MHC_READ{"MHC_READ", false, false};

/// Contribution processing before the residual update (e.g. a sandwich norm): an FFN's runs at
/// its exit, an attention's at the next input once the sum is complete. before_reduce_scatter: the
/// implementation may run on a partial before an RS (an explicit permission, not a claim that it
/// commutes with the sum).
struct OutputTransform {
  std::string name;
  bool before_reduce_scatter = false;
  std::function<void(const Tensor& contribution)> apply = nullptr;  ///< in place; nullptr: declared only
  /// Two declarations agree on a transform by its name and permission.
  bool operator==(const OutputTransform& o) const {
    return name == o.name && before_reduce_scatter == o.before_reduce_scatter;
  }
};

/// A stage's declaration. Build with declare_attn()/declare_ffn(); the input source and terminal
/// are normally set by make_stages(), or by with_previous()/entering_stack()/as_terminal() for the
/// single-stage factories.
struct StageDeclaration {
  /// Where the stage's input comes from.
  enum class Source : uint8_t {
    UNSET,          ///< not described (only a bare neighbour description)
    STACK_ENTRY,    ///< the stack input (embedding, or a pipeline receive of the stack's start)
    PREVIOUS,       ///< the output of `source`
    PREPARED_FROM,  ///< the already-read input of `source` (a branch)
  };

  StageDeclaration() = default;
  StageDeclaration(const StageDeclaration&) = default;
  StageDeclaration(StageDeclaration&&) = default;
  StageDeclaration& operator=(const StageDeclaration&) = default;
  StageDeclaration& operator=(StageDeclaration&&) = default;
  /// Releases the source chain iteratively: a long stack's chain would overflow the stack.
  ~StageDeclaration();

  StageKind kind = StageKind::FFN;                          ///< the stage's boundary role
  ReadFacts read = NORM_READ;                               ///< how its input is read from the residual
  UpdateFacts update = ADD;                                 ///< how its output joins the residual
  ProducerReduction reduction = ProducerReduction::SCOPED;  ///< how compute treats its output sum
  bool sparse = false;            ///< FFN is a MoE (EP dispatch stays in compute)
  bool next_sparse = false;       ///< the next layer's FFN is a MoE
  bool gathers_tp_input = true;   ///< attention gathers attention-TP-sliced input itself
  std::optional<int> dense_tp_size;           ///< nullopt: configured; 1: local; tp: full TP group
  std::optional<HandoffRows> handoff_rows;    ///< nullopt: derived from (sparse, next_sparse)
  std::optional<OutputTransform> output_transform;  ///< processing before the residual update, if any
  bool terminal = false;          ///< ends the model's layer stack
  /// FFN: its rows cross to the next pipeline rank — its output, or the residual it leaves under the
  /// attention stages that end the partition (they keep the residual where it arrived).
  bool hands_off_to_pipeline = false;
  Source source = Source::UNSET;
  std::shared_ptr<const StageDeclaration> source_decl;  ///< for PREVIOUS / PREPARED_FROM

  /// This declaration with its input taken from `producer`'s output.
  StageDeclaration with_previous(const StageDeclaration& producer) const;
  /// This declaration entering the layer stack (no producer).
  StageDeclaration entering_stack() const;
  /// This declaration as a branch reusing `source`'s already-read input.
  StageDeclaration with_prepared_from(const StageDeclaration& source) const;
  /// This declaration ending the model's layer stack.
  StageDeclaration as_terminal() const;
  /// This declaration (connected) as the last stage before a pipeline cut: the FFN whose rows cross
  /// the cut — this one, or the nearest before the attention stages ending here — hands off to the
  /// next pipeline rank. Unchanged when no FFN precedes them. The sending rank's make_stages and the
  /// receiving rank's `previous` both describe the cut this way, so both resolve the same rows.
  StageDeclaration before_pipeline_cut() const;

  /// The producer declaration (PREVIOUS), else nullptr.
  const StageDeclaration* previous() const { return source == Source::PREVIOUS ? source_decl.get() : nullptr; }
  /// The source whose already-read input this branch reuses (PREPARED_FROM), else nullptr.
  const StageDeclaration* prepared_from() const {
    return source == Source::PREPARED_FROM ? source_decl.get() : nullptr;
  }
  /// Handoff rows after defaulting: TBO_SPLIT iff a dense FFN is followed by a sparse one.
  std::optional<HandoffRows> exit_rows() const;
  /// Deep equality, sources included (compared along the chain, not by recursion).
  bool operator==(const StageDeclaration& other) const;
};

/// declare_attn's options (the fields of StageDeclaration they set).
struct AttnOptions {
  ReadFacts read = NORM_QUANT_READ;
  UpdateFacts update = ADD;
  ProducerReduction reduction = ProducerReduction::PARTIAL;  ///< SCOPED: a single-stage mixer
  bool gathers_tp_input = true;
  std::optional<OutputTransform> output_transform = std::nullopt;
};

/// declare_ffn's options (the fields of StageDeclaration they set).
struct FfnOptions {
  bool sparse = false;
  ReadFacts read = NORM_READ;
  UpdateFacts update = ADD;
  std::optional<OutputTransform> output_transform = std::nullopt;
  bool next_sparse = false;
  std::optional<int> dense_tp_size = std::nullopt;
  ProducerReduction reduction = ProducerReduction::SCOPED;
  std::optional<HandoffRows> handoff_rows = std::nullopt;
};

/// An attention (or mixer, with reduction SCOPED) declaration. Throws ValueError for LOCAL_TAIL,
/// or an output transform without PARTIAL.
StageDeclaration declare_attn(const AttnOptions& options = {});
/// An FFN declaration. Throws ValueError for PARTIAL, or a dense TP size other than 1 / tp
/// (checked against the topology at construction).
StageDeclaration declare_ffn(const FfnOptions& options = {});

/// The sequence's outside: the producer before the first stage (nullopt: the stack starts here),
/// the consumer after the last, whether the last stage ends the model's stack, and — instead of
/// `previous` — the stage whose already-read input a branch reuses.
/// `hands_off_to_pipeline`: a pipeline cut follows the last stage (the partition ends before the
/// stack does); the receiving rank passes `previous` through StageDeclaration::before_pipeline_cut().
struct StageNeighbours {
  std::optional<StageDeclaration> previous = std::nullopt;       ///< the producer before the first stage
  std::optional<StageDeclaration> following = std::nullopt;      ///< the consumer after the last stage
  bool terminal = false;                                         ///< the last stage ends the model's stack
  std::optional<StageDeclaration> prepared_from = std::nullopt;  ///< a branch's source (instead of previous)
  bool hands_off_to_pipeline = false;                            ///< a pipeline cut follows the last stage
};

std::string_view stage_kind_name(StageKind kind);  ///< "attn", "ffn"
std::string_view reduction_name(ProducerReduction reduction);  ///< "PARTIAL", "SCOPED", "LOCAL_TAIL"

}  // namespace seam::boundary
