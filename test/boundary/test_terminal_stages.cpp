// §8 test_terminal_stages: only the model's last layer is terminal, whatever the layer family; an
// MTP/NextN draft layer is its own one-layer stack (enters and ends it); a NextN MoE declares sparse.
#include <doctest/doctest.h>

#include <string>

#include "test/boundary/fixtures.h"

using namespace seam;
using namespace seam::boundary;
using namespace seam::boundary::testing;

namespace {
// One model family: the stage pattern of each layer (e.g. "AF" for a dense decoder layer).
struct Family {
  const char* name;
  std::vector<std::string> layers;
};

// Builds every layer on its own, as a model's layer constructors do: previous = the producer
// before the layer, following = the stage after it, terminal only on the model's last layer.
std::vector<std::vector<StageBoundary>> build_model(const PlanContext& ctx, const Family& f) {
  std::string pattern;
  for (const auto& l : f.layers) pattern += l;
  const auto decls = declarations(pattern);
  std::vector<StageDeclaration> connected;
  for (size_t i = 0; i < decls.size(); ++i)
    connected.push_back(i == 0 ? decls[0].entering_stack() : decls[i].with_previous(connected.back()));
  std::vector<std::vector<StageBoundary>> model;
  size_t begin = 0;
  for (size_t layer = 0; layer < f.layers.size(); ++layer) {
    const size_t end = begin + f.layers[layer].size();
    std::vector<StageSpec> specs;
    for (size_t i = begin; i < end; ++i) specs.push_back({decls[i]});
    StageNeighbours around;
    if (begin > 0) around.previous = connected[begin - 1];
    if (end < decls.size()) around.following = decls[end].with_previous(connected[end - 1]);
    around.terminal = layer + 1 == f.layers.size();
    model.push_back(make_stages(ctx, specs, around));
    begin = end;
  }
  return model;
}
}  // namespace

TEST_CASE("only the model's last layer is terminal (6 families x 4 layers)") {
  const Family families[] = {
      {"dense (Qwen3)", {"AF", "AF", "AF", "AF"}},
      {"MoE (Qwen3-MoE)", {"AE", "AE", "AE", "AE"}},
      {"first-k-dense (DeepSeek)", {"AF", "AE", "AE", "AE"}},
      {"interleaved (Llama4)", {"AF", "AE", "AF", "AE"}},
      {"hybrid single-stage (Nemotron-H)", {"M", "F", "M", "E"}},
      {"mixer stack (Mamba)", {"M", "M", "M", "M"}},
  };
  for (const Family& f : families)
    for (int tp : {1, 2}) {
      CAPTURE(f.name);
      CAPTURE(tp);
      const PlanContext ctx = context(tp);
      const auto model = build_model(ctx, f);
      std::vector<StageBoundary> flat;
      for (size_t layer = 0; layer < model.size(); ++layer)
        for (size_t i = 0; i < model[layer].size(); ++i) {
          const bool last = layer + 1 == model.size() && i + 1 == model[layer].size();
          CHECK(model[layer][i].plan().terminal() == last);
          CHECK(model[layer][i].plan().enters_stack() == (layer == 0 && i == 0));
          flat.push_back(model[layer][i]);
        }
      CHECK(edges_agree(flat));
      // The terminal stage leaves nothing for a following layer.
      const StageOutput& out = flat.back().plan().path(BatchVariant::ORDINARY).stage.output;
      CHECK_FALSE(out.leaves_for_next_layer);
      CHECK_FALSE(out.always_leaves);
    }
}

TEST_CASE("a NextN/MTP draft layer is its own stack: it enters and ends it") {
  const PlanContext ctx = context(2);
  const auto draft = make_stages(ctx, {{attn()}, {moe()}}, {.terminal = true});
  CHECK(draft[0].plan().enters_stack());
  CHECK_FALSE(draft[0].plan().terminal());
  CHECK(draft[1].plan().terminal());
  CHECK(draft[1].declaration().sparse);  // a Bailing-style NextN builds a MoE and declares it sparse
  CHECK(draft[1].decide_ffn_exit(batch(ctx)).completion == FfnCompletion::COMPLETE_NOW);
}
