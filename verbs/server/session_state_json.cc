// SessionServer::AppendStateJson: what rocemu-ctl and the daemon's control
// socket show about application sessions. Control path only.
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_format.h"
#include "nic/qp_attr.h"
#include "verbs/server/json_writer.h"
#include "verbs/server/session_objects.h"
#include "verbs/server/session_server.h"

namespace rocemu::verbs {

void SessionServer::AppendStateJson(std::string* out) const {
  out->append("{\"socket\":");
  AppendJsonString(options_.socket_path, out);
  out->append(",\"device\":");
  AppendJsonString(options_.device_name, out);
  out->append(",\"counters\":{");
  bool first = true;
  ForEachSessionCounter(counters_, [&](const char* name, uint64_t v) {
    absl::StrAppendFormat(out, "%s\"%s\":%u", first ? "" : ",", name, v);
    first = false;
  });
  out->append("}");
  out->append(",");
  {
    JsonList clients(out, "clients");
    for (const auto& [id, c] : clients_) {
      if (!c->refusal.ok()) continue;  // being told why, then closed
      std::string* o = clients.Next();
      absl::StrAppendFormat(o, "{\"id\":%u,\"pid\":%d,\"uid\":%u,\"gid\":%u,",
                            id, c->cred.pid, c->cred.uid, c->cred.gid);
      o->append("\"name\":");
      AppendJsonString(c->name, o);
      o->append(",");
      {
        JsonList l(o, "pds");
        for (const auto& [h, owner] : pds_) {
          if (owner == id) absl::StrAppendFormat(l.Next(), "%u", h);
        }
      }
      o->append(",");
      {
        JsonList l(o, "mrs");
        for (const auto& [key, mr] : mrs_) {
          if (mr->owner != id) continue;
          absl::StrAppendFormat(
              l.Next(),
              "{\"key\":%u,\"pd\":%u,\"iova\":%u,\"length\":%u,"
              "\"access\":%u,\"kind\":\"%s\"}",
              key, mr->pd, mr->iova, mr->length, mr->access,
              mr->process ? "process" : "shm");
        }
      }
      o->append(",");
      {
        JsonList l(o, "cqs");
        for (const auto& [h, cq] : cqs_) {
          if (cq->owner != id) continue;
          // The ring's producer and consumer counts and its arm: a program
          // stuck in ibv_get_cq_event shows here whether a completion is
          // waiting unpolled or none came.
          absl::StrAppendFormat(
              l.Next(),
              "{\"handle\":%u,\"cqe\":%u,\"channel\":%s,\"produced\":%u,"
              "\"unconsumed\":%u,\"armed\":%s,\"signals\":%u}",
              h, cq->cqe, cq->channel.valid() ? "true" : "false",
              cq->ring.produced(), cq->ring.Unconsumed(),
              cq->ring.armed() ? "true" : "false", cq->ring.signals());
        }
      }
      o->append(",");
      {
        JsonList l(o, "qps");
        for (const auto& [qpn, qp] : qps_) {
          if (qp->owner != id) continue;
          const nic::Qp* q = rnic_.GetQp(qpn);
          absl::StrAppendFormat(
              l.Next(), "{\"qpn\":%u,\"type\":\"%s\",\"state\":\"%s\"}", qpn,
              q != nullptr ? nic::QpTypeName(q->type()) : "?",
              q != nullptr ? nic::QpStateName(q->state()) : "?");
        }
      }
      o->append(",");
      {
        JsonList l(o, "srqs");
        for (const auto& [h, srq] : srqs_) {
          if (srq->owner != id) continue;
          absl::StrAppendFormat(
              l.Next(), "{\"handle\":%u,\"pd\":%u,\"ring\":%u,\"qps\":%u}", h,
              srq->pd, srq->ring.capacity(), srq->users);
        }
      }
      o->append(",");
      {
        JsonList l(o, "ahs");
        for (const auto& [h, ah] : ahs_) {
          if (ah.owner == id) absl::StrAppendFormat(l.Next(), "%u", h);
        }
      }
      o->append("}");
    }
  }
  out->append("}");
}

}  // namespace rocemu::verbs
