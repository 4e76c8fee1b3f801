#include "transports/cuda_peer/driver_api.h"

#include <cuda_runtime_api.h>

#include <string>

#include "seam/errors.h"

namespace seam::transport::cuda_peer {
namespace {

template <class Fn>
void find(Fn& fn, const char* name) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found{};
  // 12000: the ABI of each function as of CUDA 12.0 (the _v2 forms cuda.h maps the names to).
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || !p) {
    cudaGetLastError();
    throw CommError(std::string("seam: the CUDA driver lacks ") + name + " (is a driver for CUDA 12 or later installed?)");
  }
  fn = reinterpret_cast<Fn>(p);
}

DriverApi load() {
  DriverApi d{};
  find(d.get_error_name, "cuGetErrorName");
  find(d.device_get, "cuDeviceGet");
  find(d.device_get_attribute, "cuDeviceGetAttribute");
  find(d.mem_get_allocation_granularity, "cuMemGetAllocationGranularity");
  find(d.mem_create, "cuMemCreate");
  find(d.mem_release, "cuMemRelease");
  find(d.mem_address_reserve, "cuMemAddressReserve");
  find(d.mem_address_free, "cuMemAddressFree");
  find(d.mem_map, "cuMemMap");
  find(d.mem_unmap, "cuMemUnmap");
  find(d.mem_set_access, "cuMemSetAccess");
  find(d.mem_export_to_shareable_handle, "cuMemExportToShareableHandle");
  find(d.mem_import_from_shareable_handle, "cuMemImportFromShareableHandle");
  find(d.mem_get_address_range, "cuMemGetAddressRange");
  return d;
}

}  // namespace

const DriverApi& driver() {
  static const DriverApi api = load();
  return api;
}

}  // namespace seam::transport::cuda_peer
