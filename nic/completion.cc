#include "nic/completion.h"

#include <cstddef>
#include <iterator>

namespace rocemu::nic {

namespace {
struct StatusText {
  const char* name;
  const char* text;
};
// Indexed by the ibv_wc_status value.
constexpr StatusText kStatusText[] = {
    {"IBV_WC_SUCCESS", "success"},
    {"IBV_WC_LOC_LEN_ERR", "local length error"},
    {"IBV_WC_LOC_QP_OP_ERR", "local QP operation error"},
    {"IBV_WC_LOC_EEC_OP_ERR", "local EE context operation error"},
    {"IBV_WC_LOC_PROT_ERR", "local protection error"},
    {"IBV_WC_WR_FLUSH_ERR", "Work Request Flushed Error"},
    {"IBV_WC_MW_BIND_ERR", "memory management operation error"},
    {"IBV_WC_BAD_RESP_ERR", "bad response error"},
    {"IBV_WC_LOC_ACCESS_ERR", "local access error"},
    {"IBV_WC_REM_INV_REQ_ERR", "remote invalid request error"},
    {"IBV_WC_REM_ACCESS_ERR", "remote access error"},
    {"IBV_WC_REM_OP_ERR", "remote operation error"},
    {"IBV_WC_RETRY_EXC_ERR", "transport retry counter exceeded"},
    {"IBV_WC_RNR_RETRY_EXC_ERR", "RNR retry counter exceeded"},
    {"IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation error"},
    {"IBV_WC_REM_INV_RD_REQ_ERR", "remote invalid RD request"},
    {"IBV_WC_REM_ABORT_ERR", "aborted error"},
    {"IBV_WC_INV_EECN_ERR", "invalid EE context number"},
    {"IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state"},
    {"IBV_WC_FATAL_ERR", "fatal error"},
    {"IBV_WC_RESP_TIMEOUT_ERR", "response timeout error"},
    {"IBV_WC_GENERAL_ERR", "general error"},
    {"IBV_WC_TM_ERR", "TM error"},
    {"IBV_WC_TM_RNDV_INCOMPLETE", "TM software rendezvous"},
};
static_assert(sizeof(kStatusText) / sizeof(kStatusText[0]) ==
              static_cast<size_t>(WcStatus::kTmRndvIncomplete) + 1);
}  // namespace

const char* WcStatusName(WcStatus s) {
  auto i = static_cast<size_t>(s);
  return i < std::size(kStatusText) ? kStatusText[i].name : "IBV_WC_UNKNOWN";
}

const char* WcStatusString(WcStatus s) {
  auto i = static_cast<size_t>(s);
  return i < std::size(kStatusText) ? kStatusText[i].text : "unknown";
}

const char* WcOpcodeName(WcOpcode op) {
  switch (op) {
    case WcOpcode::kSend:
      return "IBV_WC_SEND";
    case WcOpcode::kRdmaWrite:
      return "IBV_WC_RDMA_WRITE";
    case WcOpcode::kRdmaRead:
      return "IBV_WC_RDMA_READ";
    case WcOpcode::kCompSwap:
      return "IBV_WC_COMP_SWAP";
    case WcOpcode::kFetchAdd:
      return "IBV_WC_FETCH_ADD";
    case WcOpcode::kBindMw:
      return "IBV_WC_BIND_MW";
    case WcOpcode::kLocalInv:
      return "IBV_WC_LOCAL_INV";
    case WcOpcode::kFlush:
      return "IBV_WC_FLUSH";
    case WcOpcode::kAtomicWrite:
      return "IBV_WC_ATOMIC_WRITE";
    case WcOpcode::kRecv:
      return "IBV_WC_RECV";
    case WcOpcode::kRecvRdmaWithImm:
      return "IBV_WC_RECV_RDMA_WITH_IMM";
    case WcOpcode::kTmAdd:
      return "IBV_WC_TM_ADD";
    case WcOpcode::kTmDel:
      return "IBV_WC_TM_DEL";
    case WcOpcode::kTmSync:
      return "IBV_WC_TM_SYNC";
    case WcOpcode::kTmRecv:
      return "IBV_WC_TM_RECV";
    case WcOpcode::kTmNoTag:
      return "IBV_WC_TM_NO_TAG";
  }
  return "IBV_WC_UNKNOWN";
}

}  // namespace rocemu::nic
