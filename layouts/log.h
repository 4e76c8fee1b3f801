// Seam's logger: spdlog, quiet by default (warn), level from SEAM_LOG_LEVEL.
// At debug every collective logs its algorithm and transport path.
#pragma once

#include <spdlog/spdlog.h>

namespace seam {

/// The "seam" logger, created on first use with the configured level.
spdlog::logger& log();

}  // namespace seam

/// log().debug(...), with the arguments evaluated only when debug logging is on: every
/// collective logs its algorithm and schedule, and on the path of a small call the arguments
/// (names, sizes, virtual calls on the group) and the call into spdlog cost tens of nanoseconds.
#define SEAM_LOG_DEBUG(...)                                                               \
  do {                                                                                    \
    ::spdlog::logger& seam_logger_ = ::seam::log();                                       \
    if (seam_logger_.should_log(::spdlog::level::debug)) seam_logger_.debug(__VA_ARGS__); \
  } while (0)
