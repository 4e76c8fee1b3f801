#include "runtime/boundary/rows/pp_handoff.h"

#include <cstdint>

#include "kernels/norm/elementwise.h"
#include "seam/errors.h"
#include "runtime/boundary/rows/tensor_collectives.h"

namespace seam::boundary::rows {

namespace {

// Point-to-point tags of the handoff (the boundary's own range).
constexpr uint32_t kHeaderTag = 0x5ea10;
constexpr uint32_t kHiddenTag = 0x5ea11;
constexpr uint32_t kResidualTag = 0x5ea12;

struct Header {
  int64_t rows;
  int64_t residual_rows;
  int64_t cols;
  uint32_t dtype;
  uint16_t has_residual;
  uint16_t declared_partial;
  uint32_t on_device;  // the rows follow on the stages' device send/recv, not the world's host p2p
  uint32_t pad;
};

comm::Communicator& world(ProcessGroups& groups) {
  comm::Communicator* w = groups.comm(GroupKind::WORLD);
  if (!w) throw ValueError("pipeline handoff needs more than one pipeline stage");
  return *w;
}

Tensor into(residual::Storage& storage, const Header& h, int64_t rows, Device device) {
  const size_t bytes = static_cast<size_t>(rows * h.cols) * dtype_size(static_cast<DType>(h.dtype));
  if (!storage.fits(bytes, device)) storage = residual::Storage(bytes, device);
  return Tensor::contiguous(storage.data(), static_cast<DType>(h.dtype), rows, h.cols, device);
}

// t itself when it is in host memory, else its copy in `staging` (host memory).
Tensor on_host(const Tensor& t, residual::Storage& staging) {
  if (!t.device.is_cuda()) return t;
  if (!staging.fits(t.bytes(), Device::cpu())) staging = residual::Storage(t.bytes(), Device::cpu());
  const Tensor host = Tensor::contiguous(staging.data(), t.dtype, t.rows, t.cols);
  kernels::copy(t, host);
  return host;
}

}  // namespace

void PipelineHandoff::send(const PipelineTensors& t) {
  const int peer = groups_.next_stage();
  if (peer < 0) throw ValueError("pipeline handoff: the last stage has no next stage to send to");
  require_contiguous(t.hidden_states, "the hidden states");
  if (t.has_residual) {
    require_contiguous(t.residual, "the residual");
    if (t.residual.cols != t.hidden_states.cols || t.residual.dtype != t.hidden_states.dtype)
      throw ValueError("pipeline handoff: the residual and the hidden states differ in hidden size or dtype");
  }
  comm::Communicator& w = world(groups_);
  DeviceGroup* stages = groups_.pipeline_device();
  const bool on_device =
      stages && t.hidden_states.device.is_cuda() && (!t.has_residual || t.residual.device.is_cuda());
  const Header h{t.hidden_states.rows, t.has_residual ? t.residual.rows : 0, t.hidden_states.cols,
                 static_cast<uint32_t>(t.hidden_states.dtype), t.has_residual, t.declared_partial, on_device, 0};
  comm::Work header = w.send(&h, sizeof h, peer, kHeaderTag);
  const int64_t bytes = static_cast<int64_t>(sizeof h + t.hidden_states.bytes() + (t.has_residual ? t.residual.bytes() : 0));
  if (on_device) {  // ordered on the current stream
    stages->send(t.hidden_states, groups_.pp_rank() + 1);
    if (t.has_residual) stages->send(t.residual, groups_.pp_rank() + 1);
    groups_.traffic().record(GroupKind::WORLD, CollectiveKind::send, static_cast<size_t>(bytes));
    header.wait();
    return;
  }
  const Tensor hidden_states = on_host(t.hidden_states, staged_hidden_);
  const Tensor residual_rows = t.has_residual ? on_host(t.residual, staged_residual_) : Tensor{};
  comm::Work hidden = w.send(hidden_states.data, hidden_states.bytes(), peer, kHiddenTag);
  comm::Work residual = t.has_residual ? w.send(residual_rows.data, residual_rows.bytes(), peer, kResidualTag) : comm::Work{};
  groups_.traffic().record(GroupKind::WORLD, CollectiveKind::send, static_cast<size_t>(bytes));
  header.wait();
  hidden.wait();
  residual.wait();
}

PipelineTensors PipelineHandoff::receive() {
  const int peer = groups_.previous_stage();
  if (peer < 0) throw ValueError("pipeline handoff: the first stage has no previous stage to receive from");
  comm::Communicator& w = world(groups_);
  Header h{};
  w.recv(&h, sizeof h, peer, kHeaderTag).wait();
  PipelineTensors t;
  t.has_residual = h.has_residual != 0;
  t.declared_partial = h.declared_partial != 0;
  if (h.on_device) {  // ordered on the current stream
    DeviceGroup* stages = groups_.pipeline_device();
    if (!stages || !device_.is_cuda())
      throw ValueError("pipeline handoff: the previous stage sent device rows, and this stage receives into host "
                       "memory (give its PipelineHandoff the device, and attach seam::cuda on every stage)");
    t.hidden_states = into(hidden_, h, h.rows, device_);
    stages->recv(t.hidden_states, groups_.pp_rank() - 1);
    if (t.has_residual) {
      t.residual = into(residual_, h, h.residual_rows, device_);
      stages->recv(t.residual, groups_.pp_rank() - 1);
    }
    groups_.traffic().record(GroupKind::WORLD, CollectiveKind::recv,
                             sizeof h + t.hidden_states.bytes() + (t.has_residual ? t.residual.bytes() : 0));
    return t;
  }
  // Device tensors arrive in host staging first.
  const bool staged = device_.is_cuda();
  t.hidden_states = into(staged ? staged_hidden_ : hidden_, h, h.rows, Device::cpu());
  comm::Work hidden = w.recv(t.hidden_states.data, t.hidden_states.bytes(), peer, kHiddenTag);
  comm::Work residual;
  if (t.has_residual) {
    t.residual = into(staged ? staged_residual_ : residual_, h, h.residual_rows, Device::cpu());
    residual = w.recv(t.residual.data, t.residual.bytes(), peer, kResidualTag);
  }
  groups_.traffic().record(GroupKind::WORLD, CollectiveKind::recv,
                           sizeof h + t.hidden_states.bytes() + (t.has_residual ? t.residual.bytes() : 0));
  hidden.wait();
  residual.wait();
  if (staged) {
    const Tensor hidden_states = into(hidden_, h, h.rows, device_);
    kernels::copy(t.hidden_states, hidden_states);
    t.hidden_states = hidden_states;
    if (t.has_residual) {
      const Tensor residual_rows = into(residual_, h, h.residual_rows, device_);
      kernels::copy(t.residual, residual_rows);
      t.residual = residual_rows;
    }
  }
  return t;
}

}  // namespace seam::boundary::rows
