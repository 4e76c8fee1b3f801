// Runtime-internal parts of the communicator: the tag layout, the per-process engine that drives
// every outstanding operation, WorkState, and CommunicatorImpl.
//
// Threading: a communicator, its sub-communicators and their Works share one engine and must be
// driven from one thread at a time (the engine has no locks on its hot path).
//
// Failure = abort: once an operation fails with a CommError (peer died, link broke, deadline
// passed), every outstanding operation of the engine fails with it and every later call throws.
// The communicator is unusable afterwards; the process is expected to report and exit.
#pragma once

#include <chrono>
#include <ctime>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "layouts/config.h"
#include "seam/dtype.h"
#include "seam/errors.h"
#include "runtime/collectives/group.h"
#include "runtime/collectives/selection.h"
#include "runtime/collectives/shm/backend.h"
#include "seam/communicator.h"
#include "runtime/comm/spin_budget.h"
#include "runtime/exec/task.h"
#include "seam/work.h"
#include "transports/doorbells.h"
#include "transports/shm/shm_transport.h"
#include "transports/transport.h"

namespace seam::comm {

using Clock = std::chrono::steady_clock;

/// Clock::now() to within a scheduler tick (1-4 ms), without reading and scaling the time
/// counter: all the deadlines and the liveness checks need, which every operation and every
/// step take.
inline Clock::time_point coarse_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);  // steady_clock's CLOCK_MONOTONIC, coarser
  return Clock::time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
}

/// Transport tag layout (48 bits; UCX keeps the bits above for the source rank):
///   [47..34] context id (14 bits)  [33..32] kind  [31..0] payload
///   kind collective: payload = sequence number (16 bits, wraps) << 16 | call signature (9 bits)
///                    << 7 | step (7 bits)
///   kind p2p:        payload = the user's tag
///   kind internal:   payload = communicator-creation exchange id
/// The call signature (collective, dtype, op) keeps ranks that disagree on them from exchanging
/// messages: instead of combining bytes of different types, a waiting rank finds the peer's
/// unmatched message of the same call and fails with a MismatchError naming both calls
/// (Engine::called_otherwise). (The shared-memory schedules compare full signatures.)
/// A message of a call that this rank finished without taking it (the ranks disagreed on a root
/// or on blocks) is found at a later call, long before its sequence number comes round again,
/// and fails it with an aborting MismatchError (Engine::check_stranded).
namespace tags {
constexpr int kCtxBits = 14, kSeqBits = 16, kSignatureBits = 9, kStepBits = 7;
constexpr uint32_t kMaxCtx = (1u << kCtxBits) - 1;
constexpr uint32_t kSeqMask = (1u << kSeqBits) - 1;
constexpr uint32_t kMaxStep = (1u << kStepBits) - 1;
/// Collectives of one communicator that may be outstanding at once: far fewer than sequence
/// numbers, so that a message of a call this rank finished is told from one of a call ahead.
constexpr uint32_t kMaxOutstanding = 4095;
enum Kind : uint64_t { collective = 0, p2p = 1, internal = 2 };
constexpr uint64_t make(uint32_t ctx, Kind kind, uint32_t payload) {
  return (static_cast<uint64_t>(ctx) << 34) | (static_cast<uint64_t>(kind) << 32) | payload;
}
/// The call signature's bits: the collective (4 bits), dtype (3) and op (2).
constexpr uint32_t signature(uint32_t collective, DType dtype, ReduceOp op) {
  return (collective & 0xF) << 5 | (static_cast<uint32_t>(dtype) & 0x7) << 2 |
         (static_cast<uint32_t>(op) & 0x3);
}
/// The parts of a call signature.
constexpr uint32_t collective_of(uint32_t signature) { return signature >> 5 & 0xF; }
constexpr DType dtype_of(uint32_t signature) { return static_cast<DType>(signature >> 2 & 0x7); }
constexpr ReduceOp op_of(uint32_t signature) { return static_cast<ReduceOp>(signature & 0x3); }
/// Whether a tag is a collective's (not a point-to-point or internal message).
constexpr bool is_collective(uint64_t tag) { return (tag >> 32 & 3) == collective; }
/// Steps from this one are a schedule's control messages (shared-memory set-up):
/// they carry no call signature, so ranks that disagree on the call still reach the point where
/// the schedule compares signatures and reports the mismatch.
constexpr uint32_t kControlStep = 1u << (kStepBits - 1);
/// A collective tag without its call signature.
constexpr uint64_t unsigned_tag(uint64_t tag) {
  return tag & ~(static_cast<uint64_t>((1u << kSignatureBits) - 1) << kStepBits);
}
/// The bits that say which call of which communicator a collective message belongs to, and
/// whether it is a control message; not its signature nor its step.
constexpr uint64_t kCallMask = (static_cast<uint64_t>(kMaxCtx) << 34) | (uint64_t{3} << 32) |
                               (static_cast<uint64_t>(kSeqMask) << (kSignatureBits + kStepBits)) |
                               kControlStep;
/// The call signature a collective tag carries.
constexpr uint32_t signature_of(uint64_t tag) {
  return static_cast<uint32_t>(tag >> kStepBits) & ((1u << kSignatureBits) - 1);
}
/// The sequence number a collective tag carries.
constexpr uint32_t seq_of(uint64_t tag) {
  return static_cast<uint32_t>(tag >> (kSignatureBits + kStepBits)) & kSeqMask;
}
/// The bits that say which communicator a message belongs to.
constexpr uint64_t kCtxMask = static_cast<uint64_t>(kMaxCtx) << 34;
/// The bits that say which communicator a message belongs to and that it is a collective's.
constexpr uint64_t kCollectiveOfCtxMask = (static_cast<uint64_t>(kMaxCtx) << 34) | (uint64_t{3} << 32);
/// The tag of wait notices (Engine::WaitNotice): internal, above every group exchange's payload.
constexpr uint64_t kWaitNotice = make(0, internal, 0x80000001u);
/// The communicator-creating split's signature (a collective of its own, past the others).
constexpr uint32_t kSplitSignature = signature(0xF, DType::u8, ReduceOp::sum);
constexpr uint64_t collective_base(uint32_t ctx, uint32_t seq, uint32_t signature) {
  return make(ctx, collective,
              (seq & kSeqMask) << (kSignatureBits + kStepBits) | signature << kStepBits);
}
}  // namespace tags

class WorkState;
class CommunicatorImpl;

/// Per-process state shared by the world communicator and all its sub-communicators.
class Engine {
 public:
  Engine(std::shared_ptr<transport::Transport> transport, const Config& config);
  ~Engine();
  transport::Transport& transport() { return *transport_; }
  const Config& config() const { return config_; }

  /// Registers a new operation and runs it as far as it goes without blocking.
  void start(const std::shared_ptr<WorkState>& w);
  /// Drives every outstanding operation (issue order) until `w` finishes (never throws; the
  /// outcome is in w).
  void drive(WorkState& w);
  /// One non-blocking round of progress.
  void poll();
  /// Throws CommError when an earlier failure aborted the engine.
  void check_usable() const;
  /// Throws UsageError when communicator `ctx`'s collective `next_seq` would make more than
  /// tags::kMaxOutstanding of its collectives outstanding.
  void check_sequence_room(uint32_t ctx, uint32_t next_seq) const;
  /// Aborts and throws an aborting MismatchError when a peer's message of an earlier collective
  /// of communicator `ctx` (before `next_seq`) that this rank no longer runs waits unreceived:
  /// the ranks disagreed on that call (a root, blocks), and the message must never meet a
  /// later call. Called before each collective takes its sequence number.
  void check_stranded(uint32_t ctx, uint32_t next_seq, int comm_rank);
  bool aborted() const { return !abort_reason_.empty(); }
  /// Aborts for a failure found outside the engine (a device call's): as a failed operation does.
  void abort_external(const std::string& reason, int peer) { abort(reason, peer); }
  /// Why the engine aborted, and the world rank it names (-1: none).
  const std::string& abort_reason() const { return abort_reason_; }
  int abort_peer() const { return abort_peer_; }

  /// This engine's live communicators, for the wait notices of peers (register/unregister).
  void register_comm(const CommunicatorImpl* c) { live_comms_.push_back(c); }
  void unregister_comm(const CommunicatorImpl* c) { std::erase(live_comms_, c); }

  /// The lowest context id at or above `from` that no live communicator of this engine holds
  /// (tags::kMaxCtx + 1 when none is free). Ids of destroyed communicators return first.
  uint32_t free_context_from(uint32_t from);
  /// Marks `ctx` held by a new communicator of this engine.
  void claim_context(uint32_t ctx);
  /// Returns a destroyed communicator's id, once none of its calls is outstanding and no
  /// message of it waits unreceived (until then a later call of a new holder could meet them).
  void release_context(uint32_t ctx);
  std::string transport_name;             ///< "shm", "ucx" or "shm+ucx"
  /// Tells the other ranks this one aborted, so they fail at once rather than at their deadline.
  std::function<void(const std::string&)> broadcast_abort;
  /// Asked by the waiting thread between its looks (at least every millisecond): a failure found
  /// outside the engine that must abort it (a device communicator's abort word, read by the
  /// progress thread of its staged path), or "" while there is none.
  std::function<std::string()> abort_probe;
  std::vector<std::string> peer_transport;  ///< per world rank
  /// The shared-memory doorbells of the transport (null where it has none): how a wait sleeps
  /// without missing a local peer's store, and whom it hands its core to.
  transport::Doorbells* doorbells = nullptr;
  /// Without doorbells: whether a peer may run on this rank's CPU (a wait then yields its core).
  bool peers_may_share_cpu = false;
  /// Whether the ranks on this machine (this kernel: hosts in network namespaces or containers
  /// of one machine share its cores) outnumber the cores they may run on (the union of their CPU
  /// affinities): a wait that slept then counts its core as shared (spin_budget.h). Its spin
  /// yields the core to the peers that last ran on it, as waits always do (drive).
  bool oversubscribed = false;
  /// Whether those cores outnumber the ranks (helper threads may run on the rest): waits then
  /// spin up to 1 ms before they sleep, where they spin up to 10 ms when the cores are as many
  /// as the ranks (spin_budget.h).
  bool cores_to_spare = false;
  /// Per world rank, the index of its host (hosts numbered in order of their lowest rank);
  /// empty in a job on one host.
  std::vector<int> host_of;

 private:
  void step_all();
  /// One turn of a spin that keeps the core: where `w` is the only operation and waits on
  /// shared-memory flags, a few looks at them alone; else one relax.
  void look_again(WorkState& w);
  /// Doorbells::mark_asleep where there are doorbells; without, a wait sleeps on events alone.
  bool mark_asleep(bool asleep) { return doorbells ? doorbells->mark_asleep(asleep) : true; }
  void fail(WorkState& w, std::exception_ptr e);
  void abort(const std::string& reason, int peer);
  /// Where `error` (a CommError about `peer`) says the peer is lost, the reason in another
  /// rank's abort notice that may trail it, as " (...)"; else empty.
  std::string abort_behind(std::string_view error, int peer);
  /// Fails `w` with a MismatchError (and aborts) when `peer`, which it waits for, sent a message
  /// of the same call under another signature.
  bool called_otherwise(WorkState& w, int peer);
  /// Marks w done, or fails it when an earlier call's message to this rank stands unreceived.
  void complete(WorkState& w);
  /// The reason check_stranded fails for, or empty.
  std::string stranded_message(uint32_t ctx, uint32_t next_seq, int comm_rank);

  /// What a rank whose collective has waited kNoticeAfter for a peer tells that peer: which call
  /// it waits in, so the peer finds at once a disagreement that would otherwise end only at the
  /// deadline (another collective or arguments of the same call; its own wait, in another call,
  /// for this rank: a deadlock of two ranks that called in different orders).
  struct WaitNotice {
    uint64_t identity, args;
    uint32_t seq, signature;
    /// Set in the answer to a peer's notice of a call this rank has not made, while this rank
    /// waits for that peer (in the call above): the peer's call (identity 0: none).
    uint64_t unmade_identity;
    uint32_t unmade_seq, unused;
  };
  struct NoticeIn {
    WaitNotice notice{};
    transport::RequestPtr request;
  };
  /// Sends w's wait notice to `peer`, and with it the peer's call `unmade` that this rank has not made.
  void send_notice(WorkState& w, int peer, const WaitNotice* unmade = nullptr);
  /// Posts a notice receive for every peer (re-posted as each arrives: post_notice_receive).
  void post_notice_receives();
  void post_notice_receive(int peer);
  /// Takes the peers' notices that arrived and judges them; false when one failed a call (and
  /// aborted the engine). Every kNoticeLook at most, from step_all and start.
  bool look_at_notices(Clock::time_point now);
  bool judge_notice(int peer, const WaitNotice& n);
  std::vector<const CommunicatorImpl*> live_comms_;
  WorkState* waiting_in_ = nullptr;  // the call this thread waits for (drive), and since when
  Clock::time_point waiting_since_{};
  // Declared before transport_ so that the buffers outlive it (the receives stay posted).
  std::vector<std::unique_ptr<NoticeIn>> notices_in_;  // per world rank
  std::deque<std::pair<std::unique_ptr<WaitNotice>, transport::RequestPtr>> notices_out_;
  Clock::time_point next_notice_look_{};

  std::shared_ptr<transport::Transport> transport_;
  Config config_;
  std::deque<std::shared_ptr<WorkState>> outstanding_;
  std::vector<bool> ctx_held_ = std::vector<bool>(tags::kMaxCtx + 1, false);
  std::vector<uint32_t> ctx_retiring_;  // destroyed, not yet free (release_context)
  bool retired(uint32_t ctx);
  std::string abort_reason_;
  int abort_peer_ = -1;
  Clock::time_point last_liveness_check_{};
  SpinBudget spin_;
  /// Whether a local peer last ran on this rank's CPU, as of next_cpu_look_ - kCpuLook: then a
  /// spinning wait hands the core over at every turn (see drive).
  bool peer_on_this_cpu_ = false;
  Clock::time_point next_cpu_look_{};
};

/// The Group a running operation sees: group ranks -> world ranks, tags scoped to the operation.
class OpGroup final : public collectives::Group {
 public:
  OpGroup(Engine& engine, std::shared_ptr<const std::vector<int>> members, int rank,
          uint64_t tag_base, std::shared_ptr<collectives::ShmBackend> shm, std::string_view transport,
          std::shared_ptr<const collectives::HostLayout> hosts)
      : t_(engine.transport()), shm_(std::move(shm)), members_(std::move(members)), rank_(rank),
        tag_base_(tag_base), name_(transport), hosts_(std::move(hosts)) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_->size()); }
  int world_rank(int r) const override { return (*members_)[static_cast<size_t>(r)]; }
  const std::vector<int>& members() const { return *members_; }
  transport::RequestPtr isend(int peer, uint32_t step, const void* data, size_t bytes) override;
  transport::RequestPtr irecv(int peer, uint32_t step, void* data, size_t bytes) override;
  std::string_view transport_name() const override { return name_; }
  const collectives::HostLayout* hosts() const override { return hosts_.get(); }
  collectives::ShmBackend* shm() const override { return shm_.get(); }
  bool sent_unreceived(int peer, uint32_t step) override {
    return t_.unmatched_tag(world_rank(peer), tag_of(step), ~uint64_t{0}).has_value();
  }
  void compares_arguments() override { compares_arguments_ = true; }
  /// Whether the call's schedule compares the ranks' arguments itself (compares_arguments).
  bool arguments_compared() const { return compares_arguments_; }
  /// The tag of the operation's messages before the step (for collectives: with the signature).
  uint64_t tag_base() const { return tag_base_; }
  /// The transport tag of a step: control steps go without the call signature.
  uint64_t tag_of(uint32_t step) const {
    return (step >= tags::kControlStep ? tags::unsigned_tag(tag_base_) : tag_base_) | step;
  }

 private:
  transport::Transport& t_;
  std::shared_ptr<collectives::ShmBackend> shm_;
  std::shared_ptr<const std::vector<int>> members_;
  int rank_;
  uint64_t tag_base_;
  std::string_view name_;  // a literal or the engine's name
  std::shared_ptr<const collectives::HostLayout> hosts_;
  bool compares_arguments_ = false;
};

class WorkState {
 public:
  enum class Status : uint8_t { pending, done, failed };
  WorkState(std::shared_ptr<Engine> engine, const char* op, uint32_t ctx, uint32_t seq, int comm_rank,
            int comm_size, OpGroup group)
      : engine(std::move(engine)), op(op), ctx(ctx), seq(seq), comm_rank(comm_rank), comm_size(comm_size),
        group(std::move(group)) {}

  /// Runs the operation as far as it goes; true once complete. Throws as Task::step does.
  bool step() {
    if (task.valid()) return task.step();
    if (request->failed()) throw CommError(request->error(), request->peer());
    return request->finished();
  }
  int blocking_peer() const {
    if (task.valid()) return task.blocking_peer();
    return request && !request->finished() ? request->peer() : -1;
  }

  std::shared_ptr<Engine> engine;
  const char* op;  // a string literal
  uint32_t ctx, seq;
  int comm_rank, comm_size;
  /// A collective's communicator (CommunicatorImpl::identity), tag signature and arguments'
  /// digest (counts, root), as a wait notice tells them to the peer it waits for.
  uint64_t identity = 0, args = 0;
  uint32_t signature = 0;
  bool noticed = false;  // a wait notice went to the peer it waits for
  bool answered = false;  // it told a waiting peer which of its calls this rank has not made
  Status status = Status::pending;
  Clock::time_point deadline;
  std::exception_ptr error;
  std::string error_text;
  // The task refers to these: they are declared before it so they outlive it.
  OpGroup group;
  std::vector<size_t> counts;
  /// Point-to-point operations are one request, no Task (no coroutine frame per message).
  transport::RequestPtr request;
  Task task;
};

class CommunicatorImpl {
 public:
  CommunicatorImpl(std::shared_ptr<Engine> engine, std::shared_ptr<const std::vector<int>> members,
                   int rank, uint32_t ctx, uint64_t identity);
  ~CommunicatorImpl();

  /// A new collective operation of this communicator (consumes a sequence number).
  /// A collective's state; `signature` (tags::signature) goes into its messages' tags.
  /// `args` digests the arguments every rank must pass alike (call_args).
  std::shared_ptr<WorkState> new_collective(const char* op, uint32_t signature, uint64_t args = 0);
  /// The same for a public collective, signed with its kind, dtype and op.
  std::shared_ptr<WorkState> new_collective(collectives::Collective c, DType dtype,
                                            ReduceOp op = ReduceOp::sum, uint64_t args = 0);
  /// A point-to-point operation (tag from the user, no sequence number).
  std::shared_ptr<WorkState> new_p2p(const char* op, uint32_t user_tag);
  /// Starts it and wraps it in a Work.
  Work launch(std::shared_ptr<WorkState> w);

  /// Blocking exchange of `mine` among `group_members` (comm ranks, this rank among them) under
  /// `tag_base`; the result is indexed like group_members.
  std::vector<std::string> exchange(const std::vector<int>& group_members, const std::string& mine,
                                    std::shared_ptr<WorkState> w);

  std::shared_ptr<Engine> engine;
  std::shared_ptr<const std::vector<int>> members;  // world rank of each comm rank
  int rank;
  uint32_t ctx;
  /// The same on every member and never reused, unlike ctx: derived from the parent's identity
  /// and the call that created it.
  uint64_t identity;
  /// Where the members run, when they span hosts (else null).
  std::shared_ptr<const collectives::HostLayout> hosts;
  /// What this communicator's messages take: "shm" where its members all share a host, even
  /// in a job that spans hosts (its collectives then run out of shared memory), "ucx" where
  /// no two do, "shm+ucx" for a mix; else the engine's name.
  std::string_view transport;
  /// The shared-memory backend of its calls (null where the transport has no shared memory): its
  /// regions go when the communicator and its last outstanding call do.
  std::shared_ptr<collectives::ShmBackend> shm;
  uint32_t seq = 0;
  std::vector<std::pair<uint64_t, uint32_t>> group_creations;  // (member-list hash, count)
};

/// How the runtime reaches a Communicator's implementation (private in the public header).
struct CommunicatorAccess {
  static CommunicatorImpl& of(Communicator& c) { return *c.impl_; }
};

}  // namespace seam::comm
