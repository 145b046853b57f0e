// Whether an fd is an eventfd: one that stays readable until read, so a
// loop woken by it must consume it (memif's queue interrupts; a tun fd,
// the queue itself, is drained by its own reads instead).
#ifndef ROCEMU_EMULATOR_PORT_IS_EVENTFD_H_
#define ROCEMU_EMULATOR_PORT_IS_EVENTFD_H_

#include <unistd.h>

#include <cstring>
#include <string>

namespace rocemu::emulator {

inline bool IsEventFd(int fd) {
  char link[64];
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = readlink(path.c_str(), link, sizeof(link) - 1);
  if (n <= 0) return false;
  link[n] = '\0';
  return std::strcmp(link, "anon_inode:[eventfd]") == 0;
}

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_PORT_IS_EVENTFD_H_
