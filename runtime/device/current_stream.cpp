#include "runtime/device/current_stream.h"

namespace seam::device {
namespace {
thread_local cudaStream_t current = nullptr;
}  // namespace

cudaStream_t current_stream() { return current; }
void set_current_stream(cudaStream_t stream) { current = stream; }

}  // namespace seam::device

namespace seam::boundary {

StreamScope::StreamScope(cudaStream_t stream) : previous_(device::current_stream()) { device::set_current_stream(stream); }
StreamScope::~StreamScope() { device::set_current_stream(previous_); }

}  // namespace seam::boundary
