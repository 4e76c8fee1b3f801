// Stage declarations moved to the public header; internal code keeps including this path.
#pragma once

#include "seam/stage_declaration.h"
