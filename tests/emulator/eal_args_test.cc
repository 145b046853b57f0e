#include "emulator/port/eal_args.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace rocemu::emulator {
namespace {

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
std::string After(const std::vector<std::string>& v, const std::string& s) {
  auto it = std::find(v.begin(), v.end(), s);
  return it == v.end() || it + 1 == v.end() ? "" : *(it + 1);
}

config::Config OnePort(const std::string& devargs) {
  config::Config c;
  config::PortConfig p;
  p.name = "p0";
  p.devargs = devargs;
  c.ports.push_back(p);
  return c;
}

TEST(EalArgsTest, DefaultIsNoHugepagesUniquePrefixOneLcore) {
  std::vector<std::string> a =
      BuildEalArgs(OnePort("net_tap0,iface=rocemu0"), 4242, false);
  EXPECT_TRUE(Has(a, "--no-huge"));
  EXPECT_FALSE(Has(a, "--in-memory"));
  EXPECT_TRUE(Has(a, "--no-pci"));
  EXPECT_TRUE(Has(a, "--no-shconf"));
  EXPECT_TRUE(Has(a, "--force-max-simd-bitwidth=512"));
  EXPECT_EQ(After(a, "--file-prefix"), "rocemu-4242");
  EXPECT_EQ(After(a, "-l"), "0");
  EXPECT_EQ(After(a, "-m"), "256");
  EXPECT_EQ(After(a, "--vdev"), "net_tap0,iface=rocemu0");
}

TEST(EalArgsTest, SeveralLcoresAreARange) {
  config::Config c = OnePort("net_null0");
  c.eal.lcore = 3;
  c.eal.lcores = 2;
  EXPECT_EQ(After(BuildEalArgs(c, 1, false), "-l"), "3-4");
  c.eal.lcores = 1;
  EXPECT_EQ(After(BuildEalArgs(c, 1, false), "-l"), "3");
}

TEST(EalArgsTest, HugepagesAreInMemoryWithSingleFileSegments) {
  config::Config c = OnePort("net_null0");
  std::vector<std::string> a = BuildEalArgs(c, 1, true);
  EXPECT_TRUE(Has(a, "--in-memory"));
  EXPECT_TRUE(Has(a, "--single-file-segments"));
  EXPECT_FALSE(Has(a, "--no-huge"));
  a = BuildEalArgs(c, 1, false);
  EXPECT_TRUE(Has(a, "--no-huge"));
  EXPECT_FALSE(Has(a, "--in-memory"));
  EXPECT_FALSE(Has(a, "--single-file-segments"));
  // memif zero copy stays off (docs/daemon.md, "Hugepages"): devargs pass
  // through as written.
  c = OnePort("net_memif0,role=client,socket=x");
  EXPECT_EQ(After(BuildEalArgs(c, 1, true), "--vdev"),
            "net_memif0,role=client,socket=x");
}

TEST(EalArgsTest, PciPortsAreAllowedNotVdevs) {
  config::Config c = OnePort("0000:00:04.0,rxq_cqe_comp_en=0");
  c.eal.file_prefix = "mine";
  c.eal.args = {"--no-telemetry"};
  std::vector<std::string> a = BuildEalArgs(c, 1, false);
  EXPECT_EQ(After(a, "-a"), "0000:00:04.0,rxq_cqe_comp_en=0");
  EXPECT_FALSE(Has(a, "--no-pci"));
  EXPECT_FALSE(Has(a, "--vdev"));
  EXPECT_EQ(After(a, "--file-prefix"), "mine");
  EXPECT_EQ(a.back(), "--no-telemetry");
}

TEST(EalArgsTest, RecognisesDeviceNames) {
  EXPECT_TRUE(IsPciDevargs("0000:3b:00.1"));
  EXPECT_TRUE(IsPciDevargs("3b:00.1,foo=1"));
  EXPECT_FALSE(IsPciDevargs("net_tap0,iface=a"));
  EXPECT_FALSE(IsPciDevargs("net_memif0,socket=/tmp/a:b.c"));
  EXPECT_EQ(DeviceName("net_af_packet0,iface=veth0"), "net_af_packet0");
  EXPECT_EQ(DeviceName("net_null0"), "net_null0");
}

}  // namespace
}  // namespace rocemu::emulator
