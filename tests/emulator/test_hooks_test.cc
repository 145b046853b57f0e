// control.test_hooks drive the RNIC from the control socket; they must not
// reach objects an application created on the same RNIC (its QPs, CQs).
#include "emulator/control/test_hooks.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/config.h"
#include "emulator/port/rnic_port.h"
#include "gtest/gtest.h"

namespace rocemu::emulator {
namespace {

using Json = nlohmann::json;

// A reply as JSON; null if it is not JSON. Replies are read through
// non-const values: a missing field is then null (a failed expectation),
// not nlohmann's assertion.
Json Parse(const std::string& reply) {
  Json j = Json::parse(reply, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? Json() : j;
}

// The hook `cmd` with request `req`, its reply parsed.
Json Call(TestHooks& hooks, const std::string& cmd, const Json& req) {
  return Parse(hooks.Handle(cmd, ControlRequest(req.dump())));
}

// An error reply naming the ownership check, and nothing done.
bool Refused(const Json& reply) {
  return reply.is_object() && !reply.contains("ok") &&
         reply.value("error", "").find("not created by the test hooks") !=
             std::string::npos;
}

TEST(TestHooksTest, ObjectsTheHooksDidNotCreateAreRefused) {
  absl::StatusOr<config::Config> cfg = config::LoadConfigString(
      "ports:\n  - name: p0\n    devargs: net_null0\n"
      "    addresses: [10.77.9.1/24]\n",
      "hooks.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  const MacAddr mac = {2, 0, 0, 0x77, 9, 1};
  absl::StatusOr<std::unique_ptr<RnicPort>> port = RnicPort::Create(
      *cfg, 0, mac, [](const IpAddr&) { return std::optional<MacAddr>(); });
  ASSERT_TRUE(port.ok()) << port.status();
  nic::Rnic& nic = (*port)->rnic();
  TestHooks hooks({port->get()}, {"p0"});

  // What an application owns on the same RNIC.
  absl::StatusOr<nic::CqHandle> app_cq = nic.CreateCq(16);
  ASSERT_TRUE(app_cq.ok());
  absl::StatusOr<nic::PdHandle> app_pd = nic.AllocPd();
  ASSERT_TRUE(app_pd.ok());
  nic::QpInitAttr init;
  init.qp_type = nic::QpType::kRc;
  init.send_cq = init.recv_cq = *app_cq;
  init.cap = {16, 16, 1, 1, 0};
  absl::StatusOr<uint32_t> app_qp = nic.CreateQp(*app_pd, init);
  ASSERT_TRUE(app_qp.ok());
  const std::string q = std::to_string(*app_qp);
  const std::string c = std::to_string(*app_cq);

  for (const auto& [cmd, req] :
       std::vector<std::pair<std::string, std::string>>{
           {"query_qp", R"({"port":"p0","qpn":)" + q + "}"},
           {"modify_qp", R"({"port":"p0","qpn":)" + q + R"(,"state":"INIT"})"},
           {"post_recv", R"({"port":"p0","qpn":)" + q +
                             R"(,"wr_id":1,"laddr":0,"lkey":0,"len":0})"},
           {"post_send", R"({"port":"p0","qpn":)" + q +
                             R"(,"opcode":"SEND","wr_id":1,"len":0})"},
           {"destroy_qp", R"({"port":"p0","qpn":)" + q + "}"},
           {"poll_cq", R"({"port":"p0","cq":)" + c + "}"},
           {"create_qp", R"({"port":"p0","type":"RC","cq":)" + c + "}"},
       }) {
    ASSERT_TRUE(TestHooks::Handles(cmd)) << cmd;
    const std::string reply = hooks.Handle(cmd, ControlRequest(req));
    EXPECT_TRUE(Refused(Parse(reply))) << cmd << ": " << reply;
  }
  // Untouched: still there, still in RESET.
  absl::StatusOr<nic::QpAttr> a = nic.QueryQp(*app_qp);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->qp_state, nic::QpState::kReset);

  // The hooks' own objects work as before.
  Json cq = Call(hooks, "create_cq", {{"port", "p0"}});
  ASSERT_EQ(cq.value("ok", false), true) << cq;
  ASSERT_TRUE(cq["cq"].is_number_unsigned()) << cq;
  Json qp = Call(hooks, "create_qp",
                 {{"port", "p0"}, {"type", "RC"}, {"cq", cq["cq"]}});
  ASSERT_EQ(qp.value("ok", false), true) << qp;
  ASSERT_TRUE(qp["qpn"].is_number_unsigned()) << qp;
  const Json own = {{"port", "p0"}, {"qpn", qp["qpn"]}};
  Json m = Call(hooks, "query_qp", own);
  EXPECT_EQ(m.value("ok", false), true) << m;
  EXPECT_EQ(m["qpn"], qp["qpn"]) << m;
  EXPECT_EQ(m["state"], "RESET") << m;
  Json d = Call(hooks, "destroy_qp", own);
  EXPECT_EQ(d, Json({{"ok", true}})) << d;
  // Destroyed: its number is no longer the hooks' either.
  EXPECT_TRUE(Refused(Call(hooks, "query_qp", own)));
}

}  // namespace
}  // namespace rocemu::emulator
