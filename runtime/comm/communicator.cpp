#include <cstdint>
#include "seam/communicator.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <array>
#include <map>
#include <functional>
#include <numeric>
#include <set>
#include <sstream>

#include "seam/errors.h"
#include "layouts/log.h"
#include "runtime/bootstrap/bootstrap.h"
#include "runtime/collectives/collectives.h"
#include "runtime/collectives/selection.h"
#include "runtime/collectives/validate.h"
#include "runtime/comm/comm_internal.h"
#include "runtime/comm/composite_transport.h"
#include "transports/shm/kernel_copy_speed.h"
#include "transports/shm/pool_allocator.h"
#include "transports/shm/shm_transport.h"
#include "transports/ucx/ucx_transport.h"

namespace seam::comm {
namespace {

/// Keeps the bootstrap (PMIx stays initialised for the process's communicators) next to the
/// transport, and destroys the transport first.
class OwningTransport final : public transport::Transport {
 public:
  OwningTransport(std::unique_ptr<bootstrap::Bootstrap> b, std::unique_ptr<transport::Transport> t)
      : bootstrap_(std::move(b)), t_(std::move(t)) {}
  ~OwningTransport() override { t_.reset(); }
  std::string_view name() const override { return t_->name(); }
  int rank() const override { return t_->rank(); }
  int size() const override { return t_->size(); }
  transport::RequestPtr isend(int p, uint64_t tag, const void* d, size_t n) override { return t_->isend(p, tag, d, n); }
  transport::RequestPtr irecv(int p, uint64_t tag, void* d, size_t n) override { return t_->irecv(p, tag, d, n); }
  bool progress() override { return t_->progress(); }
  void wait_for_activity(std::chrono::microseconds max) override { t_->wait_for_activity(max); }
  bool peer_alive(int p) override { return t_->peer_alive(p); }
  std::string why_lost(int p) override { return t_->why_lost(p); }
  std::string abort_notice(std::chrono::milliseconds wait) override {
    return t_->abort_notice(wait);
  }
  std::string_view job_aborted() override { return t_->job_aborted(); }
  std::optional<uint64_t> unmatched_tag(int p, uint64_t tag, uint64_t mask) override {
    return t_->unmatched_tag(p, tag, mask);
  }
  std::optional<std::pair<int, uint64_t>> unmatched_from_any(uint64_t tag, uint64_t mask,
                                                             UnmatchedFilter accept, void* context) override {
    return t_->unmatched_from_any(tag, mask, accept, context);
  }

 private:
  std::unique_ptr<bootstrap::Bootstrap> bootstrap_;
  std::unique_ptr<transport::Transport> t_;
};

std::unique_ptr<bootstrap::Bootstrap> make_bootstrap(const BootstrapOptions& o, const Config& c) {
  bootstrap::StoreBootstrapOptions s;
  s.addr = !o.store_addr.empty() ? o.store_addr : c.store_addr;
  s.rank = o.rank >= 0 ? o.rank : c.rank;
  s.world_size = o.world_size > 0 ? o.world_size : c.world_size;
  s.token = !o.job_token.empty() ? o.job_token : c.job_token;
  s.timeout = std::chrono::milliseconds(c.timeout_ms);
  if (!s.addr.empty()) return bootstrap::create_store(s);
  if (bootstrap::pmix_launched()) return bootstrap::create_pmix(s.timeout);
  throw UsageError(
      "seam: no way to find the other ranks: set SEAM_STORE_ADDR (host:port served by rank 0), "
      "SEAM_RANK, SEAM_WORLD_SIZE and SEAM_JOB_TOKEN (or BootstrapOptions), or launch under mpirun");
}

std::vector<std::string> split_fields(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  return out;
}

/// The running kernel's boot id: ranks that share it share the machine's cores, even where
/// they count as different hosts (network namespaces, containers). Empty if unreadable.
std::string machine_identity() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

/// This process's CPU affinity as hex bytes (what the ranks gather at start-up), and back.
std::string affinity_text() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) CPU_ZERO(&set);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  const auto* bytes = reinterpret_cast<const unsigned char*>(&set);
  for (size_t i = 0; i < sizeof set; ++i) {
    text += kHex[bytes[i] >> 4];
    text += kHex[bytes[i] & 15];
  }
  return text;
}
cpu_set_t affinity_of(const std::string& text) {
  cpu_set_t set;
  CPU_ZERO(&set);
  auto* bytes = reinterpret_cast<unsigned char*>(&set);
  for (size_t i = 0; i < sizeof set && 2 * i + 1 < text.size(); ++i)
    bytes[i] = static_cast<unsigned char>(std::stoi(text.substr(2 * i, 2), nullptr, 16));
  return set;
}

using Record = std::array<int64_t, 4>;

// (GCC 12 miscompiles braced lists inside co_await expressions, hence this helper.)
std::vector<transport::RequestPtr> just(transport::RequestPtr r) {
  std::vector<transport::RequestPtr> v;
  v.push_back(std::move(r));
  return v;
}

/// Gather to the first member, then broadcast: a small all-gather among `sub` (comm ranks) that
/// creates sub-communicators. Not a collective algorithm: it runs once per communicator created.
Task exchange_task(collectives::Group& g, const std::vector<int>& sub, size_t pos, std::vector<Record>& all) {
  const size_t n = sub.size();
  if (pos == 0) {
    std::vector<transport::RequestPtr> recvs;
    for (size_t i = 1; i < n; ++i) recvs.push_back(g.irecv(sub[i], 0, &all[i], sizeof(Record)));
    co_await all_of(std::move(recvs));
    std::vector<transport::RequestPtr> sends;
    for (size_t i = 1; i < n; ++i) sends.push_back(g.isend(sub[i], 1, all.data(), n * sizeof(Record)));
    co_await all_of(std::move(sends));
  } else {
    co_await all_of(just(g.isend(sub[0], 0, &all[pos], sizeof(Record))));
    co_await all_of(just(g.irecv(sub[0], 1, all.data(), n * sizeof(Record))));
  }
}

/// Agrees on a communicator id that no member holds: each member offers in `all[.][slot]` its
/// lowest free id at or above the largest offer so far, until every offer is the same. Members
/// that made and dropped the same communicators offer the same id at once: one exchange.
Task agree_context_task(collectives::Group& g, const std::vector<int>& sub, size_t pos, std::vector<Record>& all,
                        size_t slot, Engine& engine, uint32_t& ctx, int& rounds) {
  for (rounds = 1;; ++rounds) {
    Task round = exchange_task(g, sub, pos, all);
    co_await run(round);
    int64_t lo = all[0][slot], hi = lo;
    for (const auto& r : all) {
      lo = std::min(lo, r[slot]);
      hi = std::max(hi, r[slot]);
    }
    if (lo == hi || hi > tags::kMaxCtx) {
      ctx = static_cast<uint32_t>(hi);
      co_return;
    }
    all[pos][slot] = engine.free_context_from(static_cast<uint32_t>(hi));
  }
}

/// Throws on every member alike when the members hold every id between them.
void check_context_found(uint32_t ctx) {
  if (ctx > tags::kMaxCtx)
    throw NotSupportedError("seam: too many communicators alive at once (" + std::to_string(tags::kMaxCtx) +
                            " ids, held by the members between them); destroy some first");
}

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

/// The digest of the arguments every rank passes alike (count or blocks, root) that a wait
/// notice carries; never 0.
uint64_t call_args(std::span<const size_t> counts, int64_t root = -1) {
  uint64_t h = mix(1, static_cast<uint64_t>(root));
  for (size_t c : counts) h = mix(h, c);
  return h | 1;
}
uint64_t call_args(size_t count, int64_t root = -1) { return call_args(std::span<const size_t>(&count, 1), root); }

uint64_t hash_ranks(std::span<const int> ranks) {
  uint64_t h = 1469598103934665603ull;
  for (int r : ranks) {
    h ^= static_cast<uint32_t>(r);
    h *= 1099511628211ull;
  }
  return h;
}

/// Where these members (world ranks; `me` among them) run, when they span hosts.
std::shared_ptr<const collectives::HostLayout> members_hosts(const Engine& engine,
                                                             const std::vector<int>& members,
                                                             int me) {
  if (engine.host_of.empty()) return nullptr;
  std::vector<int> host_of;
  int mine = 0;
  for (size_t r = 0; r < members.size(); ++r) {
    host_of.push_back(engine.host_of[static_cast<size_t>(members[r])]);
    if (members[r] == me) mine = static_cast<int>(r);
  }
  auto layout = std::make_shared<collectives::HostLayout>(collectives::host_layout(host_of, mine));
  if (layout->hosts == 1) return nullptr;
  return layout;
}

/// CommunicatorImpl::transport for members that run where `hosts` says.
std::string_view members_transport(const Engine& engine, const collectives::HostLayout* hosts,
                                   size_t members) {
  if (engine.transport_name != "shm+ucx") return engine.transport_name;
  if (!hosts) return "shm";
  return static_cast<size_t>(hosts->hosts) == members ? "ucx" : "shm+ucx";
}

}  // namespace

// ---- CommunicatorImpl -----------------------------------------------------------------------

CommunicatorImpl::CommunicatorImpl(std::shared_ptr<Engine> engine_,
                                   std::shared_ptr<const std::vector<int>> members_, int rank_,
                                   uint32_t ctx_, uint64_t identity_)
    : engine(std::move(engine_)), members(std::move(members_)), rank(rank_), ctx(ctx_), identity(identity_),
      hosts(members_hosts(*engine, *members, (*members)[static_cast<size_t>(rank)])),
      transport(members_transport(*engine, hosts.get(), members->size())),
      shm(engine->doorbells ? std::make_shared<collectives::ShmBackend>(
                                  *engine->doorbells, collectives::ShmConfig::from(engine->config()))
                            : nullptr) {
  engine->register_comm(this);
}

CommunicatorImpl::~CommunicatorImpl() {
  engine->unregister_comm(this);
  if (ctx != 0) engine->release_context(ctx);
}

std::shared_ptr<WorkState> CommunicatorImpl::new_collective(const char* op, uint32_t signature, uint64_t args) {
  engine->check_usable();
  engine->check_sequence_room(ctx, seq);
  engine->check_stranded(ctx, seq, rank);
  const uint32_t s = seq++;
  auto w = seam::detail::make_pooled<WorkState>(
      engine, op, ctx, s, rank, static_cast<int>(members->size()),
      OpGroup(*engine, members, rank, tags::collective_base(ctx, s, signature), shm, transport, hosts));
  w->identity = identity;
  w->signature = signature;
  w->args = args;
  return w;
}

std::shared_ptr<WorkState> CommunicatorImpl::new_collective(collectives::Collective c, DType dtype,
                                                            ReduceOp op, uint64_t args) {
  // collective_name gives string literals: NUL-terminated, alive for the whole run.
  return new_collective(collectives::collective_name(c).data(),
                        tags::signature(static_cast<uint32_t>(c), dtype, op), args);
}

std::shared_ptr<WorkState> CommunicatorImpl::new_p2p(const char* op, uint32_t user_tag) {
  engine->check_usable();
  return seam::detail::make_pooled<WorkState>(
      engine, op, ctx, seq, rank, static_cast<int>(members->size()),
      OpGroup(*engine, members, rank, tags::make(ctx, tags::p2p, user_tag), nullptr, transport, hosts));
}

Work CommunicatorImpl::launch(std::shared_ptr<WorkState> w) {
  engine->start(w);
  return Work(std::move(w));
}

// ---- Communicator ---------------------------------------------------------------------------

Communicator::Communicator(std::unique_ptr<CommunicatorImpl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

int Communicator::rank() const { return impl_->rank; }
int Communicator::size() const { return static_cast<int>(impl_->members->size()); }
int Communicator::world_rank(int r) const {
  if (r < 0 || r >= size()) throw ValueError("seam: rank " + std::to_string(r) + " outside the communicator of " + std::to_string(size()));
  return (*impl_->members)[static_cast<size_t>(r)];
}
std::string Communicator::transport_name() const { return std::string(impl_->transport); }

namespace {

/// Connections and an engine for the ranks `x` reaches (a bootstrap, or an existing communicator's
/// exchange): who runs where, the shared-memory and UCX transports between them, the engine that
/// drives them. `bootstrap` (may be null) stays alive beside the transport.
std::shared_ptr<Engine> build_engine(transport::AddressExchange& x, std::unique_ptr<bootstrap::Bootstrap> bootstrap,
                                     const std::function<void()>& barrier, const Config& cfg) {
  const auto timeout = std::chrono::milliseconds(cfg.timeout_ms);
  const int rank = x.rank(), size = x.size();

  // Who runs where, and does everyone agree on the transport setting?
  auto info = x.all_gather(bootstrap::host_identity() + "\n" + std::to_string(getpid()) + "\n" +
                           cfg.transport + "\n" + affinity_text() + "\n" + machine_identity());
  std::vector<std::string> hosts(static_cast<size_t>(size));
  std::vector<int> pids(static_cast<size_t>(size));
  std::vector<std::string> affinities(static_cast<size_t>(size)), machines(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    auto f = split_fields(info[static_cast<size_t>(r)], '\n');
    f.resize(5);
    affinities[static_cast<size_t>(r)] = f[3];
    machines[static_cast<size_t>(r)] = f[4].empty() ? f[0] : f[4];
    hosts[static_cast<size_t>(r)] = f[0];
    pids[static_cast<size_t>(r)] = std::atoi(f[1].c_str());
    if (f[2] != cfg.transport)
      throw ValueError("seam: ranks disagree on SEAM_TRANSPORT: rank " + std::to_string(rank) + " has '" +
                       cfg.transport + "', rank " + std::to_string(r) + " has '" + f[2] + "'");
  }
  std::vector<int> local;
  std::map<std::string, int> per_host;
  for (int r = 0; r < size; ++r) {
    ++per_host[hosts[static_cast<size_t>(r)]];
    if (hosts[static_cast<size_t>(r)] == hosts[static_cast<size_t>(rank)]) local.push_back(r);
  }
  // The ranks on this machine, and the union of their affinities: do they outnumber its cores?
  cpu_set_t cores;
  CPU_ZERO(&cores);
  int on_machine = 0;
  for (int r = 0; r < size; ++r) {
    if (machines[static_cast<size_t>(r)] != machines[static_cast<size_t>(rank)]) continue;
    ++on_machine;
    cpu_set_t theirs = affinity_of(affinities[static_cast<size_t>(r)]);
    CPU_OR(&cores, &cores, &theirs);
  }
  const bool oversubscribed = on_machine > CPU_COUNT(&cores);
  const bool cores_to_spare = on_machine < CPU_COUNT(&cores);
  bool shared_host = false;
  for (auto& [h, n] : per_host) shared_host |= n > 1;
  const bool force_ucx = cfg.transport == "ucx";
  const bool use_shm = !force_ucx && (shared_host || size == 1);
  const bool use_ucx = force_ucx || per_host.size() > 1;

  std::unique_ptr<shm::ShmTransport> shm;
  std::unique_ptr<ucx::UcxTransport> ucx;
  // Automatic single-copy p2p: from 256 KiB where the kernel's copy is fast. Each rank decides
  // for its own sends; a receiver takes either kind.
  const size_t cma_bytes = cfg.shm_cma_bytes >= 0 ? static_cast<size_t>(cfg.shm_cma_bytes)
                           : use_shm && shm::kernel_copy_is_fast() ? size_t{256} << 10
                                                                   : 0;
  if (use_shm) shm = shm::ShmTransport::create(x, local, cfg.shm_ring_bytes, timeout, cma_bytes);
  if (use_ucx) ucx = ucx::UcxTransport::create(x, hosts, pids, timeout, !use_shm && shared_host);

  std::vector<std::string> per_peer(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) per_peer[static_cast<size_t>(r)] = shm && shm->is_local(r) ? "shm" : "ucx";
  std::unique_ptr<transport::Transport> t;
  std::string name;
  shm::ShmTransport* shm_raw = shm.get();
  ucx::UcxTransport* ucx_raw = ucx.get();
  transport::Doorbells* doorbells = shm_raw;
  if (shm && ucx) {
    name = "shm+ucx";
    auto composite = std::make_unique<CompositeTransport>(std::move(shm), std::move(ucx));
    doorbells = composite.get();
    t = std::move(composite);
  } else if (shm) {
    name = "shm";
    t = std::move(shm);
  } else {
    name = "ucx";
    t = std::move(ucx);
  }
  barrier();

  if (log().should_log(spdlog::level::debug)) {
    std::string peers;
    for (int r = 0; r < size; ++r) peers += (r ? ", " : "") + std::to_string(r) + ":" + per_peer[static_cast<size_t>(r)];
    log().debug("world: rank {} of {} on host '{}', bootstrap {}, transport {}; per peer: {}; {}",
                rank, size, hosts[static_cast<size_t>(rank)], bootstrap ? bootstrap->kind() : "a communicator", name, peers,
                oversubscribed   ? "more ranks than cores on this machine (waits yield)"
                : cores_to_spare ? "a core each, and cores to spare"
                                 : "a core each, and no core to spare");
  }
  auto engine = std::make_shared<Engine>(std::make_shared<OwningTransport>(std::move(bootstrap), std::move(t)), cfg);
  engine->transport_name = name;
  engine->broadcast_abort = [shm_raw, ucx_raw](const std::string& reason) {
    if (shm_raw) shm_raw->broadcast_abort(reason);
    if (ucx_raw) ucx_raw->broadcast_abort(reason);
  };
  engine->peer_transport = std::move(per_peer);
  engine->doorbells = doorbells;
  // Without doorbells, peers on this host are UCX's, which cannot tell where they run.
  engine->peers_may_share_cpu = !doorbells && shared_host;
  engine->oversubscribed = oversubscribed;
  engine->cores_to_spare = cores_to_spare;
  if (use_ucx) {
    std::map<std::string, int> index;  // hosts in order of their lowest rank
    for (const auto& h : hosts) engine->host_of.push_back(index.emplace(h, static_cast<int>(index.size())).first->second);
  }
  return engine;
}

/// The strings of every rank of a communicator, through two of its collectives.
class CommunicatorExchange final : public transport::AddressExchange {
 public:
  explicit CommunicatorExchange(Communicator& c) : c_(c) {}
  int rank() const override { return c_.rank(); }
  int size() const override { return c_.size(); }
  std::vector<std::string> all_gather(const std::string& mine) override {
    const size_t n = static_cast<size_t>(size());
    const double length = static_cast<double>(mine.size());
    std::vector<double> lengths(n);
    c_.all_gather(&length, lengths.data(), 1, DType::f64).wait();
    std::vector<size_t> counts(n);
    for (size_t r = 0; r < n; ++r) counts[r] = static_cast<size_t>(lengths[r]);
    std::string all(std::accumulate(counts.begin(), counts.end(), size_t{0}), '\0');
    c_.all_gatherv(mine.data(), all.data(), counts, DType::u8).wait();
    std::vector<std::string> out(n);
    for (size_t r = 0, at = 0; r < n; at += counts[r], ++r) out[r] = all.substr(at, counts[r]);
    return out;
  }

 private:
  Communicator& c_;
};

std::shared_ptr<Communicator> world_of(std::shared_ptr<Engine> engine, int rank, int size) {
  auto members = std::make_shared<std::vector<int>>(static_cast<size_t>(size));
  std::iota(members->begin(), members->end(), 0);
  return std::make_shared<Communicator>(std::make_unique<CommunicatorImpl>(std::move(engine), members, rank, 0, 1));
}

}  // namespace

std::shared_ptr<Communicator> Communicator::create_world(const BootstrapOptions& options) {
  const Config& cfg = Config::get();
  auto bs = make_bootstrap(options, cfg);
  bootstrap::Bootstrap& b = *bs;
  const int rank = b.rank(), size = b.size();
  auto engine = build_engine(b, std::move(bs), [&b] {
    b.barrier();
    b.finish();
  }, cfg);
  return world_of(std::move(engine), rank, size);
}

std::shared_ptr<Communicator> Communicator::duplicate() {
  impl_->engine->check_usable();
  CommunicatorExchange x(*this);
  auto engine = build_engine(x, nullptr, [this] { barrier().wait(); }, Config::get());
  SEAM_LOG_DEBUG("duplicate: rank {} of {} on an engine of its own", rank(), size());
  return world_of(std::move(engine), rank(), size());
}

std::shared_ptr<Communicator> Communicator::group(std::span<const int> ranks) {
  auto& im = *impl_;
  im.engine->check_usable();
  std::set<int> seen;
  for (int r : ranks) {
    if (r < 0 || r >= size())
      throw ValueError("seam: group(): rank " + std::to_string(r) + " outside the communicator of " + std::to_string(size()));
    if (!seen.insert(r).second) throw ValueError("seam: group(): rank " + std::to_string(r) + " listed twice");
  }
  auto me = std::find(ranks.begin(), ranks.end(), im.rank);
  if (me == ranks.end()) return nullptr;
  const size_t pos = static_cast<size_t>(me - ranks.begin());

  // Only the members take part, so the exchange cannot use the parent's sequence numbers: its
  // tag comes from the member list and how many groups of that list this rank created before.
  const uint64_t h = hash_ranks(ranks);
  uint32_t count = 0;
  auto it = std::find_if(im.group_creations.begin(), im.group_creations.end(), [&](auto& e) { return e.first == h; });
  if (it == im.group_creations.end())
    im.group_creations.emplace_back(h, 1);
  else
    count = it->second++;
  const uint32_t payload = static_cast<uint32_t>(((h ^ (h >> 23) ^ (h >> 46)) & 0x7fffff) << 8) | (count & 0xff);
  auto w = std::make_shared<WorkState>(
      im.engine, "group", im.ctx, im.seq, im.rank, size(),
      OpGroup(*im.engine, im.members, im.rank, tags::make(im.ctx, tags::internal, payload), nullptr,
              im.transport, im.hosts));
  std::vector<int> sub(ranks.begin(), ranks.end());
  std::vector<Record> all(sub.size());
  all[pos] = {static_cast<int64_t>(im.engine->free_context_from(1)), 0, 0, 0};
  uint32_t ctx = 0;
  int rounds = 0;
  w->task = agree_context_task(w->group, sub, pos, all, 0, *im.engine, ctx, rounds);
  im.launch(w).wait();
  check_context_found(ctx);
  im.engine->claim_context(ctx);
  auto members = std::make_shared<std::vector<int>>();
  for (int r : sub) members->push_back((*im.members)[static_cast<size_t>(r)]);
  SEAM_LOG_DEBUG("group: ranks {} -> communicator {} (rank {} of {}; id agreed in {} exchanges)", sub.size(),
                 ctx, pos, sub.size(), rounds);
  return std::make_shared<Communicator>(std::make_unique<CommunicatorImpl>(im.engine, members, static_cast<int>(pos), ctx,
                                                                          mix(mix(im.identity, h), count)));
}

std::shared_ptr<Communicator> Communicator::split(int color, int key) {
  auto& im = *impl_;
  auto w = im.new_collective("split", tags::kSplitSignature);
  std::vector<int> sub(static_cast<size_t>(size()));
  std::iota(sub.begin(), sub.end(), 0);
  std::vector<Record> all(sub.size());
  all[static_cast<size_t>(im.rank)] = {color, key, static_cast<int64_t>(im.engine->free_context_from(1)), 0};
  // One id for every color: their members are disjoint, so no two ranks meet under it twice.
  uint32_t ctx = 0;
  int rounds = 0;
  w->task = agree_context_task(w->group, sub, static_cast<size_t>(im.rank), all, 2, *im.engine, ctx, rounds);
  im.launch(w).wait();
  check_context_found(ctx);
  if (color < 0) return nullptr;
  im.engine->claim_context(ctx);
  std::vector<std::pair<int64_t, int>> order;  // (key, parent rank)
  for (int r = 0; r < size(); ++r)
    if (all[static_cast<size_t>(r)][0] == color) order.emplace_back(all[static_cast<size_t>(r)][1], r);
  std::sort(order.begin(), order.end());
  auto members = std::make_shared<std::vector<int>>();
  int my = -1;
  for (auto& [k, r] : order) {
    if (r == im.rank) my = static_cast<int>(members->size());
    members->push_back((*im.members)[static_cast<size_t>(r)]);
  }
  SEAM_LOG_DEBUG("split: color {} key {} -> communicator {} (rank {} of {}; id agreed in {} exchanges)", color,
                 key, ctx, my, members->size(), rounds);
  return std::make_shared<Communicator>(std::make_unique<CommunicatorImpl>(im.engine, members, my, ctx,
                                                                          mix(mix(im.identity, w->seq), static_cast<uint64_t>(color))));
}

// ---- operations -----------------------------------------------------------------------------

// Arguments are checked here, before the call takes a sequence number, so a rejected call
// leaves the communicator's calls in step on every rank.
using collectives::check_counts;

namespace {
/// Bytes of the blocks ahead of rank's in a v-collective (where its block lies in place); the
/// counts' sum was checked not to overflow.
std::ptrdiff_t bytes_before(std::span<const size_t> counts, int rank, DType dtype) {
  size_t before = 0;
  for (int r = 0; r < rank; ++r) before += counts[static_cast<size_t>(r)];
  return static_cast<std::ptrdiff_t>(before * dtype_size(dtype));
}
}  // namespace
using collectives::check_rank;

Work Communicator::all_reduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) {
  // Every check before the sequence number: a refused call leaves the communicator in step.
  constexpr std::string_view name = "all_reduce";
  collectives::check_reduction(name, dtype, op);
  const size_t bytes = collectives::checked_bytes(name, count, dtype);
  collectives::check_buffer(name, "the send buffer", send, bytes);
  collectives::check_buffer(name, "the receive buffer", recv, bytes);
  collectives::check_overlap(name, send, bytes, recv, bytes, 0);
  auto w = impl_->new_collective(collectives::Collective::all_reduce, dtype, op, call_args(count));
  w->task = collectives::all_reduce(w->group, send, recv, count, dtype, op);
  return impl_->launch(std::move(w));
}

Work Communicator::reduce_scatter(const void* send, void* recv, size_t recv_count, DType dtype, ReduceOp op) {
  constexpr std::string_view name = "reduce_scatter";
  collectives::check_reduction(name, dtype, op);
  const size_t recv_bytes = collectives::checked_bytes(name, recv_count, dtype);
  const size_t send_bytes = collectives::checked_bytes(name, recv_count, dtype, static_cast<size_t>(size()));
  collectives::check_buffer(name, "the send buffer", send, send_bytes);
  collectives::check_buffer(name, "the receive buffer", recv, recv_bytes);
  collectives::check_overlap(name, send, send_bytes, recv, recv_bytes,
                             -static_cast<std::ptrdiff_t>(recv_bytes) * rank());
  auto w = impl_->new_collective(collectives::Collective::reduce_scatter, dtype, op, call_args(recv_count));
  w->task = collectives::reduce_scatter(w->group, send, recv, recv_count, dtype, op);
  return impl_->launch(std::move(w));
}

Work Communicator::reduce_scatterv(const void* send, void* recv, std::span<const size_t> counts, DType dtype,
                                   ReduceOp op) {
  constexpr std::string_view name = "reduce_scatterv";
  check_counts(name, size(), counts);
  collectives::check_reduction(name, dtype, op);
  const size_t send_bytes = collectives::checked_total_bytes(name, counts, dtype);
  const size_t recv_bytes = counts[static_cast<size_t>(rank())] * dtype_size(dtype);
  collectives::check_buffer(name, "the send buffer", send, send_bytes);
  collectives::check_buffer(name, "the receive buffer", recv, recv_bytes);
  collectives::check_overlap(name, send, send_bytes, recv, recv_bytes, -bytes_before(counts, rank(), dtype));
  auto w = impl_->new_collective(collectives::Collective::reduce_scatterv, dtype, op, call_args(counts));
  w->counts.assign(counts.begin(), counts.end());
  w->task = collectives::reduce_scatterv(w->group, send, recv, w->counts, dtype, op);
  return impl_->launch(std::move(w));
}

Work Communicator::all_gather(const void* send, void* recv, size_t send_count, DType dtype) {
  constexpr std::string_view name = "all_gather";
  collectives::check_dtype(name, dtype);
  const size_t send_bytes = collectives::checked_bytes(name, send_count, dtype);
  const size_t recv_bytes = collectives::checked_bytes(name, send_count, dtype, static_cast<size_t>(size()));
  collectives::check_buffer(name, "the send buffer", send, send_bytes);
  collectives::check_buffer(name, "the receive buffer", recv, recv_bytes);
  collectives::check_overlap(name, send, send_bytes, recv, recv_bytes,
                             static_cast<std::ptrdiff_t>(send_bytes) * rank());
  auto w = impl_->new_collective(collectives::Collective::all_gather, dtype, ReduceOp::sum, call_args(send_count));
  w->task = collectives::all_gather(w->group, send, recv, send_count, dtype);
  return impl_->launch(std::move(w));
}

Work Communicator::all_gatherv(const void* send, void* recv, std::span<const size_t> counts, DType dtype) {
  constexpr std::string_view name = "all_gatherv";
  check_counts(name, size(), counts);
  collectives::check_dtype(name, dtype);
  const size_t recv_bytes = collectives::checked_total_bytes(name, counts, dtype);
  const size_t send_bytes = counts[static_cast<size_t>(rank())] * dtype_size(dtype);
  collectives::check_buffer(name, "the send buffer", send, send_bytes);
  collectives::check_buffer(name, "the receive buffer", recv, recv_bytes);
  collectives::check_overlap(name, send, send_bytes, recv, recv_bytes, bytes_before(counts, rank(), dtype));
  auto w = impl_->new_collective(collectives::Collective::all_gatherv, dtype, ReduceOp::sum, call_args(counts));
  w->counts.assign(counts.begin(), counts.end());
  w->task = collectives::all_gatherv(w->group, send, recv, w->counts, dtype);
  return impl_->launch(std::move(w));
}

Work Communicator::broadcast(void* buffer, size_t count, DType dtype, int root) {
  check_rank("broadcast", "root", size(), root);
  collectives::check_dtype("broadcast", dtype);
  collectives::check_buffer("broadcast", "the buffer", buffer, collectives::checked_bytes("broadcast", count, dtype));
  auto w = impl_->new_collective(collectives::Collective::broadcast, dtype, ReduceOp::sum, call_args(count, root));
  w->task = collectives::broadcast(w->group, buffer, count, dtype, root);
  return impl_->launch(std::move(w));
}

Work Communicator::scatterv(const void* send, void* recv, std::span<const size_t> counts, DType dtype, int root) {
  check_counts("scatterv", size(), counts);
  check_rank("scatterv", "root", size(), root);
  collectives::check_dtype("scatterv", dtype);
  const size_t total_bytes = collectives::checked_total_bytes("scatterv", counts, dtype);
  if (rank() == root) collectives::check_buffer("scatterv", "the root's send buffer", send, total_bytes);
  collectives::check_buffer("scatterv", "the receive buffer", recv, counts[static_cast<size_t>(rank())] * dtype_size(dtype));
  auto w = impl_->new_collective(collectives::Collective::scatterv, dtype, ReduceOp::sum, call_args(counts, root));
  w->counts.assign(counts.begin(), counts.end());
  w->task = collectives::scatterv(w->group, send, recv, w->counts, dtype, root);
  return impl_->launch(std::move(w));
}

Work Communicator::barrier() {
  auto w = impl_->new_collective(collectives::Collective::barrier, DType::u8, ReduceOp::sum, call_args(0));
  w->task = collectives::barrier(w->group);
  return impl_->launch(std::move(w));
}

Work Communicator::send(const void* data, size_t bytes, int peer, uint32_t tag) {
  check_rank("send", "peer", size(), peer);
  auto w = impl_->new_p2p("send", tag);
  w->request = w->group.isend(peer, 0, data, bytes);
  return impl_->launch(std::move(w));
}

Work Communicator::recv(void* data, size_t bytes, int peer, uint32_t tag) {
  check_rank("recv", "peer", size(), peer);
  auto w = impl_->new_p2p("recv", tag);
  w->request = w->group.irecv(peer, 0, data, bytes);
  return impl_->launch(std::move(w));
}

}  // namespace seam::comm
