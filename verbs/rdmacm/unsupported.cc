// What rocemu's librdmacm does not offer fails as librdmacm fails where
// the feature is missing: the rsocket I/O maps (riomap, riowrite), with
// ENOTSUP. Stream rsockets themselves are in rsocket*.cc. They stay
// exported so that every program linked against Debian's librdmacm loads
// (all of them bind at load time).
#include <rdma/rsocket.h>

#include <cerrno>

extern "C" {

off_t riomap(int, void*, size_t, int, int, off_t) {
  errno = ENOTSUP;
  return -1;
}

int riounmap(int, void*, size_t) {
  errno = ENOTSUP;
  return -1;
}

size_t riowrite(int, const void*, size_t, off_t, int) {
  errno = ENOTSUP;
  return 0;
}

}  // extern "C"
