// seam_local_launcher: starts N ranks as plain processes with the TCP-store bootstrap environment
// (SEAM_STORE_ADDR, SEAM_RANK, SEAM_WORLD_SIZE, SEAM_JOB_TOKEN), the way an inference engine
// starts its own ranks, and checks how they end.
//
//   seam_local_launcher -n N [options] -- command [args...]
//     --timeout-s T          kill everything and fail after T seconds [240]
//     --store-host H         host of the store (rank 0 serves it) [127.0.0.1]
//     --port P               store port [a free one on the store host]
//     --ns R=NAME            run rank R inside network namespace NAME (ip netns exec)
//     --env KEY=VAL          for every rank;  --env R:KEY=VAL  for rank R only
//     --expect-killed R      fault mode: rank R must die of SIGKILL, every other rank must exit
//                            with status 3 (the test's "got a CommError") within
//     --max-detect-ms M      M ms of rank R's death [SEAM_TIMEOUT_MS + 2000 = 5000]
//     --cut-after-ms T --cut-cmd CMD
//                            link-failure mode: run the shell command CMD T ms after the start
//                            (e.g. take a veth link down); every rank must then exit with
//                            status 3 within --max-detect-ms of it
// Normal mode: every rank must exit 0. Exit status: 0 when the expectation holds; 77 when every
// rank exited 77 (skipped).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "seam_local_launcher: %s\nusage: seam_local_launcher -n N [options] -- command [args...]\n", why);
  std::exit(2);
}

int free_port(const std::string& host) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = 0;
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    // Not an address of this namespace (e.g. a netns address): pick one at random.
    close(fd);
    std::random_device rd;
    return 20000 + static_cast<int>(rd() % 30000);
  }
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

std::string random_token() {
  std::random_device rd;
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  int n = -1, timeout_s = 240, port = -1, victim = -1;
  long cut_after_ms = -1;
  std::string cut_cmd;
  long max_detect_ms = 5000;
  std::string host = "127.0.0.1";
  std::map<int, std::string> ns;
  std::vector<std::pair<int, std::string>> envs;  // rank (-1 = all), KEY=VAL
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--") {
      ++i;
      break;
    } else if (a == "-n") {
      n = std::atoi(next().c_str());
    } else if (a == "--timeout-s") {
      timeout_s = std::atoi(next().c_str());
    } else if (a == "--store-host") {
      host = next();
    } else if (a == "--port") {
      port = std::atoi(next().c_str());
    } else if (a == "--ns") {
      std::string v = next();
      auto eq = v.find('=');
      if (eq == std::string::npos) usage("--ns takes R=NAME");
      ns[std::atoi(v.substr(0, eq).c_str())] = v.substr(eq + 1);
    } else if (a == "--env") {
      std::string v = next();
      auto colon = v.find(':'), eq = v.find('=');
      if (eq == std::string::npos) usage("--env takes KEY=VAL or R:KEY=VAL");
      if (colon != std::string::npos && colon < eq)
        envs.emplace_back(std::atoi(v.substr(0, colon).c_str()), v.substr(colon + 1));
      else
        envs.emplace_back(-1, v);
    } else if (a == "--expect-killed") {
      victim = std::atoi(next().c_str());
    } else if (a == "--cut-after-ms") {
      cut_after_ms = std::atol(next().c_str());
    } else if (a == "--cut-cmd") {
      cut_cmd = next();
    } else if (a == "--max-detect-ms") {
      max_detect_ms = std::atol(next().c_str());
    } else {
      usage(("unknown option " + a).c_str());
    }
  }
  if (n <= 0) usage("-n N is required");
  if (i >= argc) usage("no command after --");
  if (port < 0) port = free_port(host);
  const std::string addr = host + ":" + std::to_string(port);
  const std::string token = random_token();
  std::printf("seam_local_launcher: %d ranks, store at %s\n", n, addr.c_str());
  std::fflush(stdout);

  std::vector<pid_t> pids(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      setenv("SEAM_STORE_ADDR", addr.c_str(), 1);
      setenv("SEAM_RANK", std::to_string(r).c_str(), 1);
      setenv("SEAM_WORLD_SIZE", std::to_string(n).c_str(), 1);
      setenv("SEAM_JOB_TOKEN", token.c_str(), 1);
      // Not under mpirun: make sure a PMIx environment inherited from an outer mpirun is ignored.
      unsetenv("PMIX_NAMESPACE");
      for (auto& [er, kv] : envs) {
        if (er != -1 && er != r) continue;
        auto eq = kv.find('=');
        setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
      }
      std::vector<char*> args;
      std::vector<std::string> prefix;
      if (ns.count(r)) prefix = {"ip", "netns", "exec", ns[r]};
      for (auto& p : prefix) args.push_back(const_cast<char*>(p.c_str()));
      for (int k = i; k < argc; ++k) args.push_back(argv[k]);
      args.push_back(nullptr);
      execvp(args[0], args.data());
      std::fprintf(stderr, "seam_local_launcher: cannot run %s: %s\n", args[0], strerror(errno));
      _exit(127);
    }
    pids[static_cast<size_t>(r)] = pid;
  }

  const auto start = Clock::now();
  std::vector<int> status(static_cast<size_t>(n), -1);
  std::vector<Clock::time_point> ended(static_cast<size_t>(n));
  int left = n;
  bool timed_out = false;
  bool cut_done = false;
  Clock::time_point cut_at{};
  while (left > 0) {
    if (cut_after_ms >= 0 && !cut_done && Clock::now() - start >= std::chrono::milliseconds(cut_after_ms)) {
      cut_done = true;
      cut_at = Clock::now();
      std::printf("seam_local_launcher: cutting the link: %s\n", cut_cmd.c_str());
      std::fflush(stdout);
      int rc = std::system(cut_cmd.c_str());
      if (rc != 0) std::printf("seam_local_launcher: the cut command failed (%d)\n", rc);
    }
    int st = 0;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid > 0) {
      for (int r = 0; r < n; ++r)
        if (pids[static_cast<size_t>(r)] == pid) {
          status[static_cast<size_t>(r)] = st;
          ended[static_cast<size_t>(r)] = Clock::now();
          --left;
        }
      continue;
    }
    if (Clock::now() - start > std::chrono::seconds(timeout_s)) {
      timed_out = true;
      for (int r = 0; r < n; ++r)
        if (status[static_cast<size_t>(r)] == -1) kill(pids[static_cast<size_t>(r)], SIGKILL);
      while (waitpid(-1, nullptr, 0) > 0) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  // Every rank skipped (a GPU test where there is no GPU): pass CTest's skip status on.
  bool all_skipped = !timed_out;
  for (int r = 0; r < n; ++r) {
    const int st = status[static_cast<size_t>(r)];
    all_skipped = all_skipped && WIFEXITED(st) && WEXITSTATUS(st) == 77;
  }
  if (all_skipped) {
    std::printf("seam_local_launcher: every rank skipped (exit 77)\n");
    return 77;
  }
  bool ok = !timed_out;
  if (timed_out) std::printf("seam_local_launcher: FAILED: ranks still running after %d s (hang), killed\n", timeout_s);
  for (int r = 0; r < n && !timed_out; ++r) {
    int st = status[static_cast<size_t>(r)];
    double at_ms = std::chrono::duration<double, std::milli>(ended[static_cast<size_t>(r)] - start).count();
    std::string how = WIFEXITED(st) ? "exit " + std::to_string(WEXITSTATUS(st))
                                    : WIFSIGNALED(st) ? std::string("signal ") + strsignal(WTERMSIG(st)) : "?";
    std::string verdict;
    if (cut_after_ms >= 0) {
      double after = std::chrono::duration<double, std::milli>(ended[static_cast<size_t>(r)] - cut_at).count();
      verdict = "  (" + std::to_string(static_cast<long>(after)) + " ms after the cut)";
      if (!cut_done) {
        ok = false;
        verdict += "  <- ended before the cut";
      } else if (!(WIFEXITED(st) && WEXITSTATUS(st) == 3)) {
        ok = false;
        verdict += "  <- expected exit 3 (a CommError)";
      } else if (after > static_cast<double>(max_detect_ms)) {
        ok = false;
        verdict += "  <- later than " + std::to_string(max_detect_ms) + " ms";
      }
    } else if (victim < 0) {
      if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
        ok = false;
        verdict = "  <- expected exit 0";
      }
    } else if (r == victim) {
      if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)) {
        ok = false;
        verdict = "  <- expected to be killed by SIGKILL";
      }
    } else {
      const auto& died = ended[static_cast<size_t>(victim)];
      double after = std::chrono::duration<double, std::milli>(ended[static_cast<size_t>(r)] - died).count();
      verdict = "  (" + std::to_string(static_cast<long>(after)) + " ms after rank " + std::to_string(victim) + " died)";
      if (!(WIFEXITED(st) && WEXITSTATUS(st) == 3)) {
        ok = false;
        verdict += "  <- expected exit 3 (a CommError)";
      } else if (after > static_cast<double>(max_detect_ms)) {
        ok = false;
        verdict += "  <- later than " + std::to_string(max_detect_ms) + " ms";
      }
    }
    std::printf("seam_local_launcher: rank %d: %s at %.0f ms%s\n", r, how.c_str(), at_ms, verdict.c_str());
  }
  std::printf("seam_local_launcher: %s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
