// The CUDA driver functions Seam uses, found through the runtime (cudaGetDriverEntryPointByVersion)
// rather than linked: the library then loads, builds and links where no driver is installed (CI),
// and fails with a clear error only when a device communicator is made.
#pragma once

#include <cuda.h>

namespace seam::transport::cuda_peer {

struct DriverApi {
  decltype(&::cuGetErrorName) get_error_name;
  decltype(&::cuDeviceGet) device_get;
  decltype(&::cuDeviceGetAttribute) device_get_attribute;
  decltype(&::cuMemGetAllocationGranularity) mem_get_allocation_granularity;
  decltype(&::cuMemCreate) mem_create;
  decltype(&::cuMemRelease) mem_release;
  decltype(&::cuMemAddressReserve) mem_address_reserve;
  decltype(&::cuMemAddressFree) mem_address_free;
  decltype(&::cuMemMap) mem_map;
  decltype(&::cuMemUnmap) mem_unmap;
  decltype(&::cuMemSetAccess) mem_set_access;
  decltype(&::cuMemExportToShareableHandle) mem_export_to_shareable_handle;
  decltype(&::cuMemImportFromShareableHandle) mem_import_from_shareable_handle;
  decltype(&::cuMemGetAddressRange) mem_get_address_range;
};

/// The driver's functions (looked up once). Throws CommError when the driver lacks one.
const DriverApi& driver();

}  // namespace seam::transport::cuda_peer
