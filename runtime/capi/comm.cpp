// Communicators: creation (environment or explicit TCP store), rank/size, split, group, destroy.
#include <string>
#include <vector>

#include "runtime/capi/handles.h"
#include "runtime/capi/status.h"

namespace {

using seam::ValueError;

/// Wraps a C++ communicator (nullptr: this rank is not a member) as a handle.
seam_comm_t wrap(std::shared_ptr<seam::comm::Communicator> host) {
  if (!host) return nullptr;
  return new seam_comm{std::move(host), nullptr};
}

void need_out(seam_comm_t* out, const char* function) {
  if (!out) throw ValueError(std::string(function) + ": out is NULL");
}

}  // namespace

using seam::capi::guarded;
using seam::capi::need;

extern "C" {

seam_status_t seam_comm_create_world(seam_comm_t* out) {
  if (out) *out = nullptr;
  return guarded("seam_comm_create_world", [&] {
    need_out(out, "seam_comm_create_world");
    *out = wrap(seam::comm::Communicator::create_world());
  });
}

seam_status_t seam_comm_create_store(const char* store_addr, int rank, int world_size, const char* job_token,
                                     seam_comm_t* out) {
  if (out) *out = nullptr;
  return guarded("seam_comm_create_store", [&] {
    constexpr const char* fn = "seam_comm_create_store";
    need_out(out, fn);
    // Every field explicit: unlike create_world, nothing falls back to the SEAM_* variables.
    if (!store_addr || !*store_addr) throw ValueError(std::string(fn) + ": store_addr is empty");
    if (!job_token || !*job_token) throw ValueError(std::string(fn) + ": job_token is empty");
    if (world_size < 1) throw ValueError(std::string(fn) + ": world_size " + std::to_string(world_size) + " < 1");
    if (rank < 0 || rank >= world_size)
      throw ValueError(std::string(fn) + ": rank " + std::to_string(rank) + " outside a world of " +
                       std::to_string(world_size));
    seam::comm::BootstrapOptions options;
    options.store_addr = store_addr;
    options.rank = rank;
    options.world_size = world_size;
    options.job_token = job_token;
    *out = wrap(seam::comm::Communicator::create_world(options));
  });
}

void seam_comm_destroy(seam_comm_t comm) { delete comm; }

int seam_comm_rank(seam_comm_t comm) { return comm ? comm->host->rank() : -1; }

int seam_comm_size(seam_comm_t comm) { return comm ? comm->host->size() : -1; }

seam_status_t seam_comm_split(seam_comm_t comm, int color, int key, seam_comm_t* out) {
  if (out) *out = nullptr;
  return guarded("seam_comm_split", [&] {
    seam_comm& c = need(comm, "seam_comm_split");
    need_out(out, "seam_comm_split");
    *out = wrap(c.host->split(color, key));
  });
}

seam_status_t seam_comm_group(seam_comm_t comm, const int* ranks, size_t nranks, seam_comm_t* out) {
  if (out) *out = nullptr;
  return guarded("seam_comm_group", [&] {
    seam_comm& c = need(comm, "seam_comm_group");
    need_out(out, "seam_comm_group");
    if (!ranks && nranks) throw ValueError("seam_comm_group: ranks is NULL for " + std::to_string(nranks) + " ranks");
    *out = wrap(c.host->group(std::span<const int>(ranks, nranks)));
  });
}

size_t seam_dtype_size(seam_dtype_t dtype) {
  if (static_cast<unsigned>(dtype) > static_cast<unsigned>(seam::DType::fp8_e4m3)) return 0;
  return seam::dtype_size(static_cast<seam::DType>(dtype));
}

}  // extern "C"
