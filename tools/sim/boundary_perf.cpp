// boundary_perf: the host time Seam spends per stage boundary — prepare plus finish / exit scope and
// its finish — over a 64-layer (128-stage) attention/FFN stack on one rank, with tiny tensors and a
// no-op compute, so what is timed is the boundary's own work: path selection, the identity checks,
// the residual stream's bookkeeping and the (tiny) add + RMSNorm. Prints the median over repeats.
//
//   boundary_perf [--layers 64] [--tokens 4] [--hidden 16] [--iters 2000] [--pattern AF]
#include <cstdint>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "seam/errors.h"
#include "runtime/boundary/rows/process_groups.h"
#include "runtime/residual/batch.h"
#include "tools/common/cli.h"
#include "tools/plan/pattern.h"
#include "tools/sim/model.h"
#include "tools/sim/stack.h"
#include "tools/sim/driver.h"

using namespace seam;
using namespace seam::sim;

namespace {

void usage() {
  std::puts("usage: boundary_perf [--layers 64] [--tokens 4] [--hidden 16] [--iters 2000] [--pattern AF]");
}

struct PerfArgs {
  std::string pattern = "AF";
  int layers = 64;
  int64_t tokens = 4;
  int64_t hidden = 16;
  int iters = 2000;
};

// Bounds keep the stack and the two tensors small enough to allocate; at least one timed forward.
constexpr int kMaxStages = 1 << 20;
constexpr int64_t kMaxTokens = 1 << 12;
constexpr int64_t kMaxHidden = 1 << 14;

PerfArgs parse(int argc, char** argv) {
  PerfArgs a;
  cli::ArgReader in(argc, argv, usage);
  while (in.next()) {
    if (plan::take_stack_flag(in, a.pattern, a.layers, kMaxStages)) continue;
    const std::string& flag = in.flag();
    if (flag == "--tokens") a.tokens = in.number(1, kMaxTokens);
    else if (flag == "--hidden") a.hidden = in.number(1, kMaxHidden);
    else if (flag == "--iters") a.iters = in.int_number(1, 1 << 30);
    else
      in.reject();
  }
  plan::check_stack(a.pattern, a.layers, kMaxStages);
  return a;
}

// One forward through every boundary; compute is a no-op that hands back a fixed output.
void forward(SimStack& stack, std::vector<std::unique_ptr<boundary::StageRunner>>& stages, residual::ForwardBatch& batch,
             const Tensor& embedding, const Tensor& output) {
  residual::start(batch);
  residual::LayerOutput h(embedding);
  for (auto& stage : stages) {
    stage->prepare(h, batch);
    if (stage->stage().plan().finishes_directly()) {
      h = stage->finish(output, batch);
    } else {
      auto exit = stage->exit(batch);
      h = exit.finish(output);
    }
  }
  residual::norm(h, batch, stack.final_norm());
}

int run(int argc, char** argv) {
  const PerfArgs a = parse(argc, argv);
  ModelConfig config;
  for (int i = 0; i < a.layers; ++i) config.stages += a.pattern;
  config.hidden = a.hidden;
  const Model model(config);
  const boundary::PlanContext ctx{Topology::make(1), boundary::ReductionPolicy::RS_RSV};
  SimStack stack(model, ctx, 1, 0, nullptr);
  boundary::rows::ProcessGroups groups(ctx.topology);
  auto stages = bind_runners(stack, groups);

  residual::ForwardBatch batch;
  const std::vector<int64_t> tokens = {a.tokens};
  batch.facts = BatchFacts::make(tokens, 0, 1, PaddingMode::MAX_LEN);
  Buffer embedding_storage(static_cast<size_t>(a.tokens * a.hidden) * 4), output_storage(static_cast<size_t>(a.tokens * a.hidden) * 4);
  const Tensor embedding = embedding_storage.as_tensor(DType::f32, a.tokens, a.hidden);
  const Tensor output = output_storage.as_tensor(DType::f32, a.tokens, a.hidden);

  const int64_t boundaries = stack.end() - stack.begin();
  for (int i = 0; i < 50; ++i) forward(stack, stages, batch, embedding, output);  // warm-up
  std::vector<double> per_boundary_us;
  for (int i = 0; i < a.iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    forward(stack, stages, batch, embedding, output);
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    per_boundary_us.push_back(us / static_cast<double>(boundaries));
  }
  std::sort(per_boundary_us.begin(), per_boundary_us.end());
  std::printf("# boundary_perf: %lld stages (%d x %s), %lld tokens x %lld hidden fp32, 1 rank, %d forwards\n",
              static_cast<long long>(boundaries), a.layers, a.pattern.c_str(), static_cast<long long>(a.tokens),
              static_cast<long long>(a.hidden), a.iters);
  std::printf("per-boundary host time (prepare + finish/exit, incl. add+RMSNorm and the final norm share):\n");
  std::printf("  median %.3f us   p10 %.3f us   p90 %.3f us   (target <= 2 us)\n", per_boundary_us[per_boundary_us.size() / 2],
              per_boundary_us[per_boundary_us.size() / 10], per_boundary_us[per_boundary_us.size() * 9 / 10]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_tool("boundary_perf", run, argc, argv); }
