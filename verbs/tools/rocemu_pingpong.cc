// rocemu-pingpong: ibv_rc_pingpong and ibv_ud_pingpong on the rocemu verbs
// library. Same options, same TCP exchange on port 18515, same message
// flow and the same output lines, so it can face rdma-core's tools on a
// real RNIC or on Linux Soft-RoCE, as client or as server:
//   rocemu-pingpong rc|ud [options]            server
//   rocemu-pingpong rc|ud [options] SERVER     client
// See pingpong_options.h for the options and docs/interop.md for runs
// against rxe.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "verbs/rocemu_verbs.h"
#include "verbs/rocemu_verbs.hpp"
#include "verbs/tools/mtu.h"
#include "verbs/tools/pingpong_dest.h"
#include "verbs/tools/pingpong_exchange.h"
#include "verbs/tools/pingpong_flow.h"
#include "verbs/tools/pingpong_options.h"
#include "verbs/tools/pingpong_payload.h"

namespace rocemu::pingpong {
namespace {

// The Q_Key ibv_ud_pingpong uses on both sides.
constexpr uint32_t kUdQkey = 0x11111111;

double NowUsec() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 +
         static_cast<double>(ts.tv_nsec) / 1e3;
}

// Memory that is not a rocemu_alloc_buf buffer (-o): page-aligned, as the
// rdma-core tools' memalign.
struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

class Pingpong {
 public:
  explicit Pingpong(const Options& o)
      : o_(o),
        ud_(o.transport == Transport::kUd),
        client_(!o.server.empty()),
        page_size_(static_cast<size_t>(sysconf(_SC_PAGESIZE))),
        flow_(o.iters, o.rx_depth, client_),
        verifier_(client_) {}
  // Events are acknowledged before the CQ goes (destroy_cq refuses a CQ
  // with unacknowledged events), on error paths too.
  ~Pingpong() {
    if (num_cq_events_ > 0 && cq_ != nullptr)
      rocemu_ack_cq_events(cq_.get(), num_cq_events_);
  }
  Pingpong(const Pingpong&) = delete;
  Pingpong& operator=(const Pingpong&) = delete;

  int Run();

 private:
  int OpenDevice();
  int Init();
  int PostRecvs(uint32_t n);
  int PostSend();
  absl::Status Connect(const Dest& remote);
  int HandleCompletion(const rocemu_wc& wc);
  int Loop();

  std::span<uint8_t> SendBuf() { return {base_, o_.size}; }
  // UD receives carry the GRH area first.
  size_t RecvLen() const { return o_.size + (ud_ ? kGrhSize : 0); }
  std::span<uint8_t> RecvBuf() { return {base_ + recv_offset_, RecvLen()}; }
  std::span<uint8_t> RecvPayload() {
    return RecvBuf().subspan(ud_ ? kGrhSize : 0, o_.size);
  }

  const Options& o_;
  const bool ud_;
  const bool client_;
  const size_t page_size_;
  PingpongFlow flow_;
  EchoVerifier verifier_;

  // Released in reverse order of declaration.
  verbs::Context ctx_;
  verbs::CompChannel channel_;
  verbs::Pd pd_;
  verbs::Buf shm_;
  std::unique_ptr<void, FreeDeleter> heap_;
  verbs::Mr mr_;
  verbs::Cq cq_;
  verbs::Qp qp_;
  std::unique_ptr<rocemu_ah, verbs::Deleter<rocemu_ah, rocemu_destroy_ah>> ah_;

  uint8_t* base_ = nullptr;  // [send buffer | receive buffer]
  size_t recv_offset_ = 0;
  unsigned int send_flags_ = ROCEMU_SEND_SIGNALED;
  int gid_index_used_ = 0;
  Dest mine_;
  Dest remote_;
  bool received_any_ = false;
  unsigned int num_cq_events_ = 0;
  uint32_t verify_errors_ = 0;
};

// -d names a daemon's verbs socket (a path) or its device name; without
// it the first device found is used, as the rdma-core tools do.
int Pingpong::OpenDevice() {
  if (o_.device.find('/') != std::string::npos) {
    auto ctx = verbs::OpenDevice(o_.device.c_str());
    if (!ctx.ok()) {
      fprintf(stderr, "Couldn't get context for %s: %s\n", o_.device.c_str(),
              ctx.status().ToString().c_str());
      return 1;
    }
    ctx_ = std::move(*ctx);
    return 0;
  }
  int num = 0;
  rocemu_device** list = rocemu_get_device_list(&num);
  if (list == nullptr) {
    perror("Failed to get IB devices list");
    return 1;
  }
  const rocemu_device* dev = nullptr;
  for (int i = 0; i < num && dev == nullptr; ++i)
    if (o_.device.empty() || o_.device == rocemu_get_device_name(list[i]))
      dev = list[i];
  int rc = 0;
  if (dev == nullptr) {
    if (o_.device.empty())
      fprintf(stderr, "No IB devices found\n");
    else
      fprintf(stderr, "IB device %s not found\n", o_.device.c_str());
    rc = 1;
  } else {
    ctx_.reset(rocemu_open_device_from(dev));
    if (ctx_ == nullptr) {
      fprintf(stderr, "Couldn't get context for %s: %s\n",
              rocemu_get_device_name(dev), strerror(errno));
      rc = 1;
    }
  }
  rocemu_free_device_list(list);
  return rc;
}

int Pingpong::Init() {
  if (o_.timestamps) {
    fprintf(stderr, "The device isn't completion timestamp capable\n");
    return 1;
  }
  if (o_.device_memory) {
    fprintf(stderr, "Device doesn't support dm allocation\n");
    return 1;
  }
  if (o_.implicit_odp) {
    fprintf(stderr, "The device doesn't support implicit ODP\n");
    return 1;
  }
  if (o_.new_send) {
    fprintf(stderr,
            "The new post send API (ibv_wr_*) is not available in rocemu's "
            "library\n");
    return 1;
  }
  if (int rc = OpenDevice(); rc != 0) return rc;

  rocemu_port_attr port{};
  if (int err = rocemu_query_port(ctx_.get(), o_.ib_port, &port); err != 0) {
    fprintf(stderr, "Unable to query port info for port %d: %s\n", o_.ib_port,
            strerror(err));
    return 1;
  }
  if (ud_) {
    const uint32_t mtu = 1u << (port.active_mtu + 7);
    if (o_.size > mtu) {
      fprintf(stderr, "Requested size larger than port MTU (%u)\n", mtu);
      return 1;
    }
  }
  if (o_.events) {
    auto ch = verbs::CreateCompChannel(ctx_.get());
    if (!ch.ok()) {
      fprintf(stderr, "Couldn't create completion channel\n");
      return 1;
    }
    channel_ = std::move(*ch);
  }
  auto pd = verbs::AllocPd(ctx_.get());
  if (!pd.ok()) {
    fprintf(stderr, "Couldn't allocate PD\n");
    return 1;
  }
  pd_ = std::move(*pd);

  // One region: the send buffer, then the receive buffer on its own page.
  recv_offset_ = (o_.size + page_size_ - 1) / page_size_ * page_size_;
  if (recv_offset_ == 0) recv_offset_ = page_size_;
  const size_t total =
      recv_offset_ + (RecvLen() + page_size_ - 1) / page_size_ * page_size_;
  if (o_.odp) {
    heap_.reset(std::aligned_alloc(page_size_, total));
    if (heap_ == nullptr) {
      fprintf(stderr, "Couldn't allocate work buf.\n");
      return 1;
    }
    base_ = static_cast<uint8_t*>(heap_.get());
  } else {
    auto buf = verbs::AllocBuf(ctx_.get(), total);
    if (!buf.ok()) {
      fprintf(stderr, "Couldn't allocate work buf: %s\n",
              buf.status().ToString().c_str());
      return 1;
    }
    shm_ = std::move(*buf);
    base_ = static_cast<uint8_t*>(shm_->addr);
  }
  memset(base_, kFillByte, total);
  auto mr = verbs::RegMr(pd_.get(), base_, total, ROCEMU_ACCESS_LOCAL_WRITE);
  if (!mr.ok()) {
    fprintf(stderr, "Couldn't register MR: %s\n",
            mr.status().ToString().c_str());
    return 1;
  }
  mr_ = std::move(*mr);
  if (o_.prefetch)
    fprintf(stderr, "Couldn't prefetch MR(%d). Continue anyway\n", EOPNOTSUPP);

  auto cq = verbs::CreateCq(ctx_.get(), static_cast<int>(o_.rx_depth + 1),
                            nullptr, channel_.get());
  if (!cq.ok()) {
    fprintf(stderr, "Couldn't create CQ\n");
    return 1;
  }
  cq_ = std::move(*cq);

  rocemu_qp_init_attr init{};
  init.send_cq = cq_.get();
  init.recv_cq = cq_.get();
  init.cap.max_send_wr = 1;
  init.cap.max_recv_wr = o_.rx_depth;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.qp_type = ud_ ? ROCEMU_QPT_UD : ROCEMU_QPT_RC;
  auto qp = verbs::CreateQp(pd_.get(), init);
  if (!qp.ok()) {
    fprintf(stderr, "Couldn't create QP: %s\n", qp.status().ToString().c_str());
    return 1;
  }
  qp_ = std::move(*qp);
  rocemu_qp_attr attr{};
  if (rocemu_query_qp(qp_.get(), &attr, ROCEMU_QP_CAP) == 0 &&
      attr.cap.max_inline_data >= o_.size)
    send_flags_ |= ROCEMU_SEND_INLINE;

  attr = {};
  attr.qp_state = ROCEMU_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = o_.ib_port;
  int mask = ROCEMU_QP_STATE | ROCEMU_QP_PKEY_INDEX | ROCEMU_QP_PORT;
  if (ud_) {
    attr.qkey = kUdQkey;
    mask |= ROCEMU_QP_QKEY;
  } else {
    attr.qp_access_flags = 0;
    mask |= ROCEMU_QP_ACCESS_FLAGS;
  }
  if (int err = rocemu_modify_qp(qp_.get(), &attr, mask); err != 0) {
    fprintf(stderr, "Failed to modify QP to INIT: %s\n", strerror(err));
    return 1;
  }
  return 0;
}

int Pingpong::PostRecvs(uint32_t n) {
  rocemu_sge sge{reinterpret_cast<uintptr_t>(RecvBuf().data()),
                 static_cast<uint32_t>(RecvLen()), mr_->lkey};
  rocemu_recv_wr wr{};
  wr.wr_id = kRecvWrId;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  rocemu_recv_wr* bad = nullptr;
  uint32_t i = 0;
  for (; i < n; ++i)
    if (rocemu_post_recv(qp_.get(), &wr, &bad) != 0) break;
  return static_cast<int>(i);
}

int Pingpong::PostSend() {
  // Echo: send what arrived last (the client's first message is its own).
  // Copied only now, when the previous SEND has completed, so a
  // retransmission of it never reads a half-updated buffer.
  if (received_any_) memcpy(SendBuf().data(), RecvPayload().data(), o_.size);
  rocemu_sge sge{reinterpret_cast<uintptr_t>(SendBuf().data()), o_.size,
                 mr_->lkey};
  rocemu_send_wr wr{};
  wr.wr_id = kSendWrId;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = ROCEMU_WR_SEND;
  wr.send_flags = send_flags_;
  if (ud_) {
    wr.wr.ud.ah = ah_.get();
    wr.wr.ud.remote_qpn = remote_.qpn;
    wr.wr.ud.remote_qkey = kUdQkey;
  }
  rocemu_send_wr* bad = nullptr;
  return rocemu_post_send(qp_.get(), &wr, &bad);
}

absl::Status Pingpong::Connect(const Dest& remote) {
  remote_ = remote;
  // RoCE has no LIDs: the GID is the address. The rdma-core tools only set
  // a GRH when the peer's GID has an interface id; without one (a peer run
  // without -g) there is nothing to reach it by.
  if (!GidHasInterfaceId(remote.gid))
    return absl::FailedPreconditionError(
        "the peer sent no GID (run it with -g <gid index>): RoCE needs one");
  rocemu_ah_attr av{};
  std::memcpy(av.dgid, remote.gid.data(), sizeof(av.dgid));
  // dmac left all-zero: the daemon resolves it from the GID.
  av.sgid_index = static_cast<uint8_t>(gid_index_used_);
  av.hop_limit = 1;
  av.sl = o_.sl;
  av.port_num = o_.ib_port;
  rocemu_qp_attr attr{};
  if (ud_) {
    attr.qp_state = ROCEMU_QPS_RTR;
    if (int err = rocemu_modify_qp(qp_.get(), &attr, ROCEMU_QP_STATE))
      return absl::ErrnoToStatus(err, "Failed to modify QP to RTR");
    attr.qp_state = ROCEMU_QPS_RTS;
    attr.sq_psn = mine_.psn;
    if (int err = rocemu_modify_qp(qp_.get(), &attr,
                                   ROCEMU_QP_STATE | ROCEMU_QP_SQ_PSN))
      return absl::ErrnoToStatus(err, "Failed to modify QP to RTS");
    ah_.reset(rocemu_create_ah(pd_.get(), &av));
    if (ah_ == nullptr)
      return absl::ErrnoToStatus(errno, "Failed to create AH");
    return absl::OkStatus();
  }
  attr.qp_state = ROCEMU_QPS_RTR;
  attr.path_mtu = tools::MtuEnum(o_.mtu, ROCEMU_MTU_1024);
  attr.dest_qp_num = remote.qpn;
  attr.rq_psn = remote.psn;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;
  attr.ah_attr = av;
  if (int err = rocemu_modify_qp(
          qp_.get(), &attr,
          ROCEMU_QP_STATE | ROCEMU_QP_AV | ROCEMU_QP_PATH_MTU |
              ROCEMU_QP_DEST_QPN | ROCEMU_QP_RQ_PSN |
              ROCEMU_QP_MAX_DEST_RD_ATOMIC | ROCEMU_QP_MIN_RNR_TIMER))
    return absl::ErrnoToStatus(err, "Failed to modify QP to RTR");
  attr.qp_state = ROCEMU_QPS_RTS;
  attr.timeout = 14;
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.sq_psn = mine_.psn;
  attr.max_rd_atomic = 1;
  if (int err =
          rocemu_modify_qp(qp_.get(), &attr,
                           ROCEMU_QP_STATE | ROCEMU_QP_TIMEOUT |
                               ROCEMU_QP_RETRY_CNT | ROCEMU_QP_RNR_RETRY |
                               ROCEMU_QP_SQ_PSN | ROCEMU_QP_MAX_QP_RD_ATOMIC))
    return absl::ErrnoToStatus(err, "Failed to modify QP to RTS");
  return absl::OkStatus();
}

int Pingpong::HandleCompletion(const rocemu_wc& wc) {
  const bool ok = wc.status == ROCEMU_WC_SUCCESS;
  if (ok && wc.wr_id == kRecvWrId) {
    if (o_.verify) {
      const std::span<uint8_t> payload = RecvPayload();
      const uint32_t index = verifier_.messages() + 1;
      if (wc.byte_len != RecvLen()) {
        fprintf(stderr, "verify: message %u: byte_len %u, want %zu\n", index,
                wc.byte_len, RecvLen());
        ++verify_errors_;
      }
      if (ud_ && !GrhFromPeer(RecvBuf().first(kGrhSize), remote_.gid)) {
        fprintf(stderr,
                "verify: message %u: the GRH area does not name the peer "
                "%s as source\n",
                index, GidToText(remote_.gid).c_str());
        ++verify_errors_;
      }
      if (auto bad = verifier_.Check(payload, SendBuf())) {
        fprintf(stderr,
                "verify: message %u: first bad byte at offset %zu (got "
                "0x%02x, want 0x%02x)\n",
                index, *bad, *bad < payload.size() ? payload[*bad] : 0,
                *bad < o_.size ? SendBuf()[*bad] : 0);
        ++verify_errors_;
      }
    }
    received_any_ = true;
  }
  const PingpongFlow::Step step = flow_.OnCompletion(wc.wr_id, ok);
  switch (step.error) {
    case FlowError::kNone:
      break;
    case FlowError::kBadStatus:
      fprintf(stderr, "Failed status %s (%d) for wr_id %d\n",
              rocemu_wc_status_str(wc.status), wc.status,
              static_cast<int>(wc.wr_id));
      return 1;
    case FlowError::kUnknownWrId:
      fprintf(stderr, "Completion for unknown wr_id %d\n",
              static_cast<int>(wc.wr_id));
      return 1;
  }
  if (step.recvs_to_post > 0 && !flow_.RecvsPosted(static_cast<uint32_t>(
                                    PostRecvs(step.recvs_to_post)))) {
    fprintf(stderr, "Couldn't post receive (%u)\n", flow_.posted_recvs());
    return 1;
  }
  if (step.post_send && PostSend() != 0) {
    fprintf(stderr, "Couldn't post send\n");
    return 1;
  }
  return 0;
}

int Pingpong::Loop() {
  rocemu_wc wc[2];
  while (!flow_.Done()) {
    int ne = 0;
    if (o_.events) {
      rocemu_cq* ev_cq = nullptr;
      void* ev_ctx = nullptr;
      if (int err = rocemu_get_cq_event(channel_.get(), &ev_cq, &ev_ctx,
                                        o_.timeout_ms)) {
        fprintf(stderr, "Failed to get cq_event: %s\n", strerror(err));
        return 1;
      }
      ++num_cq_events_;
      if (ev_cq != cq_.get()) {
        fprintf(stderr, "CQ event for unknown CQ %p\n",
                static_cast<void*>(ev_cq));
        return 1;
      }
      if (rocemu_req_notify_cq(cq_.get(), 0) != 0) {
        fprintf(stderr, "Couldn't request CQ notification\n");
        return 1;
      }
      ne = rocemu_poll_cq(cq_.get(), 2, wc);
    } else {
      // Busy polling, as the rdma-core tools; the clock is read only every
      // few thousand empty polls (a vDSO call, no syscall).
      const double deadline =
          o_.timeout_ms < 0 ? 0 : NowUsec() + o_.timeout_ms * 1e3;
      for (uint32_t spins = 1;; ++spins) {
        ne = rocemu_poll_cq(cq_.get(), 2, wc);
        if (ne != 0) break;
        if (deadline > 0 && spins % 4096 == 0 && NowUsec() > deadline) {
          fprintf(stderr,
                  "No completion within %d s (sent %u, received %u of %u)\n",
                  o_.timeout_ms / 1000, flow_.sent(), flow_.received(),
                  o_.iters);
          return 1;
        }
      }
    }
    if (ne < 0) {
      fprintf(stderr, "poll CQ failed %d\n", ne);
      return 1;
    }
    for (int i = 0; i < ne; ++i) {
      if (HandleCompletion(wc[i]) != 0) {
        fprintf(stderr, "parse WC failed %d\n", ne);
        return 1;
      }
    }
  }
  return 0;
}

int Pingpong::Run() {
  if (int rc = Init(); rc != 0) return rc;
  const int posted = PostRecvs(o_.rx_depth);
  if (!flow_.InitialRecvsPosted(static_cast<uint32_t>(posted))) {
    fprintf(stderr, "Couldn't post receive (%d)\n", posted);
    return 1;
  }
  if (o_.events && rocemu_req_notify_cq(cq_.get(), 0) != 0) {
    fprintf(stderr, "Couldn't request CQ notification\n");
    return 1;
  }
  mine_.lid = 0;  // Ethernet link layer: no LID
  if (o_.gid_index >= 0) {
    if (rocemu_query_gid(ctx_.get(), o_.ib_port, o_.gid_index,
                         mine_.gid.data()) != 0) {
      fprintf(stderr, "can't read sgid of index %d\n", o_.gid_index);
      return 1;
    }
    gid_index_used_ = o_.gid_index;
  }
  mine_.qpn = rocemu_qp_num(qp_.get());
  mine_.psn = static_cast<uint32_t>(lrand48()) & 0xFFFFFF;
  printf("  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x%s GID %s\n",
         mine_.lid, mine_.qpn, mine_.psn, ud_ ? ":" : ",",
         GidToText(mine_.gid).c_str());
  fflush(stdout);

  absl::StatusOr<Dest> remote;
  if (client_) {
    remote = ClientExchange(o_.server, o_.tcp_port, mine_, o_.timeout_ms);
  } else {
    auto listener = ExchangeListener::Listen(o_.tcp_port);
    if (!listener.ok()) {
      fprintf(stderr, "%s\n", listener.status().ToString().c_str());
      return 1;
    }
    remote = listener->Serve(
        mine_, [&](const Dest& d) { return Connect(d); }, o_.timeout_ms);
  }
  if (!remote.ok()) {
    fprintf(stderr, "%s\n", remote.status().ToString().c_str());
    return 1;
  }
  printf("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n",
         remote->lid, remote->qpn, remote->psn, GidToText(remote->gid).c_str());
  fflush(stdout);
  if (client_) {
    if (absl::Status st = Connect(*remote); !st.ok()) {
      fprintf(stderr, "%s\n", st.ToString().c_str());
      return 1;
    }
    if (o_.verify) FillPattern(SendBuf(), PatternSeed(mine_.qpn, mine_.psn));
    if (o_.chk) MarkPages(SendBuf(), page_size_);
  }

  const double start = NowUsec();
  if (flow_.Start() && PostSend() != 0) {
    fprintf(stderr, "Couldn't post send\n");
    return 1;
  }
  if (int rc = Loop(); rc != 0) return rc;
  const double usec = NowUsec() - start;
  const long long bytes = static_cast<long long>(o_.size) * o_.iters * 2;
  printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, usec / 1e6,
         bytes * 8. / usec);
  printf("%u iters in %.2f seconds = %.2f usec/iter\n", o_.iters, usec / 1e6,
         usec / o_.iters);
  int rc = 0;
  if (client_ && o_.chk)
    for (size_t page : BadPages(RecvPayload(), page_size_))
      printf("invalid data in page %zu\n", page);
  if (o_.verify) {
    if (verify_errors_ == 0) {
      printf("verify: %u messages received, all byte-exact\n",
             verifier_.messages());
    } else {
      printf("verify: %u errors in %u messages\n", verify_errors_,
             verifier_.messages());
      rc = 1;
    }
  }
  fflush(stdout);
  return rc;
}

}  // namespace
}  // namespace rocemu::pingpong

int main(int argc, char** argv) {
  using rocemu::pingpong::Options;
  srand48(static_cast<long>(getpid()) * time(nullptr));
  absl::StatusOr<Options> o = rocemu::pingpong::ParseOptions(argc, argv);
  if (!o.ok()) {
    fprintf(stderr, "%s: %s\n%s", argv[0],
            std::string(o.status().message()).c_str(),
            rocemu::pingpong::Usage(argv[0]).c_str());
    return 1;
  }
  rocemu::pingpong::Pingpong pp(*o);
  return pp.Run();
}
