// Bootstrap under mpirun through the PMIx client library.
//
// Why PMIx and not MPI: every launcher Seam meets (Open MPI's mpirun, PRRTE, Slurm's srun
// --mpi=pmix) is a PMIx server, so a PMIx client is all a rank needs to learn its rank, the job
// size and its peers' addresses (Put/Commit/Fence/Get). Using MPI instead would make libseam link
// an MPI library and call MPI_Init: an engine built against another MPI, or one that initialises
// MPI itself with its own thread level, would then conflict with us. With PMIx, Seam never links
// MPI, and engines (or our benchmarks) that use MPI themselves are unaffected: PMIx_Init is
// reference-counted and shares the launcher's connection with MPI's own PMIx client.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "layouts/config.h"
#include "seam/errors.h"
#include "layouts/log.h"
#include "runtime/bootstrap/bootstrap.h"

#if SEAM_HAVE_PMIX
#include <pmix.h>

namespace seam::bootstrap {
namespace {

std::string pmix_error(const char* what, pmix_status_t rc) {
  return std::string("seam bootstrap (pmix): ") + what + " failed: " + PMIx_Error_string(rc);
}

class PmixBootstrap final : public Bootstrap {
 public:
  explicit PmixBootstrap(std::chrono::milliseconds timeout) : timeout_(timeout) {
    PMIX_PROC_CONSTRUCT(&me_);
    pmix_status_t rc = PMIx_Init(&me_, nullptr, 0);
    if (rc != PMIX_SUCCESS) throw CommError(pmix_error("PMIx_Init", rc));
    initialized_ = true;
    rank_ = static_cast<int>(me_.rank);

    pmix_proc_t wildcard;
    PMIX_PROC_CONSTRUCT(&wildcard);
    PMIX_LOAD_PROCID(&wildcard, me_.nspace, PMIX_RANK_WILDCARD);
    pmix_value_t* val = nullptr;
    rc = PMIx_Get(&wildcard, PMIX_JOB_SIZE, nullptr, 0, &val);
    if (rc != PMIX_SUCCESS || !val) throw CommError(pmix_error("PMIx_Get(job size)", rc));
    size_ = static_cast<int>(val->type == PMIX_UINT32 ? val->data.uint32 : val->data.integer);
    PMIX_VALUE_RELEASE(val);
    SEAM_LOG_DEBUG("bootstrap: pmix namespace {} rank {} of {}", me_.nspace, rank_, size_);
  }

  ~PmixBootstrap() override {
    if (initialized_) PMIx_Finalize(nullptr, 0);
  }

  std::string_view kind() const override { return "pmix"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::vector<std::string> all_gather(const std::string& mine) override {
    // Keys unique in the process: a later world's exchange must not read an earlier one's.
    static std::atomic<uint64_t> round{0};
    const std::string key = "seam.ag." + std::to_string(round++);
    pmix_value_t value;
    PMIX_VALUE_CONSTRUCT(&value);
    value.type = PMIX_BYTE_OBJECT;
    value.data.bo.bytes = const_cast<char*>(mine.data());
    value.data.bo.size = mine.size();
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &value);
    if (rc != PMIX_SUCCESS) throw CommError(pmix_error("PMIx_Put", rc));
    rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) throw CommError(pmix_error("PMIx_Commit", rc));
    fence(true);

    std::vector<std::string> all(static_cast<size_t>(size_));
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) {
        all[static_cast<size_t>(r)] = mine;
        continue;
      }
      pmix_proc_t peer;
      PMIX_PROC_CONSTRUCT(&peer);
      PMIX_LOAD_PROCID(&peer, me_.nspace, static_cast<pmix_rank_t>(r));
      pmix_value_t* got = nullptr;
      rc = PMIx_Get(&peer, key.c_str(), nullptr, 0, &got);
      if (rc != PMIX_SUCCESS || !got)
        throw CommError(pmix_error(("PMIx_Get(" + key + ") of rank " + std::to_string(r)).c_str(), rc), r);
      if (got->type == PMIX_BYTE_OBJECT)
        all[static_cast<size_t>(r)].assign(got->data.bo.bytes, got->data.bo.size);
      else if (got->type == PMIX_STRING && got->data.string)
        all[static_cast<size_t>(r)] = got->data.string;
      PMIX_VALUE_RELEASE(got);
    }
    return all;
  }

  void barrier() override { fence(false); }

 private:
  void fence(bool collect) {
    pmix_info_t info[2];
    PMIX_INFO_CONSTRUCT(&info[0]);
    PMIX_INFO_CONSTRUCT(&info[1]);
    bool yes = collect;
    int seconds = static_cast<int>((timeout_.count() + 999) / 1000);
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &seconds, PMIX_INT);
    pmix_status_t rc = PMIx_Fence(nullptr, 0, info, 2);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (rc != PMIX_SUCCESS) throw CommError(pmix_error("PMIx_Fence", rc));
  }

  pmix_proc_t me_;
  bool initialized_ = false;
  int rank_ = -1;
  int size_ = 0;
  std::chrono::milliseconds timeout_;
};

}  // namespace

bool pmix_launched() { return !Config::get().pmix_namespace.empty(); }

std::unique_ptr<Bootstrap> create_pmix(std::chrono::milliseconds timeout) {
  return std::make_unique<PmixBootstrap>(timeout);
}

}  // namespace seam::bootstrap

#else  // built without libpmix-dev

namespace seam::bootstrap {
bool pmix_launched() { return !Config::get().pmix_namespace.empty(); }
std::unique_ptr<Bootstrap> create_pmix(std::chrono::milliseconds) {
  throw NotSupportedError("seam bootstrap: launched by a PMIx server but built without libpmix-dev");
}
}  // namespace seam::bootstrap

#endif
