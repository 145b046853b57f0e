// Where the RNIC looks for receive WQEs it has not been handed yet.
//
// A hardware RNIC reads receive WQEs from host memory when a message
// arrives, so a WQE the application posted before telling its peer to send
// is always found. A carrier whose clients post through memory rings that it
// drains on its own schedule (the session server) would otherwise race the
// wire: the peer's SEND can arrive before the ring is drained, and a UC/UD
// message is then lost (out_of_buffer) or an RC one RNR-NAKed. The RNIC asks
// the fetcher only when it finds a receive queue empty, so the miss path
// costs one indirect call and the common path none.
#ifndef ROCEMU_NIC_RECV_WQE_FETCHER_H_
#define ROCEMU_NIC_RECV_WQE_FETCHER_H_

#include <cstdint>

#include "nic/handles.h"

namespace rocemu::nic {

class RecvWqeFetcher {
 public:
  // Hands the RNIC (PostRecv / PostSrqRecv) whatever the owner of QP `qpn`'s
  // receive queue, or of SRQ `srq`, has posted so far. Called from inside
  // Rnic::Receive: it must not modify QPs or poll CQs.
  virtual void FetchRecv(uint32_t qpn) = 0;
  virtual void FetchSrqRecv(SrqHandle srq) = 0;

 protected:
  ~RecvWqeFetcher() = default;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_RECV_WQE_FETCHER_H_
