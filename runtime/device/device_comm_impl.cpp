#include "runtime/device/device_comm_impl.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "layouts/config.h"
#include "seam/errors.h"
#include "layouts/log.h"
#include "runtime/collectives/host_layout.h"
#include "runtime/comm/host_link.h"
#include "transports/cuda_peer/driver_api.h"
#include "transports/cuda_peer/fd_channel.h"

namespace seam::device {
namespace {

using kernels::cuda::kMaxBlocks;
using kernels::cuda::kMaxRanks;
using transport::cuda_peer::FdChannel;
using transport::cuda_peer::UniqueFd;
using transport::cuda_peer::VmmAllocation;

constexpr size_t kPage = 4096;
/// The flag area ahead of each workspace's data, rounded so the data starts 4 KiB-aligned.
constexpr size_t kFlagBytes = (sizeof(kernels::cuda::PeerFlags) + kPage - 1) / kPage * kPage;

/// What each rank tells the others at creation.
struct RankInfo {
  int32_t pid;
  int32_t sm_count;
  uint64_t workspace_bytes;  // its whole VMM allocation
  char uuid[16];
  char channel[80];
};

void cuda_check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  throw CommError(std::string("seam: device communicator: ") + what + ": " + cudaGetErrorString(e));
}

/// The local ordinal of the GPU with this UUID, or -1 when this process does not see it.
int ordinal_of(const char* uuid) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return -1;
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) == cudaSuccess && std::memcmp(p.uuid.bytes, uuid, 16) == 0) return d;
  }
  return -1;
}

void* map_page(int fd) {
  void* p = ::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, fd >= 0 ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS, fd, 0);
  if (p == MAP_FAILED) throw CommError("seam: device communicator: cannot map the abort page");
  return p;
}

}  // namespace

const char* call_name(DeviceCall c) {
  switch (c) {
    case DeviceCall::all_reduce: return "all_reduce";
    case DeviceCall::reduce_scatter: return "reduce_scatter";
    case DeviceCall::reduce_scatterv: return "reduce_scatterv";
    case DeviceCall::all_gather: return "all_gather";
    case DeviceCall::all_gatherv: return "all_gatherv";
    case DeviceCall::broadcast: return "broadcast";
    case DeviceCall::fused_norm: return "all_reduce_add_rms_norm";
    case DeviceCall::fused_norm_fp8: return "all_reduce_add_rms_norm_fp8";
    case DeviceCall::send: return "send";
    case DeviceCall::recv: return "recv";
  }
  return "?";
}

uint64_t call_signature(DeviceCall call, int dtype, int op, int root, const size_t* counts, size_t n) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xFF;
      h *= 1099511628211ull;
    }
  };
  mix(static_cast<uint64_t>(call));
  mix(static_cast<uint64_t>(dtype));
  mix(static_cast<uint64_t>(op));
  mix(static_cast<uint64_t>(root));
  for (size_t i = 0; i < n; ++i) mix(counts[i]);
  return h;
}

DeviceCommunicatorImpl::DeviceCommunicatorImpl(std::shared_ptr<comm::Communicator> host_comm, int dev)
    : host(std::move(host_comm)) {
  const Config& config = Config::get();
  rank = host->rank();
  size = host->size();
  if (size > kMaxRanks)
    throw NotSupportedError("seam: device communicator: at most " + std::to_string(kMaxRanks) + " ranks, got " +
                            std::to_string(size));
  if (dev < 0) cuda_check(cudaGetDevice(&dev), "cudaGetDevice");
  device = dev;
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  cuda_check(cudaFree(nullptr), "CUDA context");
  const auto& drv = transport::cuda_peer::driver();
  pointers = PointerCheck(device);
  algo_override = config.cuda_algorithm;

  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  CUdevice cu_dev = 0;
  int vmm = 0, fd_handles = 0;
  drv.device_get(&cu_dev, device);
  drv.device_get_attribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, cu_dev);
  drv.device_get_attribute(&fd_handles, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, cu_dev);

  // Whether this rank reaches every peer's GPU; all ranks must agree before mapping anything.
  FdChannel channel;
  workspace_bytes = static_cast<size_t>(config.cuda_workspace_mb) << 20;
  RankInfo mine{};
  mine.pid = static_cast<int32_t>(::getpid());
  mine.sm_count = prop.multiProcessorCount;
  mine.workspace_bytes = workspace_bytes;
  std::memcpy(mine.uuid, prop.uuid.bytes, 16);
  std::snprintf(mine.channel, sizeof(mine.channel), "%s", channel.name().c_str());
  std::vector<RankInfo> all(static_cast<size_t>(size));
  host->all_gather(&mine, all.data(), sizeof(RankInfo), DType::u8).wait();

  for (const RankInfo& r : all)
    if (r.workspace_bytes != workspace_bytes)
      throw ValueError("seam: device communicator: the ranks disagree on SEAM_CUDA_WORKSPACE_MB");
  // Peer memory maps only inside a host: members on several hosts stage every call through host
  // memory and the host communicator's two-level collectives.
  const bool one_host = host->transport_name() == "shm";
  int reachable = config.cuda_peer == "off" || !vmm || !fd_handles || !one_host ? 0 : 1;
  for (int r = 0; r < size && reachable; ++r) {
    const RankInfo& other = all[static_cast<size_t>(r)];
    if (std::memcmp(other.uuid, mine.uuid, 16) == 0) continue;
    const int ordinal = ordinal_of(other.uuid);
    int can = 0;
    if (ordinal < 0 || cudaDeviceCanAccessPeer(&can, device, ordinal) != cudaSuccess || !can) reachable = 0;
    cudaGetLastError();
  }
  int everyone = 0;
  host->all_reduce(&reachable, &everyone, 1, DType::i32, ReduceOp::min).wait();
  peer_path = everyone == 1;

  max_blocks = kMaxBlocks;
  for (const RankInfo& r : all) {
    int sharing = 0;
    for (const RankInfo& o : all) sharing += std::memcmp(o.uuid, r.uuid, 16) == 0;
    max_blocks = std::min(max_blocks, std::max(1, r.sm_count / sharing));
  }

  state_rank = rank;
  if (!peer_path) {
    const size_t chunk = static_cast<size_t>(config.cuda_staged_chunk_kb) << 10;
    if (!one_host) make_two_levels(chunk);
    if (!state) state = std::make_shared<DeviceState>(host, map_page(-1), kPage, config.timeout_ms);
    pipeline = std::make_unique<StagedPipeline>(*host, state, state_rank, chunk);
    log().debug("seam: device communicator rank {} of {} on cuda:{}: staged through host memory ({}){}", rank, size,
                device,
                config.cuda_peer == "off" ? "SEAM_CUDA_PEER=off"
                : !one_host               ? "members on several hosts, over " + host->transport_name()
                                          : std::string("no peer access between the GPUs"),
                local_level ? "; all-reduces in two levels, peer memory on each host" : "");
    return;
  }

  own_ = VmmAllocation::create(device, kFlagBytes + workspace_bytes);
  cuda_check(cudaMemset(own_.data(), 0, kFlagBytes), "clearing the flags");
  constexpr size_t kCounts = kMaxBlocks + 2 * kMaxRanks;
  cuda_check(cudaMalloc(reinterpret_cast<void**>(&epochs), sizeof(uint32_t) * kCounts), "cudaMalloc");
  cuda_check(cudaMemset(epochs, 0, sizeof(uint32_t) * kCounts), "clearing the epochs");
  p2p_counts = epochs + kMaxBlocks;
  cuda_check(cudaDeviceSynchronize(), "set-up");

  // Rank 0 makes the abort page and sends it with its workspace.
  UniqueFd page_fd;
  if (rank == 0) {
    page_fd = UniqueFd(::memfd_create("seam-abort", MFD_CLOEXEC));
    if (page_fd.get() < 0 || ::ftruncate(page_fd.get(), kPage) != 0)
      throw CommError("seam: device communicator: cannot create the abort page");
  }
  UniqueFd own_fd = own_.export_fd();
  std::vector<int> send_fds{own_fd.get()};
  if (rank == 0) send_fds.push_back(page_fd.get());
  std::vector<pid_t> pids;
  std::vector<std::string> names;
  for (const RankInfo& r : all) {
    pids.push_back(r.pid);
    names.emplace_back(r.channel);
  }
  auto received = channel.exchange(rank, names, pids, send_fds, std::chrono::milliseconds(config.timeout_ms));
  if (rank != 0 && received[0].size() < 2) throw CommError("seam: device communicator: rank 0 sent no abort page", host->world_rank(0));
  state = std::make_shared<DeviceState>(host, map_page(rank == 0 ? page_fd.get() : received[0][1].get()), kPage,
                                        config.timeout_ms);

  peers_.resize(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    char* base = static_cast<char*>(own_.data());
    if (r != rank) {
      peers_[static_cast<size_t>(r)] =
          VmmAllocation::import(received[static_cast<size_t>(r)].at(0), own_.bytes(), device);
      base = static_cast<char*>(peers_[static_cast<size_t>(r)].data());
    }
    flags[r] = reinterpret_cast<kernels::cuda::PeerFlags*>(base);
    ws[r] = base + kFlagBytes;
  }
  watchdog_ = std::make_unique<Watchdog>(state, rank, pids);
  host->barrier().wait();  // every rank mapped every workspace
  log().debug("seam: device communicator rank {} of {} on cuda:{}: peer memory (CUDA VMM), {} MiB workspace, {} blocks",
              rank, size, device, workspace_bytes >> 20, max_blocks);
}

void DeviceCommunicatorImpl::make_two_levels(size_t chunk) {
  const collectives::HostLayout* layout = comm::host_link::hosts(*host);
  if (!layout || !layout->two_level()) return;
  auto local_host = host->split(layout->host_index, layout->local_index);
  auto cross_host = host->split(layout->local_index, layout->host_index);
  auto local = std::make_unique<DeviceCommunicatorImpl>(local_host, device);
  // Every host must take the same road: two levels only where every host's GPUs reach each other.
  int mine = local->peer_path ? 1 : 0, everyone = 0;
  host->all_reduce(&mine, &everyone, 1, DType::i32, ReduceOp::min).wait();
  if (!everyone) return;
  local_level = std::move(local);
  // Its kernels spin for their peers on the host; GPUs shared with other hosts' ranks (hosts made
  // of namespaces on one machine) must hold every rank's blocks at once.
  local_level->max_blocks = std::min(local_level->max_blocks, max_blocks);
  ranks_by_host = layout->ranks_by_host;
  host_index = layout->host_index;
  state = local_level->state;
  state_rank = local_level->rank;
  cross_pipeline = std::make_unique<StagedPipeline>(*cross_host, state, state_rank, chunk);
}

DeviceCommunicatorImpl::~DeviceCommunicatorImpl() {
  // Kernels of this communicator may still run (also graph replays): they end, at the latest,
  // at their deadline.
  int current = -1;
  cudaGetDevice(&current);
  cudaSetDevice(device);
  cudaDeviceSynchronize();
  cudaGetLastError();
  pipeline.reset();
  cross_pipeline.reset();
  local_level.reset();
  watchdog_.reset();
  last_work_.reset();
  peers_.clear();
  own_ = VmmAllocation();
  if (epochs) cudaFree(epochs);
  if (current >= 0) cudaSetDevice(current);
}

kernels::cuda::PeerSync DeviceCommunicatorImpl::sync(uint64_t signature) const {
  kernels::cuda::PeerSync s{};
  for (int r = 0; r < size; ++r) s.flags[r] = flags[r];
  s.epochs = epochs;
  s.abort_word = state->abort_word_device();
  s.gave_up = state->gave_up_device(rank);
  s.timeout_ns = static_cast<uint64_t>(state->timeout_ms()) * 1000000ull;
  s.signature = signature;
  s.rank = rank;
  s.size = size;
  return s;
}

cudaStreamCaptureStatus DeviceCommunicatorImpl::begin(DeviceCall call, cudaStream_t stream) {
  if (comm::host_link::aborted(*host) && !state->aborted())
    state->abort(kernels::cuda::abort_code(kernels::cuda::kAbortUser, state_rank, -1),
                 "the host communicator aborted: " + comm::host_link::abort_reason(*host));
  if (state->aborted()) {
    state->abort_host();
    std::rethrow_exception(state->failure());
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cuda_check(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
  // Two streams at once would interleave two calls' kernels on the same flags: refuse.
  if (capture == cudaStreamCaptureStatusNone && last_work_ && stream != last_stream_ && last_work_->in_flight())
    throw UsageError(std::string("seam: device ") + call_name(call) +
                     ": issued on another stream while the communicator's previous call is still in flight on its "
                     "stream; one communicator takes one stream at a time (synchronise them, or use a communicator "
                     "per stream)");
  return capture;
}

comm::Work DeviceCommunicatorImpl::finish(DeviceCall call, cudaStream_t stream, cudaStreamCaptureStatus capture) {
  last_stream_ = stream;
  // A captured call runs at replay (check() reports its failure).
  if (capture != cudaStreamCaptureStatusNone) return comm::Work();
  cudaEvent_t e = state->take_event();
  if (const cudaError_t err = cudaEventRecord(e, stream); err != cudaSuccess) {
    state->give_event(e);
    check_launch(err, call);
  }
  auto work = std::make_shared<DeviceWork>(state, call_name(call), e, state_rank, !peer_path);
  last_work_ = work;
  return comm::Work(std::static_pointer_cast<comm::Completion>(work));
}

void DeviceCommunicatorImpl::check_launch(cudaError_t err, DeviceCall call) {
  if (err == cudaSuccess) return;
  cudaGetLastError();
  const std::string why = std::string("launch of ") + call_name(call) + " failed: " + cudaGetErrorString(err);
  state->abort(kernels::cuda::abort_code(kernels::cuda::kAbortUser, state_rank, -1), why);
  state->abort_host();
  throw CommError("seam: device " + why);
}

}  // namespace seam::device
