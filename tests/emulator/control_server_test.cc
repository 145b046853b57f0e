#include "emulator/control/control_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "gtest/gtest.h"
#include "tests/temp_dir.h"

namespace rocemu::emulator {
namespace {

TEST(JsonFieldsTest, ReadsStringAndBoolFields) {
  EXPECT_EQ(JsonStringField(R"({"cmd":"counters"})", "cmd"), "counters");
  EXPECT_EQ(JsonStringField(R"({ "cmd" : "capture", "x":1})", "cmd"),
            "capture");
  EXPECT_EQ(JsonStringField(R"({"other":"x"})", "cmd"), "");
  EXPECT_EQ(JsonStringField(R"({"cmd":5})", "cmd"), "");
  bool v = false;
  EXPECT_TRUE(JsonBoolField(R"({"enable": true})", "enable", &v));
  EXPECT_TRUE(v);
  EXPECT_TRUE(JsonBoolField(R"({"enable":false})", "enable", &v));
  EXPECT_FALSE(v);
  EXPECT_FALSE(JsonBoolField(R"({"enable":"yes"})", "enable", &v));
  // An error reply is JSON whose message reads back as given.
  EXPECT_EQ(nlohmann::json::parse(JsonError("a\"b\\c\n")),
            nlohmann::json({{"error", "a\"b\\c\n"}}));
}

TEST(JsonFieldsTest, StringsAreDecodedAndOnlyTopLevelFieldsCount) {
  // A parser, not a scanner: escapes decode, a quote inside a string does
  // not end it, and a nested object's field is not the request's.
  EXPECT_EQ(JsonStringField(R"({"name":"a\"b\u0041"})", "name"), "a\"bA");
  EXPECT_EQ(JsonStringField(R"({"x":{"cmd":"inner"},"y":1})", "cmd"), "");
  EXPECT_FALSE(JsonHasField(R"({"x":{"cmd":1}})", "cmd"));
  uint64_t v = 7;
  EXPECT_FALSE(JsonUintField(R"({"x":[{"len":5}]})", "len", &v));
  EXPECT_EQ(v, 7u);  // nothing written on a miss
}

TEST(JsonFieldsTest, ALineThatIsNotAJsonObjectHasNoFields) {
  for (const char* bad :
       {R"({"cmd":"counters")", R"({"cmd":"counters"} trailing)",
        R"(["cmd","counters"])", R"("cmd")", "", "{\"cmd\":\"a\x01\"}"}) {
    EXPECT_EQ(JsonStringField(bad, "cmd"), "") << bad;
    EXPECT_FALSE(JsonHasField(bad, "cmd")) << bad;
  }
  // A NUL byte is no JSON whitespace: what follows it is not ignored (found
  // by control_fuzzer against its independent reader).
  using namespace std::string_view_literals;
  for (std::string_view bad :
       {"{\"cmd\":\"qps\"}\0"sv, "{\"cmd\":\"qps\"}\0{\"x\":1}"sv,
        "{\"cmd\":\"q\0ps\"}"sv}) {
    EXPECT_EQ(JsonStringField(bad, "cmd"), "");
    EXPECT_FALSE(JsonHasField(bad, "cmd"));
  }
}

class ControlServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.Make("ctl"));
    path_ = tmp_.path() + "/sub/ctl.sock";
  }
  int Connect() {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, path_.c_str());
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    return fd;
  }
  test_support::TempDir tmp_;
  std::string path_;
};

TEST_F(ControlServerTest, RepliesLargerThanTheSocketBufferArriveWhole) {
  // Many QPs make the counters reply megabytes long: what the socket does
  // not take at once is sent on later polls, byte for byte.
  std::string big(8u << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4096) big[i] = 'a' + (i / 4096) % 26;
  ControlServer server;
  ASSERT_TRUE(
      server.Listen(path_, 0600, [&](std::string_view) { return big; }).ok());
  int fd = Connect();
  // Half-close after the request, as `socat` and scripts do.
  ASSERT_EQ(send(fd, "counters\n", 9, 0), 9);
  ASSERT_EQ(shutdown(fd, SHUT_WR), 0);
  std::string got;
  for (int i = 0; i < 20000 && got.size() < big.size() + 1; ++i) {
    server.Poll();
    char buf[65536];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
      got.append(buf, static_cast<size_t>(n));
    }
  }
  ASSERT_EQ(got.size(), big.size() + 1);
  EXPECT_TRUE(got == big + "\n");
  // Everything sent: the server closes the connection.
  server.Poll();
  char c;
  EXPECT_EQ(recv(fd, &c, 1, 0), 0);
  close(fd);
  server.Close();
}

TEST_F(ControlServerTest, AnswersOneLinePerRequestWithTheConfiguredMode) {
  ControlServer server;
  ASSERT_TRUE(server
                  .Listen(path_, 0640,
                          [](std::string_view req) {
                            return "{\"echo\":\"" +
                                   JsonStringField(req, "cmd") + "\"}";
                          })
                  .ok());
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  int fd = Connect();
  const char req[] = "{\"cmd\":\"counters\"}\n{\"cmd\":\"ping\"}\n";
  ASSERT_EQ(send(fd, req, sizeof(req) - 1, 0),
            static_cast<ssize_t>(sizeof(req) - 1));
  std::string got;
  for (int i = 0; i < 200 && got.size() < 38; ++i) {
    server.Poll();
    char buf[256];
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) got.append(buf, static_cast<size_t>(n));
    usleep(1000);
  }
  EXPECT_EQ(got, "{\"echo\":\"counters\"}\n{\"echo\":\"ping\"}\n");
  close(fd);
  server.Close();
  EXPECT_NE(access(path_.c_str(), F_OK), 0) << "socket file left behind";
}

TEST_F(ControlServerTest, RefusesALiveSocketReplacesAStaleOne) {
  auto handler = [](std::string_view) { return std::string("{}"); };
  {
    ControlServer first;
    ASSERT_TRUE(first.Listen(path_, 0660, handler).ok());
    ControlServer second;
    absl::Status s = second.Listen(path_, 0660, handler);
    EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;
  }
  // A socket file nobody listens on (a crashed daemon) is replaced.
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strcpy(a.sun_path, path_.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  close(fd);
  ControlServer third;
  EXPECT_TRUE(third.Listen(path_, 0660, handler).ok());
}

}  // namespace
}  // namespace rocemu::emulator

namespace rocemu::emulator {
namespace {

TEST(ControlRequestTest, OneParseAnswersEveryFieldByType) {
  const ControlRequest r(
      R"({"cmd":"qp_why","qpn":17,"enable":true,"neg":-1,"big":1e3,)"
      R"("port":"p\u0030","inner":{"qpn":5}})");
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r.String("cmd"), "qp_why");
  EXPECT_EQ(r.String("port"), "p0");
  EXPECT_EQ(r.String("qpn"), "");  // a number is no string
  uint64_t v = 99;
  EXPECT_TRUE(r.Uint("qpn", &v));
  EXPECT_EQ(v, 17u);
  EXPECT_FALSE(r.Uint("neg", &v));
  EXPECT_FALSE(r.Uint("big", &v));  // a float, even a whole one
  EXPECT_FALSE(r.Uint("cmd", &v));
  EXPECT_EQ(v, 17u);  // misses leave the value alone
  bool b = false;
  EXPECT_TRUE(r.Bool("enable", &b));
  EXPECT_TRUE(b);
  EXPECT_FALSE(r.Bool("qpn", &b));
  EXPECT_TRUE(r.Has("inner"));
  EXPECT_FALSE(r.Has("absent"));
  // Only top-level members: "inner"'s qpn is not the request's.
  EXPECT_FALSE(ControlRequest(R"({"inner":{"qpn":5}})").Uint("qpn", &v));
}

TEST(ControlRequestTest, ALineWithANulOrNotAnObjectHasNoField) {
  const std::string with_nul("{\"cmd\":\"qps\"}\0tail", 18);
  for (const std::string& line :
       {with_nul, std::string("counters"), std::string("[1,2]"),
        std::string("{\"cmd\":"), std::string("")}) {
    const ControlRequest r(line);
    EXPECT_FALSE(r.is_object()) << line;
    EXPECT_FALSE(r.Has("cmd")) << line;
    EXPECT_EQ(r.String("cmd"), "") << line;
  }
}

TEST(JsonUintFieldTest, ReadsNumbersAndRejectsOthers) {
  uint64_t v = 0;
  EXPECT_TRUE(JsonUintField(R"({"cmd":"x","len": 4096,"a":1})", "len", &v));
  EXPECT_EQ(v, 4096u);
  EXPECT_TRUE(JsonUintField(R"({"addr":18446744073709551615})", "addr", &v));
  EXPECT_EQ(v, ~uint64_t{0});
  EXPECT_FALSE(JsonUintField(R"({"len":"12"})", "len", &v));
  EXPECT_FALSE(JsonUintField(R"({"len":-1})", "len", &v));
  EXPECT_FALSE(JsonUintField(R"({"len":12.5})", "len", &v));
  EXPECT_FALSE(JsonUintField(R"({"laddr":5})", "addr", &v));
  EXPECT_FALSE(JsonUintField(R"({"len":18446744073709551616})", "len", &v));
  // Whitespace after a number is whitespace, tabs included (found by
  // control_fuzzer).
  EXPECT_TRUE(JsonUintField("{\"len\": 5\t}", "len", &v));
  EXPECT_EQ(v, 5u);
}

// A key's text may appear first as another field's value; the field is
// the quoted key followed by a colon (found by control_fuzzer).
TEST(JsonFieldsTest, AKeyShadowedByAnEarlierValueIsStillFound) {
  const char* req = R"({"port":"ip","ip":"10.0.0.1","seed":"x","qpn":7})";
  EXPECT_EQ(JsonStringField(req, "ip"), "10.0.0.1");
  uint64_t v = 0;
  EXPECT_TRUE(JsonUintField(req, "qpn", &v));
  EXPECT_EQ(v, 7u);
  EXPECT_TRUE(JsonHasField(req, "ip"));
  EXPECT_TRUE(JsonHasField(req, "seed"));
  EXPECT_FALSE(JsonHasField(R"({"cmd":"seed"})", "seed"));
  EXPECT_FALSE(JsonHasField(R"({"cmd":"x"})", "len"));
}

}  // namespace
}  // namespace rocemu::emulator
