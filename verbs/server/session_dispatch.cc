// Decoding a client request and calling its handler.
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "nic/access.h"
#include "nic/qp_attr.h"
#include "verbs/server/session_convert.h"
#include "verbs/server/session_objects.h"
#include "verbs/server/session_server.h"

namespace rocemu::verbs {

void SessionServer::Handle(Client& c, std::span<const uint8_t> msg, Fds& fds) {
  ++counters_.requests;
  uint32_t seq = 0;
  uint16_t type = 0;
  absl::StatusOr<wire::DecodedRequest> d =
      wire::DecodeRequest(msg, &seq, &type);
  if (!d.ok()) {
    ++counters_.bad_requests;
    const uint16_t rt =
        (type & wire::kReplyFlag) == 0 && type <= wire::kMaxMsgType ? type : 0;
    Reply(c, rt, seq, absl::DataLossError(d.status().message()), nullptr, 0,
          {});
    return;
  }
  ++requests_by_type_[static_cast<size_t>(d->type)];
  const wire::MsgLayout layout = wire::LayoutOf(d->type);
  if (fds.n < layout.request_fds_min || fds.n > layout.request_fds_max) {
    ++counters_.bad_requests;
    Reply(c, type, seq,
          absl::DataLossError(
              absl::StrFormat("%s carries %d descriptors, expected %u to %u",
                              wire::MsgTypeName(d->type), fds.n,
                              layout.request_fds_min, layout.request_fds_max)),
          nullptr, 0, {});
    return;
  }
  if (!c.refusal.ok()) {
    Reply(c, type, seq, c.refusal, nullptr, 0, {});
    c.dead = true;
    return;
  }
  if (!c.hello && d->type != wire::MsgType::kHello) {
    ++counters_.bad_requests;
    Reply(c, type, seq, absl::FailedPreconditionError("hello first"), nullptr,
          0, {});
    return;
  }
  absl::Status st;
  const auto body = d->body;
  switch (d->type) {
    case wire::MsgType::kHello: {
      wire::HelloResp r{};
      st = OnHello(c, wire::BodyAs<wire::HelloReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kQueryDevice: {
      wire::QueryDeviceResp r{};
      st = OnQueryDevice(&r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kQueryPort: {
      wire::QueryPortResp r{};
      st = OnQueryPort(wire::BodyAs<wire::QueryPortReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kQueryGid: {
      wire::QueryGidResp r{};
      st = OnQueryGid(wire::BodyAs<wire::TableQueryReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kQueryPkey: {
      wire::QueryPkeyResp r{};
      st = OnQueryPkey(wire::BodyAs<wire::TableQueryReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kCreateSrq: {
      wire::CreateSrqResp r{};
      int ring_fd = -1;
      st = OnCreateSrq(c, wire::BodyAs<wire::CreateSrqReq>(body), &r, &ring_fd);
      Reply(c, type, seq, st, &r, sizeof(r), {&ring_fd, st.ok() ? 1u : 0u});
      if (st.ok()) srqs_.at(r.srq)->ring.CloseFd();
      break;
    }
    case wire::MsgType::kModifySrq:
      st = OnModifySrq(c, wire::BodyAs<wire::ModifySrqReq>(body));
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kQuerySrq: {
      wire::QuerySrqResp r{};
      st = OnQuerySrq(c, wire::BodyAs<wire::HandleReq>(body).handle, &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kDestroySrq:
      st = OnDestroySrq(c, wire::BodyAs<wire::HandleReq>(body).handle);
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kOpenAsync: {
      wire::OpenAsyncResp r{};
      int ring_fd = -1;
      st = OnOpenAsync(c, fds.Take(0), &r, &ring_fd);
      Reply(c, type, seq, st, &r, sizeof(r), {&ring_fd, st.ok() ? 1u : 0u});
      if (st.ok()) c.async_ring.CloseFd();
      break;
    }
    case wire::MsgType::kCmOpen: {
      wire::CmOpenResp r{};
      int ring_fd = -1;
      st = OnCmOpen(c, fds.Take(0), &r, &ring_fd);
      Reply(c, type, seq, st, &r, sizeof(r), {&ring_fd, st.ok() ? 1u : 0u});
      if (st.ok()) c.cm_ring.CloseFd();
      break;
    }
    case wire::MsgType::kCmListen: {
      wire::CmIdResp r{};
      st = OnCmListen(c, wire::BodyAs<wire::CmListenReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kCmConnect: {
      wire::CmIdResp r{};
      st = OnCmConnect(c, wire::BodyAs<wire::CmConnectReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kCmAccept:
      st = OnCmAccept(c, wire::BodyAs<wire::CmAcceptReq>(body));
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kCmReject:
      st = OnCmReject(c, wire::BodyAs<wire::CmRejectReq>(body));
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kCmDisconnect:
      st = OnCmDisconnect(c, wire::BodyAs<wire::CmIdReq>(body));
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kCmEstablish:
    case wire::MsgType::kCmDestroy:
      st = OnCmIdCall(c, d->type, wire::BodyAs<wire::CmIdReq>(body).id);
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kCmInitQpAttr: {
      wire::CmInitQpAttrResp r{};
      st = OnCmInitQpAttr(c, wire::BodyAs<wire::CmInitQpAttrReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kQueryGidTable: {
      wire::QueryGidTableResp r{};
      st = OnQueryGidTable(wire::BodyAs<wire::TableQueryReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kCmModifyQp:
      st = OnCmModifyQp(c, wire::BodyAs<wire::CmModifyQpReq>(body));
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kCmSidrQuery: {
      wire::CmIdResp r{};
      st = OnCmSidrQuery(c, wire::BodyAs<wire::CmSidrQueryReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kCmSidrReply:
      st = OnCmSidrReply(c, wire::BodyAs<wire::CmSidrReplyReq>(body));
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kCmResolve: {
      wire::CmResolveResp r{};
      st = OnCmResolve(c, wire::BodyAs<wire::CmResolveReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kAllocPd: {
      wire::HandleResp r{};
      st = OnAllocPd(c, &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kDeallocPd:
      st = OnDeallocPd(c, wire::BodyAs<wire::HandleReq>(body).handle);
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kRegMr: {
      wire::RegMrResp r{};
      st = OnRegMr(c, wire::BodyAs<wire::RegMrReq>(body),
                   fds.n == 1 ? fds.fd[0] : -1, &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kOpenDoorbells: {
      wire::OpenDoorbellsResp r{};
      int out_fds[3] = {-1, -1, -1};
      st = OnOpenDoorbells(c, &r, out_fds);
      Reply(
          c, type, seq, st, &r, sizeof(r),
          st.ok() ? std::span<const int>(out_fds, 3) : std::span<const int>());
      if (st.ok()) c.doorbells.CloseFd();
      break;
    }
    case wire::MsgType::kReregMr:
      st = OnReregMr(c, wire::BodyAs<wire::ReregMrReq>(body));
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kAllocMw: {
      wire::HandleResp r{};
      st = OnAllocMw(c, wire::BodyAs<wire::AllocMwReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kDeallocMw:
      st = OnDeallocMw(c, wire::BodyAs<wire::HandleReq>(body).handle);
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kDeregMr:
      st = OnDeregMr(c, wire::BodyAs<wire::HandleReq>(body).handle);
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kCreateCq: {
      wire::CreateCqResp r{};
      int ring_fd = -1;
      const auto req = wire::BodyAs<wire::CreateCqReq>(body);
      if (((req.flags & wire::kCreateCqWithChannel) != 0) != (fds.n == 1)) {
        st = absl::InvalidArgumentError(
            "create_cq: the channel flag and the eventfd go together");
      } else {
        st = OnCreateCq(c, req, fds.Take(0), &r, &ring_fd);
      }
      Reply(c, type, seq, st, &r, sizeof(r), {&ring_fd, st.ok() ? 1u : 0u});
      if (st.ok()) cqs_.at(r.cq)->ring.CloseFd();
      break;
    }
    case wire::MsgType::kResizeCq: {
      wire::CreateCqResp r{};
      int ring_fd = -1;
      st = OnResizeCq(c, wire::BodyAs<wire::ResizeCqReq>(body), &r, &ring_fd);
      Reply(c, type, seq, st, &r, sizeof(r), {&ring_fd, st.ok() ? 1u : 0u});
      if (st.ok()) cqs_.at(r.cq)->ring.CloseFd();
      break;
    }
    case wire::MsgType::kDestroyCq:
      st = OnDestroyCq(c, wire::BodyAs<wire::HandleReq>(body).handle);
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kCreateQp: {
      wire::CreateQpResp r{};
      int ring_fds[2] = {-1, -1};
      st = OnCreateQp(c, wire::BodyAs<wire::CreateQpReq>(body), &r, ring_fds);
      Reply(c, type, seq, st, &r, sizeof(r), {ring_fds, st.ok() ? 2u : 0u});
      if (st.ok()) {
        Qp& qp = *qps_.at(r.qpn);
        qp.sq.CloseFd();
        qp.rq.CloseFd();
      }
      break;
    }
    case wire::MsgType::kModifyQp:
      st = OnModifyQp(c, wire::BodyAs<wire::ModifyQpReq>(body));
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kQueryQp: {
      wire::QueryQpResp r{};
      st = OnQueryQp(c, wire::BodyAs<wire::HandleReq>(body).handle, &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kDestroyQp:
      st = OnDestroyQp(c, wire::BodyAs<wire::HandleReq>(body).handle);
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kCreateAh: {
      wire::HandleResp r{};
      st = OnCreateAh(c, wire::BodyAs<wire::CreateAhReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kDestroyAh:
      st = OnDestroyAh(c, wire::BodyAs<wire::HandleReq>(body).handle);
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kAttachMcast:
    case wire::MsgType::kDetachMcast:
      st = OnMcast(c, wire::BodyAs<wire::McastReq>(body),
                   d->type == wire::MsgType::kAttachMcast);
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kOpenXrcd: {
      wire::HandleResp r{};
      st = OnOpenXrcd(c, wire::BodyAs<wire::OpenXrcdReq>(body),
                      fds.n == 1 ? fds.fd[0] : -1, &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kCloseXrcd:
      st = OnCloseXrcd(c, wire::BodyAs<wire::HandleReq>(body).handle);
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kCreateXrcSrq: {
      wire::CreateXrcSrqResp r{};
      int ring_fd = -1;
      st = OnCreateXrcSrq(c, wire::BodyAs<wire::CreateXrcSrqReq>(body), &r,
                          &ring_fd);
      Reply(c, type, seq, st, &r, sizeof(r), {&ring_fd, st.ok() ? 1u : 0u});
      if (st.ok()) srqs_.at(r.srq)->ring.CloseFd();
      break;
    }
    case wire::MsgType::kXrcTgtQp: {
      wire::XrcTgtQpResp r{};
      st = OnXrcTgtQp(c, wire::BodyAs<wire::XrcTgtQpReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kCreateFlow: {
      wire::HandleResp r{};
      st = OnCreateFlow(c, wire::BodyAs<wire::CreateFlowReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kDestroyFlow:
      st = OnDestroyFlow(c, wire::BodyAs<wire::HandleReq>(body).handle);
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kSetRss:
      st = OnSetRss(c, wire::BodyAs<wire::SetRssReq>(body));
      Reply(c, type, seq, st, nullptr, 0, {});
      break;
    case wire::MsgType::kCreateTmSrq: {
      wire::CreateSrqResp r{};
      int ring_fd = -1;
      st = OnCreateTmSrq(c, wire::BodyAs<wire::CreateTmSrqReq>(body), &r,
                         &ring_fd);
      Reply(c, type, seq, st, &r, sizeof(r), {&ring_fd, st.ok() ? 1u : 0u});
      if (st.ok()) srqs_.at(r.srq)->ring.CloseFd();
      break;
    }
    case wire::MsgType::kPostSrqOps: {
      wire::HandleResp r{};
      st = OnPostSrqOps(c, wire::BodyAs<wire::PostSrqOpsReq>(body), &r);
      Reply(c, type, seq, st, &r, sizeof(r), {});
      break;
    }
    case wire::MsgType::kInvalid:
      break;
  }
  if (!st.ok()) ++counters_.failed_requests;
}

// --- control requests ----------------------------------------------------

}  // namespace rocemu::verbs
