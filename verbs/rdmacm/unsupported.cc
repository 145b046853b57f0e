// What rocemu's librdmacm does not offer fails as librdmacm fails where the
// kernel lacks it: rsockets (the socket API over RDMA, a library of its own
// in rdma-core) with ENOSYS. They are exported so that every program linked
// against Debian's librdmacm loads (all of them bind at load time).
#include <fcntl.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>
#include <sys/select.h>

#include <cerrno>

namespace {

template <typename T>
T Fail(int err) {
  errno = err;
  return static_cast<T>(-1);
}

}  // namespace

extern "C" {

int rsocket(int, int, int) { return Fail<int>(ENOSYS); }
int rbind(int, const sockaddr*, socklen_t) { return Fail<int>(ENOSYS); }
int rlisten(int, int) { return Fail<int>(ENOSYS); }
int raccept(int, sockaddr*, socklen_t*) { return Fail<int>(ENOSYS); }
int rconnect(int, const sockaddr*, socklen_t) { return Fail<int>(ENOSYS); }
int rshutdown(int, int) { return Fail<int>(ENOSYS); }
int rclose(int) { return Fail<int>(ENOSYS); }
ssize_t rrecv(int, void*, size_t, int) { return Fail<ssize_t>(ENOSYS); }
ssize_t rrecvfrom(int, void*, size_t, int, sockaddr*, socklen_t*) {
  return Fail<ssize_t>(ENOSYS);
}
ssize_t rrecvmsg(int, msghdr*, int) { return Fail<ssize_t>(ENOSYS); }
ssize_t rsend(int, const void*, size_t, int) { return Fail<ssize_t>(ENOSYS); }
ssize_t rsendto(int, const void*, size_t, int, const sockaddr*, socklen_t) {
  return Fail<ssize_t>(ENOSYS);
}
ssize_t rsendmsg(int, const msghdr*, int) { return Fail<ssize_t>(ENOSYS); }
ssize_t rread(int, void*, size_t) { return Fail<ssize_t>(ENOSYS); }
ssize_t rreadv(int, const iovec*, int) { return Fail<ssize_t>(ENOSYS); }
ssize_t rwrite(int, const void*, size_t) { return Fail<ssize_t>(ENOSYS); }
ssize_t rwritev(int, const iovec*, int) { return Fail<ssize_t>(ENOSYS); }
// rpoll/rselect on ordinary fds would be poll/select; on rsockets (none
// exist here) they fail.
int rpoll(pollfd* fds, nfds_t nfds, int timeout) {
  return poll(fds, nfds, timeout);
}
int rselect(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds,
            timeval* timeout) {
  return select(nfds, readfds, writefds, exceptfds, timeout);
}
int rgetpeername(int, sockaddr*, socklen_t*) { return Fail<int>(ENOSYS); }
int rgetsockname(int, sockaddr*, socklen_t*) { return Fail<int>(ENOSYS); }
int rsetsockopt(int, int, int, const void*, socklen_t) {
  return Fail<int>(ENOSYS);
}
int rgetsockopt(int, int, int, void*, socklen_t*) { return Fail<int>(ENOSYS); }
int rfcntl(int, int, ...) { return Fail<int>(ENOSYS); }
off_t riomap(int, void*, size_t, int, int, off_t) {
  return Fail<off_t>(ENOSYS);
}
int riounmap(int, void*, size_t) { return Fail<int>(ENOSYS); }
size_t riowrite(int, const void*, size_t, off_t, int) {
  errno = ENOSYS;
  return 0;
}

}  // extern "C"
