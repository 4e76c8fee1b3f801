// seam_info: what this Seam build and machine offer: version, configuration (every SEAM_*
// setting as it would apply now), bootstrap, transports, CPU features, CUDA.
#include <dlfcn.h>

#include <cstdio>
#include <string>
#include <vector>

#include "kernels/reduce/reduce.h"
#include "layouts/config.h"
#include "runtime/bootstrap/bootstrap.h"
#include "transports/ucx/ucx_transport.h"

namespace {

void section(const char* name) { std::printf("\n%s\n", name); }

/// The CUDA driver and its GPUs, through libcuda (dlopen: seam_info runs where CUDA is absent).
void print_cuda() {
#ifdef SEAM_HAVE_CUDA
  std::printf("  built with CUDA:  yes\n");
#else
  std::printf("  built with CUDA:  no\n");
#endif
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::printf("  CUDA driver:      not found (no GPU support on this machine)\n");
    return;
  }
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  using VersionFn = int (*)(int*);
  using GetFn = int (*)(int*, int);
  using NameFn = int (*)(char*, int, int);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  auto version = reinterpret_cast<VersionFn>(dlsym(lib, "cuDriverGetVersion"));
  auto get = reinterpret_cast<GetFn>(dlsym(lib, "cuDeviceGet"));
  auto name = reinterpret_cast<NameFn>(dlsym(lib, "cuDeviceGetName"));
  int v = 0, n = 0;
  if (version) version(&v);
  if (!init || !count || init(0) != 0 || count(&n) != 0) {
    std::printf("  CUDA driver:      %d.%d, no usable device\n", v / 1000, (v % 1000) / 10);
    return;
  }
  std::printf("  CUDA driver:      %d.%d, %d device(s)\n", v / 1000, (v % 1000) / 10, n);
  for (int d = 0; d < n && get && name; ++d) {
    int dev = 0;
    char buf[256] = {};
    if (get(&dev, d) == 0 && name(buf, sizeof(buf), dev) == 0) std::printf("    cuda:%d  %s\n", d, buf);
  }
}

}  // namespace

int main() {
  std::printf("Seam %s\n", SEAM_VERSION);
  try {
    const auto& config = seam::Config::get();
    section("Configuration (environment, defaults filled in):");
    for (const auto& line : config.describe()) std::printf("  %s\n", line.c_str());

    section("Bootstrap:");
    std::printf("  tcp-store:        %s\n", config.store_addr.empty() ? "not configured (SEAM_STORE_ADDR unset)"
                                                                       : ("SEAM_STORE_ADDR=" + config.store_addr).c_str());
#if SEAM_HAVE_PMIX
    std::printf("  pmix:             built in; %s\n",
                seam::bootstrap::pmix_launched() ? "launched by a PMIx server now" : "not launched by mpirun now");
#else
    std::printf("  pmix:             not built (libpmix-dev missing at build time)\n");
#endif
    std::printf("  host identity:    %s\n", seam::bootstrap::host_identity().c_str());
  } catch (const std::exception& e) {
    std::printf("  configuration error: %s\n", e.what());
  }

  section("Transports:");
  std::printf("  shm:              available (POSIX shared memory, futex wake-ups)\n");
  std::string tls;
  for (const auto& t : seam::ucx::available_transports()) tls += (tls.empty() ? "" : ", ") + t;
  std::printf("  ucx:              UCX %s; %s\n", seam::ucx::version().c_str(),
              tls.empty() ? "no transport found" : tls.c_str());

  section("CPU:");
  __builtin_cpu_init();
  std::printf("  avx2:             %s\n", __builtin_cpu_supports("avx2") ? "yes" : "no");
  std::printf("  avx512f:          %s\n", __builtin_cpu_supports("avx512f") ? "yes" : "no");
  std::printf("  avx512bw:         %s\n", __builtin_cpu_supports("avx512bw") ? "yes" : "no");
  std::printf("  reduction kernels: %s\n",
              std::string(seam::kernels::reduce_isa_name(seam::kernels::best_reduce_isa())).c_str());

  section("CUDA:");
  print_cuda();
  return 0;
}
