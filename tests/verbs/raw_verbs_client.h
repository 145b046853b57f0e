// A verbs client that speaks the session protocol itself and maps the
// rings the server hands it without the library: what a broken or hostile
// application can do (any index, any slot, any request, any handle). Used
// by the ring fuzzer and the hostile-client test, in the server's own
// process: the server runs on the caller's thread, so every wait for a
// reply calls `pump` (one pass of the daemon's loop) in between.
//
// DPDK-free and gtest-free (the sanitizer tree builds it into a fuzzer).
#ifndef ROCEMU_TESTS_VERBS_RAW_VERBS_CLIENT_H_
#define ROCEMU_TESTS_VERBS_RAW_VERBS_CLIENT_H_

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "nic/qp_attr.h"
#include "nic/rnic.h"
#include "verbs/wire/doorbell.h"
#include "verbs/wire/ring_slots.h"
#include "verbs/wire/shm_ring.h"
#include "verbs/wire/wire_protocol.h"

namespace rocemu::verbs::testing {

// One mapping of a ring the server created. Nothing is checked once it is
// mapped: the owner writes indices and slots at will.
class RawRing {
 public:
  RawRing() = default;
  ~RawRing() { Unmap(); }
  RawRing(RawRing&& o) noexcept { *this = std::move(o); }
  RawRing& operator=(RawRing&& o) noexcept {
    if (this != &o) {
      Unmap();
      hdr_ = std::exchange(o.hdr_, nullptr);
      slots_ = std::exchange(o.slots_, nullptr);
      map_len_ = std::exchange(o.map_len_, 0);
      capacity_ = o.capacity_;
      slot_size_ = o.slot_size_;
      index = o.index;
    }
    return *this;
  }
  RawRing(const RawRing&) = delete;
  RawRing& operator=(const RawRing&) = delete;

  // Maps the ring in `fd` (closed in every case); false when it is not a
  // ring of `slot_size` slots.
  bool Map(int fd, uint32_t slot_size) {
    Unmap();
    struct stat st;
    const bool sized = fstat(fd, &st) == 0 &&
                       static_cast<size_t>(st.st_size) >= sizeof(RingHeader);
    void* p = sized ? mmap(nullptr, static_cast<size_t>(st.st_size),
                           PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                    : MAP_FAILED;
    close(fd);
    if (p == MAP_FAILED) return false;
    hdr_ = static_cast<RingHeader*>(p);
    map_len_ = static_cast<size_t>(st.st_size);
    slots_ = static_cast<uint8_t*>(p) + sizeof(RingHeader);
    capacity_ = hdr_->capacity;
    slot_size_ = hdr_->slot_size;
    if (hdr_->magic != kRingMagic || slot_size_ != ((slot_size + 7) & ~7u) ||
        !std::has_single_bit(capacity_) ||
        sizeof(RingHeader) + size_t{slot_size_} * capacity_ > map_len_) {
      Unmap();
      return false;
    }
    // A new ring's consumer index: where both sides start (a resized CQ's
    // ring holds the entries moved over from there on).
    index = hdr_->tail.load(std::memory_order_acquire);
    return true;
  }
  void Unmap() {
    if (hdr_ != nullptr) munmap(hdr_, map_len_);
    hdr_ = nullptr;
    slots_ = nullptr;
    capacity_ = 0;
  }
  bool valid() const { return hdr_ != nullptr; }
  RingHeader* hdr() const { return hdr_; }
  uint32_t capacity() const { return capacity_; }
  uint32_t slot_size() const { return slot_size_; }
  uint8_t* Slot(uint64_t i) const {
    return slots_ + (i & (capacity_ - 1)) * slot_size_;
  }

  // --- as the producer (send, receive, doorbell rings) ---
  // The next free slot, nullptr when the consumer has not freed one.
  uint8_t* NextSlot() const {
    const uint64_t tail = hdr_->tail.load(std::memory_order_acquire);
    return index - tail < capacity_ ? Slot(index) : nullptr;
  }
  void Publish(uint64_t n = 1) {
    index += n;
    hdr_->head.store(index, std::memory_order_release);
  }
  template <typename T>
  bool Push(const T& v) {
    uint8_t* s = NextSlot();
    if (s == nullptr) return false;
    std::memcpy(s, &v, sizeof(T));
    Publish();
    return true;
  }

  // --- as the consumer (completion rings) ---
  template <typename T>
  bool Pop(T* out) {
    const uint64_t head = hdr_->head.load(std::memory_order_acquire);
    if (head == index || head - index > capacity_) return false;
    std::memcpy(out, Slot(index), sizeof(T));
    ++index;
    hdr_->tail.store(index, std::memory_order_release);
    return true;
  }

  // The client's own index, head or tail (it never trusts the header's).
  uint64_t index = 0;

 private:
  RingHeader* hdr_ = nullptr;
  uint8_t* slots_ = nullptr;
  size_t map_len_ = 0;
  uint32_t capacity_ = 0;
  uint32_t slot_size_ = 0;
};

struct RawCq {
  uint32_t handle = 0;
  RawRing ring;
};

struct RawQp {
  uint32_t qpn = 0;
  RawRing sq;
  RawRing rq;
};

struct RawSrq {
  uint32_t handle = 0;
  RawRing ring;
};

// The GID and MAC a QP's address vector names.
struct RawAddress {
  nic::Gid gid{};
  protocol::MacAddr mac{};
};

// IBV_QPT_* and IBV_QPS_* as they travel.
// One datagram from a verbs socket, without blocking, and the descriptors
// it carried: appended to *fds, or closed when fds is null. Returns
// recvmsg's result (errno set when negative); *nfds counts descriptors.
inline ssize_t RecvWithFds(int fd, uint8_t* buf, size_t cap,
                           std::vector<int>* fds, int* nfds) {
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * 8)];
  iovec iov{buf, cap};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof(ctl);
  const ssize_t r = recvmsg(fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  *nfds = 0;
  if (r < 0) return r;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k; ++i) {
      int f;
      std::memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      ++*nfds;
      if (fds != nullptr) {
        fds->push_back(f);
      } else {
        close(f);
      }
    }
  }
  return r;
}

inline constexpr uint8_t kWireRc = 2, kWireUd = 4;
inline constexpr uint8_t kWireReset = 0, kWireInit = 1, kWireRtr = 2,
                         kWireRts = 3, kWireErr = 6;

class RawVerbsClient {
 public:
  // The reply did not come (connection closed, or nothing in max_passes).
  static constexpr int kNoReply = -1;

  RawVerbsClient(const std::string& path, std::function<void()> pump)
      : pump_(std::move(pump)) {
    fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
    connected_ = fd_ >= 0 &&
                 connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~RawVerbsClient() {
    if (fd_ >= 0) close(fd_);
    if (wake_page_ != nullptr) munmap(wake_page_, wake_len_);
    if (wake_fd_ >= 0) close(wake_fd_);
  }
  RawVerbsClient(const RawVerbsClient&) = delete;
  RawVerbsClient& operator=(const RawVerbsClient&) = delete;

  bool connected() const { return connected_; }
  int fd() const { return fd_; }
  uint32_t client_id() const { return client_id_; }
  // Passes a Call waits for its reply.
  void set_max_passes(int n) { max_passes_ = n; }
  uint32_t next_seq() { return ++seq_; }

  // One datagram as it is, with descriptors; false when the socket refused
  // it (never blocks: the server runs on this thread).
  bool SendRaw(const void* msg, size_t len, std::span<const int> fds = {}) {
    iovec iov{const_cast<void*>(msg), len};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * 4)] = {};
    if (!fds.empty() && fds.size() <= 4) {
      m.msg_control = ctl;
      m.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* c = CMSG_FIRSTHDR(&m);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    return sendmsg(fd_, &m, MSG_DONTWAIT | MSG_NOSIGNAL) ==
           static_cast<ssize_t>(len);
  }

  // One waiting datagram, its descriptors appended to *fds (or closed
  // when fds is null). 0 when none waits; -1 once the server closed.
  ssize_t ReceiveRaw(uint8_t* buf, size_t cap, std::vector<int>* fds) {
    int got = 0;
    const ssize_t r = RecvWithFds(fd_, buf, cap, fds, &got);
    if (r < 0) return errno == EAGAIN || errno == EINTR ? 0 : -1;
    if (r == 0 && got == 0) {
      closed_ = true;  // the server never sends an empty datagram
      return -1;
    }
    return r;
  }

  // True once the server has closed this connection (reads any replies
  // still queued on the way, dropping them).
  bool Closed() {
    uint8_t buf[wire::kMaxMessage];
    while (!closed_ && ReceiveRaw(buf, sizeof(buf), nullptr) > 0) {
    }
    return closed_;
  }

  // True once the server has closed this connection, leaving whatever
  // waits unread.
  bool HungUp() const {
    pollfd p{fd_, POLLRDHUP, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP)) != 0;
  }

  // One request and its reply: pumps until the reply of this request
  // arrives (others are dropped). Returns the reply's errno, 0 on
  // success (its body is copied to `reply`, its descriptors appended to
  // *reply_fds), or kNoReply.
  int Call(wire::MsgType type, const void* body, size_t len,
           void* reply = nullptr, size_t reply_len = 0,
           std::span<const int> fds = {},
           std::vector<int>* reply_fds = nullptr) {
    uint8_t msg[wire::kMaxMessage];
    const uint32_t seq = next_seq();
    const size_t n = wire::EncodeRequest(type, seq, body, len, msg);
    if (n == 0 || closed_ || !SendRaw(msg, n, fds)) return kNoReply;
    for (int pass = 0; pass < max_passes_; ++pass) {
      pump_();
      for (;;) {
        uint8_t buf[wire::kMaxMessage];
        std::vector<int> got;
        const ssize_t r = ReceiveRaw(buf, sizeof(buf), &got);
        if (r <= 0) {
          if (r < 0) return kNoReply;
          break;
        }
        absl::StatusOr<wire::DecodedReply> d =
            wire::DecodeReply({buf, static_cast<size_t>(r)}, type, seq);
        if (!d.ok()) {  // another request's reply
          for (int f : got) close(f);
          continue;
        }
        if (reply != nullptr && d->error == 0) {
          std::memcpy(reply, d->body.data(),
                      std::min(reply_len, d->body.size()));
        }
        for (int f : got) {
          if (reply_fds != nullptr && d->error == 0) {
            reply_fds->push_back(f);
          } else {
            close(f);
          }
        }
        return d->error;
      }
    }
    return kNoReply;
  }
  template <typename Req, typename Resp = wire::Empty>
  int Call(wire::MsgType type, const Req& req, Resp* resp = nullptr,
           std::span<const int> fds = {},
           std::vector<int>* reply_fds = nullptr) {
    return Call(type, &req, std::is_empty_v<Req> ? 0 : sizeof(Req), resp,
                std::is_empty_v<Resp> ? 0 : sizeof(Resp), fds, reply_fds);
  }

  // --- objects ---
  int Hello() {
    wire::HelloReq h{wire::kVersion, wire::kVersion, 0, 0, "raw"};
    wire::HelloResp r{};
    const int err = Call(wire::MsgType::kHello, h, &r);
    if (err == 0) client_id_ = r.client_id;
    return err;
  }
  int AllocPd(uint32_t* pd) {
    wire::HandleResp r{};
    const int err = Call(wire::MsgType::kAllocPd, wire::Empty{}, &r);
    *pd = r.handle;
    return err;
  }
  // [offset, offset + length) of the sealed memfd `fd`, seen at `iova`.
  int RegMr(uint32_t pd, int fd, uint64_t offset, uint64_t length,
            uint64_t iova, uint32_t access, uint32_t* key) {
    wire::RegMrReq q{pd, access, iova, length, offset};
    wire::RegMrResp r{};
    const int err = Call(wire::MsgType::kRegMr, q, &r, {&fd, 1});
    *key = r.lkey;
    return err;
  }
  // [addr, addr + length) of this process.
  int RegProcessMr(uint32_t pd, const void* addr, uint64_t length,
                   uint32_t access, uint32_t* key) {
    wire::RegMrReq q{pd, access, reinterpret_cast<uint64_t>(addr), length, 0};
    wire::RegMrResp r{};
    const int err = Call(wire::MsgType::kRegMr, q, &r);
    *key = r.lkey;
    return err;
  }
  int CreateCq(uint32_t cqe, RawCq* cq) {
    wire::CreateCqReq q{cqe, 0};
    wire::CreateCqResp r{};
    std::vector<int> fds;
    int err = Call(wire::MsgType::kCreateCq, q, &r, {}, &fds);
    if (err == 0) err = MapRings(fds, {{&cq->ring, sizeof(CqeSlot)}});
    cq->handle = r.cq;
    return err;
  }
  int ResizeCq(RawCq* cq, uint32_t cqe) {
    wire::ResizeCqReq q{cq->handle, cqe};
    wire::CreateCqResp r{};
    std::vector<int> fds;
    int err = Call(wire::MsgType::kResizeCq, q, &r, {}, &fds);
    if (err == 0) {
      RawRing ring;
      err = MapRings(fds, {{&ring, sizeof(CqeSlot)}});
      if (err == 0) cq->ring = std::move(ring);
    }
    return err;
  }
  int CreateQp(uint32_t pd, uint8_t type, uint32_t send_cq, uint32_t recv_cq,
               wire::WireQpCap cap, const RawSrq* srq, RawQp* qp) {
    wire::CreateQpReq q{};
    q.pd = pd;
    q.qp_type = type;
    q.send_cq = send_cq;
    q.recv_cq = recv_cq;
    q.cap = cap;
    if (srq != nullptr) {
      q.flags = wire::kCreateQpWithSrq;
      q.srq = srq->handle;
    }
    wire::CreateQpResp r{};
    std::vector<int> fds;
    int err = Call(wire::MsgType::kCreateQp, q, &r, {}, &fds);
    if (err == 0) {
      err =
          MapRings(fds, {{&qp->sq, sizeof(SqSlot)}, {&qp->rq, sizeof(RqSlot)}});
    }
    qp->qpn = r.qpn;
    return err;
  }
  int CreateSrq(uint32_t pd, uint32_t max_wr, uint32_t max_sge, RawSrq* srq) {
    wire::CreateSrqReq q{pd, {max_wr, max_sge, 0}};
    wire::CreateSrqResp r{};
    std::vector<int> fds;
    int err = Call(wire::MsgType::kCreateSrq, q, &r, {}, &fds);
    if (err == 0) err = MapRings(fds, {{&srq->ring, sizeof(RqSlot)}});
    srq->handle = r.srq;
    return err;
  }
  int CreateAh(uint32_t pd, const RawAddress& to, uint32_t* ah) {
    wire::CreateAhReq q{};
    q.pd = pd;
    std::memcpy(q.attr.dgid, to.gid.data(), 16);
    std::memcpy(q.attr.dmac, to.mac.data(), 6);
    q.attr.hop_limit = 64;
    q.attr.port_num = 1;
    wire::HandleResp r{};
    const int err = Call(wire::MsgType::kCreateAh, q, &r);
    *ah = r.handle;
    return err;
  }
  int ModifyQp(uint32_t qpn, uint32_t mask, const wire::WireQpAttr& attr) {
    wire::ModifyQpReq q{qpn, mask, attr};
    return Call(wire::MsgType::kModifyQp, q);
  }
  int SetState(uint32_t qpn, uint8_t state) {
    wire::WireQpAttr a{};
    a.qp_state = state;
    return ModifyQp(qpn, nic::qp_attr::kState, a);
  }
  // RESET -> INIT -> RTR -> RTS towards `dest_qpn` at `to`: PSNs 0 both
  // ways, short timers so that retries and RNR waits end soon.
  int ConnectRc(uint32_t qpn, uint32_t dest_qpn, const RawAddress& to) {
    using namespace nic::qp_attr;  // NOLINT
    wire::WireQpAttr a{};
    a.qp_state = kWireInit;
    a.port_num = 1;
    a.qp_access_flags = 0xF;  // local write, remote write/read/atomic
    int err = ModifyQp(qpn, kState | kAccessFlags | kPkeyIndex | kPort, a);
    if (err != 0) return err;
    a.qp_state = kWireRtr;
    a.path_mtu = 3;  // 1024
    a.dest_qp_num = dest_qpn;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 1;
    std::memcpy(a.ah_attr.dgid, to.gid.data(), 16);
    std::memcpy(a.ah_attr.dmac, to.mac.data(), 6);
    a.ah_attr.hop_limit = 64;
    a.ah_attr.port_num = 1;
    err = ModifyQp(qpn,
                   kState | kAv | kPathMtu | kRqPsn | kMinRnrTimer |
                       kMaxDestRdAtomic | kDestQpn,
                   a);
    if (err != 0) return err;
    a.qp_state = kWireRts;
    a.timeout = 8;
    a.retry_cnt = 2;
    a.rnr_retry = 2;
    a.max_rd_atomic = 4;
    return ModifyQp(
        qpn,
        kState | kTimeout | kRetryCnt | kRnrRetry | kMaxQpRdAtomic | kSqPsn, a);
  }
  int ReadyUd(uint32_t qpn, uint32_t qkey) {
    using namespace nic::qp_attr;  // NOLINT
    wire::WireQpAttr a{};
    a.qp_state = kWireInit;
    a.port_num = 1;
    a.qkey = qkey;
    int err = ModifyQp(qpn, kState | kPkeyIndex | kPort | kQkey, a);
    if (err == 0) err = SetState(qpn, kWireRtr);
    if (err != 0) return err;
    a.qp_state = kWireRts;
    return ModifyQp(qpn, kState | kSqPsn, a);
  }
  // Opens the doorbell ring: from then on the server drains only queues
  // that rang (RingDoorbell).
  int OpenDoorbells() {
    wire::OpenDoorbellsResp r{};
    std::vector<int> fds;
    const int err =
        Call(wire::MsgType::kOpenDoorbells, wire::Empty{}, &r, {}, &fds);
    if (err != 0) return err;
    if (fds.size() != 3) {
      for (int f : fds) close(f);
      return EPROTO;
    }
    wake_len_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* p = mmap(nullptr, wake_len_, PROT_READ, MAP_SHARED, fds[1], 0);
    close(fds[1]);
    wake_page_ = p == MAP_FAILED ? nullptr : static_cast<WakePage*>(p);
    wake_fd_ = fds[2];
    if (!doorbells_.Map(fds[0], sizeof(DoorbellSlot)) ||
        wake_page_ == nullptr) {
      return EPROTO;
    }
    return 0;
  }
  RawRing& doorbells() { return doorbells_; }
  int wake_fd() const { return wake_fd_; }

  // --- data path, as the library does it ---
  // Tells the server `ring` has work (nothing without doorbells: it scans).
  void RingDoorbell(RawRing& ring, DoorbellKind kind, uint32_t handle) {
    if (!doorbells_.valid()) return;
    if (ring.hdr()->doorbell.exchange(1) == 0 &&
        !doorbells_.Push(DoorbellSlot{static_cast<uint32_t>(kind), handle})) {
      doorbells_.hdr()->doorbell.store(1);
    }
    if (wake_page_->sleeping.load() != 0) {
      const uint64_t one = 1;
      (void)!write(wake_fd_, &one, sizeof(one));
    }
  }
  bool PostSend(RawQp& qp, const SqSlot& s) {
    if (!qp.sq.Push(s)) return false;
    RingDoorbell(qp.sq, DoorbellKind::kSq, qp.qpn);
    return true;
  }
  bool PostRecv(RawQp& qp, const RqSlot& s) {
    if (!qp.rq.Push(s)) return false;
    RingDoorbell(qp.rq, DoorbellKind::kRq, qp.qpn);
    return true;
  }
  bool PostSrqRecv(RawSrq& srq, const RqSlot& s) {
    if (!srq.ring.Push(s)) return false;
    RingDoorbell(srq.ring, DoorbellKind::kSrq, srq.handle);
    return true;
  }

 private:
  struct RingFd {
    RawRing* ring;
    uint32_t slot_size;
  };
  // Maps the rings a reply brought, in order; closes every descriptor.
  static int MapRings(std::vector<int>& fds, std::initializer_list<RingFd> rs) {
    int err = fds.size() == rs.size() ? 0 : EPROTO;
    size_t i = 0;
    for (const RingFd& r : rs) {
      if (i < fds.size() && !r.ring->Map(fds[i], r.slot_size)) err = EPROTO;
      ++i;
    }
    for (; i < fds.size(); ++i) close(fds[i]);
    return err;
  }

  std::function<void()> pump_;
  int fd_ = -1;
  bool connected_ = false;
  bool closed_ = false;
  uint32_t seq_ = 0;
  uint32_t client_id_ = 0;
  int max_passes_ = 16;
  RawRing doorbells_;
  WakePage* wake_page_ = nullptr;
  size_t wake_len_ = 0;
  int wake_fd_ = -1;
};

// SGE helper for slots.
inline WireSge RawSge(uint64_t addr, uint32_t length, uint32_t key) {
  return WireSge{addr, length, key};
}

// Frames the RNIC sends to itself go back into it (a loopback port): a
// QP connected to another QP of the same RNIC works end to end.
inline void LoopFrames(nic::Rnic& nic, nic::TimeNs now) {
  static constexpr size_t kBurst = 4, kFrame = 9216;
  static std::vector<uint8_t> bufs(kBurst * kFrame);
  nic::TxFrame tx[kBurst];
  for (int guard = 0; guard < 64; ++guard) {
    for (size_t i = 0; i < kBurst; ++i) {
      tx[i].data = bufs.data() + i * kFrame;
      tx[i].capacity = kFrame;
    }
    const size_t n = nic.Transmit(0, tx, now);
    if (n == 0) return;
    nic::RxFrame rx[kBurst];
    for (size_t i = 0; i < n; ++i) rx[i] = {tx[i].data, tx[i].len};
    nic.Receive(0, {rx, n}, now);
  }
}

}  // namespace rocemu::verbs::testing

#endif  // ROCEMU_TESTS_VERBS_RAW_VERBS_CLIENT_H_
