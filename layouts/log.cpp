#include "layouts/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include "layouts/config.h"

namespace seam {

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_mt("seam");
    l->set_level(spdlog::level::from_str(Config::get().log_level));
    l->set_pattern("[seam %P %l] %v");
    return l;
  }();
  return *logger;
}

}  // namespace seam
