// Fault injection in the daemon's TX path, over a net_ring self-loop: the
// endpoint sends numbered frames, and what comes back must be exactly the
// sent set minus the drops plus the duplicates, with held-back (reordered,
// delayed) frames all released, as the counters say.
#include <unistd.h>

#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "config/config.h"
#include "emulator/control/control_server.h"
#include "emulator/daemon.h"
#include "emulator/net/checksum.h"
#include "gtest/gtest.h"

namespace rocemu::emulator {
namespace {

constexpr uint32_t kFrames = 2000;
constexpr MacAddr kMac = {0x02, 0, 0, 0x77, 0x06, 0x02};
constexpr nic::TimeNs kQuiet = 50'000'000;  // > delay_us, > reorder wait
constexpr nic::TimeNs kDeadline = 30'000'000'000;

class CountingEndpoint : public nic::FrameEndpoint {
 public:
  explicit CountingEndpoint(DaemonSignals* signals) : signals_(signals) {}

  void Receive(uint16_t, std::span<const nic::RxFrame> frames,
               nic::TimeNs now) override {
    for (const nic::RxFrame& f : frames) {
      ASSERT_EQ(f.len, 14u + 20 + 8 + 4);
      uint32_t seq;
      std::memcpy(&seq, f.data + 42, 4);
      ++seen_[seq];
      last_rx_ = now;
    }
  }

  size_t Transmit(uint16_t, std::span<nic::TxFrame> frames,
                  nic::TimeNs now) override {
    if (sent_ == kFrames) {
      // Done once the line has been quiet long enough for every held frame.
      if (!signals_->stop &&
          (now > std::max(last_rx_, done_at_) + kQuiet || now > kDeadline)) {
        final_counters_ = daemon_->CountersJson();
        signals_->stop = 1;
      }
      return 0;
    }
    size_t n = 0;
    for (nic::TxFrame& f : frames) {
      if (sent_ == kFrames) break;
      uint8_t* p = f.data;
      std::memset(p, 0, 46);
      std::memcpy(p, kMac.data(), 6);
      p[6] = 0x02;
      StoreBe16(p + 12, kEtherTypeIpv4);
      p[14] = 0x45;
      StoreBe16(p + 16, 32);
      p[22] = 64;
      p[23] = 17;
      const uint8_t a[8] = {10, 77, 6, 1, 10, 77, 6, 2};
      std::memcpy(p + 26, a, 8);
      StoreBe16(p + 24, InternetChecksum({p + 14, 20}));
      StoreBe16(p + 34, 0xC000);
      StoreBe16(p + 36, 4791);
      StoreBe16(p + 38, 12);
      std::memcpy(p + 42, &sent_, 4);
      f.len = 46;
      ++sent_;
      ++n;
    }
    if (sent_ == kFrames) done_at_ = now;
    return n;
  }

  nic::TimeNs NextEventTime() const override { return 0; }

  std::map<uint32_t, int> seen_;
  uint32_t sent_ = 0;
  Daemon* daemon_ = nullptr;
  std::string final_counters_;

 private:
  DaemonSignals* signals_;
  nic::TimeNs last_rx_ = 0, done_at_ = 0;
};

// Port r0's counter `name` in the counters view; 0 (and a failure) when
// the view is not JSON or has no such counter.
uint64_t Counter(const std::string& json, const std::string& name) {
  const nlohmann::json j =
      nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json* v = nullptr;
  if (j.is_object() && j.contains("ports") && j["ports"].contains("r0")) {
    const nlohmann::json& r0 = j["ports"]["r0"];
    if (r0.contains(name)) v = &r0[name];
  }
  EXPECT_TRUE(v != nullptr && v->is_number_unsigned()) << name << ": " << json;
  return v != nullptr && v->is_number_unsigned() ? v->get<uint64_t>() : 0;
}

TEST(DaemonFaultsTest, TxFaultsAccountForEveryFrame) {
  std::string sock = "/tmp/rocemu-faults-" + std::to_string(getpid()) + ".sock";
  absl::StatusOr<config::Config> cfg = config::LoadConfigString(
      "ports:\n"
      "  - name: r0\n"
      "    devargs: net_ring0\n"
      "    mac: \"02:00:00:77:06:02\"\n"
      "    addresses: [10.77.6.2/24]\n"
      "    faults: {drop: 0.05, duplicate: 0.05, reorder: 0.05,\n"
      "             delay: 0.05, delay_us: 2000, seed: 3, rx: false,\n"
      "             tx: true}\n"
      "eal: {memory_mb: 256, hugepages: \"no\"}\n"
      "control: {socket: " +
          sock + "}\n",
      "faults.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  Daemon daemon(*cfg);
  absl::Status s = daemon.Init();
  ASSERT_TRUE(s.ok()) << s;
  DaemonSignals signals;
  CountingEndpoint endpoint(&signals);
  daemon.AttachEndpoint(0, &endpoint);
  endpoint.daemon_ = &daemon;
  daemon.Run(&signals);
  // Run() closes the ports on exit: the endpoint read the counters last.
  const std::string& json = endpoint.final_counters_;

  uint64_t dropped = Counter(json, "tx_fault_dropped");
  uint64_t duplicated = Counter(json, "tx_fault_duplicated");
  uint64_t reordered = Counter(json, "tx_fault_reordered");
  uint64_t delayed = Counter(json, "tx_fault_delayed");
  EXPECT_GT(dropped, 0u);
  EXPECT_GT(duplicated, 0u);
  EXPECT_GT(reordered, 0u);
  EXPECT_GT(delayed, 0u);
  EXPECT_EQ(Counter(json, "rx_fault_dropped"), 0u);

  ASSERT_EQ(endpoint.sent_, kFrames);
  uint64_t missing = 0, doubled = 0, total = 0;
  for (uint32_t seq = 0; seq < kFrames; ++seq) {
    auto it = endpoint.seen_.find(seq);
    int count = it == endpoint.seen_.end() ? 0 : it->second;
    EXPECT_LE(count, 2) << seq;
    missing += count == 0;
    doubled += count == 2;
    total += static_cast<uint64_t>(count);
  }
  EXPECT_EQ(missing, dropped);
  EXPECT_EQ(doubled, duplicated);
  EXPECT_EQ(total, kFrames - dropped + duplicated);
  EXPECT_EQ(Counter(json, "rx_nic_no_endpoint"), 0u);
}

}  // namespace
}  // namespace rocemu::emulator
