// The auxiliary-capture callback (§4.4): capture(value, owned). With owned = false the value may
// alias the mutable residual or a reusable communication buffer and the collector must copy it
// before retaining it; owned = true only for storage nothing else will write.
#pragma once

#include "layouts/tensor.h"
#include "runtime/residual/function_ref.h"

namespace seam::residual {

using Capture = FunctionRef<void(const Tensor& value, bool owned)>;

}  // namespace seam::residual
