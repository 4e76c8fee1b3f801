// Seam's logger: spdlog, quiet by default (warn), level from SEAM_LOG_LEVEL.
// At debug every collective logs its algorithm and transport path.
#pragma once

#include <spdlog/spdlog.h>

namespace seam {

/// The "seam" logger, created on first use with the configured level.
spdlog::logger& log();

}  // namespace seam
