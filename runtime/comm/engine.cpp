// The driver: runs every outstanding operation's Task in the caller's thread, in issue order,
// with transport progress between steps; spins (see spin_budget.h), then sleeps on the
// transport's event in slices of at most 1 ms; enforces each operation's deadline.
#include <cstdint>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <optional>

#include "seam/errors.h"
#include "layouts/log.h"
#include "runtime/comm/comm_internal.h"
#include "runtime/exec/cpu_relax.h"

namespace seam::comm {
namespace {

std::string describe(const WorkState& w) {
  return std::string(w.op) + " (communicator " + std::to_string(w.ctx) + ", rank " + std::to_string(w.comm_rank) +
         " of " + std::to_string(w.comm_size) + ", operation #" + std::to_string(w.seq) + ")";
}

/// "all_reduce float sum" from a call signature's bits (tags::signature).
std::string describe_signature(uint32_t signature) {
  if (signature == tags::kSplitSignature) return "a communicator split";
  return std::string(collectives::collective_name(
             static_cast<collectives::Collective>(tags::collective_of(signature)))) +
         " " + std::string(dtype_name(tags::dtype_of(signature))) + " " +
         std::string(reduce_op_name(tags::op_of(signature)));
}

}  // namespace

Engine::Engine(std::shared_ptr<transport::Transport> transport, const Config& config)
    : transport_(std::move(transport)),
      config_(config),
      spin_(std::chrono::microseconds(config.spin_us)) {
  ctx_held_[0] = true;  // the world
  post_notice_receives();  // posted from the start: a peer's notice never waits unmatched
}

Engine::~Engine() {
  // Takes the notices that arrived since the last look, which the transport would otherwise
  // report as never received when it closes. Not after an abort: the transport is not progressed
  // then (failed calls' receives may still point into their freed frames).
  if (aborted()) return;
  try {
    transport_->progress();
    for (int p = 0; p < static_cast<int>(notices_in_.size()); ++p)
      while (notices_in_[static_cast<size_t>(p)] && notices_in_[static_cast<size_t>(p)]->request->done())
        post_notice_receive(p);
  } catch (...) {
    // a transport that already failed has nothing to take
  }
}

void Engine::check_usable() const {
  if (aborted())
    throw CommError("seam: the communicator is unusable after an earlier failure (abort semantics): " +
                        abort_reason_,
                    abort_peer_);
}

void Engine::claim_context(uint32_t ctx) { ctx_held_[ctx] = true; }

void Engine::release_context(uint32_t ctx) {
  if (!retired(ctx)) ctx_retiring_.push_back(ctx);
}

bool Engine::retired(uint32_t ctx) {
  for (const auto& o : outstanding_)
    if (o->status == WorkState::Status::pending && o->ctx == ctx) return false;
  if (!aborted()) {
    auto any = [](void*, int, uint64_t) { return true; };
    if (transport_->unmatched_from_any(tags::make(ctx, tags::collective, 0), tags::kCtxMask, any, nullptr))
      return false;
  }
  ctx_held_[ctx] = false;
  return true;
}

uint32_t Engine::free_context_from(uint32_t from) {
  std::erase_if(ctx_retiring_, [&](uint32_t ctx) { return retired(ctx); });
  for (uint32_t ctx = std::max(from, 1u); ctx <= tags::kMaxCtx; ++ctx)
    if (!ctx_held_[ctx]) return ctx;
  return tags::kMaxCtx + 1;
}

namespace {
/// How long a collective waits for a peer before telling it (Engine::WaitNotice), and how often
/// a rank looks at the notices that arrived: a disagreement ends within tens of milliseconds.
constexpr auto kNoticeAfter = std::chrono::milliseconds(10);
constexpr auto kNoticeLook = std::chrono::milliseconds(5);
}  // namespace

void Engine::send_notice(WorkState& w, int peer, const WaitNotice* unmade) {
  w.noticed = true;
  while (!notices_out_.empty() && notices_out_.front().second->finished()) notices_out_.pop_front();
  auto n = std::make_unique<WaitNotice>(WaitNotice{w.identity, w.args, w.seq, w.signature,
                                                   unmade ? unmade->identity : 0, unmade ? unmade->seq : 0, 0});
  auto request = transport_->isend(peer, tags::kWaitNotice, n.get(), sizeof(WaitNotice));
  notices_out_.emplace_back(std::move(n), std::move(request));
}

void Engine::post_notice_receives() {
  notices_in_.resize(static_cast<size_t>(transport_->size()));
  for (int p = 0; p < transport_->size(); ++p) {
    if (p == transport_->rank()) continue;
    notices_in_[static_cast<size_t>(p)] = std::make_unique<NoticeIn>();
    post_notice_receive(p);
  }
}

void Engine::post_notice_receive(int peer) {
  auto& slot = *notices_in_[static_cast<size_t>(peer)];
  slot.request = transport_->irecv(peer, tags::kWaitNotice, &slot.notice, sizeof(WaitNotice));
}

bool Engine::look_at_notices(Clock::time_point now) {
  if (now < next_notice_look_) return true;
  next_notice_look_ = now + kNoticeLook;
  for (int p = 0; p < transport_->size(); ++p) {
    auto& slot = notices_in_[static_cast<size_t>(p)];
    // Every notice that arrived (a failed receive: the peer is lost, which is found elsewhere).
    while (slot && slot->request->done()) {
      const WaitNotice n = slot->notice;
      post_notice_receive(p);
      if (!judge_notice(p, n)) return false;
    }
  }
  return true;
}

bool Engine::judge_notice(int peer, const WaitNotice& n) {
  const CommunicatorImpl* comm = nullptr;
  for (const auto* c : live_comms_)
    if (c->identity == n.identity) comm = c;
  if (!comm) return true;  // destroyed here since: the notice is stale
  for (auto& o : outstanding_) {
    WorkState& w = *o;
    if (w.status != WorkState::Status::pending || w.identity != n.identity || w.seq != n.seq) continue;
    if (w.signature == n.signature && w.args == n.args) return true;  // the same call: the peer waits on another
    // Another call where this rank's schedule compares the calls itself: it fails every rank
    // that meets it alike, and failing here first would abort a communicator its error leaves
    // usable. A peer that took another path fails by this rank's notice instead.
    if (w.group.arguments_compared()) return true;
    const std::string msg =
        "seam: " + describe(w) + ": rank " + std::to_string(peer) + " called " + describe_signature(n.signature) +
        (w.signature == n.signature ? " with other arguments (count, root or blocks) than this rank"
                                    : ", this rank " + describe_signature(w.signature));
    fail(w, std::make_exception_ptr(MismatchError(msg, true)));
    return false;
  }
  if (static_cast<int32_t>(n.seq - comm->seq) < 0) return true;  // made and done here: the peer's ends soon
  // The peer waits in a call this rank has not made. Where this rank waits for the peer in
  // another call, it tells the peer so; where the peer has not made that one either, neither
  // can go on (a thread waits in one call at a time): the peer that learns it fails the call.
  WorkState* w = waiting_in_;
  if (!w || w->status != WorkState::Status::pending || !w->task.valid() || w->blocking_peer() != peer) return true;
  if (n.unmade_identity == w->identity && n.unmade_seq == w->seq) {
    const std::string msg = "seam: " + describe(*w) + ": rank " + std::to_string(peer) +
                            " waits for this rank in " + describe_signature(n.signature) + " (operation #" +
                            std::to_string(n.seq) + " of communicator " + std::to_string(comm->ctx) +
                            "), which this rank has not called, and has not called this one: the ranks called "
                            "their collectives in different orders (a deadlock)";
    fail(*w, std::make_exception_ptr(MismatchError(msg, true)));
    return false;
  }
  if (!w->answered && w->identity) {
    w->answered = true;
    send_notice(*w, peer, &n);
  }
  return true;
}

void Engine::start(const std::shared_ptr<WorkState>& w) {
  const auto now = coarse_now();
  look_at_notices(now);  // also where this rank never waits: the peers' notices are taken
  check_usable();
  w->deadline = now + std::chrono::milliseconds(config_.timeout_ms);
  // Post the first messages now, so communication starts before anyone waits.
  try {
    if (w->step()) complete(*w);
  } catch (...) {
    fail(*w, std::current_exception());
  }
  if (w->status == WorkState::Status::pending) outstanding_.push_back(w);
}

void Engine::fail(WorkState& w, std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const TimeoutError& x) {
    w.error = std::make_exception_ptr(TimeoutError(x.what(), x.peer()));
    w.error_text = x.what();
    w.status = WorkState::Status::failed;
    abort(describe(w) + ": " + x.what(), x.peer());
  } catch (const CommError& x) {
    std::string msg =
        "seam: " + describe(w) + " failed: " + x.what() + abort_behind(x.what(), x.peer());
    w.error = std::make_exception_ptr(CommError(msg, x.peer()));
    w.error_text = msg;
    w.status = WorkState::Status::failed;
    abort(msg, x.peer());
  } catch (const MismatchError& x) {
    const int peer = w.blocking_peer();  // where the waiting call found the peer's other call
    w.error = e;
    w.error_text = x.what();
    w.status = WorkState::Status::failed;
    if (x.aborts()) abort(x.what(), peer);
  } catch (const std::exception& x) {
    w.error = e;
    w.error_text = x.what();
    w.status = WorkState::Status::failed;
  } catch (...) {
    w.error = e;
    w.error_text = "unknown exception";
    w.status = WorkState::Status::failed;
  }
}

std::string Engine::abort_behind(std::string_view error, int peer) {
  if (peer < 0 || peer == transport_->rank() || transport_->peer_alive(peer)) return {};
  // A rank that aborts pushes its notices out before it exits, but the exits of its host's
  // ranks can break this rank's connections before a notice is read off another connection
  // (four ranks on two hosts over loopback TCP, the ranks of one finding a count mismatch: the
  // break came first in about 1 run in 80). The loss alone would hide the mismatch behind it.
  constexpr auto kNoticeGrace = std::chrono::milliseconds(100);
  const std::string notice = transport_->abort_notice(kNoticeGrace);
  if (notice.empty() || error.find(notice) != std::string_view::npos) return {};
  return " (" + notice + ")";
}

void Engine::abort(const std::string& reason, int peer) {
  if (aborted()) return;
  abort_reason_ = reason;
  abort_peer_ = peer;
  log().error("{}", reason);
  // Every other outstanding operation fails with it. The transport is not progressed any more,
  // so nothing writes into the user's buffers after this point.
  for (auto& o : outstanding_) {
    if (o->status != WorkState::Status::pending) continue;
    o->error_text = "seam: " + describe(*o) + " aborted: an earlier failure broke the communicator: " + reason;
    o->error = std::make_exception_ptr(CommError(o->error_text, peer));
    o->status = WorkState::Status::failed;
  }
  outstanding_.clear();
  if (broadcast_abort) {
    try {
      broadcast_abort(reason);
    } catch (...) {
      // best effort: the peers still fail by their own detection or deadline
    }
  }
}

void Engine::step_all() {
  for (size_t i = 0; i < outstanding_.size(); ++i) {
    WorkState& w = *outstanding_[i];
    if (w.status != WorkState::Status::pending) continue;
    try {
      if (w.step()) complete(w);
    } catch (...) {
      fail(w, std::current_exception());
      if (aborted()) return;
    }
  }
  const auto now = coarse_now();
  const bool check_peers = now - last_liveness_check_ >= std::chrono::milliseconds(5);
  if (check_peers) last_liveness_check_ = now;
  if (!look_at_notices(now)) return;  // aborted: outstanding_ is empty now
  for (auto& o : outstanding_) {
    WorkState& w = *o;
    if (w.status != WorkState::Status::pending) continue;
    if (check_peers) {
      // The peer this operation waits for died: fail now rather than at the deadline (the task
      // may wait on a flag in shared memory, which no transport request would fail). Only the
      // peer it waits for counts: a peer that finished its part and exited is no failure.
      int m = w.blocking_peer();
      if (m >= 0 && m != transport_->rank() && !transport_->peer_alive(m)) {
        // It may have delivered everything it owed before exiting (the transport took what it
        // had sent when it noticed): look again before calling it lost.
        try {
          if (w.step()) {
            complete(w);
            continue;
          }
        } catch (...) {
          fail(w, std::current_exception());
          return;  // aborted (or a local error): the caller loops again
        }
        if (w.blocking_peer() != m) continue;
        const std::string why = transport_->why_lost(m);
        fail(w, std::make_exception_ptr(CommError(
                    "lost rank " + std::to_string(m) + " (it died, aborted, or its connection broke)" +
                        (why.empty() ? "" : ": " + why),
                    m)));
        return;  // aborted: outstanding_ is empty now
      }
      if (m >= 0 && m != transport_->rank() && called_otherwise(w, m)) return;
      if (&w == waiting_in_ && m >= 0 && m != transport_->rank() && !w.noticed && w.identity &&
          now - waiting_since_ >= kNoticeAfter)
        send_notice(w, m);
      if (m >= 0 && tags::is_collective(w.group.tag_base())) {
        // A blocked call looks for the messages of earlier calls that no receive took.
        std::string stranded = stranded_message(w.ctx, w.seq, w.comm_rank);
        if (!stranded.empty()) {
          fail(w, std::make_exception_ptr(MismatchError(stranded, true)));
          return;
        }
      }
    }
    if (now < w.deadline) continue;
    int peer = w.blocking_peer();
    std::string msg = "seam: " + describe(w) + " timed out after " + std::to_string(config_.timeout_ms) +
                      " ms (SEAM_TIMEOUT_MS) waiting for " +
                      (peer >= 0 ? "rank " + std::to_string(peer) : std::string("its peers")) +
                      " (it is slow, stuck, or called another collective, dtype or op)";
    fail(w, std::make_exception_ptr(TimeoutError(msg, peer)));
    return;  // aborted: outstanding_ is empty now
  }
  while (!outstanding_.empty() && outstanding_.front()->status != WorkState::Status::pending)
    outstanding_.pop_front();
  if (!outstanding_.empty() && outstanding_.size() > 1)
    outstanding_.erase(std::remove_if(outstanding_.begin(), outstanding_.end(),
                                      [](const auto& o) { return o->status != WorkState::Status::pending; }),
                       outstanding_.end());
}

bool Engine::called_otherwise(WorkState& w, int peer) {
  const uint64_t mine = w.group.tag_base();
  if (!w.task.valid() || !tags::is_collective(mine)) return false;
  // A message of this call (same communicator and sequence number) under another signature:
  // the peer called another collective, dtype or op. Its messages never match this rank's
  // receives, so the call could only time out.
  const auto theirs = transport_->unmatched_tag(peer, mine, tags::kCallMask);
  if (!theirs || tags::signature_of(*theirs) == tags::signature_of(mine)) return false;
  const std::string msg = "seam: " + describe(w) + ": rank " + std::to_string(peer) + " called " +
                          describe_signature(tags::signature_of(*theirs)) + ", this rank " +
                          describe_signature(tags::signature_of(mine));
  // The call's messages are stranded in the transports on both sides: the communicator is
  // unusable after this, as after a timeout, and the peer learns it at once.
  fail(w, std::make_exception_ptr(MismatchError(msg, true)));
  return true;
}

std::string Engine::stranded_message(uint32_t ctx, uint32_t next_seq, int comm_rank) {
  struct Judge {
    const Engine* engine;
    uint32_t ctx, next_seq;
    // Earlier than next_seq (within half the sequence space: later ones are peers' calls ahead
    // of this rank's) and not a call this rank still runs.
    static bool stranded(void* self, int, uint64_t tag) {
      const auto& j = *static_cast<const Judge*>(self);
      const uint32_t seq = tags::seq_of(tag);
      const uint32_t behind = (j.next_seq - seq) & tags::kSeqMask;
      if (behind == 0 || behind > tags::kSeqMask / 2) return false;
      for (const auto& o : j.engine->outstanding_)
        if (o->status == WorkState::Status::pending && o->ctx == j.ctx && (o->seq & tags::kSeqMask) == seq &&
            tags::is_collective(o->group.tag_base()))
          return false;
      return true;
    }
  } judge{this, ctx, next_seq};
  const auto found = transport_->unmatched_from_any(tags::make(ctx, tags::collective, 0),
                                                    tags::kCollectiveOfCtxMask, &Judge::stranded, &judge);
  if (!found) return {};
  const uint32_t seq = tags::seq_of(found->second);
  return "seam: communicator " + std::to_string(ctx) + ", rank " + std::to_string(comm_rank) + ": rank " +
         std::to_string(found->first) + " sent a message of operation #" + std::to_string(seq) +
         " (mod " + std::to_string(tags::kSeqMask + 1) + ", " +
         describe_signature(tags::signature_of(found->second)) +
         ") that this rank's call never received: the ranks disagreed on that call's arguments "
         "(root, count or blocks); its messages are stranded, so the communicator is aborted";
}

void Engine::complete(WorkState& w) {
  // A finished collective has taken every message its peers sent before theirs, where they sent
  // it ahead on one connection: an earlier call's message left unreceived shows now, even when
  // this call began before it arrived (a disagreement on a small broadcast's root).
  if (w.task.valid() && tags::is_collective(w.group.tag_base())) {
    std::string stranded = stranded_message(w.ctx, w.seq + 1, w.comm_rank);
    if (!stranded.empty()) {
      fail(w, std::make_exception_ptr(MismatchError(stranded, true)));
      return;
    }
  }
  w.status = WorkState::Status::done;
}

void Engine::check_stranded(uint32_t ctx, uint32_t next_seq, int comm_rank) {
  std::string stranded = stranded_message(ctx, next_seq, comm_rank);
  if (stranded.empty()) return;
  abort(stranded, -1);
  throw MismatchError(stranded, true);
}

void Engine::check_sequence_room(uint32_t ctx, uint32_t next_seq) const {
  if (outstanding_.size() < tags::kMaxOutstanding) return;  // fewer calls in flight than allowed
  for (const auto& o : outstanding_) {
    if (o->status != WorkState::Status::pending || o->ctx != ctx || !o->task.valid() ||
        !tags::is_collective(o->group.tag_base()))
      continue;
    // The oldest outstanding collective of this communicator.
    if (next_seq - o->seq >= tags::kMaxOutstanding)
      throw UsageError("seam: " + std::to_string(tags::kMaxOutstanding) +
                       " collectives of communicator " + std::to_string(ctx) +
                       " are outstanding, the oldest operation #" + std::to_string(o->seq) +
                       ": wait for it before issuing more");
    return;
  }
}

void Engine::poll() {
  if (aborted()) return;
  transport_->progress();
  step_all();
  // Idle, no operation fails on a peer's abort notice: the engine takes it up itself.
  if (!aborted())
    if (const std::string_view notice = transport_->job_aborted(); !notice.empty()) abort(std::string(notice), -1);
}

namespace {

/// How often a spinning wait looks at the CPU it runs on and asks whether a peer last ran there
/// (Doorbells::peer_on_cpu; cheap, the peers' lines stay cached). A wait yields its core only
/// to such a peer, at every turn: that peer cannot progress while the wait holds the core.
/// Yielding to any task instead costs whole time slices: a wait that yields beside a busy thread
/// hands the core to it until the scheduler's next turn. Unpinned ranks that the scheduler puts
/// on one core after set-up are found once each has waited there.
constexpr auto kCpuLook = std::chrono::microseconds(5);
/// Looks at a shared-memory wait between two turns of the driver's loop (each a relax apart:
/// well under a microsecond, so the transport, the clock and the deadlines wait no longer).
constexpr int kQuickLooks = 16;

}  // namespace

// A turn of the loop (transport progress, every operation's step, the clock) is long next to a
// look at the flags, and a flag that a peer set during one waited for its end before the task
// saw it; so a lone wait on shared memory looks at its flags a few times between turns.
void Engine::look_again(WorkState& w) {
  if (outstanding_.size() != 1 || !w.task.waits_on_memory()) return cpu_relax();
  for (int k = 0; k < kQuickLooks; ++k) {
    if (w.task.wait_over()) return;
    cpu_relax();
  }
}

void Engine::drive(WorkState& w) {
  if (w.status != WorkState::Status::pending) return;
  struct WaitingIn {
    WorkState*& slot;
    WorkState* before;
    ~WaitingIn() { slot = before; }
  } waiting_in{waiting_in_, std::exchange(waiting_in_, &w)};
  waiting_since_ = coarse_now();
  const auto spin = spin_.current();
  // The spin window opens at the first look that leaves the operation pending (most short ones
  // end at it: no clock read then).
  Clock::time_point spin_end{};
  bool window_open = false, handed_over = false;
  std::optional<Clock::time_point> slept_since;
  while (w.status == WorkState::Status::pending) {
    const uint64_t resumed_before = comm::Task::resumptions_on_this_thread();
    bool moved = transport_->progress();
    step_all();
    if (w.status != WorkState::Status::pending) break;
    auto now = Clock::now();
    // The spin window restarts whenever the transport moved or a task advanced (it may have
    // copied or reduced a large block and then published a flag the peers wait on).
    if (!window_open || moved || comm::Task::resumptions_on_this_thread() != resumed_before) {
      window_open = true;
      spin_end = now + spin;
    }
    if (now < spin_end) {
      if (now >= next_cpu_look_) {
        peer_on_this_cpu_ = doorbells ? doorbells->peer_on_cpu(sched_getcpu()) : peers_may_share_cpu;
        next_cpu_look_ = now + kCpuLook;
      }
      if (peer_on_this_cpu_) {
        handed_over = true;
        sched_yield();
      } else {
        look_again(w);
      }
      continue;
    }
    // Marked asleep, one last look: a peer's shared-memory flag this rank waits on is either
    // seen here, or its publisher sees the mark, and whoever completes the round rings.
    if (!mark_asleep(true)) continue;  // events wait: poll them
    const uint64_t resumed_before_look = comm::Task::resumptions_on_this_thread();
    const bool arrived = transport_->progress();
    step_all();
    if (w.status != WorkState::Status::pending || arrived ||
        comm::Task::resumptions_on_this_thread() != resumed_before_look) {
      mark_asleep(false);
      spin_end = now + spin;
      continue;
    }
    if (!slept_since) slept_since = now;
    if (abort_probe) {
      if (std::string why = abort_probe(); !why.empty()) {
        mark_asleep(false);
        abort(why, -1);
        break;
      }
    }
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(w.deadline - now);
    transport_->wait_for_activity(std::clamp(left, std::chrono::microseconds(1), std::chrono::microseconds(1000)));
  }
  if (slept_since) {
    const WaiterCore core = oversubscribed || handed_over ? WaiterCore::shared
                            : cores_to_spare              ? WaiterCore::own_with_spare
                                                          : WaiterCore::own_none_spare;
    spin_.after_sleep(Clock::now() - *slept_since, core);
  }
}

transport::RequestPtr OpGroup::isend(int peer, uint32_t step, const void* data, size_t bytes) {
  if (step > tags::kMaxStep)
    throw ValueError("seam: step " + std::to_string(step) + " exceeds the tag's " + std::to_string(tags::kStepBits) + " bits");
  return t_.isend(world_rank(peer), tag_of(step), data, bytes);
}

transport::RequestPtr OpGroup::irecv(int peer, uint32_t step, void* data, size_t bytes) {
  if (step > tags::kMaxStep)
    throw ValueError("seam: step " + std::to_string(step) + " exceeds the tag's " + std::to_string(tags::kStepBits) + " bits");
  return t_.irecv(world_rank(peer), tag_of(step), data, bytes);
}

}  // namespace seam::comm
