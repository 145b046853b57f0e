#include "verbs/wire/wire_protocol.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace rocemu::verbs::wire {
namespace {

bool ValidType(uint16_t t) { return t >= 1 && t <= kMaxMsgType; }

}  // namespace

const char* MsgTypeName(MsgType t) {
  switch (t) {
    case MsgType::kInvalid:
      return "invalid";
    case MsgType::kHello:
      return "hello";
    case MsgType::kQueryDevice:
      return "query_device";
    case MsgType::kQueryPort:
      return "query_port";
    case MsgType::kAllocPd:
      return "alloc_pd";
    case MsgType::kDeallocPd:
      return "dealloc_pd";
    case MsgType::kRegMr:
      return "reg_mr";
    case MsgType::kDeregMr:
      return "dereg_mr";
    case MsgType::kCreateCq:
      return "create_cq";
    case MsgType::kDestroyCq:
      return "destroy_cq";
    case MsgType::kCreateQp:
      return "create_qp";
    case MsgType::kModifyQp:
      return "modify_qp";
    case MsgType::kQueryQp:
      return "query_qp";
    case MsgType::kDestroyQp:
      return "destroy_qp";
    case MsgType::kCreateAh:
      return "create_ah";
    case MsgType::kDestroyAh:
      return "destroy_ah";
    case MsgType::kQueryGid:
      return "query_gid";
    case MsgType::kQueryPkey:
      return "query_pkey";
    case MsgType::kCreateSrq:
      return "create_srq";
    case MsgType::kModifySrq:
      return "modify_srq";
    case MsgType::kQuerySrq:
      return "query_srq";
    case MsgType::kDestroySrq:
      return "destroy_srq";
    case MsgType::kOpenAsync:
      return "open_async";
    case MsgType::kReregMr:
      return "rereg_mr";
    case MsgType::kOpenDoorbells:
      return "open_doorbells";
    case MsgType::kAllocMw:
      return "alloc_mw";
    case MsgType::kDeallocMw:
      return "dealloc_mw";
    case MsgType::kResizeCq:
      return "resize_cq";
    case MsgType::kCmOpen:
      return "cm_open";
    case MsgType::kCmListen:
      return "cm_listen";
    case MsgType::kCmConnect:
      return "cm_connect";
    case MsgType::kCmAccept:
      return "cm_accept";
    case MsgType::kCmReject:
      return "cm_reject";
    case MsgType::kCmEstablish:
      return "cm_establish";
    case MsgType::kCmDisconnect:
      return "cm_disconnect";
    case MsgType::kCmDestroy:
      return "cm_destroy";
    case MsgType::kCmInitQpAttr:
      return "cm_init_qp_attr";
    case MsgType::kCmSidrQuery:
      return "cm_sidr_query";
    case MsgType::kCmSidrReply:
      return "cm_sidr_reply";
    case MsgType::kCmResolve:
      return "cm_resolve";
    case MsgType::kAttachMcast:
      return "attach_mcast";
    case MsgType::kDetachMcast:
      return "detach_mcast";
    case MsgType::kCmModifyQp:
      return "cm_modify_qp";
    case MsgType::kQueryGidTable:
      return "query_gid_table";
    case MsgType::kOpenXrcd:
      return "open_xrcd";
    case MsgType::kCloseXrcd:
      return "close_xrcd";
    case MsgType::kCreateXrcSrq:
      return "create_xrc_srq";
    case MsgType::kXrcTgtQp:
      return "xrc_tgt_qp";
    case MsgType::kCreateFlow:
      return "create_flow";
    case MsgType::kDestroyFlow:
      return "destroy_flow";
    case MsgType::kSetRss:
      return "set_rss";
    case MsgType::kCreateTmSrq:
      return "create_tm_srq";
    case MsgType::kPostSrqOps:
      return "post_srq_ops";
  }
  return "unknown";
}

MsgLayout LayoutOf(MsgType t) {
  constexpr uint32_t kH = sizeof(HandleReq);
  switch (t) {
    case MsgType::kHello:
      return {sizeof(HelloReq), sizeof(HelloResp), 0, 0, 0};
    case MsgType::kQueryDevice:
      return {0, sizeof(QueryDeviceResp), 0, 0, 0};
    case MsgType::kQueryPort:
      return {sizeof(QueryPortReq), sizeof(QueryPortResp), 0, 0, 0};
    case MsgType::kAllocPd:
      return {0, sizeof(HandleResp), 0, 0, 0};
    case MsgType::kRegMr:
      return {sizeof(RegMrReq), sizeof(RegMrResp), 0, 1, 0};
    case MsgType::kCreateCq:
      return {sizeof(CreateCqReq), sizeof(CreateCqResp), 0, 1, 1};
    case MsgType::kCreateQp:
      return {sizeof(CreateQpReq), sizeof(CreateQpResp), 0, 0, 2};
    case MsgType::kModifyQp:
      return {sizeof(ModifyQpReq), 0, 0, 0, 0};
    case MsgType::kQueryQp:
      return {kH, sizeof(QueryQpResp), 0, 0, 0};
    case MsgType::kCreateAh:
      return {sizeof(CreateAhReq), sizeof(HandleResp), 0, 0, 0};
    case MsgType::kQueryGid:
      return {sizeof(TableQueryReq), sizeof(QueryGidResp), 0, 0, 0};
    case MsgType::kQueryPkey:
      return {sizeof(TableQueryReq), sizeof(QueryPkeyResp), 0, 0, 0};
    case MsgType::kCreateSrq:
      return {sizeof(CreateSrqReq), sizeof(CreateSrqResp), 0, 0, 1};
    case MsgType::kModifySrq:
      return {sizeof(ModifySrqReq), 0, 0, 0, 0};
    case MsgType::kQuerySrq:
      return {kH, sizeof(QuerySrqResp), 0, 0, 0};
    case MsgType::kOpenAsync:
      return {0, sizeof(OpenAsyncResp), 1, 1, 1};
    case MsgType::kReregMr:
      return {sizeof(ReregMrReq), 0, 0, 0, 0};
    case MsgType::kOpenDoorbells:
      return {0, sizeof(OpenDoorbellsResp), 0, 0, 3};
    case MsgType::kAllocMw:
      return {sizeof(AllocMwReq), sizeof(HandleResp), 0, 0, 0};
    case MsgType::kResizeCq:
      return {sizeof(ResizeCqReq), sizeof(CreateCqResp), 0, 0, 1};
    case MsgType::kCmOpen:
      return {0, sizeof(CmOpenResp), 1, 1, 1};
    case MsgType::kCmListen:
      return {sizeof(CmListenReq), sizeof(CmIdResp), 0, 0, 0};
    case MsgType::kCmConnect:
      return {sizeof(CmConnectReq), sizeof(CmIdResp), 0, 0, 0};
    case MsgType::kCmAccept:
      return {sizeof(CmAcceptReq), 0, 0, 0, 0};
    case MsgType::kCmReject:
      return {sizeof(CmRejectReq), 0, 0, 0, 0};
    case MsgType::kCmEstablish:
    case MsgType::kCmDisconnect:
    case MsgType::kCmDestroy:
      return {sizeof(CmIdReq), 0, 0, 0, 0};
    case MsgType::kCmInitQpAttr:
      return {sizeof(CmInitQpAttrReq), sizeof(CmInitQpAttrResp), 0, 0, 0};
    case MsgType::kCmSidrQuery:
      return {sizeof(CmSidrQueryReq), sizeof(CmIdResp), 0, 0, 0};
    case MsgType::kCmSidrReply:
      return {sizeof(CmSidrReplyReq), 0, 0, 0, 0};
    case MsgType::kCmResolve:
      return {sizeof(CmResolveReq), sizeof(CmResolveResp), 0, 0, 0};
    case MsgType::kCmModifyQp:
      return {sizeof(CmModifyQpReq), 0, 0, 0, 0};
    case MsgType::kQueryGidTable:
      return {sizeof(TableQueryReq), sizeof(QueryGidTableResp), 0, 0, 0};
    case MsgType::kAttachMcast:
    case MsgType::kDetachMcast:
      return {sizeof(McastReq), 0, 0, 0, 0};
    case MsgType::kOpenXrcd:
      return {sizeof(OpenXrcdReq), sizeof(HandleResp), 0, 1, 0};
    case MsgType::kCreateXrcSrq:
      return {sizeof(CreateXrcSrqReq), sizeof(CreateXrcSrqResp), 0, 0, 1};
    case MsgType::kXrcTgtQp:
      return {sizeof(XrcTgtQpReq), sizeof(XrcTgtQpResp), 0, 0, 0};
    case MsgType::kCreateFlow:
      return {sizeof(CreateFlowReq), sizeof(HandleResp), 0, 0, 0};
    case MsgType::kSetRss:
      return {sizeof(SetRssReq), 0, 0, 0, 0};
    case MsgType::kCreateTmSrq:
      return {sizeof(CreateTmSrqReq), sizeof(CreateSrqResp), 0, 0, 1};
    case MsgType::kPostSrqOps:
      return {sizeof(PostSrqOpsReq), sizeof(HandleResp), 0, 0, 0};
    case MsgType::kCloseXrcd:
    case MsgType::kDestroyFlow:
    case MsgType::kDeallocMw:
    case MsgType::kDestroySrq:
    case MsgType::kDeallocPd:
    case MsgType::kDeregMr:
    case MsgType::kDestroyCq:
    case MsgType::kDestroyQp:
    case MsgType::kDestroyAh:
      return {kH, 0, 0, 0, 0};
    case MsgType::kInvalid:
      break;
  }
  return {0, 0, 0, 0, 0};
}

size_t EncodeRequest(MsgType type, uint32_t seq, const void* body,
                     size_t body_len, std::span<uint8_t> out) {
  const size_t len = sizeof(MsgHeader) + body_len;
  if (out.size() < len || len > kMaxMessage) return 0;
  const MsgHeader h{kMagic, kVersion, static_cast<uint16_t>(type),
                    static_cast<uint32_t>(len), seq};
  std::memcpy(out.data(), &h, sizeof(h));
  if (body_len != 0) std::memcpy(out.data() + sizeof(h), body, body_len);
  return len;
}

size_t EncodeReply(uint16_t type, uint32_t seq, int error, const char* message,
                   const void* body, size_t body_len, std::span<uint8_t> out) {
  if (error != 0) body_len = 0;
  const size_t len = sizeof(MsgHeader) + sizeof(ReplyStatus) + body_len;
  if (out.size() < len || len > kMaxMessage) return 0;
  const MsgHeader h{kMagic, kVersion, static_cast<uint16_t>(type | kReplyFlag),
                    static_cast<uint32_t>(len), seq};
  ReplyStatus st{};
  st.error = error;
  if (message != nullptr) {
    std::strncpy(st.message, message, sizeof(st.message) - 1);
  }
  std::memcpy(out.data(), &h, sizeof(h));
  std::memcpy(out.data() + sizeof(h), &st, sizeof(st));
  if (body_len != 0) {
    std::memcpy(out.data() + sizeof(h) + sizeof(st), body, body_len);
  }
  return len;
}

absl::StatusOr<DecodedRequest> DecodeRequest(std::span<const uint8_t> msg,
                                             uint32_t* seq, uint16_t* type) {
  *seq = 0;
  *type = 0;
  if (msg.size() < sizeof(MsgHeader)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "message of %u bytes is shorter than its header", msg.size()));
  }
  MsgHeader h;
  std::memcpy(&h, msg.data(), sizeof(h));
  *seq = h.seq;
  *type = h.type;
  if (h.magic != kMagic) {
    return absl::InvalidArgumentError(
        absl::StrFormat("bad magic 0x%08x", h.magic));
  }
  // Hello's layout is frozen for every version so that a client of another
  // version hears which versions the daemon speaks.
  if (h.version != kVersion &&
      h.type != static_cast<uint16_t>(MsgType::kHello)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("protocol version %u not supported (daemon speaks %u)",
                        h.version, kVersion));
  }
  if ((h.type & kReplyFlag) != 0 || !ValidType(h.type)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("unknown message type %u", h.type));
  }
  const MsgType t = static_cast<MsgType>(h.type);
  const size_t want = sizeof(MsgHeader) + LayoutOf(t).request_body;
  if (h.length != msg.size() || msg.size() != want) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: length %u (received %u), expected %u",
                        MsgTypeName(t), h.length, msg.size(), want));
  }
  return DecodedRequest{t, h.seq, msg.subspan(sizeof(MsgHeader))};
}

absl::StatusOr<DecodedReply> DecodeReply(std::span<const uint8_t> msg,
                                         MsgType type, uint32_t seq) {
  constexpr size_t kFixed = sizeof(MsgHeader) + sizeof(ReplyStatus);
  if (msg.size() < kFixed) {
    return absl::DataLossError("reply shorter than its header");
  }
  MsgHeader h;
  std::memcpy(&h, msg.data(), sizeof(h));
  if (h.magic != kMagic || h.version != kVersion || h.length != msg.size()) {
    return absl::DataLossError("malformed reply header");
  }
  if (h.seq != seq || h.type != (static_cast<uint16_t>(type) | kReplyFlag)) {
    return absl::DataLossError(
        absl::StrFormat("reply type %#x seq %u does not answer %s seq %u",
                        h.type, h.seq, MsgTypeName(type), seq));
  }
  DecodedReply r;
  const auto* st =
      reinterpret_cast<const ReplyStatus*>(msg.data() + sizeof(MsgHeader));
  r.error = st->error;
  r.message = st->message;
  if (std::find(st->message, st->message + sizeof(st->message), '\0') ==
      st->message + sizeof(st->message)) {
    return absl::DataLossError("reply message not terminated");
  }
  const size_t body = msg.size() - kFixed;
  if (r.error == 0 && body != LayoutOf(type).reply_body) {
    return absl::DataLossError(
        absl::StrFormat("%s reply body of %u bytes, expected %u",
                        MsgTypeName(type), body, LayoutOf(type).reply_body));
  }
  if (r.error != 0 && body != 0) {
    return absl::DataLossError("error reply with a body");
  }
  r.body = msg.subspan(kFixed);
  return r;
}

}  // namespace rocemu::verbs::wire
