// The facade's internals (build tree only): what each public handle holds, and Access, through
// which Seam's own tools and tests reach the planner objects behind a facade handle.
#pragma once

#include <memory>

#include "runtime/boundary/rows/pp_handoff.h"
#include "runtime/boundary/rows/process_groups.h"
#include "runtime/boundary/runner.h"
#include "runtime/boundary/stage.h"
#include "runtime/residual/forward_batch.h"
#include "runtime/residual/norm.h"
#include "seam/boundary.h"

namespace seam::boundary {

struct Groups::Impl {
  rows::ProcessGroups groups;
  ParallelConfig config;
  /// The built-in fusion, made on first use and shared by every stack on these groups.
  std::shared_ptr<const FusionProvider> host_fusion;
  /// Where a GPU is attached (DeviceBoundary): its device and fused boundary, else host memory.
  Device device;
  std::shared_ptr<const FusionProvider> device_fusion;
};

struct Norm::Impl {
  residual::RmsNorm rms;  ///< its address is the stages' NormRef (the host fusion casts it back)
};

/// Heap-held: the runner references the plan, and the stream references the runner's completions.
struct Stage::Impl {
  StageBoundary plan;
  std::unique_ptr<StageRunner> runner;
};

struct StageExit::Impl {
  Impl(StageRunner& runner, residual::ForwardBatch& batch) : exit(runner, batch) {}
  StageRunner::Exit exit;
};

struct Forward::Impl {
  Impl(rows::ProcessGroups& groups_, Device device) : groups(groups_), handoff(groups_, device) {}
  rows::ProcessGroups& groups;
  residual::ForwardBatch batch;
  /// Pipeline transfers of this forward: from_pp's rows live in its buffers.
  rows::PipelineHandoff handoff;
};

struct Access {
  static Groups::Impl& impl(Groups& g) { return *g.impl_; }
  static rows::ProcessGroups& groups(Groups& g) { return g.impl_->groups; }
  static residual::RmsNorm& norm(Norm& n) { return n.impl_->rms; }
  static const StageBoundary& plan(const Stage& s) { return s.impl_->plan; }
  static StageRunner& runner(Stage& s) { return *s.impl_->runner; }
  static residual::ForwardBatch& batch(Forward& f) { return f.impl_->batch; }
  static Forward::Impl& forward(Forward& f) { return *f.impl_; }
  static Stage stage(std::unique_ptr<Stage::Impl> impl) { return Stage(std::move(impl)); }
  static StageExit exit(std::unique_ptr<StageExit::Impl> impl) { return StageExit(std::move(impl)); }
};

}  // namespace seam::boundary
