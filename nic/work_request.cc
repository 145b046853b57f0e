#include "nic/work_request.h"

namespace rocemu::nic {

const char* WrOpcodeName(WrOpcode op) {
  switch (op) {
    case WrOpcode::kRdmaWrite:
      return "IBV_WR_RDMA_WRITE";
    case WrOpcode::kRdmaWriteWithImm:
      return "IBV_WR_RDMA_WRITE_WITH_IMM";
    case WrOpcode::kSend:
      return "IBV_WR_SEND";
    case WrOpcode::kSendWithImm:
      return "IBV_WR_SEND_WITH_IMM";
    case WrOpcode::kRdmaRead:
      return "IBV_WR_RDMA_READ";
    case WrOpcode::kAtomicCmpAndSwp:
      return "IBV_WR_ATOMIC_CMP_AND_SWP";
    case WrOpcode::kAtomicFetchAndAdd:
      return "IBV_WR_ATOMIC_FETCH_AND_ADD";
    case WrOpcode::kLocalInv:
      return "IBV_WR_LOCAL_INV";
    case WrOpcode::kBindMw:
      return "IBV_WR_BIND_MW";
    case WrOpcode::kSendWithInv:
      return "IBV_WR_SEND_WITH_INV";
    case WrOpcode::kFlush:
      return "IBV_WR_FLUSH";
    case WrOpcode::kAtomicWrite:
      return "IBV_WR_ATOMIC_WRITE";
  }
  return "IBV_WR_UNKNOWN";
}

}  // namespace rocemu::nic
