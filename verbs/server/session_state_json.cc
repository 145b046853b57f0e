// SessionServer::StateJson: what rocemu-ctl and the daemon's control
// socket show about application sessions. Control path only.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "nic/qp_attr.h"
#include "verbs/server/json_writer.h"
#include "verbs/server/session_objects.h"
#include "verbs/server/session_server.h"

namespace rocemu::verbs {

nlohmann::ordered_json SessionServer::StateJson() const {
  using Json = nlohmann::ordered_json;
  Json state = {{"socket", options_.socket_path},
                {"device", options_.device_name},
                {"counters", Json::object()},
                {"clients", Json::array()}};
  ForEachSessionCounter(counters_, [&](const char* name, uint64_t v) {
    state["counters"][name] = v;
  });
  Json by_type = Json::object();
  for (size_t t = 0; t < requests_by_type_.size(); ++t) {
    if (requests_by_type_[t] != 0) {
      by_type[wire::MsgTypeName(static_cast<wire::MsgType>(t))] =
          requests_by_type_[t];
    }
  }
  state["requests_by_type"] = std::move(by_type);
  for (const auto& [id, c] : clients_) {
    if (!c->refusal.ok()) continue;  // being told why, then closed
    Json client = {{"id", id},
                   {"pid", c->cred.pid},
                   {"uid", c->cred.uid},
                   {"gid", c->cred.gid},
                   {"name", c->name},
                   {"pds", Json::array()},
                   {"mrs", Json::array()},
                   {"cqs", Json::array()},
                   {"qps", Json::array()},
                   {"srqs", Json::array()},
                   {"ahs", Json::array()}};
    for (const auto& [h, owner] : pds_) {
      if (owner == id) client["pds"].push_back(h);
    }
    for (const auto& [key, mr] : mrs_) {
      if (mr->owner != id) continue;
      client["mrs"].push_back({{"key", key},
                               {"pd", mr->pd},
                               {"iova", mr->iova},
                               {"length", mr->length},
                               {"access", mr->access},
                               {"kind", mr->process ? "process" : "shm"}});
    }
    for (const auto& [h, cq] : cqs_) {
      if (cq->owner != id) continue;
      // The ring's producer and consumer counts and its arm: a program
      // stuck in ibv_get_cq_event shows here whether a completion is
      // waiting unpolled or none came.
      client["cqs"].push_back({{"handle", h},
                               {"cqe", cq->cqe},
                               {"channel", cq->channel.valid()},
                               {"produced", cq->ring.produced()},
                               {"unconsumed", cq->ring.Unconsumed()},
                               {"armed", cq->ring.armed()},
                               {"signals", cq->ring.signals()}});
    }
    for (const auto& [qpn, qp] : qps_) {
      if (qp->owner != id) continue;
      const nic::Qp* q = rnic_.GetQp(qpn);
      client["qps"].push_back(
          {{"qpn", qpn},
           {"type", q != nullptr ? nic::QpTypeName(q->type()) : "?"},
           {"state", q != nullptr ? nic::QpStateName(q->state()) : "?"}});
    }
    for (const auto& [h, srq] : srqs_) {
      if (srq->owner != id) continue;
      client["srqs"].push_back({{"handle", h},
                                {"pd", srq->pd},
                                {"ring", srq->ring.capacity()},
                                {"qps", srq->users}});
    }
    for (const auto& [h, ah] : ahs_) {
      if (ah.owner == id) client["ahs"].push_back(h);
    }
    state["clients"].push_back(std::move(client));
  }
  return state;
}

void SessionServer::AppendStateJson(std::string* out) const {
  out->append(DumpJson(StateJson()));
}

}  // namespace rocemu::verbs
