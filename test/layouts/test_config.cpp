// Config::from_env: defaults, the automatic/never/size settings, and malformed values rejected
// with the variable's name.
#include <cstdint>
#include <doctest/doctest.h>
#include <stdlib.h>

#include <string>
#include <utility>

#include "layouts/config.h"
#include "seam/errors.h"

using seam::Config;

namespace {

/// Sets one variable for the scope of a test case.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }
  const char* name_;
};

}  // namespace

TEST_CASE("defaults: automatic single-copy choices, 1 MiB rings, 60 s deadline") {
  const Config c = Config::from_env();
  CHECK(c.shm_single_copy_bytes == -1);
  CHECK(c.shm_cma_bytes == -1);
  CHECK(c.shm_ring_bytes == (size_t{1} << 20));
  CHECK(c.timeout_ms == 60000);
}

TEST_CASE("single-copy settings take -1 (automatic), 0 (never) or a size") {
  const std::pair<const char*, int64_t Config::*> settings[] = {
      {"SEAM_SHM_SINGLE_COPY_BYTES", &Config::shm_single_copy_bytes},
      {"SEAM_SHM_CMA_BYTES", &Config::shm_cma_bytes}};
  for (const auto& setting : settings) {
    // Not a structured binding: clang before 16 cannot capture one (CAPTURE is a lambda).
    const char* name = setting.first;
    const auto member = setting.second;
    CAPTURE(std::string(name));
    {
      ScopedEnv e(name, "0");
      CHECK(Config::from_env().*member == 0);
    }
    {
      ScopedEnv e(name, "4096");
      CHECK(Config::from_env().*member == 4096);
    }
    {
      ScopedEnv e(name, "-2");
      CHECK_THROWS_AS(Config::from_env(), seam::ValueError);
    }
    {
      ScopedEnv e(name, "1M");
      CHECK_THROWS_WITH_AS(Config::from_env(), doctest::Contains(name), seam::ValueError);
    }
  }
}

TEST_CASE("malformed values are refused") {
  {
    ScopedEnv e("SEAM_SHM_RING_BYTES", "5000");  // not a power of two
    CHECK_THROWS_AS(Config::from_env(), seam::ValueError);
  }
  {
    ScopedEnv e("SEAM_TRANSPORT", "tcp");
    CHECK_THROWS_AS(Config::from_env(), seam::ValueError);
  }
  {
    ScopedEnv e("SEAM_TIMEOUT_MS", "0");
    CHECK_THROWS_AS(Config::from_env(), seam::ValueError);
  }
}

TEST_CASE("reduce ISA cap: the best by default, the four sets taken, others refused") {
  CHECK(Config::from_env().reduce_isa.empty());
  for (const char* taken : {"generic", "avx2", "avx512", "avx512bf16"}) {
    ScopedEnv e("SEAM_REDUCE_ISA", taken);
    CHECK(Config::from_env().reduce_isa == taken);
  }
  for (const char* refused : {"sse", "AVX2", "avx-512"}) {
    CAPTURE(std::string(refused));
    ScopedEnv e("SEAM_REDUCE_ISA", refused);
    CHECK_THROWS_WITH_AS(Config::from_env(), doctest::Contains("SEAM_REDUCE_ISA"),
                         seam::ValueError);
  }
}

TEST_CASE("helper threads: -1 (automatic) by default, 0 to 7 taken, others refused") {
  CHECK(Config::from_env().helper_threads == -1);
  for (const char* taken : {"0", "3", "7"}) {
    ScopedEnv e("SEAM_HELPER_THREADS", taken);
    CHECK(Config::from_env().helper_threads == std::stoi(taken));
  }
  for (const char* refused : {"-2", "8", "two"}) {
    CAPTURE(std::string(refused));
    ScopedEnv e("SEAM_HELPER_THREADS", refused);
    CHECK_THROWS_WITH_AS(Config::from_env(), doctest::Contains("SEAM_HELPER_THREADS"),
                         seam::ValueError);
  }
}

TEST_CASE("device settings: defaults, accepted values, refusals naming the variable") {
  const Config c = Config::from_env();
  CHECK(c.cuda_algorithm.empty());
  CHECK(c.cuda_workspace_mb == 32);
  CHECK(c.cuda_peer == "auto");
  CHECK(c.cuda_norm == "registers");
  CHECK(c.cuda_norm_threads == 0);
  CHECK(c.cuda_norm_pdl == 1);
  {
    ScopedEnv e("SEAM_CUDA_NORM", "shared");
    ScopedEnv t("SEAM_CUDA_NORM_THREADS", "256");
    CHECK(Config::from_env().cuda_norm == "shared");
    CHECK(Config::from_env().cuda_norm_threads == 256);
  }
  {
    ScopedEnv e("SEAM_CUDA_NORM", "shared");
    ScopedEnv p("SEAM_CUDA_NORM_PDL", "0");
    CHECK(Config::from_env().cuda_norm == "shared");
    CHECK(Config::from_env().cuda_norm_pdl == 0);
  }
  for (const char* taken : {"one_shot", "two_shot"}) {
    ScopedEnv e("SEAM_CUDA_ALGO", taken);
    CHECK(Config::from_env().cuda_algorithm == taken);
  }
  {
    ScopedEnv e("SEAM_CUDA_WORKSPACE_MB", "1");
    CHECK(Config::from_env().cuda_workspace_mb == 1);
  }
  {
    ScopedEnv e("SEAM_CUDA_PEER", "off");
    CHECK(Config::from_env().cuda_peer == "off");
  }
  const std::pair<const char*, const char*> refused[] = {{"SEAM_CUDA_ALGO", "ring"},
                                                         {"SEAM_CUDA_WORKSPACE_MB", "0"},
                                                         {"SEAM_CUDA_WORKSPACE_MB", "5000"},
                                                         {"SEAM_CUDA_PEER", "on"},
                                                         {"SEAM_CUDA_NORM", "auto"},
                                                         {"SEAM_CUDA_NORM_THREADS", "16"},
                                                         {"SEAM_CUDA_NORM_THREADS", "2048"},
                                                         {"SEAM_CUDA_NORM_PDL", "2"}};
  for (const auto& [variable, value] : refused) {
    const char* name = variable;  // captured below: clang before 16 cannot capture a binding
    CAPTURE(std::string(name));
    ScopedEnv e(name, value);
    CHECK_THROWS_WITH_AS(Config::from_env(), doctest::Contains(name), seam::ValueError);
  }
}
