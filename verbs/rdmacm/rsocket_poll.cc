// rpoll and rselect over rsockets and ordinary fds together. An rsocket's
// readiness is computed from its state (completions, credits, CM events
// taken first); to sleep, rpoll arms the socket's CQ and waits on its
// completion channel and its CM event channel, next to the other fds.
#include <poll.h>
#include <rdma/rsocket.h>
#include <sys/select.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <vector>

#include "verbs/client/client_control.h"
#include "verbs/rdmacm/rsocket.h"

namespace {

using rocemu::rdmacm::rs::RSocket;
using rocemu::rdmacm::rs::State;
namespace rs = rocemu::rdmacm::rs;

// Only the socket's registry lookup can fail here, and then the fd is an
// ordinary one: no errno is left behind for that.
RSocket* FindQuiet(int fd) {
  const int saved = errno;
  RSocket* s = rs::Find(fd);
  errno = saved;
  return s;
}

short Revents(RSocket* s, short events) {
  std::lock_guard<std::mutex> lock(s->mu);
  switch (s->state) {
    case State::kListening:
      rs::ProcessCmEvents(s);
      return s->requests.empty() ? 0 : short(events & POLLIN);
    case State::kResolvingAddr:
    case State::kResolvingRoute:
    case State::kConnecting: {
      const int saved = errno;
      (void)rs::DriveConnect(s, false);
      errno = saved;
      if (!s->Connected()) {
        if (s->state == State::kConnectError) {
          return short((events & (POLLIN | POLLOUT)) | POLLERR);
        }
        return 0;
      }
      break;
    }
    case State::kConnectError:
      return short((events & (POLLIN | POLLOUT)) | POLLERR);
    case State::kInit:
    case State::kBound:
      return 0;
    default:
      break;
  }
  rs::Progress(s);
  short r = 0;
  if ((events & POLLIN) != 0 && (s->HaveData() || !s->readable)) r |= POLLIN;
  if ((events & POLLOUT) != 0 && s->Connected() && rs::CanSend(s)) {
    r |= POLLOUT;
  }
  // Hang-up and error once what arrived before them has been read:
  // rstream's poll loop gives up on either.
  if (!s->HaveData()) {
    if (s->state == State::kDisconnected) r |= POLLHUP;
    if (s->state == State::kError) r |= POLLERR;
  }
  return r;
}

int CheckAll(pollfd* fds, nfds_t nfds) {
  int n = 0;
  for (nfds_t i = 0; i < nfds; ++i) {
    RSocket* s = FindQuiet(fds[i].fd);
    if (s != nullptr) {
      fds[i].revents = Revents(s, fds[i].events);
    } else {
      fds[i].revents = 0;
      (void)poll(&fds[i], 1, 0);
    }
    if (fds[i].revents != 0) ++n;
  }
  return n;
}

}  // namespace

extern "C" {

int rpoll(pollfd* fds, nfds_t nfds, int timeout) {
  const int64_t start = rocemu::verbs::client::MonotonicNs();
  std::vector<pollfd> wait;
  std::vector<RSocket*> owners;
  for (;;) {
    int n = CheckAll(fds, nfds);
    if (n != 0 || timeout == 0) return n;
    // A short spin before sleeping, as in rsend/rrecv.
    if (rocemu::verbs::client::MonotonicNs() - start < rs::kWaitSpinNs) {
      continue;
    }
    wait.clear();
    owners.clear();
    for (nfds_t i = 0; i < nfds; ++i) {
      RSocket* s = FindQuiet(fds[i].fd);
      if (s == nullptr) {
        wait.push_back(fds[i]);
        owners.push_back(nullptr);
        continue;
      }
      int w[2], k;
      {
        std::lock_guard<std::mutex> lock(s->mu);
        rs::WaitFds(s, w, &k);
      }
      for (int j = 0; j < k; ++j) {
        wait.push_back({w[j], POLLIN, 0});
        owners.push_back(s);
      }
    }
    // Whatever came before the CQs were armed would not wake the poll.
    n = CheckAll(fds, nfds);
    if (n != 0) return n;
    int sleep_ms = rs::kMaxSleepMs;
    if (timeout > 0) {
      const int64_t left =
          int64_t(timeout) -
          (rocemu::verbs::client::MonotonicNs() - start) / 1000000;
      if (left <= 0) return 0;
      sleep_ms = int(std::min<int64_t>(left, sleep_ms));
    }
    const int r = poll(wait.data(), wait.size(), sleep_ms);
    if (r < 0) return -1;
    for (size_t i = 0; i < wait.size(); ++i) {
      if (owners[i] != nullptr && wait[i].revents != 0) {
        std::lock_guard<std::mutex> lock(owners[i]->mu);
        rs::DrainCqEvents(owners[i]);
      }
    }
  }
}

int rselect(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds,
            timeval* timeout) {
  std::vector<pollfd> p;
  for (int fd = 0; fd < nfds; ++fd) {
    short ev = 0;
    bool want = false;
    if (readfds != nullptr && FD_ISSET(fd, readfds)) ev |= POLLIN, want = true;
    if (writefds != nullptr && FD_ISSET(fd, writefds)) {
      ev |= POLLOUT, want = true;
    }
    if (exceptfds != nullptr && FD_ISSET(fd, exceptfds)) want = true;
    if (want) p.push_back({fd, ev, 0});
  }
  const int ms = timeout == nullptr
                     ? -1
                     : int(timeout->tv_sec * 1000 + timeout->tv_usec / 1000);
  const int ret = rpoll(p.data(), p.size(), ms);
  if (readfds != nullptr) FD_ZERO(readfds);
  if (writefds != nullptr) FD_ZERO(writefds);
  if (exceptfds != nullptr) FD_ZERO(exceptfds);
  if (ret <= 0) return ret;
  int cnt = 0;
  for (const pollfd& q : p) {
    if (readfds != nullptr && (q.revents & (POLLIN | POLLHUP)) != 0) {
      FD_SET(q.fd, readfds);
      ++cnt;
    }
    if (writefds != nullptr && (q.revents & POLLOUT) != 0) {
      FD_SET(q.fd, writefds);
      ++cnt;
    }
    if (exceptfds != nullptr && (q.revents & ~(POLLIN | POLLOUT)) != 0) {
      FD_SET(q.fd, exceptfds);
      ++cnt;
    }
  }
  return cnt;
}

}  // extern "C"
