#include "transports/cuda_peer/vmm_allocation.h"

#include "transports/cuda_peer/driver_api.h"

#include <string>

#include "seam/errors.h"

namespace seam::transport::cuda_peer {
namespace {

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  driver().get_error_name(r, &name);
  throw CommError(std::string("seam: CUDA VMM ") + what + " failed: " + (name ? name : "unknown error"));
}

CUmemAllocationProp properties(int device) {
  CUmemAllocationProp p{};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = device;
  p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return p;
}

CUdeviceptr map(CUmemGenericAllocationHandle handle, size_t bytes, int device, bool* access_refused) {
  CUdeviceptr address = 0;
  check(driver().mem_address_reserve(&address, bytes, 0, 0, 0), "address reservation");
  if (const CUresult r = driver().mem_map(address, bytes, 0, handle, 0); r != CUDA_SUCCESS) {
    driver().mem_address_free(address, bytes);
    check(r, "map");
  }
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (const CUresult r = driver().mem_set_access(address, bytes, &access, 1); r != CUDA_SUCCESS) {
    driver().mem_unmap(address, bytes);
    driver().mem_address_free(address, bytes);
    if (access_refused) {
      *access_refused = true;
      return 0;
    }
    check(r, "access");
  }
  return address;
}

}  // namespace

VmmAllocation VmmAllocation::create(int device, size_t bytes) {
  const CUmemAllocationProp p = properties(device);
  size_t granularity = 0;
  check(driver().mem_get_allocation_granularity(&granularity, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), "granularity");
  VmmAllocation a;
  a.bytes_ = (bytes + granularity - 1) / granularity * granularity;
  CUmemGenericAllocationHandle handle = 0;
  check(driver().mem_create(&handle, a.bytes_, &p, 0), "allocation");
  a.handle_ = handle;
  a.address_ = map(handle, a.bytes_, device, nullptr);
  return a;
}

VmmAllocation VmmAllocation::import(const UniqueFd& fd, size_t bytes, int device) {
  CUmemGenericAllocationHandle handle = 0;
  check(driver().mem_import_from_shareable_handle(&handle, reinterpret_cast<void*>(static_cast<uintptr_t>(fd.get())),
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
        "import");
  VmmAllocation a;
  a.handle_ = handle;
  a.bytes_ = bytes;
  bool refused = false;
  a.address_ = map(handle, bytes, device, &refused);
  if (refused) throw NotSupportedError("seam: CUDA device " + std::to_string(device) + " cannot map a peer's memory");
  return a;
}

VmmAllocation& VmmAllocation::operator=(VmmAllocation&& o) noexcept {
  if (this != &o) {
    release();
    handle_ = o.handle_;
    address_ = o.address_;
    bytes_ = o.bytes_;
    o.handle_ = o.address_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

VmmAllocation::~VmmAllocation() { release(); }

void VmmAllocation::release() noexcept {
  if (address_) {
    driver().mem_unmap(address_, bytes_);
    driver().mem_address_free(address_, bytes_);
  }
  if (handle_) driver().mem_release(handle_);
  handle_ = address_ = 0;
  bytes_ = 0;
}

UniqueFd VmmAllocation::export_fd() const {
  int fd = -1;
  check(driver().mem_export_to_shareable_handle(&fd, handle_, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "export");
  return UniqueFd(fd);
}

}  // namespace seam::transport::cuda_peer
