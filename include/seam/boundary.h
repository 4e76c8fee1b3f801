// The layer-boundary planner for engines (the guide's layer_boundary module): declare each stage,
// build the stages of a layer with make_stages once, then per forward start the residual stream,
// call prepare / finish / exit around compute, and leave the stack through residual::norm.
// Pipeline parallelism: a partition that ends before the stack does leaves through residual::to_pp,
// and the next partition enters through its first stage's from_pp. Tensors live in host memory, or
// on the GPU once one is attached to the Groups (seam/boundary_device.h, library seam::cuda). v1
// covers one stream per stage (no two-batch overlap) and the plain residual operations (ADD
// updates, NORM_READ / NORM_QUANT_READ reads); anything else throws NotSupportedError.
#pragma once

#include <cstdint>

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "seam/batch_facts.h"
#include "seam/communicator.h"
#include "seam/layer_output.h"
#include "seam/norm.h"
#include "seam/parallel.h"
#include "seam/reduction_policy.h"
#include "seam/stage_declaration.h"
#include "seam/tensor.h"
#include "seam/work.h"

namespace seam::boundary {

// The names an engine uses with the planner, under one namespace.
using seam::ActiveBatchFlags;
using seam::BatchFacts;
using seam::BatchVariant;
using seam::PaddingMode;
using seam::ParallelConfig;
using residual::ExitFlags;
using residual::LayerOutput;

/// The communicators a rank's boundaries run on.
enum class Group : uint8_t { ATTN_TP, ATTN_DP, ATTN_CP, TP, MOE_OUTPUT, WORLD };

struct Access;  // Seam's own tools reach the internals through it (build tree only)

/// This rank's process groups for one parallel configuration. Must outlive the stages and forwards
/// built on it.
class Groups {
 public:
  /// Builds every group; collective over `world`, whose size must be config.tp * config.pp
  /// (ValueError otherwise, and for inconsistent sizes). World rank = pp rank * tp + TP rank.
  Groups(std::shared_ptr<comm::Communicator> world, const ParallelConfig& config);
  /// A single-rank world (tp = pp = 1): every group has one rank and nothing communicates.
  explicit Groups(const ParallelConfig& config = {});
  ~Groups();
  Groups(Groups&&) noexcept;
  Groups& operator=(Groups&&) noexcept;

  /// The configuration the groups were built for.
  const ParallelConfig& config() const;
  /// This rank's position in its TP group.
  int tp_rank() const;
  /// This rank's pipeline stage (0 .. pp-1): the partition of the layer stack it runs.
  int pp_rank() const;
  /// Number of ranks in `group`, and this rank's position in it.
  int size(Group group) const;
  int rank_in(Group group) const;
  /// The communicator of `group`; null for a group of one rank.
  comm::Communicator* communicator(Group group) const;
  /// inout := the sum over `group` of every rank's inout (contiguous). Compute calls it
  /// for its own output sum when the open exit's flags do not let it skip the sum.
  comm::Work all_reduce(Group group, const Tensor& inout);
  /// The facts of one forward: real tokens of every attention-DP replica (one count per replica).
  /// Padding defaults to the reference's choice (choose_padding_mode, no forcing backend); the
  /// variant is select_batch_variant(flags).
  BatchFacts batch(std::span<const int64_t> tokens_per_dp, const ActiveBatchFlags& flags = {},
                   std::optional<PaddingMode> padding = std::nullopt, bool is_extend = false) const;
  /// What the boundaries moved on these groups, one line per (group, collective):
  /// "TP all_reduce: 3 calls, 1536 bytes".
  std::vector<std::string> traffic() const;

  struct Impl;

 private:
  friend struct Access;
  std::unique_ptr<Impl> impl_;
};

/// A consumer's RMSNorm (weight row + epsilon) and the workspace its reads write into. The weight
/// must outlive the norm; a norm must outlive the stages built with it.
class Norm {
 public:
  /// weight: one row of `hidden` elements (fp32/bf16/fp16), in the memory of the rows it normalises.
  Norm(const Tensor& weight, float eps, kernels::NormWeight form = kernels::NormWeight::plain);
  ~Norm();
  Norm(Norm&&) noexcept;
  Norm& operator=(Norm&&) noexcept;

  /// Elements per row (the hidden size).
  int64_t hidden() const;

  struct Impl;

 private:
  friend struct Access;
  std::unique_ptr<Impl> impl_;
};

/// One item of make_stages: a bare declaration (declare_attn / declare_ffn) and its consumer norm.
struct StageItem {
  StageDeclaration declaration;
  Norm* norm = nullptr;  ///< must outlive the stage
};

/// Options shared by every stage of one stack (all layers must pass the same).
struct StackOptions {
  /// Resolved policy; resolve AUTO with PolicyRegistry first (ValueError otherwise).
  ReductionPolicy policy = ReductionPolicy::RS_RSV;
  /// Let the boundary fuse an owed all-reduce with the next add + norm (Seam's host fusion).
  bool builtin_fusion = true;
};

class Forward;

/// The exit scope of an FFN or single-stage mixer: its flags are published on the Forward while it
/// lives (and restored when it ends, also on an exception); finish() applies the decision once.
/// Moving it moves the scope (a moved-from exit throws UsageError).
class StageExit {
 public:
  ~StageExit();
  StageExit(StageExit&&) noexcept;
  StageExit(const StageExit&) = delete;
  StageExit& operator=(const StageExit&) = delete;
  StageExit& operator=(StageExit&&) = delete;

  /// What compute may skip (compute_skips_sum(): leave the output sum to the boundary).
  const ExitFlags& flags() const;
  /// Applies the decision to compute's output (complete, or this rank's partial when the flags let
  /// compute skip its sum). The tensor must stay valid until the next boundary has read it.
  LayerOutput finish(const Tensor& output);

  struct Impl;

 private:
  friend struct Access;
  explicit StageExit(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// One bound stage: its plan and this rank's runner. Must outlive the forwards that use it; its
/// buffers serve one Forward at a time.
class Stage {
 public:
  ~Stage();
  Stage(Stage&&) noexcept;
  Stage& operator=(Stage&&) noexcept;

  /// ATTENTION or FFN (a boundary role: a mixer is ATTENTION).
  StageKind kind() const;
  /// The declaration as connected by make_stages (source and terminal set).
  const StageDeclaration& declaration() const;
  /// A PARTIAL attention publishes its output with finish(); every other stage through exit().
  bool finishes_directly() const;
  /// Completes what h owes, applies its residual update, reads (norms) and moves the compute input.
  /// The input lives in this stage's norm workspace or buffers until that norm's next call.
  residual::StageInput prepare(const LayerOutput& h, Forward& forward);
  /// A PARTIAL attention publishes compute's output (still owing its sum); UsageError otherwise.
  /// The tensor must stay valid until the next boundary has read it.
  LayerOutput finish(const Tensor& output, Forward& forward);
  /// Opens the exit scope of an FFN or single-stage mixer (UsageError on a PARTIAL attention).
  StageExit exit(Forward& forward);
  /// Pipeline reception, instead of residual::start on a partition's first stage: receives what
  /// the previous pipeline stage's to_pp sent (same TP rank) and rebuilds the residual stream from
  /// it. The rows live in `forward`'s buffers until the forward ends. UsageError unless the
  /// stage's previous declaration went through before_pipeline_cut(); ValueError on pipeline stage 0.
  LayerOutput from_pp(Forward& forward);
  /// Two lines per bound batch variant (input path, output path): which collective runs where.
  std::vector<std::string> describe() const;

  struct Impl;

 private:
  friend struct Access;
  explicit Stage(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Connects the items in order (previous / following / terminal / hands_off_to_pipeline from
/// `neighbours`) and binds each to `groups`, as the guide's make_stages. A partition after a
/// pipeline cut passes `previous` through before_pipeline_cut(). NotSupportedError for what v1
/// does not run (prepared branches, MHC reads or updates).
std::vector<Stage> make_stages(Groups& groups, std::vector<StageItem> items, const StageNeighbours& neighbours = {},
                               const StackOptions& options = {});

/// One forward of the stack (the guide's forward_batch): batch facts, the flags of the open exit,
/// and the residual stream. Must outlive every value the stages hand out for it.
class Forward {
 public:
  /// facts: from groups.batch() for this forward.
  Forward(Groups& groups, BatchFacts facts);
  ~Forward();
  Forward(Forward&&) noexcept;
  Forward& operator=(Forward&&) noexcept;

  /// This forward's batch facts.
  const BatchFacts& facts() const;
  /// Rows of this replica's stack input (the embedding the first stage takes).
  int64_t local_rows() const;
  /// The flags the open exit publishes (row-parallel linears and MoE reductions read them).
  const ExitFlags& exit_flags() const;

  struct Impl;

 private:
  friend struct Access;
  std::unique_ptr<Impl> impl_;
};

}  // namespace seam::boundary

namespace seam::residual {

/// Starts a fresh residual stream: once per stack invocation, on the embedding path, before the
/// first stage's prepare. That prepare takes the stack input as the residual, which the stack then
/// updates in place: keep the input tensor alive and unshared until residual::norm.
void start(boundary::Forward& forward);

/// Options of the final norm.
struct NormOptions {
  /// Receives the updated residual (always borrowed: copy it to keep it).
  std::function<void(const Tensor& value, bool owned)> capture = nullptr;
  /// On a batch of 0 rows skip the norm kernel (owed collectives still run).
  bool skip_empty = false;
};

/// Leaves a partition that ends before the stack does (built with hands_off_to_pipeline): completes
/// what h owes except a declared partial sum, which the receiver's from_pp completes; releases the
/// stream and sends hidden states and residual to the same TP rank of the next pipeline stage.
/// Returns once the rows have left this rank's buffers. ValueError on the last pipeline stage.
void to_pp(const LayerOutput& h, boundary::Forward& forward);

/// Leaves the stack: completes h, releases the stream, applies the residual add and `norm`.
/// Returns the normalised rows, in `norm`'s workspace (valid until its next call).
Tensor norm(const LayerOutput& h, boundary::Forward& forward, boundary::Norm& norm, const NormOptions& options = {});

}  // namespace seam::residual
