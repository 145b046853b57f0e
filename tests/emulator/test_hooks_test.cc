// control.test_hooks drive the RNIC from the control socket; they must not
// reach objects an application created on the same RNIC (its QPs, CQs).
#include "emulator/control/test_hooks.h"

#include <string>
#include <vector>

#include "config/config.h"
#include "emulator/port/rnic_port.h"
#include "gtest/gtest.h"

namespace rocemu::emulator {
namespace {

bool Refused(const std::string& reply) {
  return reply.find("\"error\"") != std::string::npos &&
         reply.find("not created by the test hooks") != std::string::npos;
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
    const std::string reply = hooks.Handle(cmd, req);
    EXPECT_TRUE(Refused(reply)) << cmd << ": " << reply;
  }
  // Untouched: still there, still in RESET.
  absl::StatusOr<nic::QpAttr> a = nic.QueryQp(*app_qp);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->qp_state, nic::QpState::kReset);

  // The hooks' own objects work as before.
  const std::string cq = hooks.Handle("create_cq", R"({"port":"p0"})");
  ASSERT_NE(cq.find("\"ok\":true"), std::string::npos) << cq;
  const std::string own_cq = cq.substr(cq.find("\"cq\":") + 5);
  const std::string qp =
      hooks.Handle("create_qp", R"({"port":"p0","type":"RC","cq":)" + own_cq);
  ASSERT_NE(qp.find("\"ok\":true"), std::string::npos) << qp;
  const std::string own_qp = qp.substr(qp.find("\"qpn\":") + 6,
                                       qp.find('}') - qp.find("\"qpn\":") - 6);
  const std::string m =
      hooks.Handle("query_qp", R"({"port":"p0","qpn":)" + own_qp + "}");
  EXPECT_NE(m.find("\"state\":\"RESET\""), std::string::npos) << m;
  const std::string d =
      hooks.Handle("destroy_qp", R"({"port":"p0","qpn":)" + own_qp + "}");
  EXPECT_NE(d.find("\"ok\":true"), std::string::npos) << d;
  // Destroyed: its number is no longer the hooks' either.
  EXPECT_TRUE(Refused(
      hooks.Handle("query_qp", R"({"port":"p0","qpn":)" + own_qp + "}")));
}

}  // namespace
}  // namespace rocemu::emulator
