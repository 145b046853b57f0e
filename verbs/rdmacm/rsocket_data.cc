// The rsocket data path: the endpoint (CQ, RC QP, registered buffers), the
// completions that move credits and data, and rsend / rrecv and their
// variants. Flow control follows rdma-core so that either side may be
// theirs: a data message needs a send queue entry, a credit (the peer's
// posted receive) and room in the peer's current target SGL entry.
#include <byteswap.h>
#include <endian.h>
#include <fcntl.h>
#include <poll.h>
#include <rdma/rsocket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "verbs/client/client_control.h"
#include "verbs/rdmacm/rsocket.h"

namespace rocemu::rdmacm::rs {
namespace {

constexpr uint64_t kRecvFlag = uint64_t{1} << 63;

int PostRecv(RSocket* rs) {
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = kRecvFlag;
  wr.sg_list = nullptr;
  wr.num_sge = 0;
  const int ret = ibv_post_recv(rs->id->qp, &wr, &bad);
  return ret == 0 ? 0 : SetErrno(ret);
}

// A message with no payload: a zero-length write carries only its
// immediate (no address or key is checked for it).
int PostMsg(RSocket* rs, uint32_t msg) {
  return PostWrite(rs, nullptr, 0, msg, true, 0, 0, 0);
}

void SendCredits(RSocket* rs) {
  ++rs->ctrl_seqno;
  rs->rseq_comp = rs->rseq_no + (rs->rq_size >> 1);
  const uint32_t half = rs->rbuf_size >> 1;
  const uint32_t credits = uint16_t(rs->rseq_no + rs->rq_size);
  if (rs->rbuf_bytes_avail < half) {
    (void)PostMsg(rs, Msg(kOpSgl, credits));
    return;
  }
  WireSge sge;
  const uint64_t addr = uintptr_t(rs->rbuf.data + rs->rbuf_free_offset);
  if (!rs->swap_sgl) {
    sge = {addr, rs->rbuf.mr->rkey, half};
  } else {
    sge = {bswap_64(addr), bswap_32(rs->rbuf.mr->rkey), bswap_32(half)};
  }
  ibv_sge s{};
  s.length = sizeof(sge);
  int flags = 0;
  if (rs->sq_inline >= sizeof(sge)) {
    s.addr = uintptr_t(&sge);
    flags = IBV_SEND_INLINE;
  } else {
    // Not inline: the SGE must stay put until the write completes.
    uint8_t* slot = rs->sbuf.data + rs->sbuf_size +
                    kMaxCtrlMsg * (rs->ctrl_seqno & (kCtrlSlots - 1));
    std::memcpy(slot, &sge, sizeof(sge));
    s.addr = uintptr_t(slot);
    s.lkey = rs->sbuf.mr->lkey;
  }
  (void)PostWrite(rs, &s, 1, Msg(kOpSgl, credits), true, flags,
                  rs->remote_sgl.addr + rs->remote_sge * sizeof(WireSge),
                  rs->remote_sgl.key);
  rs->rbuf_bytes_avail -= half;
  rs->rbuf_free_offset += half;
  if (rs->rbuf_free_offset >= rs->rbuf_size) rs->rbuf_free_offset = 0;
  if (++rs->remote_sge == int(rs->remote_sgl.length)) rs->remote_sge = 0;
}

void UpdateCredits(RSocket* rs) {
  if (!rs->Connected() || !CtrlAvail(rs)) return;
  if (rs->rbuf_bytes_avail >= (rs->rbuf_size >> 1) ||
      int16_t(rs->rseq_no - rs->rseq_comp) >= 0) {
    SendCredits(rs);
  }
}

}  // namespace

int PostWrite(RSocket* rs, ibv_sge* sgl, int nsge, uint32_t msg, bool imm,
              int flags, uint64_t addr, uint32_t rkey) {
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  // The wr_id of a send is its message, so the completion says what to
  // give back (send queue entry and buffer bytes, or a control slot).
  wr.wr_id = msg;
  wr.sg_list = sgl;
  wr.num_sge = nsge;
  wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
  wr.send_flags = flags;
  if (imm) wr.imm_data = htobe32(msg);
  wr.wr.rdma.remote_addr = addr;
  wr.wr.rdma.rkey = rkey;
  const int ret = ibv_post_send(rs->id->qp, &wr, &bad);
  return ret == 0 ? 0 : SetErrno(ret);
}

int Stage(RSocket* rs, const uint8_t* buf, uint32_t len, ibv_sge sge[2],
          int* send_flags) {
  sge[0] = sge[1] = ibv_sge{};
  if (len <= rs->sq_inline) {
    sge[0].addr = uintptr_t(buf);
    sge[0].length = len;
    *send_flags = IBV_SEND_INLINE;
    return 1;
  }
  *send_flags = 0;
  const uint32_t to_end = rs->sbuf_size - rs->sbuf_head;
  const uint32_t first = std::min(len, to_end);
  std::memcpy(rs->sbuf.data + rs->sbuf_head, buf, first);
  sge[0] = {uintptr_t(rs->sbuf.data + rs->sbuf_head), first, rs->sbuf.mr->lkey};
  int nsge = 1;
  if (first < len) {
    std::memcpy(rs->sbuf.data, buf + first, len - first);
    sge[1] = {uintptr_t(rs->sbuf.data), len - first, rs->sbuf.mr->lkey};
    nsge = 2;
  }
  rs->sbuf_head = (rs->sbuf_head + len) % rs->sbuf_size;
  return nsge;
}

void Fail(RSocket* rs, int err) {
  rs->state = State::kError;
  rs->readable = rs->writable = false;
  if (rs->err == 0) rs->err = err;
}

void PollCq(RSocket* rs) {
  ibv_wc wc[16];
  int received = 0;
  int n;
  while ((n = ibv_poll_cq(rs->cq, 16, wc)) > 0) {
    for (int i = 0; i < n; ++i) {
      const ibv_wc& c = wc[i];
      if ((c.wr_id & kRecvFlag) != 0) {
        if (c.status != IBV_WC_SUCCESS) continue;  // flushed
        ++received;
        if ((c.wc_flags & IBV_WC_WITH_IMM) == 0) continue;
        const uint32_t msg = be32toh(c.imm_data);
        switch (MsgOp(msg)) {
          case kOpSgl:
            rs->sseq_comp = uint16_t(MsgData(msg));
            break;
          case kOpIomapSgl:
          case kOpWrite:
            break;
          case kOpCtrl:
            if (MsgData(msg) == kCtrlDisconnect) {
              rs->state = State::kDisconnected;
              rs->readable = rs->writable = false;
            } else if (MsgData(msg) == kCtrlShutdown) {
              if (rs->writable) {
                rs->readable = false;
              } else {
                rs->state = State::kDisconnected;
                rs->readable = false;
              }
            }
            break;
          default:  // data (and the ops reserved for it)
            rs->rmsg[rs->rmsg_tail] = MsgData(msg);
            if (++rs->rmsg_tail == int(rs->rmsg.size())) rs->rmsg_tail = 0;
            break;
        }
      } else {
        const uint32_t msg = uint32_t(c.wr_id);
        switch (MsgOp(msg)) {
          case kOpSgl:
            ++rs->ctrl_max_seqno;
            break;
          case kOpCtrl:
            ++rs->ctrl_max_seqno;
            if (MsgData(msg) == kCtrlDisconnect && rs->Connected()) {
              rs->state = State::kDisconnected;
            }
            break;
          case kOpIomapSgl:
            ++rs->sqe_avail;
            rs->sbuf_bytes_avail += sizeof(WireSge) + 8;
            break;
          default:
            ++rs->sqe_avail;
            rs->sbuf_bytes_avail += MsgData(msg);
            break;
        }
        if (c.status != IBV_WC_SUCCESS && rs->Connected()) {
          Fail(rs, ECONNRESET);
        }
      }
    }
  }
  if (rs->Connected()) {
    while (received-- > 0) {
      if (PostRecv(rs) != 0) {
        Fail(rs, errno);
        break;
      }
    }
  }
}

void Buffer::Reset() {
  if (mr != nullptr) ibv_dereg_mr(mr);
  mr = nullptr;
  free(data);
  data = nullptr;
  size = 0;
}

int Buffer::Alloc(ibv_pd* pd, size_t bytes, int access) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  size = bytes;
  const size_t rounded = (bytes + page - 1) / page * page;
  data = static_cast<uint8_t*>(aligned_alloc(page, rounded));
  if (data == nullptr) return SetErrno(ENOMEM);
  std::memset(data, 0, rounded);
  mr = ibv_reg_mr(pd, data, bytes, access);
  return mr == nullptr ? -1 : 0;
}

bool CtrlAvail(const RSocket* rs) {
  return rs->ctrl_seqno != rs->ctrl_max_seqno;
}

bool CanSend(RSocket* rs) {
  return rs->sqe_avail > 0 && rs->sbuf_bytes_avail >= kSendLowWater &&
         rs->sseq_no != rs->sseq_comp &&
         rs->TargetSgl()[rs->target_sge].length != 0;
}

bool AllSendsDone(const RSocket* rs) {
  return int(rs->ctrl_max_seqno - rs->ctrl_seqno) + rs->sqe_avail ==
         rs->sq_size;
}

int CreateEndpoint(RSocket* rs) {
  rdma_cm_id* id = rs->id;
  ibv_device_attr dev{};
  if (ibv_query_device(id->verbs, &dev) != 0) return -1;
  const int max_wr = std::min(dev.max_qp_wr, int(kQpMaxSize));
  rs->sq_size = uint16_t(std::clamp(int(rs->sq_size), int(kQpMinSize), max_wr));
  rs->rq_size = uint16_t(std::clamp(int(rs->rq_size), int(kQpMinSize), max_wr));
  rs->cq_channel = ibv_create_comp_channel(id->verbs);
  if (rs->cq_channel == nullptr) return -1;
  const int fl = fcntl(rs->cq_channel->fd, F_GETFL);
  if (fl < 0 || fcntl(rs->cq_channel->fd, F_SETFL, fl | O_NONBLOCK) != 0) {
    return -1;
  }
  rs->cq = ibv_create_cq(id->verbs, rs->sq_size + rs->rq_size, rs,
                         rs->cq_channel, 0);
  if (rs->cq == nullptr) return -1;
  ibv_qp_init_attr qa{};
  qa.qp_context = rs;
  qa.send_cq = rs->cq;
  qa.recv_cq = rs->cq;
  qa.qp_type = IBV_QPT_RC;
  qa.sq_sig_all = 1;
  qa.cap.max_send_wr = rs->sq_size;
  qa.cap.max_recv_wr = rs->rq_size;
  qa.cap.max_send_sge = 2;
  qa.cap.max_recv_sge = 1;
  qa.cap.max_inline_data = rs->sq_inline;
  if (rdma_create_qp(id, nullptr, &qa) != 0) return -1;
  rs->sq_inline = uint16_t(qa.cap.max_inline_data);

  const int write = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  size_t sbytes = rs->sbuf_size;
  if (rs->sq_inline < kMaxCtrlMsg) sbytes += kMaxCtrlMsg * kCtrlSlots;
  if (rs->sbuf.Alloc(id->pd, sbytes, IBV_ACCESS_LOCAL_WRITE) != 0 ||
      rs->target.Alloc(id->pd,
                       sizeof(WireSge) * kSglSize +
                           sizeof(IomapEntry) * rs->target_iomap_size,
                       write) != 0 ||
      rs->rbuf.Alloc(id->pd, rs->rbuf_size, write) != 0) {
    return -1;
  }
  rs->rmsg.assign(rs->rq_size + 1, 0);
  rs->sbuf_bytes_avail = rs->sbuf_size;
  rs->rbuf_free_offset = rs->rbuf_size >> 1;
  rs->rbuf_bytes_avail = rs->rbuf_size >> 1;
  rs->sqe_avail = rs->sq_size - int(rs->ctrl_max_seqno);
  rs->rseq_comp = rs->rq_size >> 1;
  for (int i = 0; i < rs->rq_size; ++i) {
    if (PostRecv(rs) != 0) return -1;
  }
  return 0;
}

void DestroyEndpoint(RSocket* rs) {
  if (rs->id != nullptr && rs->id->qp != nullptr) rdma_destroy_qp(rs->id);
  if (rs->cq != nullptr) {
    ibv_destroy_cq(rs->cq);
    rs->cq = nullptr;
  }
  if (rs->cq_channel != nullptr) {
    ibv_destroy_comp_channel(rs->cq_channel);
    rs->cq_channel = nullptr;
  }
}

void FormatConnData(RSocket* rs, ConnData* c) {
  *c = ConnData{};
  c->version = kConnVersion;
  c->flags = kConnFlagIomap;
  if constexpr (__BYTE_ORDER == __BIG_ENDIAN) c->flags |= kConnFlagNet;
  c->credits = htobe16(rs->rq_size);
  c->target_iomap_size = uint8_t(ValueToScale(rs->target_iomap_size, 8));
  c->target_sgl.addr = htobe64(uintptr_t(rs->target.data));
  c->target_sgl.length = htobe32(kSglSize);
  c->target_sgl.key = htobe32(rs->target.mr->rkey);
  c->data_buf.addr = htobe64(uintptr_t(rs->rbuf.data));
  c->data_buf.length = htobe32(rs->rbuf_size >> 1);
  c->data_buf.key = htobe32(rs->rbuf.mr->rkey);
}

bool SaveConnData(RSocket* rs, const void* data, size_t len) {
  if (data == nullptr || len < sizeof(ConnData)) return false;
  ConnData c;
  std::memcpy(&c, data, sizeof(c));
  if (c.version != kConnVersion) return false;
  rs->remote_sgl.addr = be64toh(c.target_sgl.addr);
  rs->remote_sgl.length = be32toh(c.target_sgl.length);
  rs->remote_sgl.key = be32toh(c.target_sgl.key);
  if (rs->remote_sgl.length == 0) return false;
  rs->remote_sge = 1 % int(rs->remote_sgl.length);
  if ((c.flags & kConnFlagIomap) != 0) {
    rs->remote_iomap.addr =
        rs->remote_sgl.addr + sizeof(WireSge) * rs->remote_sgl.length;
    rs->remote_iomap.length = uint32_t(ScaleToValue(c.target_iomap_size, 8));
    rs->remote_iomap.key = rs->remote_sgl.key;
    rs->remote_slots.assign(rs->remote_iomap.length, false);
  }
  const bool peer_net = (c.flags & kConnFlagNet) != 0;
  rs->swap_sgl = peer_net != (__BYTE_ORDER == __BIG_ENDIAN);
  volatile WireSge* t = rs->TargetSgl();
  t[0].addr = be64toh(c.data_buf.addr);
  t[0].length = be32toh(c.data_buf.length);
  t[0].key = be32toh(c.data_buf.key);
  rs->sseq_comp = be16toh(c.credits);
  return true;
}

int PostCtrl(RSocket* rs, uint32_t ctrl) {
  ++rs->ctrl_seqno;
  return PostMsg(rs, Msg(kOpCtrl, ctrl));
}

void Progress(RSocket* rs) {
  if (rs->cq != nullptr) {
    UpdateCredits(rs);
    PollCq(rs);
  }
  ProcessCmEvents(rs);
  if (rs->cq != nullptr) UpdateCredits(rs);
}

void WaitFds(RSocket* rs, int* fds, int* n) {
  *n = 0;
  fds[(*n)++] = rs->channel->fd;
  if (rs->cq != nullptr) {
    if (!rs->cq_armed) {
      ibv_req_notify_cq(rs->cq, 0);
      rs->cq_armed = true;
    }
    fds[(*n)++] = rs->cq_channel->fd;
  }
}

void DrainCqEvents(RSocket* rs) {
  if (rs->cq == nullptr) return;
  ibv_cq* cq;
  void* ctx;
  while (ibv_get_cq_event(rs->cq_channel, &cq, &ctx) == 0) {
    ibv_ack_cq_events(cq, 1);
    rs->cq_armed = false;
  }
}

int WaitFor(RSocket* rs, std::unique_lock<std::mutex>& lock, bool nonblock,
            int timeout_ms, bool (*pred)(RSocket*)) {
  const int64_t start = verbs::client::MonotonicNs();
  for (;;) {
    Progress(rs);
    if (pred(rs)) return 0;
    if (nonblock) return SetErrno(EAGAIN);
    if (verbs::client::MonotonicNs() - start < kWaitSpinNs) continue;
    int fds[2], n;
    WaitFds(rs, fds, &n);
    Progress(rs);  // what came before the CQ was armed
    if (pred(rs)) return 0;
    int sleep_ms = kMaxSleepMs;
    if (timeout_ms >= 0) {
      const int64_t left = int64_t(timeout_ms) -
                           (verbs::client::MonotonicNs() - start) / 1000000;
      if (left <= 0) return SetErrno(ETIMEDOUT);
      sleep_ms = int(std::min<int64_t>(left, sleep_ms));
    }
    pollfd p[2] = {{fds[0], POLLIN, 0}, {n > 1 ? fds[1] : -1, POLLIN, 0}};
    lock.unlock();
    const int r = poll(p, nfds_t(n), sleep_ms);
    lock.lock();
    if (r < 0 && errno != EINTR) return -1;
    DrainCqEvents(rs);
  }
}

bool Nonblocking(const RSocket* rs, int flags) {
  return rs->nonblocking || (flags & MSG_DONTWAIT) != 0;
}

// A socket still connecting makes progress first, as rdma-core's does.
int FinishConnect(RSocket* rs) {
  switch (rs->state) {
    case State::kResolvingAddr:
    case State::kResolvingRoute:
    case State::kConnecting:
      if (DriveConnect(rs, false) != 0) {
        if (errno == EINPROGRESS) errno = EAGAIN;
        return -1;
      }
      return 0;
    default:
      return 0;
  }
}

bool SendWaitDone(RSocket* rs) { return CanSend(rs) || !rs->writable; }
namespace {

bool RecvWaitDone(RSocket* rs) { return rs->HaveData() || !rs->readable; }

ssize_t Send(RSocket* rs, std::unique_lock<std::mutex>& lock,
             const uint8_t* buf, size_t len, int flags) {
  if (FinishConnect(rs) != 0) return -1;
  if (rs->cq == nullptr || rs->state == State::kConnectError) {
    errno = rs->state == State::kConnectError ? rs->err : ENOTCONN;
    return -1;
  }
  if (!rs->iomap_queue.empty() &&
      SendIomaps(rs, lock, Nonblocking(rs, flags)) != 0) {
    return -1;
  }
  size_t left = len;
  uint32_t olen = kFirstTransfer;
  int ret = 0;
  while (left > 0) {
    if (!rs->writable) {
      errno = rs->state == State::kError ? ECONNRESET : EPIPE;
      ret = -1;
      break;
    }
    if (!CanSend(rs)) {
      ret = WaitFor(rs, lock, Nonblocking(rs, flags), -1, SendWaitDone);
      if (ret != 0) break;
      if (!rs->writable) continue;
    }
    uint32_t xfer = NextTransfer(&olen, left);
    volatile WireSge* t = &rs->TargetSgl()[rs->target_sge];
    xfer = std::min({xfer, rs->sbuf_bytes_avail, uint32_t(t->length)});
    const uint64_t raddr = t->addr;
    const uint32_t rkey = t->key;
    // Our entry first: the peer may rewrite it once it has seen the data.
    t->addr = raddr + xfer;
    t->length = t->length - xfer;
    if (t->length == 0 && ++rs->target_sge == kSglSize) rs->target_sge = 0;
    ++rs->sseq_no;
    --rs->sqe_avail;
    rs->sbuf_bytes_avail -= xfer;
    ibv_sge sge[2];
    int send_flags;
    const int nsge = Stage(rs, buf, xfer, sge, &send_flags);
    ret = PostWrite(rs, sge, nsge, Msg(kOpData, xfer), true, send_flags, raddr,
                    rkey);
    if (ret != 0) {
      Fail(rs, errno);
      break;
    }
    buf += xfer;
    left -= xfer;
  }
  return (ret != 0 && left == len) ? -1 : ssize_t(len - left);
}

ssize_t Recv(RSocket* rs, std::unique_lock<std::mutex>& lock, uint8_t* buf,
             size_t len, int flags) {
  if (FinishConnect(rs) != 0) return -1;
  if (rs->cq == nullptr) {
    errno = rs->state == State::kConnectError ? rs->err : ENOTCONN;
    return -1;
  }
  size_t left = len;
  int ret = 0;
  do {
    if (!rs->HaveData()) {
      ret = WaitFor(rs, lock, Nonblocking(rs, flags), -1, RecvWaitDone);
      if (ret != 0) break;
      if (!rs->HaveData()) {
        // Nothing more will come: EOF after a clean close, else reset.
        if (rs->state == State::kError && left == len) {
          errno = rs->err != 0 ? rs->err : ECONNRESET;
          ret = -1;
        }
        break;
      }
    }
    if ((flags & MSG_PEEK) != 0) {
      int head = rs->rmsg_head;
      uint32_t off = rs->rbuf_offset;
      uint32_t partial = 0;
      while (left > 0 && head != rs->rmsg_tail) {
        uint32_t n = rs->rmsg[head] - partial;
        if (left < n) n = uint32_t(left);
        for (uint32_t done = 0; done < n;) {
          const uint32_t chunk = std::min(n - done, rs->rbuf_size - off);
          std::memcpy(buf, rs->rbuf.data + off, chunk);
          buf += chunk;
          done += chunk;
          off = (off + chunk) % rs->rbuf_size;
        }
        left -= n;
        if (++head == int(rs->rmsg.size())) head = 0;
      }
      break;
    }
    while (left > 0 && rs->HaveData()) {
      uint32_t n = rs->rmsg[rs->rmsg_head];
      if (left < n) {
        n = uint32_t(left);
        rs->rmsg[rs->rmsg_head] -= n;
      } else {
        ++rs->rseq_no;
        if (++rs->rmsg_head == int(rs->rmsg.size())) rs->rmsg_head = 0;
      }
      for (uint32_t done = 0; done < n;) {
        const uint32_t chunk =
            std::min(n - done, rs->rbuf_size - rs->rbuf_offset);
        std::memcpy(buf, rs->rbuf.data + rs->rbuf_offset, chunk);
        buf += chunk;
        done += chunk;
        rs->rbuf_offset = (rs->rbuf_offset + chunk) % rs->rbuf_size;
        rs->rbuf_bytes_avail += chunk;
      }
      left -= n;
    }
  } while (left > 0 && (flags & MSG_WAITALL) != 0 && rs->readable);
  // Consumed data may hand the peer a new half of the buffer now.
  if (left != len && rs->Connected()) {
    const int saved = errno;
    UpdateCredits(rs);
    errno = saved;
  }
  return (ret != 0 && left == len) ? -1 : ssize_t(len - left);
}

}  // namespace

// C linkage: these are librdmacm's exports (<rdma/rsocket.h>).
extern "C" {

ssize_t rsend(int socket, const void* buf, size_t len, int flags) {
  RSocket* rs = Find(socket);
  if (rs == nullptr) return -1;
  std::unique_lock<std::mutex> lock(rs->mu);
  return Send(rs, lock, static_cast<const uint8_t*>(buf), len, flags);
}

ssize_t rrecv(int socket, void* buf, size_t len, int flags) {
  RSocket* rs = Find(socket);
  if (rs == nullptr) return -1;
  std::unique_lock<std::mutex> lock(rs->mu);
  return Recv(rs, lock, static_cast<uint8_t*>(buf), len, flags);
}

ssize_t rsendto(int socket, const void* buf, size_t len, int flags,
                const sockaddr*, socklen_t) {
  // A connected stream ignores the address, as send(2) on TCP does.
  return rsend(socket, buf, len, flags);
}

ssize_t rrecvfrom(int socket, void* buf, size_t len, int flags,
                  sockaddr* src_addr, socklen_t* addrlen) {
  const ssize_t ret = rrecv(socket, buf, len, flags);
  if (ret > 0 && src_addr != nullptr && addrlen != nullptr) {
    (void)rgetpeername(socket, src_addr, addrlen);
  }
  return ret;
}

ssize_t rwrite(int socket, const void* buf, size_t count) {
  return rsend(socket, buf, count, 0);
}

ssize_t rread(int socket, void* buf, size_t count) {
  return rrecv(socket, buf, count, 0);
}

ssize_t rwritev(int socket, const iovec* iov, int iovcnt) {
  ssize_t total = 0;
  for (int i = 0; i < iovcnt; ++i) {
    const ssize_t n = rsend(socket, iov[i].iov_base, iov[i].iov_len, 0);
    if (n < 0) return total > 0 ? total : -1;
    total += n;
    if (size_t(n) < iov[i].iov_len) break;
  }
  return total;
}

ssize_t rreadv(int socket, const iovec* iov, int iovcnt) {
  // As rdma-core: the first vector only (a stream may return short).
  if (iovcnt <= 0) return 0;
  return rrecv(socket, iov[0].iov_base, iov[0].iov_len, 0);
}

ssize_t rsendmsg(int socket, const msghdr* msg, int flags) {
  if (msg->msg_control != nullptr && msg->msg_controllen != 0) {
    errno = ENOTSUP;
    return -1;
  }
  ssize_t total = 0;
  for (size_t i = 0; i < msg->msg_iovlen; ++i) {
    const iovec& v = msg->msg_iov[i];
    const ssize_t n = rsend(socket, v.iov_base, v.iov_len, flags);
    if (n < 0) return total > 0 ? total : -1;
    total += n;
    if (size_t(n) < v.iov_len) break;
  }
  return total;
}

ssize_t rrecvmsg(int socket, msghdr* msg, int flags) {
  if (msg->msg_control != nullptr && msg->msg_controllen != 0) {
    errno = ENOTSUP;
    return -1;
  }
  if (msg->msg_iovlen == 0) return 0;
  return rrecv(socket, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len,
               flags);
}

}  // extern "C"

}  // namespace rocemu::rdmacm::rs
