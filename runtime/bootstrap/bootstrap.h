// Bootstrap: how the ranks of a job find each other before any transport exists. Two ways:
//  * under mpirun: the PMIx client (Open MPI's mpirun is a PMIx server), see pmix_bootstrap.cpp;
//  * engines that start their own ranks: a TCP store served by rank 0 (tcp_store.h).
// Both give the transports an AddressExchange (all-gather of small byte strings) and a barrier.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "transports/transport.h"

namespace seam::bootstrap {

class Bootstrap : public transport::AddressExchange {
 public:
  /// "pmix" or "tcp-store", for logs.
  virtual std::string_view kind() const = 0;
  /// Returns once every rank has entered. Collective over all ranks.
  virtual void barrier() = 0;
  /// Called once the communicator no longer needs the bootstrap (after transports are up):
  /// releases what it holds (store connections; rank 0 stops serving once every peer left).
  virtual void finish() {}
};

/// What the TCP store needs; create_store throws ValueError naming what is missing.
struct StoreBootstrapOptions {
  std::string addr;   ///< host:port; rank 0 listens on it, everyone connects to it
  int rank = -1;
  int world_size = -1;
  std::string token;  ///< shared secret every peer presents
  std::chrono::milliseconds timeout{60000};
};

/// Whether this process was started by a PMIx server (mpirun, srun --mpi=pmix, prterun).
bool pmix_launched();
/// PMIx client bootstrap. Throws CommError when PMIx cannot be initialised.
std::unique_ptr<Bootstrap> create_pmix(std::chrono::milliseconds timeout);
/// TCP-store bootstrap. Rank 0 serves the store; everyone (rank 0 included) is a client.
std::unique_ptr<Bootstrap> create_store(const StoreBootstrapOptions& options);

/// This host's identity for "same host" decisions: SEAM_HOSTNAME if set, else gethostname().
std::string host_identity();

}  // namespace seam::bootstrap
