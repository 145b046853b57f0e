// How an ibv_send_wr fills a send-queue slot where its layout differs from
// rocemu_send_wr (client_datapath.h PostSendChain): the invalidate key, the
// UD address handle and memory-window binds.
#ifndef ROCEMU_VERBS_IBVERBS_SEND_TRAITS_H_
#define ROCEMU_VERBS_IBVERBS_SEND_TRAITS_H_

#include <infiniband/verbs.h>

#include "verbs/ibverbs/dropin.h"
#include "verbs/wire/ring_slots.h"

namespace rocemu::ibverbs {

// kBindType: 2 for IBV_WR_BIND_MW posted by the application (type 2
// windows only), 1 for the bind ibv_bind_mw posts for a type 1 window.
template <uint8_t kBindType>
struct IbvSendTraitsT {
  static uint32_t InvalidateRkey(const ibv_send_wr& wr) {
    return wr.opcode == IBV_WR_SEND_WITH_INV || wr.opcode == IBV_WR_LOCAL_INV
               ? wr.invalidate_rkey
               : 0;
  }
  static uint32_t RemoteSrqn(const ibv_send_wr& wr) {
    return wr.qp_type.xrc.remote_srqn;
  }
  static uint32_t AhHandle(const ibv_send_wr& wr) {
    return wr.wr.ud.ah != nullptr ? Ah(wr.wr.ud.ah)->ra->handle : 0;
  }
  // ring_slots.h says how a bind travels.
  static bool FillBind(const ibv_send_wr& wr, verbs::SqSlot* s) {
    const ibv_mw* mw = wr.bind_mw.mw;
    if (mw == nullptr) return false;
    const ibv_mw_bind_info& b = wr.bind_mw.bind_info;
    s->invalidate_rkey = mw->rkey;
    s->rkey = wr.bind_mw.rkey;
    s->remote_addr = b.addr;
    s->compare_add = b.length;
    s->swap = (uint64_t{kBindType} << 32) | b.mw_access_flags;
    s->num_sge = 0;
    s->inline_len = 0;
    s->sge[0] = {0, 0, b.mr != nullptr ? b.mr->lkey : 0};
    return true;
  }
};
using IbvSendTraits = IbvSendTraitsT<2>;

}  // namespace rocemu::ibverbs

#endif  // ROCEMU_VERBS_IBVERBS_SEND_TRAITS_H_
