// ExitFlags and ScopedExitFlags moved to the public header (seam/layer_output.h); internal code
// keeps including this path. ForwardBatch holds the current flags; compute reads them.
#pragma once

#include "seam/layer_output.h"
