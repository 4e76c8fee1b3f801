// seam_info: what this Seam build and machine offer: version, configuration (every SEAM_*
// setting as it would apply now), bootstrap, transports, CPU features, CUDA.
// `seam_info --variables` prints only the SEAM_* names, one a line (the README's configuration
// table is checked against them: test/tools/config_table_check.cmake); `seam_info --explain
// COLLECTIVE BYTES RANKS` which algorithm such a call takes (explain.h).
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/reduce/reduce.h"
#include "layouts/config.h"
#include "runtime/bootstrap/bootstrap.h"
#include "tools/info/explain.h"
#include "transports/ucx/ucx_transport.h"

namespace {

void section(const char* name) { std::printf("\n%s\n", name); }

/// The CUDA driver's entry points seam_info uses, looked up in libcuda (dlopen: seam_info runs
/// where CUDA is absent, and lists the GPUs whether or not this build has the device path).
struct CudaDriver {
  int (*init)(unsigned) = nullptr;
  int (*version)(int*) = nullptr;
  int (*count)(int*) = nullptr;
  int (*get)(int*, int) = nullptr;
  int (*name)(char*, int, int) = nullptr;
  int (*total_mem)(size_t*, int) = nullptr;
  int (*attribute)(int*, int, int) = nullptr;
  int (*can_access_peer)(int*, int, int) = nullptr;

  explicit CudaDriver(void* lib) {
    auto find = [lib](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
    };
    find(init, "cuInit");
    find(version, "cuDriverGetVersion");
    find(count, "cuDeviceGetCount");
    find(get, "cuDeviceGet");
    find(name, "cuDeviceGetName");
    find(total_mem, "cuDeviceTotalMem_v2");
    find(attribute, "cuDeviceGetAttribute");
    find(can_access_peer, "cuDeviceCanAccessPeer");
  }
  /// A CUdevice_attribute of `dev`; -1 where it cannot be read.
  int attr(int which, int dev) const {
    int value = -1;
    if (!attribute || attribute(&value, which, dev) != 0) return -1;
    return value;
  }
};

// CUdevice_attribute values (cuda.h), which seam_info may not have been built with.
constexpr int kMultiprocessorCount = 16;
constexpr int kComputeCapabilityMajor = 75;
constexpr int kComputeCapabilityMinor = 76;
constexpr int kVirtualMemoryManagement = 102;
constexpr int kPosixFdHandles = 103;

const char* yes_no(int value) { return value > 0 ? "yes" : value == 0 ? "no" : "?"; }

/// The CUDA driver, its GPUs, the peer-access matrix and whether the peer-memory transport
/// (cuda_peer) can run: it maps peers' CUDA VMM allocations shared as POSIX file descriptors.
void print_cuda() {
#ifdef SEAM_HAVE_CUDA
  std::printf("  built with CUDA:  yes (DeviceCommunicator, seam_cuda)\n");
#else
  std::printf("  built with CUDA:  no\n");
#endif
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::printf("  CUDA driver:      not found (no GPU support on this machine)\n");
    return;
  }
  CudaDriver cu(lib);
  int v = 0, n = 0;
  if (cu.version) cu.version(&v);
  if (!cu.init || !cu.count || !cu.get || cu.init(0) != 0 || cu.count(&n) != 0 || n == 0) {
    std::printf("  CUDA driver:      %d.%d, no usable device\n", v / 1000, (v % 1000) / 10);
    return;
  }
  std::printf("  CUDA driver:      %d.%d, %d device(s)\n", v / 1000, (v % 1000) / 10, n);
  std::vector<int> devs(static_cast<size_t>(n), -1);
  bool every_gpu_maps = true;  // VMM and POSIX fd handles on every GPU
  for (int d = 0; d < n; ++d) {
    if (cu.get(&devs[d], d) != 0) {
      std::printf("    cuda:%d  (cuDeviceGet failed)\n", d);
      every_gpu_maps = false;
      continue;
    }
    char name[256] = "?";
    if (cu.name) cu.name(name, sizeof(name), devs[d]);
    size_t bytes = 0;
    if (cu.total_mem) cu.total_mem(&bytes, devs[d]);
    const int vmm = cu.attr(kVirtualMemoryManagement, devs[d]);
    const int fds = cu.attr(kPosixFdHandles, devs[d]);
    every_gpu_maps = every_gpu_maps && vmm > 0 && fds > 0;
    std::printf("    cuda:%d  %s, sm_%d%d, %d SMs, %.1f GiB; VMM %s, POSIX fd handles %s\n", d, name,
                cu.attr(kComputeCapabilityMajor, devs[d]), cu.attr(kComputeCapabilityMinor, devs[d]),
                cu.attr(kMultiprocessorCount, devs[d]), static_cast<double>(bytes) / (1 << 30),
                yes_no(vmm), yes_no(fds));
  }
  // Row d, column p: whether cuda:d can access cuda:p's memory.
  bool every_pair = true;
  if (n > 1) {
    std::printf("  peer access (cuDeviceCanAccessPeer, row reads column):\n         ");
    for (int p = 0; p < n; ++p) std::printf(" %3d", p);
    std::printf("\n");
    for (int d = 0; d < n; ++d) {
      std::printf("    cuda:%d", d);
      for (int p = 0; p < n; ++p) {
        int can = 0;
        bool known = d != p && cu.can_access_peer && devs[d] >= 0 && devs[p] >= 0 &&
                     cu.can_access_peer(&can, devs[d], devs[p]) == 0;
        if (d != p && !(known && can)) every_pair = false;
        std::printf(" %3s", d == p ? "-" : known ? (can ? "yes" : "no") : "?");
      }
      std::printf("\n");
    }
  }
  // The device communicator takes the peer path where every rank's GPU maps and reaches the
  // others' (runtime/device); else it stages through host memory.
  bool turned_off = false;
  try {
    turned_off = seam::Config::get().cuda_peer == "off";
  } catch (const std::exception&) {
  }
  if (turned_off)
    std::printf("  cuda_peer:        turned off (SEAM_CUDA_PEER=off): device collectives are staged "
                "through host memory\n");
  else if (every_gpu_maps && every_pair)
    std::printf("  cuda_peer:        usable (VMM with POSIX fd handles on every GPU%s)\n",
                n > 1 ? ", peer access between every pair" : "");
  else
    std::printf("  cuda_peer:        not usable among all GPUs (%s); device collectives of ranks "
                "on GPUs without it are staged through host memory\n",
                !every_gpu_maps ? "a GPU lacks VMM or POSIX fd handles" : "a pair lacks peer access");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--variables") == 0) {
    // The names alone, from the defaults: the environment's values play no part.
    for (const auto& line : seam::Config{}.describe())
      std::printf("%s\n", line.substr(0, line.find('=')).c_str());
    return 0;
  }
  if (argc >= 2 && std::strcmp(argv[1], "--explain") == 0) {
    if (argc != 5) {
      std::fprintf(stderr, "seam_info: usage: seam_info --explain COLLECTIVE BYTES RANKS\n");
      return 2;
    }
    try {
      seam::info::explain(argv[2], argv[3], argv[4]);
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "seam_info: %s\n", e.what());
      return 2;
    }
  }
  if (argc > 1) {
    std::fprintf(stderr,
                 "seam_info: unknown argument %s\nusage: seam_info [--variables | --explain COLLECTIVE BYTES RANKS]\n",
                 argv[1]);
    return 2;
  }
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
  std::printf("  ucx CUDA memory:  %s\n",
              seam::ucx::cuda_memory_supported()
                  ? "supported by this UCX (unused: device calls across hosts stage through pinned host memory)"
                  : "not supported by this UCX: device calls across hosts stage through pinned host memory");

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
