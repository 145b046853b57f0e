#include "nic/cm/cm_types.h"

namespace rocemu::nic {

const char* CmStateName(CmState s) {
  switch (s) {
    case CmState::kIdle:
      return "IDLE";
    case CmState::kListen:
      return "LISTEN";
    case CmState::kReqSent:
      return "REQ_SENT";
    case CmState::kReqRcvd:
      return "REQ_RCVD";
    case CmState::kMraReqSent:
      return "MRA_REQ_SENT";
    case CmState::kMraReqRcvd:
      return "MRA_REQ_RCVD";
    case CmState::kRepSent:
      return "REP_SENT";
    case CmState::kRepRcvd:
      return "REP_RCVD";
    case CmState::kMraRepSent:
      return "MRA_REP_SENT";
    case CmState::kMraRepRcvd:
      return "MRA_REP_RCVD";
    case CmState::kEstablished:
      return "ESTABLISHED";
    case CmState::kDreqSent:
      return "DREQ_SENT";
    case CmState::kDreqRcvd:
      return "DREQ_RCVD";
    case CmState::kTimewait:
      return "TIMEWAIT";
    case CmState::kSidrReqSent:
      return "SIDR_REQ_SENT";
    case CmState::kSidrReqRcvd:
      return "SIDR_REQ_RCVD";
  }
  return "?";
}

const char* CmEventName(CmEventType t) {
  switch (t) {
    case CmEventType::kReqReceived:
      return "REQ_RECEIVED";
    case CmEventType::kRepReceived:
      return "REP_RECEIVED";
    case CmEventType::kEstablished:
      return "ESTABLISHED";
    case CmEventType::kRejected:
      return "REJECTED";
    case CmEventType::kMraReceived:
      return "MRA_RECEIVED";
    case CmEventType::kUnreachable:
      return "UNREACHABLE";
    case CmEventType::kConnectError:
      return "CONNECT_ERROR";
    case CmEventType::kDisconnected:
      return "DISCONNECTED";
    case CmEventType::kTimewaitExit:
      return "TIMEWAIT_EXIT";
    case CmEventType::kSidrReqReceived:
      return "SIDR_REQ_RECEIVED";
    case CmEventType::kSidrRepReceived:
      return "SIDR_REP_RECEIVED";
    case CmEventType::kSidrUnreachable:
      return "SIDR_UNREACHABLE";
  }
  return "?";
}

}  // namespace rocemu::nic
