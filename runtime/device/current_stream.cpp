#include "runtime/device/current_stream.h"

namespace seam::device {
namespace {
thread_local cudaStream_t current = nullptr;
}  // namespace

cudaStream_t current_stream() { return current; }
void set_current_stream(cudaStream_t stream) { current = stream; }

StreamGuard::StreamGuard(cudaStream_t stream) : previous_(current) { current = stream; }

StreamGuard::~StreamGuard() { current = previous_; }

}  // namespace seam::device
