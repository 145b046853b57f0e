// An ordinary C program on Debian's <rdma/rsocket.h>, linked against
// Debian's librdmacm and run over rocemu's drop-in: the rsocket calls
// rstream does not make. The client connects without blocking (EINPROGRESS,
// rpoll, SO_ERROR), checks its peer's name, sends a pattern and half-closes
// (SHUT_WR: rsockets' CTRL SHUTDOWN); the server, whose listener is
// non-blocking (raccept EAGAIN, then rselect), peeks, reads to EOF, checks
// the pattern and echoes it back; the client reads the echo to EOF, and a
// send after its SHUT_WR fails with EPIPE. Datagram rsockets are refused.
//
//   rsocket_probe server|client ADDR PORT
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rsocket.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>

enum { kBytes = 100000 };

static int failures;

static void check(int ok, const char* what) {
  if (ok) {
    printf("ok   %s\n", what);
  } else {
    printf("FAIL %s (errno %d: %s)\n", what, errno, strerror(errno));
    ++failures;
  }
}

static uint8_t pattern(size_t i) { return (uint8_t)(i * 7 + (i >> 9)); }

static int pattern_ok(const uint8_t* buf, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (buf[i] != pattern(i)) return 0;
  }
  return 1;
}

// Reads until EOF (0) or an error; the byte count, or -1.
static ssize_t read_to_eof(int s, uint8_t* buf, size_t cap) {
  size_t got = 0;
  for (;;) {
    ssize_t n = rrecv(s, buf + got, cap - got, 0);
    if (n == 0) return (ssize_t)got;
    if (n < 0) return -1;
    got += (size_t)n;
    if (got == cap) return (ssize_t)got;
  }
}

static int send_all(int s, const uint8_t* buf, size_t n) {
  size_t off = 0;
  while (off < n) {
    ssize_t k = rsend(s, buf + off, n - off, 0);
    if (k <= 0) return -1;
    off += (size_t)k;
  }
  return 0;
}

static int server(const struct sockaddr_in* addr) {
  int l = rsocket(AF_INET, SOCK_STREAM, 0);
  check(l >= 0, "server: rsocket");
  int one = 1;
  check(rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0,
        "server: SO_REUSEADDR");
  check(rbind(l, (const struct sockaddr*)addr, sizeof(*addr)) == 0,
        "server: rbind");
  check(rlisten(l, 4) == 0, "server: rlisten");
  check(rfcntl(l, F_SETFL, O_NONBLOCK) == 0, "server: listener O_NONBLOCK");
  errno = 0;
  check(raccept(l, NULL, NULL) < 0 && errno == EAGAIN,
        "server: raccept with no request: EAGAIN");
  printf("listening\n");
  fflush(stdout);
  fd_set rd;
  FD_ZERO(&rd);
  FD_SET(l, &rd);
  struct timeval tv = {20, 0};
  check(rselect(l + 1, &rd, NULL, NULL, &tv) == 1 && FD_ISSET(l, &rd),
        "server: rselect: the listener readable");
  struct sockaddr_in peer;
  socklen_t plen = sizeof(peer);
  int s = raccept(l, (struct sockaddr*)&peer, &plen);
  check(s >= 0 && peer.sin_family == AF_INET, "server: raccept");
  if (s < 0) return 1;
  // As accept(2) and rdma-core: the listener's O_NONBLOCK is its own.
  check((rfcntl(s, F_GETFL) & O_NONBLOCK) == 0,
        "server: the accepted socket blocks");
  uint8_t* buf = malloc(kBytes + 16);
  uint8_t head[16];
  check(rrecv(s, head, sizeof(head), MSG_PEEK | MSG_WAITALL) == 16,
        "server: MSG_PEEK 16 bytes");
  ssize_t n = read_to_eof(s, buf, kBytes + 16);
  check(n == kBytes, "server: read to EOF after the client's SHUT_WR");
  check(n > 16 && memcmp(head, buf, 16) == 0,
        "server: peeked bytes are the first read");
  check(n == kBytes && pattern_ok(buf, kBytes), "server: the pattern");
  check(send_all(s, buf, kBytes) == 0, "server: echo");
  check(rshutdown(s, SHUT_RDWR) == 0, "server: rshutdown");
  check(rclose(s) == 0 && rclose(l) == 0, "server: rclose");
  free(buf);
  printf("rsocket_probe server: %s\n", failures ? "FAILED" : "ok");
  return failures != 0;
}

static int client(const struct sockaddr_in* addr) {
  errno = 0;
  check(rsocket(AF_INET, SOCK_DGRAM, 0) < 0 && errno == ESOCKTNOSUPPORT,
        "client: SOCK_DGRAM refused with ESOCKTNOSUPPORT");
  int s = rsocket(AF_INET, SOCK_STREAM, 0);
  check(s >= 0, "client: rsocket");
  check(rfcntl(s, F_SETFL, O_NONBLOCK) == 0, "client: O_NONBLOCK");
  errno = 0;
  int r = rconnect(s, (const struct sockaddr*)addr, sizeof(*addr));
  check(r == 0 || errno == EINPROGRESS, "client: rconnect in progress");
  struct pollfd p = {s, POLLOUT, 0};
  check(rpoll(&p, 1, 20000) == 1 && (p.revents & POLLOUT),
        "client: rpoll POLLOUT once connected");
  int err = -1;
  socklen_t len = sizeof(err);
  check(rgetsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0,
        "client: SO_ERROR 0");
  check(rfcntl(s, F_SETFL, 0) == 0, "client: back to blocking");
  struct sockaddr_in peer;
  socklen_t plen = sizeof(peer);
  check(rgetpeername(s, (struct sockaddr*)&peer, &plen) == 0 &&
            peer.sin_addr.s_addr == addr->sin_addr.s_addr &&
            peer.sin_port == addr->sin_port,
        "client: rgetpeername is the server");
  uint8_t* buf = malloc(kBytes);
  for (size_t i = 0; i < kBytes; ++i) buf[i] = pattern(i);
  check(send_all(s, buf, kBytes) == 0, "client: rsend");
  check(rshutdown(s, SHUT_WR) == 0, "client: rshutdown(SHUT_WR)");
  errno = 0;
  check(rsend(s, buf, 1, 0) < 0 && errno == EPIPE,
        "client: rsend after SHUT_WR: EPIPE");
  memset(buf, 0, kBytes);
  ssize_t n = read_to_eof(s, buf, kBytes);
  check(n == kBytes && pattern_ok(buf, kBytes), "client: the echo");
  uint8_t extra;
  check(rrecv(s, &extra, 1, 0) == 0, "client: EOF after the echo");
  check(rclose(s) == 0, "client: rclose");
  free(buf);
  printf("rsocket_probe client: %s\n", failures ? "FAILED" : "ok");
  return failures != 0;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s server|client ADDR PORT\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)atoi(argv[3]));
  if (inet_pton(AF_INET, argv[2], &addr.sin_addr) != 1) return 2;
  return strcmp(argv[1], "server") == 0 ? server(&addr) : client(&addr);
}
