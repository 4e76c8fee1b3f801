#include "runtime/boundary/tbo.h"

#include "seam/errors.h"
#include "runtime/boundary/resolver.h"

namespace seam::boundary {

TboSplitMove tbo_split_move(const Topology& topology, BatchVariant v, Layout layer_input_rows) {
  const RowLayouts rows = row_layouts(topology, v);
  if (layer_input_rows == rows.attention) return TboSplitMove::KEEP;
  if (layer_input_rows == rows.local) return TboSplitMove::GATHER_THEN_SLICE;
  throw NotSupportedError("layer_input_rows=" + layer_input_rows.to_string());
}

}  // namespace seam::boundary
