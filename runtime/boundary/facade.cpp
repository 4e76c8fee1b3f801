// The public planner facade (seam/boundary.h) over the internal planner: each handle owns its
// internal object on the heap, so handles move while runners and streams keep their references.
#include <cstdint>

#include <initializer_list>
#include <string>
#include <utility>

#include "runtime/boundary/facade_access.h"
#include "runtime/boundary/factories.h"
#include "runtime/boundary/introspection.h"
#include "runtime/boundary/rows/host_fusion.h"
#include "runtime/boundary/rows/tensor_collectives.h"
#include "runtime/residual/add_norm.h"
#include "runtime/residual/batch.h"
#include "seam/errors.h"

namespace seam::boundary {

// The public Group names the internal GroupKind one for one.
static_assert(static_cast<int>(Group::ATTN_TP) == static_cast<int>(rows::GroupKind::ATTN_TP));
static_assert(static_cast<int>(Group::ATTN_DP) == static_cast<int>(rows::GroupKind::ATTN_DP));
static_assert(static_cast<int>(Group::ATTN_CP) == static_cast<int>(rows::GroupKind::ATTN_CP));
static_assert(static_cast<int>(Group::TP) == static_cast<int>(rows::GroupKind::TP));
static_assert(static_cast<int>(Group::MOE_OUTPUT) == static_cast<int>(rows::GroupKind::MOE_OUTPUT));
static_assert(static_cast<int>(Group::WORLD) == static_cast<int>(rows::GroupKind::WORLD));
static_assert(rows::kGroupKindCount == 6);

namespace {

rows::GroupKind kind_of(Group group) { return static_cast<rows::GroupKind>(group); }

Topology topology_of(const ParallelConfig& config) {
  Topology t;
  static_cast<ParallelConfig&>(t) = config;
  t.validate();
  return t;
}

const residual::StageRead& read_of(const StageDeclaration& d) {
  if (d.read == NORM_READ) return residual::norm_read();
  if (d.read == NORM_QUANT_READ) return residual::norm_quant_read();
  throw NotSupportedError("seam::boundary: stages read with NORM_READ or NORM_QUANT_READ in this version, not " +
                          std::string(d.read.name));
}

const residual::StageUpdate& update_of(const StageDeclaration& d) {
  if (d.update == ADD) return residual::add_update();
  throw NotSupportedError("seam::boundary: stages update the residual with ADD in this version, not " +
                          std::string(d.update.name));
}

void check_neighbours(const StageNeighbours& n) {
  if (n.prepared_from)
    throw NotSupportedError("seam::boundary: prepared branches (prepared_from) are not supported by the facade yet");
  // The neighbours run the same residual operations as the facade's own stages.
  for (const std::optional<StageDeclaration>* d : {&n.previous, &n.following})
    if (*d) {
      read_of(**d);
      update_of(**d);
    }
}

}  // namespace

// --- Groups ---

Groups::Groups(std::shared_ptr<comm::Communicator> world, const ParallelConfig& config) {
  if (!world) throw ValueError("seam::boundary::Groups: no world communicator");
  impl_ = std::make_unique<Impl>(Impl{rows::ProcessGroups(std::move(world), topology_of(config)), config, nullptr, {}, nullptr});
}
Groups::Groups(const ParallelConfig& config)
    : impl_(std::make_unique<Impl>(Impl{rows::ProcessGroups(topology_of(config)), config, nullptr, {}, nullptr})) {}
Groups::~Groups() = default;
Groups::Groups(Groups&&) noexcept = default;
Groups& Groups::operator=(Groups&&) noexcept = default;

const ParallelConfig& Groups::config() const { return impl_->config; }
int Groups::tp_rank() const { return impl_->groups.tp_rank(); }
int Groups::pp_rank() const { return impl_->groups.pp_rank(); }
int Groups::size(Group group) const { return impl_->groups.size(kind_of(group)); }
int Groups::rank_in(Group group) const { return impl_->groups.rank_in(kind_of(group)); }
comm::Communicator* Groups::communicator(Group group) const { return impl_->groups.comm(kind_of(group)); }

comm::Work Groups::all_reduce(Group group, const Tensor& inout) {
  return rows::all_reduce(impl_->groups, kind_of(group), inout);
}

BatchFacts Groups::batch(std::span<const int64_t> tokens_per_dp, const ActiveBatchFlags& flags,
                         std::optional<PaddingMode> padding, bool is_extend) const {
  const Topology& t = impl_->groups.topology();
  if (static_cast<int>(tokens_per_dp.size()) != t.attn_dp)
    throw ValueError("seam::boundary: batch needs one token count per attention-DP replica (" +
                     std::to_string(t.attn_dp) + "), not " + std::to_string(tokens_per_dp.size()));
  const PaddingMode mode = padding.value_or(choose_padding_mode(tokens_per_dp, is_extend, false));
  return BatchFacts::make(tokens_per_dp, impl_->groups.attn().dp, t.attn_tp * t.attn_cp, mode,
                          select_batch_variant(flags));
}

std::vector<std::string> Groups::traffic() const { return impl_->groups.traffic().describe(); }

// --- Norm ---

Norm::Norm(const Tensor& weight, float eps, kernels::NormWeight form)
    : impl_(new Impl{residual::RmsNorm(weight, eps, form)}) {}
Norm::~Norm() = default;
Norm::Norm(Norm&&) noexcept = default;
Norm& Norm::operator=(Norm&&) noexcept = default;
int64_t Norm::hidden() const { return impl_->rms.hidden(); }

// --- StageExit ---

StageExit::StageExit(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StageExit::~StageExit() = default;
StageExit::StageExit(StageExit&&) noexcept = default;
namespace {
template <class Impl>
Impl& live(const std::unique_ptr<Impl>& impl) {
  if (!impl) throw UsageError("seam::boundary: this StageExit was moved from");
  return *impl;
}
}  // namespace
const ExitFlags& StageExit::flags() const { return live(impl_).exit.flags(); }
LayerOutput StageExit::finish(const Tensor& output) { return live(impl_).exit.finish(output); }

// --- Stage ---

Stage::Stage(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Stage::~Stage() = default;
Stage::Stage(Stage&&) noexcept = default;
Stage& Stage::operator=(Stage&&) noexcept = default;

StageKind Stage::kind() const { return impl_->plan.kind(); }
const StageDeclaration& Stage::declaration() const { return impl_->plan.declaration(); }
bool Stage::finishes_directly() const { return impl_->plan.plan().finishes_directly(); }

residual::StageInput Stage::prepare(const LayerOutput& h, Forward& forward) {
  return impl_->runner->prepare(h, Access::batch(forward));
}

LayerOutput Stage::finish(const Tensor& output, Forward& forward) {
  return impl_->runner->finish(output, Access::batch(forward));
}

StageExit Stage::exit(Forward& forward) {
  return Access::exit(std::make_unique<StageExit::Impl>(*impl_->runner, Access::batch(forward)));
}

LayerOutput Stage::from_pp(Forward& forward) {
  const StageDeclaration* previous = impl_->plan.declaration().previous();
  if (!previous || !previous->hands_off_to_pipeline)
    throw UsageError("seam::boundary: from_pp on a stage whose previous stage is not a pipeline cut (build it with "
                     "previous = <the sender's last declaration>.before_pipeline_cut())");
  Forward::Impl& f = Access::forward(forward);
  if (f.groups.previous_stage() < 0)
    throw ValueError("seam::boundary: from_pp on pipeline stage 0, which starts the stack (residual::start)");
  return impl_->runner->from_pp(f.handoff.receive(), f.batch, update_of(*previous));
}

std::vector<std::string> Stage::describe() const { return describe_plan(impl_->plan.plan()); }

std::vector<Stage> make_stages(Groups& groups, std::vector<StageItem> items, const StageNeighbours& neighbours,
                               const StackOptions& options) {
  check_neighbours(neighbours);
  rows::ProcessGroups& pg = Access::groups(groups);
  std::shared_ptr<const FusionProvider> fusion;
  if (options.builtin_fusion) {
    Groups::Impl& g = Access::impl(groups);
    if (!g.device_fusion && !g.host_fusion) g.host_fusion = std::make_shared<rows::HostAllReduceNormFusion>(pg);
    fusion = g.device_fusion ? g.device_fusion : g.host_fusion;
  }
  std::vector<StageSpec> specs;
  std::vector<residual::RmsNorm*> norms;
  specs.reserve(items.size());
  for (StageItem& item : items) {
    if (!item.norm) throw ValueError("seam::boundary::make_stages: every stage needs its norm");
    read_of(item.declaration);  // reject what v1 cannot run before building anything
    update_of(item.declaration);
    norms.push_back(&Access::norm(*item.norm));
    specs.push_back({std::move(item.declaration), norms.back(), {.fusions = fusion}});
  }
  const PlanContext ctx{pg.topology(), options.policy};
  std::vector<StageBoundary> plans = make_stages(ctx, std::move(specs), neighbours);
  std::vector<Stage> stages;
  stages.reserve(plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    auto impl = std::make_unique<Stage::Impl>(Stage::Impl{std::move(plans[i]), nullptr});
    const StageDeclaration& d = impl->plan.declaration();
    impl->runner = std::make_unique<StageRunner>(impl->plan, pg, *norms[i], read_of(d), update_of(d));
    stages.push_back(Access::stage(std::move(impl)));
  }
  return stages;
}

// --- Forward ---

Forward::Forward(Groups& groups, BatchFacts facts)
    : impl_(std::make_unique<Impl>(Access::groups(groups), Access::impl(groups).device)) {
  if (facts.dp_size() != groups.config().attn_dp)
    throw ValueError("seam::boundary::Forward: the batch facts describe " + std::to_string(facts.dp_size()) +
                     " DP replicas, the groups " + std::to_string(groups.config().attn_dp) + " (use Groups::batch)");
  impl_->batch.facts = std::move(facts);
}
Forward::~Forward() = default;
Forward::Forward(Forward&&) noexcept = default;
Forward& Forward::operator=(Forward&&) noexcept = default;

const BatchFacts& Forward::facts() const { return impl_->batch.facts; }
int64_t Forward::local_rows() const { return impl_->batch.facts.local_rows(); }
const ExitFlags& Forward::exit_flags() const { return impl_->batch.exit_flags; }

}  // namespace seam::boundary

namespace seam::residual {

void start(boundary::Forward& forward) { start(boundary::Access::batch(forward)); }

void to_pp(const LayerOutput& h, boundary::Forward& forward) {
  boundary::Forward::Impl& f = boundary::Access::forward(forward);
  if (f.groups.next_stage() < 0)  // before the stream is released
    throw ValueError("seam::residual::to_pp: pipeline stage " + std::to_string(f.groups.pp_rank()) + " of " +
                     std::to_string(f.groups.topology().pp) + " is the last: leave the stack through residual::norm");
  const PpTensors pp = to_pp(h, f.batch);
  f.handoff.send({pp.hidden_states, pp.residual, pp.has_residual, pp.declared_partial});
}

Tensor norm(const LayerOutput& h, boundary::Forward& forward, boundary::Norm& layernorm, const NormOptions& options) {
  auto capture = [&options](const Tensor& value, bool owned) { options.capture(value, owned); };
  FinalNormOptions final_options{.skip_empty = options.skip_empty};
  if (options.capture) final_options.capture = capture;
  return residual::norm(h, boundary::Access::batch(forward), boundary::Access::norm(layernorm), final_options);
}

}  // namespace seam::residual
