// rsocket I/O maps: riomap registers a buffer and announces it by writing
// an entry (offset, address, key, length) into the peer's iomap table, the
// part of its target buffer after the target SGL; riowrite then writes
// straight into a buffer the peer mapped, with a plain RDMA WRITE (no
// immediate: the peer's program watches its memory itself). As in
// rdma-core, an announcement travels as a data message (it takes a send
// queue entry and a credit) with IOMAP_SGL and the entry's index as its
// immediate, and unmapping tells the peer nothing.
#include <byteswap.h>
#include <rdma/rsocket.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>

#include "verbs/rdmacm/rsocket.h"

namespace rocemu::rdmacm::rs {

int SendIomaps(RSocket* rs, std::unique_lock<std::mutex>& lock, bool nonblock) {
  while (!rs->iomap_queue.empty()) {
    if (!rs->writable) return SetErrno(ECONNRESET);
    if (!CanSend(rs)) {
      if (WaitFor(rs, lock, nonblock, -1, SendWaitDone) != 0) return -1;
      if (!rs->writable) return SetErrno(ECONNRESET);
    }
    const RSocket::IoMap m = rs->iomap_queue.front();
    IomapEntry e;
    e.offset = m.offset;
    e.sge.addr = uintptr_t(m.mr->addr);
    e.sge.length = uint32_t(m.mr->length);
    e.sge.key = m.mr->rkey;
    if (rs->swap_sgl) {
      e.offset = bswap_64(e.offset);
      e.sge.addr = bswap_64(e.sge.addr);
      e.sge.length = bswap_32(e.sge.length);
      e.sge.key = bswap_32(e.sge.key);
    }
    ++rs->sseq_no;
    --rs->sqe_avail;
    rs->sbuf_bytes_avail -= sizeof(e);
    ibv_sge sge[2];
    int flags;
    const int nsge =
        Stage(rs, reinterpret_cast<const uint8_t*>(&e), sizeof(e), sge, &flags);
    if (PostWrite(rs, sge, nsge, Msg(kOpIomapSgl, uint32_t(m.index)), true,
                  flags, rs->remote_iomap.addr + m.index * sizeof(e),
                  rs->remote_iomap.key) != 0) {
      Fail(rs, errno);
      return -1;
    }
    rs->iomap_queue.pop_front();
    rs->iomaps.push_back(m);
  }
  return 0;
}

void FreeIomaps(RSocket* rs) {
  for (const RSocket::IoMap& m : rs->iomaps) ibv_dereg_mr(m.mr);
  for (const RSocket::IoMap& m : rs->iomap_queue) ibv_dereg_mr(m.mr);
  rs->iomaps.clear();
  rs->iomap_queue.clear();
}

namespace {

// Our table entry (written by the peer) holding `offset`, or nullptr.
bool FindIomap(RSocket* rs, uint64_t offset, uint64_t* addr, uint32_t* key,
               uint64_t* end) {
  volatile IomapEntry* t = rs->TargetIomap();
  for (int i = 0; i < rs->target_iomap_size; ++i) {
    const uint64_t start = t[i].offset;
    const uint64_t len = t[i].sge.length;
    if (len != 0 && offset >= start && offset < start + len) {
      *addr = t[i].sge.addr + (offset - start);
      *key = t[i].sge.key;
      *end = start + len;
      return true;
    }
  }
  return false;
}

}  // namespace

// C linkage: librdmacm's exports (<rdma/rsocket.h>).
extern "C" {

off_t riomap(int socket, void* buf, size_t len, int prot, int /*flags*/,
             off_t offset) {
  RSocket* rs = Find(socket);
  if (rs == nullptr) return -1;
  std::lock_guard<std::mutex> lock(rs->mu);
  if (rs->cq == nullptr || (prot & ~(PROT_WRITE | PROT_NONE)) != 0) {
    return SetErrno(EINVAL);
  }
  int index = -1;
  int access = IBV_ACCESS_LOCAL_WRITE;
  if ((prot & PROT_WRITE) != 0) {
    // Only a writable map goes to the peer, into a free table entry.
    auto it =
        std::find(rs->remote_slots.begin(), rs->remote_slots.end(), false);
    if (it == rs->remote_slots.end()) return SetErrno(ENOMEM);
    index = int(it - rs->remote_slots.begin());
    access |= IBV_ACCESS_REMOTE_WRITE;
  }
  ibv_mr* mr = ibv_reg_mr(rs->id->pd, buf, len, access);
  if (mr == nullptr) return -1;
  if (offset == -1) offset = off_t(uintptr_t(buf));
  const RSocket::IoMap m{uint64_t(offset), mr, index};
  if (index >= 0) {
    rs->remote_slots[index] = true;
    rs->iomap_queue.push_back(m);
  } else {
    rs->iomaps.push_back(m);
  }
  return offset;
}

int riounmap(int socket, void* buf, size_t len) {
  RSocket* rs = Find(socket);
  if (rs == nullptr) return -1;
  std::lock_guard<std::mutex> lock(rs->mu);
  auto match = [&](const RSocket::IoMap& m) {
    return m.mr->addr == buf && m.mr->length == len;
  };
  auto release = [&](const RSocket::IoMap& m) {
    ibv_dereg_mr(m.mr);
    if (m.index >= 0) rs->remote_slots[m.index] = false;
  };
  if (auto it = std::find_if(rs->iomaps.begin(), rs->iomaps.end(), match);
      it != rs->iomaps.end()) {
    release(*it);
    rs->iomaps.erase(it);
    return 0;
  }
  if (auto it =
          std::find_if(rs->iomap_queue.begin(), rs->iomap_queue.end(), match);
      it != rs->iomap_queue.end()) {
    release(*it);
    rs->iomap_queue.erase(it);
    return 0;
  }
  return SetErrno(EINVAL);
}

size_t riowrite(int socket, const void* buf, size_t count, off_t offset,
                int flags) {
  RSocket* rs = Find(socket);
  if (rs == nullptr) return size_t(-1);
  std::unique_lock<std::mutex> lock(rs->mu);
  if (FinishConnect(rs) != 0) return size_t(-1);
  if (rs->cq == nullptr) {
    errno = ENOTCONN;
    return size_t(-1);
  }
  const bool nonblock = Nonblocking(rs, flags);
  if (!rs->iomap_queue.empty() && SendIomaps(rs, lock, nonblock) != 0) {
    return size_t(-1);
  }
  const uint8_t* p = static_cast<const uint8_t*>(buf);
  size_t left = count;
  uint32_t olen = kFirstTransfer;
  int ret = 0;
  while (left > 0) {
    uint64_t raddr, end;
    uint32_t rkey;
    if (!FindIomap(rs, uint64_t(offset), &raddr, &rkey, &end)) {
      errno = EINVAL;  // nothing the peer mapped holds this offset
      ret = -1;
      break;
    }
    if (!rs->writable) {
      errno = rs->state == State::kError ? ECONNRESET : EPIPE;
      ret = -1;
      break;
    }
    // rdma-core asks for what a data message needs, credits included.
    if (!CanSend(rs)) {
      ret = WaitFor(rs, lock, nonblock, -1, SendWaitDone);
      if (ret != 0) break;
      continue;
    }
    uint32_t xfer = NextTransfer(&olen, left);
    xfer = uint32_t(std::min<uint64_t>(
        {xfer, rs->sbuf_bytes_avail, end - uint64_t(offset)}));
    --rs->sqe_avail;
    rs->sbuf_bytes_avail -= xfer;
    ibv_sge sge[2];
    int send_flags;
    const int nsge = Stage(rs, p, xfer, sge, &send_flags);
    ret = PostWrite(rs, sge, nsge, Msg(kOpWrite, xfer), false, send_flags,
                    raddr, rkey);
    if (ret != 0) {
      Fail(rs, errno);
      break;
    }
    p += xfer;
    left -= xfer;
    offset += off_t(xfer);
  }
  return (ret != 0 && left == count) ? size_t(-1) : count - left;
}

}  // extern "C"

}  // namespace rocemu::rdmacm::rs
