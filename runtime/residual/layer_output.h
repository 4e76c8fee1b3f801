// LayerOutput moved to the public header; internal code keeps including this path.
#pragma once

#include "seam/layer_output.h"
