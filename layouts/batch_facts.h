// BatchFacts moved to the public header; internal code keeps including this path.
#pragma once

#include "seam/batch_facts.h"
