// The ibv_qp_ex work-request builder (ibv_wr_start, ibv_wr_rdma_write,
// ibv_wr_set_sge, ..., ibv_wr_complete): applications call these through
// function pointers in the QP, so they are installed per QP.
#ifndef ROCEMU_VERBS_IBVERBS_QP_EX_H_
#define ROCEMU_VERBS_IBVERBS_QP_EX_H_

#include <cstdint>

#include "verbs/ibverbs/dropin.h"

namespace rocemu::ibverbs {

// IBV_QP_EX_WITH_* operations a QP of this type can build.
uint64_t SupportedSendOps(ibv_qp_type type);
// Installs the builder callbacks in q->qpx.
void FillQpEx(QpImpl* q);

}  // namespace rocemu::ibverbs

#endif  // ROCEMU_VERBS_IBVERBS_QP_EX_H_
