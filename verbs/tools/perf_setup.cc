// rocemu-perf's set-up: the device, buffers (memfd or malloc), memory
// region, CQs and QPs for the chosen test, and the connection of each QP
// to its peer over the exchange channel.
#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "verbs/tools/mtu.h"
#include "verbs/tools/perf_clock.h"
#include "verbs/tools/perf_runner.h"

namespace rocemu::verbs::perf {
namespace {

// Bound on one region (tx or rx) of the buffer: --verify gives every
// message in flight or in a round its own slot, up to this.
constexpr uint64_t kRegionCap = uint64_t{256} << 20;
constexpr uint32_t kRxDepthMax = 512;
constexpr int kMaxRdAtomic = 16;

uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// -d: a socket path (has a '/'), a device name as the daemon reports it
// (rocemu_<port>, as perftest's -d takes an ibv device name), or nothing
// for the library's default socket.
absl::StatusOr<Context> OpenByName(const std::string& dev) {
  if (dev.empty() || dev.find('/') != std::string::npos) {
    return OpenDevice(dev.empty() ? nullptr : dev.c_str());
  }
  int num = 0;
  rocemu_device** list = rocemu_get_device_list(&num);
  if (list == nullptr) return absl::ErrnoToStatus(errno, "device list");
  const rocemu_device* found = nullptr;
  for (int i = 0; i < num && found == nullptr; ++i) {
    if (dev == rocemu_get_device_name(list[i])) found = list[i];
  }
  absl::StatusOr<Context> ctx =
      found == nullptr
          ? absl::NotFoundError(absl::StrCat("device ", dev, " not found"))
          : internal::Wrap<Context>(rocemu_open_device_from(found),
                                    "rocemu_open_device");
  rocemu_free_device_list(list);
  return ctx;
}
}  // namespace

ParamsMsg ParamsToMsg(const PerfOptions& o) {
  ParamsMsg m;
  m.verb = static_cast<uint8_t>(o.verb);
  m.mode = static_cast<uint8_t>(o.mode);
  m.atomic_op = static_cast<uint8_t>(o.atomic_op);
  m.verify = o.verify ? 1 : 0;
  m.memory = static_cast<uint8_t>(o.memory);
  m.num_qps = o.num_qps;
  m.tx_depth = o.tx_depth;
  m.mtu = o.mtu;
  m.num_sizes = static_cast<uint32_t>(std::min(o.sizes.size(), kMaxSizes));
  m.iters = o.iters;
  m.seed = o.seed;
  for (uint32_t i = 0; i < m.num_sizes; ++i) m.sizes[i] = o.sizes[i];
  return m;
}

absl::StatusOr<PerfOptions> ParamsFromMsg(const ParamsMsg& m,
                                          const PerfOptions& local) {
  if (m.magic != kExchangeMagic || m.version != kExchangeVersion) {
    return absl::FailedPreconditionError(
        "the client is not rocemu-perf of this version");
  }
  if (m.verb != static_cast<uint8_t>(local.verb) ||
      m.mode != static_cast<uint8_t>(local.mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the client runs ",
        TestName(static_cast<Verb>(m.verb & 3), static_cast<Mode>(m.mode & 1)),
        ", this server ", TestName(local.verb, local.mode)));
  }
  if (m.num_sizes == 0 || m.num_sizes > kMaxSizes || m.num_qps == 0 ||
      m.num_qps > 1024 || m.tx_depth == 0 || m.tx_depth > 8192 ||
      m.iters == 0 || m.atomic_op > 1) {
    return absl::InvalidArgumentError("client parameters out of range");
  }
  PerfOptions o = local;
  o.atomic_op = static_cast<AtomicOp>(m.atomic_op);
  o.verify = m.verify != 0;
  o.num_qps = m.num_qps;
  o.tx_depth = m.tx_depth;
  if (m.mtu != 0) o.mtu = m.mtu;
  o.iters = m.iters;
  o.seed = m.seed;
  o.sizes.assign(m.sizes, m.sizes + m.num_sizes);
  for (uint64_t s : o.sizes) {
    if (s == 0 || s > (uint64_t{1} << 30)) {
      return absl::InvalidArgumentError("client size out of range");
    }
  }
  return o;
}

PerfRunner::PerfRunner(const PerfOptions& options, Channel* channel)
    : options_(options), channel_(channel) {}

PerfRunner::~PerfRunner() {
  // Everything registered in the malloc'd memory goes before the memory.
  qps_.clear();
  recv_cq_.reset();
  send_cq_.reset();
  mr_.reset();
  std::free(malloc_mem_);
}

absl::StatusOr<std::unique_ptr<PerfRunner>> PerfRunner::Create(
    const PerfOptions& options, Channel* channel) {
  std::unique_ptr<PerfRunner> r(new PerfRunner(options, channel));
  absl::Status s = r->Setup();
  if (!s.ok()) return s;
  return r;
}

uint64_t PerfRunner::messages_on_qp(uint32_t q) const {
  const uint64_t n = options_.iters, k = options_.num_qps;
  return q < n % k ? n / k + 1 : n / k;
}

absl::Status PerfRunner::Setup() {
  const PerfOptions& o = options_;
  const bool verify = o.verify;
  const bool bw = o.mode == Mode::kBw;
  const uint64_t max_size = *std::max_element(o.sizes.begin(), o.sizes.end());
  Layout& l = layout_;
  l.stride = o.verb == Verb::kAtomic ? 64 : RoundUp(max_size, 64);
  const uint64_t cap_slots = std::max<uint64_t>(1, kRegionCap / l.stride);
  if (verify) {
    l.tx_slots =
        bw ? std::min<uint64_t>(o.iters, uint64_t{o.num_qps} * o.tx_depth)
           : std::min<uint64_t>(o.iters, 2);
    l.tx_slots = std::clamp<uint64_t>(l.tx_slots, 1, cap_slots);
  } else {
    l.tx_slots = bw ? o.num_qps : 1;
  }
  switch (o.verb) {
    case Verb::kWrite:
    case Verb::kRead:
      if (!bw) {
        l.rx_slots = o.verb == Verb::kWrite || !verify
                         ? 1
                         : std::min<uint64_t>(o.iters, 16);
      } else {
        l.rx_slots = verify ? std::min(o.iters, cap_slots) : o.num_qps;
      }
      l.rx_len = l.rx_slots * l.stride;
      break;
    case Verb::kSend: {
      uint64_t depth =
          std::min<uint64_t>(kRxDepthMax, std::max(o.tx_depth, 64u));
      depth = std::min<uint64_t>(depth,
                                 std::max<uint64_t>(1, cap_slots / o.num_qps));
      l.rx_depth = static_cast<uint32_t>(depth);
      l.rx_slots = uint64_t{o.num_qps} * depth;
      l.rx_len = l.rx_slots * l.stride;
      break;
    }
    case Verb::kAtomic:
      l.rx_slots = 1;
      l.rx_len = RoundUp(uint64_t{o.num_qps} * 8, 64);
      break;
  }

  absl::StatusOr<Context> ctx = OpenByName(o.dev);
  if (!ctx.ok()) return ctx.status();
  ctx_ = *std::move(ctx);
  rocemu_port_attr port{};
  if (absl::Status s =
          Check(rocemu_query_port(ctx_.get(), 1, &port), "rocemu_query_port");
      !s.ok()) {
    return s;
  }
  std::memcpy(gid_, port.gid, sizeof(gid_));
  port_mtu_ = tools::MtuBytes(port.active_mtu);
  absl::StatusOr<Pd> pd = AllocPd(ctx_.get());
  if (!pd.ok()) return pd.status();
  pd_ = *std::move(pd);

  const uint64_t total = l.total();
  if (o.memory == Memory::kShm) {
    absl::StatusOr<Buf> b = AllocBuf(ctx_.get(), total);
    if (!b.ok()) return b.status();
    buf_ = *std::move(b);
    base_ = static_cast<uint8_t*>(buf_->addr);
  } else {
    const size_t len = RoundUp(total, 4096);
    malloc_mem_ = std::aligned_alloc(4096, len);
    if (malloc_mem_ == nullptr) {
      return absl::ResourceExhaustedError("aligned_alloc of the buffer");
    }
    std::memset(malloc_mem_, 0, len);
    base_ = static_cast<uint8_t*>(malloc_mem_);
  }
  absl::StatusOr<Mr> mr =
      RegMr(pd_.get(), base_, total,
            ROCEMU_ACCESS_LOCAL_WRITE | ROCEMU_ACCESS_REMOTE_WRITE |
                ROCEMU_ACCESS_REMOTE_READ | ROCEMU_ACCESS_REMOTE_ATOMIC);
  if (!mr.ok()) {
    return absl::Status(mr.status().code(),
                        absl::StrCat(mr.status().message(),
                                     o.memory == Memory::kMalloc
                                         ? " (--memory=malloc: the daemon "
                                           "must accept arbitrary memory)"
                                         : ""));
  }
  mr_ = *std::move(mr);

  const int send_cqe = static_cast<int>(o.num_qps * o.tx_depth);
  const int recv_cqe =
      static_cast<int>(o.num_qps * std::max<uint32_t>(l.rx_depth, 1));
  absl::StatusOr<Cq> scq = CreateCq(ctx_.get(), send_cqe);
  if (!scq.ok()) return scq.status();
  send_cq_ = *std::move(scq);
  absl::StatusOr<Cq> rcq = CreateCq(ctx_.get(), recv_cqe);
  if (!rcq.ok()) return rcq.status();
  recv_cq_ = *std::move(rcq);

  for (uint32_t q = 0; q < o.num_qps; ++q) {
    rocemu_qp_init_attr init{};
    init.send_cq = send_cq_.get();
    init.recv_cq = recv_cq_.get();
    init.cap = {o.tx_depth, std::max<uint32_t>(l.rx_depth, 1), 1, 1, 0};
    init.qp_type = ROCEMU_QPT_RC;
    absl::StatusOr<Qp> qp = CreateQp(pd_.get(), init);
    if (!qp.ok()) return qp.status();
    rocemu_qp_attr a{};
    a.qp_state = ROCEMU_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = ROCEMU_ACCESS_REMOTE_WRITE | ROCEMU_ACCESS_REMOTE_READ |
                        ROCEMU_ACCESS_REMOTE_ATOMIC;
    if (absl::Status s =
            Check(rocemu_modify_qp(qp->get(), &a,
                                   ROCEMU_QP_STATE | ROCEMU_QP_PKEY_INDEX |
                                       ROCEMU_QP_PORT | ROCEMU_QP_ACCESS_FLAGS),
                  "modify_qp to INIT");
        !s.ok()) {
      return s;
    }
    qps_.push_back(*std::move(qp));
  }

  inflight_.assign(o.num_qps, 0);
  busy_.assign(l.tx_slots, 0);
  recv_count_.assign(o.num_qps, 0);
  times_.assign(o.iters, 0);
  return absl::OkStatus();
}

absl::Status PerfRunner::ModifyToRts(size_t q, const QpInfoMsg& peer,
                                     uint32_t mtu, uint32_t sq_psn) {
  rocemu_qp_attr a{};
  a.qp_state = ROCEMU_QPS_RTR;
  a.path_mtu = tools::MtuEnum(mtu, ROCEMU_MTU_4096);
  a.dest_qp_num = peer.qpn;
  a.rq_psn = peer.psn;
  a.max_dest_rd_atomic = kMaxRdAtomic;
  a.min_rnr_timer = 1;
  std::memcpy(a.ah_attr.dgid, peer.gid, 16);
  // dmac stays all zero: the daemon resolves the peer's MAC from its GID.
  a.ah_attr.port_num = 1;
  a.ah_attr.hop_limit = 64;
  const int rtr_mask = ROCEMU_QP_STATE | ROCEMU_QP_AV | ROCEMU_QP_PATH_MTU |
                       ROCEMU_QP_DEST_QPN | ROCEMU_QP_RQ_PSN |
                       ROCEMU_QP_MAX_DEST_RD_ATOMIC | ROCEMU_QP_MIN_RNR_TIMER;
  const int64_t deadline = MonotonicNs() + int64_t{timeout_ms()} * 1000000;
  int err;
  // EAGAIN: the daemon has not resolved the neighbour yet.
  while ((err = rocemu_modify_qp(qps_[q].get(), &a, rtr_mask)) == EAGAIN &&
         MonotonicNs() < deadline) {
    usleep(10 * 1000);
  }
  if (err != 0) return absl::ErrnoToStatus(err, "modify_qp to RTR");
  a.qp_state = ROCEMU_QPS_RTS;
  a.sq_psn = sq_psn;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = kMaxRdAtomic;
  return Check(
      rocemu_modify_qp(qps_[q].get(), &a,
                       ROCEMU_QP_STATE | ROCEMU_QP_SQ_PSN | ROCEMU_QP_TIMEOUT |
                           ROCEMU_QP_RETRY_CNT | ROCEMU_QP_RNR_RETRY |
                           ROCEMU_QP_MAX_QP_RD_ATOMIC),
      "modify_qp to RTS");
}

absl::Status PerfRunner::Connect() {
  absl::BitGen gen;
  std::vector<QpInfoMsg> mine(qps_.size());
  for (size_t q = 0; q < qps_.size(); ++q) {
    QpInfoMsg& m = mine[q];
    m.qpn = rocemu_qp_num(qps_[q].get());
    m.psn = absl::Uniform<uint32_t>(gen, 0, 1u << 24);
    std::memcpy(m.gid, gid_, 16);
    m.rkey = mr_->rkey;
    m.active_mtu = port_mtu_;
    m.rx_addr = reinterpret_cast<uint64_t>(rx_base());
    m.rx_len = layout_.rx_len;
  }
  peer_.assign(qps_.size(), QpInfoMsg{});
  const bool client = !options_.is_server();
  for (int step = 0; step < 2; ++step) {
    if ((step == 0) == client) {
      for (const QpInfoMsg& m : mine) {
        if (absl::Status s = channel_->Send(m); !s.ok()) return s;
      }
    } else {
      for (QpInfoMsg& m : peer_) {
        if (absl::Status s = channel_->Recv(&m, timeout_ms()); !s.ok()) {
          return s;
        }
      }
    }
  }
  for (size_t q = 0; q < qps_.size(); ++q) {
    if (peer_[q].rx_len != layout_.rx_len) {
      return absl::FailedPreconditionError("the peer's buffer layout differs");
    }
    const uint32_t mtu = options_.mtu != 0
                             ? options_.mtu
                             : std::min(port_mtu_, peer_[q].active_mtu);
    options_.mtu = mtu;
    if (absl::Status s = ModifyToRts(q, peer_[q], mtu, mine[q].psn); !s.ok()) {
      return s;
    }
  }
  return PostInitialRecvs();
}

}  // namespace rocemu::verbs::perf
