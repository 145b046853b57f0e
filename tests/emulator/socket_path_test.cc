#include "emulator/control/socket_path.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/temp_dir.h"

namespace rocemu::emulator {
namespace {

class SocketPathTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(tmp_.Make("sockpath")); }
  // A socket of `type` bound at `path`; listening if `listen_too`.
  static int Bind(const std::string& path, int type, bool listen_too) {
    int fd = socket(AF_UNIX, type, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        (listen_too && listen(fd, 1) != 0)) {
      close(fd);
      return -1;
    }
    return fd;
  }
  static bool Exists(const std::string& path) {
    struct stat st;
    return lstat(path.c_str(), &st) == 0;
  }
  test_support::TempDir tmp_;
};

TEST_F(SocketPathTest, CreatesTheDirectory) {
  const std::string path = tmp_.path() + "/sub/s.sock";
  ASSERT_TRUE(ClaimSocketPath(path, SOCK_STREAM).ok());
  struct stat st;
  ASSERT_EQ(stat((tmp_.path() + "/sub").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  const mode_t mask = umask(0);
  umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0755u & ~mask);
  EXPECT_FALSE(Exists(path));
}

TEST_F(SocketPathTest, NeverRemovesAFile) {
  const std::string path = tmp_.path() + "/file";
  std::ofstream(path) << "an operator's file";
  absl::Status s = ClaimSocketPath(path, SOCK_STREAM);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;
  EXPECT_NE(s.message().find("is not a socket"), std::string::npos) << s;
  EXPECT_TRUE(Exists(path));
}

TEST_F(SocketPathTest, RefusesALiveListenerOfTheSameType) {
  const std::string path = tmp_.path() + "/s.sock";
  for (int type : {SOCK_STREAM, SOCK_SEQPACKET}) {
    int fd = Bind(path, type, /*listen_too=*/true);
    ASSERT_GE(fd, 0);
    absl::Status s = ClaimSocketPath(path, type);
    EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;
    EXPECT_NE(s.message().find("another daemon is listening"),
              std::string::npos)
        << s;
    EXPECT_TRUE(Exists(path));  // the live daemon keeps its socket
    close(fd);
    unlink(path.c_str());
  }
}

TEST_F(SocketPathTest, RemovesAStaleSocket) {
  // A daemon that died: its socket file stays, nobody listens.
  const std::string path = tmp_.path() + "/s.sock";
  int fd = Bind(path, SOCK_SEQPACKET, /*listen_too=*/false);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_TRUE(Exists(path));
  ASSERT_TRUE(ClaimSocketPath(path, SOCK_SEQPACKET).ok());
  EXPECT_FALSE(Exists(path));
}

TEST_F(SocketPathTest, RefusesAPathTooLongForSockaddr) {
  const std::string path =
      tmp_.path() + "/" + std::string(sizeof(sockaddr_un{}.sun_path), 'x');
  EXPECT_EQ(ClaimSocketPath(path, SOCK_STREAM).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rocemu::emulator
