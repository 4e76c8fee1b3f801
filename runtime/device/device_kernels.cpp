#include "runtime/device/device_kernels.h"

#include <cuda_runtime_api.h>

#include <string>

#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/norm.h"
#include "kernels/device/device_ops.h"
#include "seam/errors.h"
#include "runtime/device/current_stream.h"

namespace seam::device {
namespace {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  throw Error(std::string("seam: device ") + what + ": " + cudaGetErrorString(e));
}

// Row pitch in bytes (a single row's stride may be anything).
size_t pitch(const Tensor& t) { return (t.rows <= 1 ? static_cast<size_t>(t.cols) : static_cast<size_t>(t.row_stride)) * dtype_size(t.dtype); }

// Runs f with `device` as the current CUDA device, restoring the caller's.
template <class F>
void on_device(int device, F&& f) {
  int previous = -1;
  check(cudaGetDevice(&previous), "cudaGetDevice");
  if (device >= 0 && device != previous) check(cudaSetDevice(device), "cudaSetDevice");
  try {
    f();
  } catch (...) {
    if (device >= 0 && device != previous) cudaSetDevice(previous);
    throw;
  }
  if (device >= 0 && device != previous) check(cudaSetDevice(previous), "cudaSetDevice");
}

class CudaDeviceOps final : public kernels::DeviceOps {
 public:
  void copy(const Tensor& src, const Tensor& dst) override {
    if (src.rows != dst.rows || src.cols != dst.cols || src.dtype != dst.dtype)
      throw ValueError("device copy: operands differ in shape or dtype");
    if (src.rows == 0 || src.cols == 0) return;
    const cudaStream_t stream = current_stream();
    check(cudaMemcpy2DAsync(dst.data, pitch(dst), src.data, pitch(src), src.row_bytes(), static_cast<size_t>(src.rows),
                            cudaMemcpyDefault, stream),
          "copy");
    // Host code reads what lands in host memory, and may reuse a host source, right after the call.
    if (!dst.device.is_cuda() || !src.device.is_cuda()) check(cudaStreamSynchronize(stream), "copy through host memory");
  }
  void zero(const Tensor& t) override {
    if (t.rows == 0 || t.cols == 0) return;
    check(cudaMemset2DAsync(t.data, pitch(t), 0, t.row_bytes(), static_cast<size_t>(t.rows), current_stream()), "zero");
  }
  void add_inplace(const Tensor& dst, const Tensor& src) override {
    check(kernels::cuda::add_inplace(dst, src, current_stream()), "add_inplace");
  }
  void rms_norm(const Tensor& x, const kernels::RmsNormSpec& norm, const Tensor& out) override {
    check(kernels::cuda::rms_norm(x, norm, out, current_stream()), "rms_norm");
  }
  void add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor* extra, const kernels::RmsNormSpec& norm,
                    const Tensor& out) override {
    check(kernels::cuda::add_rms_norm(x, residual, extra, norm, out, current_stream()), "add_rms_norm");
  }
  void rms_norm_fp8(const Tensor& x, const kernels::RmsNormSpec& norm, const kernels::Fp8Rows& out) override {
    check(kernels::cuda::rms_norm_fp8(x, norm, out, current_stream()), "rms_norm_fp8");
  }
  void add_rms_norm_fp8(const Tensor& x, const Tensor& residual, const Tensor* extra, const kernels::RmsNormSpec& norm,
                        const kernels::Fp8Rows& out) override {
    check(kernels::cuda::add_rms_norm_fp8(x, residual, extra, norm, out, current_stream()), "add_rms_norm_fp8");
  }
  void* allocate(size_t bytes, int device) override {
    void* p = nullptr;
    on_device(device, [&] { check(cudaMalloc(&p, bytes), "cudaMalloc"); });
    return p;
  }
  void release(void* data, int device) noexcept override {
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess) return;
    if (device >= 0 && device != previous) cudaSetDevice(device);
    cudaFree(data);
    if (device >= 0 && device != previous) cudaSetDevice(previous);
  }
};

}  // namespace

void install_device_kernels() {
  // Never destroyed: storage released during exit still reaches it.
  static CudaDeviceOps* const ops = new CudaDeviceOps;
  kernels::install_device_ops(ops);
}

}  // namespace seam::device
