#include "emulator/port/hugepages.h"

#include <string>

#include "gtest/gtest.h"

namespace rocemu::emulator {
namespace {

// /proc/meminfo as these machines print it, with the pool's counts.
std::string Meminfo(int total, int free, int rsvd, int page_kib = 2048) {
  return "MemTotal:       24684312 kB\n"
         "AnonHugePages:         0 kB\n"
         "HugePages_Total:    " +
         std::to_string(total) +
         "\n"
         "HugePages_Free:     " +
         std::to_string(free) +
         "\n"
         "HugePages_Rsvd:     " +
         std::to_string(rsvd) +
         "\n"
         "HugePages_Surp:        0\n"
         "Hugepagesize:       " +
         std::to_string(page_kib) +
         " kB\n"
         "Hugetlb:               0 kB\n";
}

constexpr char kNoMounts[] =
    "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
    "tmpfs /run tmpfs rw,nosuid,nodev,size=2468432k,mode=755 0 0\n";
constexpr char kMounted[] =
    "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
    "hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n";

TEST(HugepagesTest, ParsesMeminfoAndMounts) {
  HugepageFacts f = ParseHugepageFacts(Meminfo(512, 300, 20), kMounted);
  EXPECT_EQ(f.page_kib, 2048u);
  EXPECT_EQ(f.total, 512u);
  EXPECT_EQ(f.free, 300u);
  EXPECT_EQ(f.reserved, 20u);
  EXPECT_EQ(f.available(), 280u);
  EXPECT_TRUE(f.mounted);
  EXPECT_FALSE(ParseHugepageFacts(Meminfo(512, 300, 0), kNoMounts).mounted);
}

TEST(HugepagesTest, AMountCountsOnlyForTheDefaultSize) {
  // A 1 GiB mount does not serve 2 MiB pages; one without pagesize= does.
  EXPECT_FALSE(ParseHugepageFacts(
                   Meminfo(8, 8, 0),
                   "none /mnt/huge1g hugetlbfs rw,relatime,pagesize=1024M 0 0")
                   .mounted);
  EXPECT_TRUE(ParseHugepageFacts(
                  Meminfo(8, 8, 0, 1048576),
                  "none /mnt/huge1g hugetlbfs rw,relatime,pagesize=1G 0 0")
                  .mounted);
  EXPECT_TRUE(
      ParseHugepageFacts(Meminfo(8, 8, 0), "nodev /huge hugetlbfs rw 0 0")
          .mounted);
}

TEST(HugepagesTest, MissingOrGarbledInputLeavesZeros) {
  HugepageFacts f = ParseHugepageFacts("", "");
  EXPECT_EQ(f.page_kib, 0u);
  EXPECT_EQ(f.total, 0u);
  EXPECT_FALSE(f.mounted);
  f = ParseHugepageFacts("HugePages_Total: lots\nHugePages_Free:\n", "x y\n");
  EXPECT_EQ(f.total, 0u);
  EXPECT_EQ(f.free, 0u);
  // More reserved than free (a racing reader) is nothing available.
  EXPECT_EQ(ParseHugepageFacts(Meminfo(4, 2, 3), "").available(), 0u);
}

TEST(HugepagesTest, AutoUsesThemWhenEnoughAreFree) {
  // 256 free 2 MiB pages are exactly 512 MiB.
  absl::StatusOr<HugepageChoice> c =
      ChooseHugepages(config::Hugepages::kAuto, 512,
                      ParseHugepageFacts(Meminfo(1024, 256, 0), kNoMounts));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->use);
  EXPECT_NE(c->why.find("256 free x 2 MiB >= 512 MiB"), std::string::npos)
      << c->why;
  EXPECT_NE(c->why.find("--in-memory"), std::string::npos) << c->why;
}

TEST(HugepagesTest, AutoFallsBackWhenTooFewAreFree) {
  // Reserved pages (Rsvd) are promised to someone else: 260 free but 10
  // of them taken leaves 250 < 256.
  absl::StatusOr<HugepageChoice> c =
      ChooseHugepages(config::Hugepages::kAuto, 512,
                      ParseHugepageFacts(Meminfo(1024, 260, 10), kMounted));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->use);
  EXPECT_NE(c->why.find("250 free x 2 MiB < 512 MiB asked"), std::string::npos)
      << c->why;
  EXPECT_NE(c->why.find("--no-huge"), std::string::npos) << c->why;
  // A smaller daemon fits in the same pool.
  c = ChooseHugepages(config::Hugepages::kAuto, 256,
                      ParseHugepageFacts(Meminfo(1024, 260, 10), kMounted));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->use);
}

TEST(HugepagesTest, AutoWithoutAPoolSaysSo) {
  absl::StatusOr<HugepageChoice> c =
      ChooseHugepages(config::Hugepages::kAuto, 128,
                      ParseHugepageFacts(Meminfo(0, 0, 0), kNoMounts));
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->use);
  EXPECT_NE(c->why.find("vm.nr_hugepages is 0"), std::string::npos) << c->why;
  c = ChooseHugepages(config::Hugepages::kAuto, 128, HugepageFacts{});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->use);
  EXPECT_NE(c->why.find("no hugetlb"), std::string::npos) << c->why;
}

TEST(HugepagesTest, NoNeverUsesThem) {
  absl::StatusOr<HugepageChoice> c =
      ChooseHugepages(config::Hugepages::kNo, 64,
                      ParseHugepageFacts(Meminfo(4096, 4096, 0), kMounted));
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->use);
}

TEST(HugepagesTest, YesFailsClearlyWhenShort) {
  absl::StatusOr<HugepageChoice> c =
      ChooseHugepages(config::Hugepages::kYes, 512,
                      ParseHugepageFacts(Meminfo(200, 120, 0), kMounted));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(c.status().message().find("eal.hugepages is yes"),
            std::string::npos);
  EXPECT_NE(c.status().message().find("120 free x 2 MiB < 512 MiB"),
            std::string::npos)
      << c.status();
  EXPECT_FALSE(
      ChooseHugepages(config::Hugepages::kYes, 64, HugepageFacts{}).ok());
  c = ChooseHugepages(config::Hugepages::kYes, 64,
                      ParseHugepageFacts(Meminfo(200, 120, 0), kNoMounts));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->use);
}

}  // namespace
}  // namespace rocemu::emulator
