// The reduction policy moved to the public header; internal code keeps including this path.
#pragma once

#include "seam/reduction_policy.h"
