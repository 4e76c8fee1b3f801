// comm::together (task.h): two sub-tasks stepped side by side. One may wait on what the other
// produces (the hierarchical reduce-scatter's ring waits on the host's sums); both finish before
// the awaiting task resumes; a failure of either resumes it with that error.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/exec/task.h"

namespace seam::test {
namespace {

// Produces items 0..n-1 one resumption apart, each after `gate` opens.
comm::Task producer(std::vector<char>& ready, const bool& gate) {
  for (size_t i = 0; i < ready.size(); ++i) {
    co_await comm::until([&gate] { return gate; });
    ready[i] = 1;
  }
}

// Consumes the items in order, each once it is ready; records the order it saw.
comm::Task consumer(const std::vector<char>& ready, std::vector<int>& seen) {
  for (size_t i = 0; i < ready.size(); ++i) {
    co_await comm::until([&ready, i] { return ready[i] != 0; });
    seen.push_back(static_cast<int>(i));
  }
}

comm::Task both(comm::Task& a, comm::Task& b, bool& resumed) {
  co_await comm::together(a, b);
  resumed = true;
}

comm::Task failing(const bool& gate) {
  co_await comm::until([&gate] { return gate; });
  throw std::runtime_error("sub-task failed");
}

comm::Task catching(comm::Task& a, comm::Task& b, std::string& caught) {
  try {
    co_await comm::together(a, b);
  } catch (const std::exception& e) {
    caught = e.what();
  }
}

}  // namespace

TEST_CASE("together: the consumer waits on the producer's items, and both finish first") {
  std::vector<char> ready(4, 0);
  std::vector<int> seen;
  bool gate = false, resumed = false;
  comm::Task p = producer(ready, gate);
  comm::Task c = consumer(ready, seen);
  comm::Task t = both(p, c, resumed);
  CHECK_FALSE(t.step());  // the producer waits on the gate, the consumer on item 0
  CHECK(seen.empty());
  gate = true;
  while (!t.step()) {
  }
  CHECK(resumed);
  CHECK(p.done());
  CHECK(c.done());
  CHECK(seen == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("together: a failing sub-task resumes the awaiting task with its error") {
  std::vector<char> ready(2, 0);
  std::vector<int> seen;
  bool gate = false;
  std::string caught;
  comm::Task f = failing(gate);
  comm::Task c = consumer(ready, seen);  // would wait forever: the failure must not wait for it
  comm::Task t = catching(f, c, caught);
  CHECK_FALSE(t.step());
  gate = true;
  CHECK(t.step());
  CHECK(caught == "sub-task failed");
  CHECK_FALSE(c.done());
}

}  // namespace seam::test
