// The daemon's poll loop with a FrameEndpoint attached, over a net_ring
// self-loop port (TX comes back as RX): frames the endpoint fills into lent
// mbufs go out, come back, are classified as RoCE by the net stack and are
// handed to the endpoint unchanged.
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/config.h"
#include "emulator/daemon.h"
#include "emulator/net/checksum.h"
#include "gtest/gtest.h"

namespace rocemu::emulator {
namespace {

constexpr uint32_t kFrames = 200;
constexpr MacAddr kMac = {0x02, 0, 0, 0x77, 0x05, 0x02};
constexpr nic::TimeNs kDeadline = 20'000'000'000;

class LoopbackEndpoint : public nic::FrameEndpoint {
 public:
  explicit LoopbackEndpoint(DaemonSignals* signals) : signals_(signals) {}

  void Receive(uint16_t port, std::span<const nic::RxFrame> frames,
               nic::TimeNs now) override {
    EXPECT_EQ(port, 0);
    for (const nic::RxFrame& f : frames) {
      std::vector<uint8_t> want = Build(received_);
      EXPECT_EQ(std::vector<uint8_t>(f.data, f.data + f.len), want)
          << "frame " << received_;
      ++received_;
    }
    if (received_ >= kFrames || now > kDeadline) signals_->stop = 1;
  }

  size_t Transmit(uint16_t port, std::span<nic::TxFrame> frames,
                  nic::TimeNs now) override {
    EXPECT_EQ(port, 0);
    if (now > kDeadline) signals_->stop = 1;
    size_t n = 0;
    for (nic::TxFrame& f : frames) {
      if (sent_ == kFrames) break;
      min_capacity_ = std::min(min_capacity_, f.capacity);
      std::vector<uint8_t> bytes = Build(sent_);
      if (bytes.size() > f.capacity) break;
      std::memcpy(f.data, bytes.data(), bytes.size());
      f.len = static_cast<uint32_t>(bytes.size());
      ++sent_;
      ++n;
    }
    return n;
  }

  nic::TimeNs NextEventTime() const override {
    return sent_ < kFrames ? 0 : nic::kNever;
  }

  // A RoCEv2-addressed UDP frame (IPv4, port 4791) to the daemon's address
  // whose payload encodes its sequence number and varies its length.
  static std::vector<uint8_t> Build(uint32_t seq) {
    size_t payload = 16 + (seq * 37) % 1200;
    std::vector<uint8_t> f(14 + 20 + 8 + payload, 0);
    std::memcpy(f.data(), kMac.data(), 6);
    const uint8_t src[6] = {0x02, 0, 0, 0x77, 0x05, 0x01};
    std::memcpy(f.data() + 6, src, 6);
    StoreBe16(&f[12], kEtherTypeIpv4);
    uint8_t* ip = &f[14];
    ip[0] = 0x45;
    StoreBe16(ip + 2, static_cast<uint16_t>(20 + 8 + payload));
    ip[8] = 64;
    ip[9] = 17;
    const uint8_t a[8] = {10, 77, 5, 1, 10, 77, 5, 2};
    std::memcpy(ip + 12, a, 8);
    StoreBe16(ip + 10, InternetChecksum({ip, 20}));
    uint8_t* udp = ip + 20;
    StoreBe16(udp, 0xC000);
    StoreBe16(udp + 2, 4791);
    StoreBe16(udp + 4, static_cast<uint16_t>(8 + payload));
    for (size_t i = 0; i < payload; ++i) {
      udp[8 + i] = static_cast<uint8_t>(seq + i);
    }
    return f;
  }

  uint32_t sent_ = 0;
  uint32_t received_ = 0;
  uint32_t min_capacity_ = UINT32_MAX;

 private:
  DaemonSignals* signals_;
};

TEST(DaemonLoopTest, EndpointFramesRoundTripThroughTheRing) {
  std::string sock = "/tmp/rocemu-loop-" + std::to_string(getpid()) + ".sock";
  absl::StatusOr<config::Config> cfg = config::LoadConfigString(
      "ports:\n"
      "  - name: r0\n"
      "    devargs: net_ring0\n"
      "    mac: \"02:00:00:77:05:02\"\n"
      "    addresses: [10.77.5.2/24]\n"
      "eal: {memory_mb: 256, hugepages: \"no\"}\n"
      "control: {socket: " +
          sock + "}\n",
      "loop.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  Daemon daemon(*cfg);
  absl::Status s = daemon.Init();
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(daemon.port_count(), 1u);
  EXPECT_EQ(daemon.PortMac(0), kMac);
  EXPECT_EQ(daemon.PortSettings(0).name, "r0");
  DaemonSignals signals;
  LoopbackEndpoint endpoint(&signals);
  daemon.AttachEndpoint(0, &endpoint);
  nlohmann::json before = nlohmann::json::parse(daemon.CountersJson(), nullptr,
                                                /*allow_exceptions=*/false);
  EXPECT_EQ(before["rnic_attached"], true) << before;
  EXPECT_TRUE(before["ports"]["r0"]["rx_packets"].is_number_unsigned())
      << before;
  EXPECT_EQ(before["ports"]["r0"]["mac"], "02:00:00:77:05:02") << before;
  daemon.Run(&signals);  // the endpoint stops it

  EXPECT_EQ(endpoint.sent_, kFrames);
  EXPECT_EQ(endpoint.received_, kFrames);
  // Lent buffers hold a whole frame of the port's MTU (+ header and tag).
  EXPECT_EQ(endpoint.min_capacity_, 1500u + 14 + 4);
}

TEST(DaemonLoopTest, CountersJsonNamesThePortAndItsCounters) {
  // Run() shut the EAL down in the test above; the JSON of a daemon that
  // never started has no ports.
  absl::StatusOr<config::Config> cfg = config::LoadConfigString(
      "ports: [{name: r0, devargs: net_ring0}]\n", "x.yaml");
  ASSERT_TRUE(cfg.ok());
  Daemon idle(*cfg);
  nlohmann::json counters = nlohmann::json::parse(idle.CountersJson(), nullptr,
                                                  /*allow_exceptions=*/false);
  EXPECT_EQ(counters["rnic_attached"], false) << counters;
  EXPECT_EQ(counters["ports"], nlohmann::json::object()) << counters;
  const nlohmann::json bogus =
      nlohmann::json::parse(idle.HandleControl("{\"cmd\":\"bogus\"}"), nullptr,
                            /*allow_exceptions=*/false);
  EXPECT_NE(bogus.value("error", "").find("unknown command 'bogus'"),
            std::string::npos)
      << bogus;
  EXPECT_EQ(nlohmann::json::parse(idle.HandleControl("ping")),
            nlohmann::json({{"ok", true}}));
}

}  // namespace
}  // namespace rocemu::emulator
