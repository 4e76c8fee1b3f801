// Threads as ranks: runs one collective schedule per rank over the loopback transport, each
// thread driving its own Task the way the Communicator does (step, progress, sleep on activity).
#pragma once

#include <functional>

#include "runtime/collectives/group.h"
#include "runtime/exec/task.h"

namespace seam::test {

/// Builds rank `rank`'s schedule on its group.
using MakeSchedule = std::function<comm::Task(int rank, collectives::Group& group)>;

/// Runs `make` on n threads to completion; rethrows the first rank's exception (lowest rank).
/// Fails with TimeoutError after 60 s.
void run_on_ranks(int n, const MakeSchedule& make);

}  // namespace seam::test
