// The facade's device half (seam/boundary_device.h): a BoundaryDevice on the Groups' process
// groups, whose fusions and device the facade's stages and forwards then take.
#include "seam/boundary_device.h"

#include <utility>

#include "runtime/boundary/facade_access.h"
#include "runtime/device/boundary_device.h"

namespace seam::boundary {

struct DeviceBoundary::Impl {
  Groups::Impl& groups;
  std::unique_ptr<device::BoundaryDevice> attached;
};

DeviceBoundary::DeviceBoundary(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<DeviceBoundary> DeviceBoundary::attach(Groups& groups, int device) {
  Groups::Impl& g = Access::impl(groups);
  if (g.device.is_cuda()) throw UsageError("seam::boundary: a GPU is attached to these groups already");
  auto impl = std::make_unique<Impl>(Impl{g, device::BoundaryDevice::attach(g.groups, device)});
  g.device = Device::cuda(impl->attached->device());
  g.device_fusion = impl->attached->fusions();
  return std::unique_ptr<DeviceBoundary>(new DeviceBoundary(std::move(impl)));
}

DeviceBoundary::~DeviceBoundary() {
  impl_->groups.device = Device::cpu();
  impl_->groups.device_fusion.reset();
}

int DeviceBoundary::device() const { return impl_->attached->device(); }
void DeviceBoundary::check() const { impl_->attached->check(); }

}  // namespace seam::boundary
