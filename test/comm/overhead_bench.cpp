// Not a test: per-operation cost of the Communicator's machinery (Work, Task, driver, transport)
// for tiny operations. At one rank it sends to itself (run it under callgrind for instruction
// counts); at two ranks it ping-pongs and runs 4-byte all-reduces.
//   comm_overhead_bench [iterations]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>

#include "seam/communicator.h"

using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 100000;
  auto world = seam::comm::Communicator::create_world();
  const int me = world->rank(), n = world->size();
  char a[8] = {}, b[8] = {};
  auto t0 = Clock::now();
  if (n == 1) {
    for (int i = 0; i < iters; ++i) {
      auto s = world->send(a, 8, 0, 1);
      world->recv(b, 8, 0, 1).wait();
      s.wait();
    }
  } else if (me < 2) {
    for (int i = 0; i < iters; ++i) {
      if (me == 0) {
        world->send(a, 8, 1, 1).wait();
        world->recv(b, 8, 1, 1).wait();
      } else {
        world->recv(b, 8, 0, 1).wait();
        world->send(a, 8, 0, 1).wait();
      }
    }
  }
  double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters;
  world->barrier().wait();
  float x = 1, y = 0;
  for (int i = 0; i < 1000; ++i) world->all_reduce(&x, &y, 1, seam::DType::f32, seam::ReduceOp::sum).wait();
  auto t1 = Clock::now();
  for (int i = 0; i < iters; ++i) world->all_reduce(&x, &y, 1, seam::DType::f32, seam::ReduceOp::sum).wait();
  double ar = std::chrono::duration<double, std::micro>(Clock::now() - t1).count() / iters;
  if (me == 0)
    std::printf("%d rank(s) over %s: p2p %s %.3f us; 4-byte all_reduce %.3f us\n", n, world->transport_name().c_str(),
                n == 1 ? "send+recv to self" : "round trip", us, ar);
  // One-way bandwidth of large messages, rank 0 -> rank 1 (an 8-byte ack per message).
  if (n >= 2 && me < 2) {
    for (size_t size : {size_t(64) << 10, size_t(1) << 20, size_t(8) << 20}) {
      std::vector<char> buf(size, 1);
      const int reps = static_cast<int>(std::max<size_t>(10, (size_t(512) << 20) / size / 4));
      for (int pass = 0; pass < 2; ++pass) {
        auto t = Clock::now();
        for (int i = 0; i < reps; ++i) {
          if (me == 0) {
            world->send(buf.data(), size, 1, 2).wait();
          } else {
            world->recv(buf.data(), size, 0, 2).wait();
          }
        }
        if (me == 0) world->recv(a, 8, 1, 3).wait();
        else world->send(a, 8, 0, 3).wait();
        double s = std::chrono::duration<double>(Clock::now() - t).count();
        if (me == 0 && pass == 1) std::printf("  %8zu-byte messages: %.2f GB/s\n", size, static_cast<double>(size) * reps / s / 1e9);
      }
    }
  }
  return 0;
}
