#include "emulator/control/socket_path.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace rocemu::emulator {

absl::Status ClaimSocketPath(const std::string& path, int type) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("socket path too long: ", path));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    const std::string dir = path.substr(0, slash);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::UnavailableError(
          absl::StrCat("cannot create ", dir, ": ", std::strerror(errno)));
    }
  }
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return absl::OkStatus();
  if (!S_ISSOCK(st.st_mode)) {
    return absl::AlreadyExistsError(
        absl::StrCat(path, " exists and is not a socket"));
  }
  const int probe = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  const bool live =
      probe >= 0 &&
      connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  if (probe >= 0) close(probe);
  if (live) {
    return absl::AlreadyExistsError(
        absl::StrCat("another daemon is listening on ", path));
  }
  unlink(path.c_str());  // a stale socket of a daemon that died
  return absl::OkStatus();
}

}  // namespace rocemu::emulator
