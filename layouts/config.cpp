#include <cstdint>
#include "layouts/config.h"

#include <cstdlib>
#include <string>

#include "seam/errors.h"

namespace seam {
namespace {

std::string env_string(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : fallback;
}

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  if (*end != '\0') throw ValueError(std::string(name) + ": not an integer: '" + v + "'");
  return x;
}

/// A size threshold: -1 (automatic), 0 (never) or a size in bytes.
int64_t env_threshold(const char* name, int64_t fallback) {
  const int64_t v = env_int(name, fallback);
  if (v < -1) throw ValueError(std::string(name) + " must be -1 (automatic), 0 (never) or a size");
  return v;
}

}  // namespace

Config Config::from_env() {
  Config c;
  c.log_level = env_string("SEAM_LOG_LEVEL", c.log_level);
  c.transport = env_string("SEAM_TRANSPORT", c.transport);
  if (!c.transport.empty() && c.transport != "shm" && c.transport != "ucx")
    throw ValueError("SEAM_TRANSPORT must be 'shm' or 'ucx', got '" + c.transport + "'");
  c.timeout_ms = env_int("SEAM_TIMEOUT_MS", c.timeout_ms);
  if (c.timeout_ms <= 0) throw ValueError("SEAM_TIMEOUT_MS must be positive");
  c.spin_us = env_int("SEAM_SPIN_US", c.spin_us);
  if (c.spin_us < 0) throw ValueError("SEAM_SPIN_US must be 0 or more");
  c.algorithm = env_string("SEAM_ALGO", c.algorithm);
  c.small_msg_bytes = static_cast<size_t>(env_int("SEAM_SMALL_MSG_BYTES", 0));
  c.chunk_bytes = static_cast<size_t>(env_int("SEAM_CHUNK_BYTES", 0));
  c.store_addr = env_string("SEAM_STORE_ADDR", "");
  c.rank = static_cast<int>(env_int("SEAM_RANK", -1));
  c.world_size = static_cast<int>(env_int("SEAM_WORLD_SIZE", -1));
  c.job_token = env_string("SEAM_JOB_TOKEN", "");
  c.hostname = env_string("SEAM_HOSTNAME", "");
  int64_t ring = env_int("SEAM_SHM_RING_BYTES", static_cast<int64_t>(c.shm_ring_bytes));
  if (ring < 4096 || (ring & (ring - 1)) != 0)
    throw ValueError("SEAM_SHM_RING_BYTES must be a power of two >= 4096, got " + std::to_string(ring));
  c.shm_ring_bytes = static_cast<size_t>(ring);
  c.shm_cma_bytes = env_threshold("SEAM_SHM_CMA_BYTES", c.shm_cma_bytes);
  c.shm_single_copy_bytes = env_threshold("SEAM_SHM_SINGLE_COPY_BYTES", c.shm_single_copy_bytes);
  c.shm_schedule = env_string("SEAM_SHM_SCHEDULE", "");
  if (!c.shm_schedule.empty() && c.shm_schedule != "slots" && c.shm_schedule != "slots-whole" &&
      c.shm_schedule != "slots-balanced" && c.shm_schedule != "single-copy" &&
      c.shm_schedule != "slots-eager" && c.shm_schedule != "single-copy-balanced")
    throw ValueError("SEAM_SHM_SCHEDULE must be slots, slots-whole, slots-balanced, single-copy, "
                     "single-copy-balanced or slots-eager, got '" + c.shm_schedule + "'");
  c.helper_threads = static_cast<int>(env_int("SEAM_HELPER_THREADS", c.helper_threads));
  if (c.helper_threads < -1 || c.helper_threads > 7)
    throw ValueError("SEAM_HELPER_THREADS must be -1 (automatic) or 0 to 7, got " +
                     std::to_string(c.helper_threads));
  c.reduce_isa = env_string("SEAM_REDUCE_ISA", "");
  if (!c.reduce_isa.empty() && c.reduce_isa != "generic" && c.reduce_isa != "avx2" &&
      c.reduce_isa != "avx512" && c.reduce_isa != "avx512bf16")
    throw ValueError("SEAM_REDUCE_ISA must be generic, avx2, avx512 or avx512bf16, got '" +
                     c.reduce_isa + "'");
  c.cuda_algorithm = env_string("SEAM_CUDA_ALGO", "");
  if (!c.cuda_algorithm.empty() && c.cuda_algorithm != "one_shot" && c.cuda_algorithm != "two_shot")
    throw ValueError("SEAM_CUDA_ALGO must be one_shot or two_shot, got '" + c.cuda_algorithm + "'");
  c.cuda_workspace_mb = env_int("SEAM_CUDA_WORKSPACE_MB", c.cuda_workspace_mb);
  if (c.cuda_workspace_mb < 1 || c.cuda_workspace_mb > 4096)
    throw ValueError("SEAM_CUDA_WORKSPACE_MB must be 1 to 4096, got " + std::to_string(c.cuda_workspace_mb));
  c.cuda_peer = env_string("SEAM_CUDA_PEER", c.cuda_peer);
  c.cuda_staged_chunk_kb = env_int("SEAM_CUDA_STAGED_CHUNK_KB", c.cuda_staged_chunk_kb);
  if (c.cuda_staged_chunk_kb < 16 || c.cuda_staged_chunk_kb > 262144)
    throw ValueError("SEAM_CUDA_STAGED_CHUNK_KB must be 16 to 262144, got " + std::to_string(c.cuda_staged_chunk_kb));
  c.cuda_norm = env_string("SEAM_CUDA_NORM", c.cuda_norm);
  if (c.cuda_norm != "shared" && c.cuda_norm != "registers")
    throw ValueError("SEAM_CUDA_NORM must be registers or shared, got '" + c.cuda_norm + "'");
  c.cuda_norm_pdl = static_cast<int>(env_int("SEAM_CUDA_NORM_PDL", c.cuda_norm_pdl));
  if (c.cuda_norm_pdl != 0 && c.cuda_norm_pdl != 1)
    throw ValueError("SEAM_CUDA_NORM_PDL must be 0 or 1, got " + std::to_string(c.cuda_norm_pdl));
  c.cuda_norm_threads = static_cast<int>(env_int("SEAM_CUDA_NORM_THREADS", c.cuda_norm_threads));
  if (c.cuda_norm_threads != 0 && (c.cuda_norm_threads < 32 || c.cuda_norm_threads > 1024))
    throw ValueError("SEAM_CUDA_NORM_THREADS must be 0 or 32 to 1024, got " + std::to_string(c.cuda_norm_threads));
  if (c.cuda_peer != "auto" && c.cuda_peer != "off")
    throw ValueError("SEAM_CUDA_PEER must be auto or off, got '" + c.cuda_peer + "'");
  c.pmix_namespace = env_string("PMIX_NAMESPACE", "");
  return c;
}

const Config& Config::get() {
  static const Config config = from_env();
  return config;
}

std::vector<std::string> Config::describe() const {
  auto s = [](size_t v) { return v ? std::to_string(v) : std::string("built-in"); };
  auto threshold = [](int64_t v) {
    return v < 0 ? std::string("-1 (automatic)") : v == 0 ? std::string("0 (never)") : std::to_string(v);
  };
  return {
      "SEAM_LOG_LEVEL=" + log_level,
      "SEAM_TRANSPORT=" + (transport.empty() ? std::string("auto") : transport),
      "SEAM_TIMEOUT_MS=" + std::to_string(timeout_ms),
      "SEAM_SPIN_US=" + std::to_string(spin_us),
      "SEAM_ALGO=" + (algorithm.empty() ? std::string("auto") : algorithm),
      "SEAM_SMALL_MSG_BYTES=" + s(small_msg_bytes),
      "SEAM_CHUNK_BYTES=" + s(chunk_bytes),
      "SEAM_STORE_ADDR=" + (store_addr.empty() ? std::string("(unset)") : store_addr),
      "SEAM_RANK=" + std::to_string(rank),
      "SEAM_WORLD_SIZE=" + std::to_string(world_size),
      std::string("SEAM_JOB_TOKEN=") + (job_token.empty() ? "(unset)" : "(set)"),
      "SEAM_HOSTNAME=" + (hostname.empty() ? std::string("(gethostname)") : hostname),
      "SEAM_SHM_RING_BYTES=" + std::to_string(shm_ring_bytes),
      "SEAM_SHM_CMA_BYTES=" + threshold(shm_cma_bytes),
      "SEAM_SHM_SINGLE_COPY_BYTES=" + threshold(shm_single_copy_bytes),
      "SEAM_SHM_SCHEDULE=" + (shm_schedule.empty() ? std::string("tuned") : shm_schedule),
      "SEAM_HELPER_THREADS=" +
          (helper_threads < 0 ? std::string("-1 (automatic)") : std::to_string(helper_threads)),
      "SEAM_REDUCE_ISA=" + (reduce_isa.empty() ? std::string("best") : reduce_isa),
      "SEAM_CUDA_ALGO=" + (cuda_algorithm.empty() ? std::string("auto") : cuda_algorithm),
      "SEAM_CUDA_WORKSPACE_MB=" + std::to_string(cuda_workspace_mb),
      "SEAM_CUDA_PEER=" + cuda_peer,
      "SEAM_CUDA_STAGED_CHUNK_KB=" + std::to_string(cuda_staged_chunk_kb),
      "SEAM_CUDA_NORM=" + cuda_norm,
      "SEAM_CUDA_NORM_THREADS=" + (cuda_norm_threads ? std::to_string(cuda_norm_threads) : std::string("0 (by rows)")),
      "SEAM_CUDA_NORM_PDL=" + std::to_string(cuda_norm_pdl),
  };
}

}  // namespace seam
