// The daemon's control socket on whatever a local client sends: the JSON
// field readers (ControlRequest, parsed once, and its one-field wrappers), the
// replies' string escaping (verbs::DumpJson) on arbitrary bytes for every
// key the daemon and its test hooks look up, and a ControlServer on a
// temporary Unix socket fed by one or two non-blocking clients that write
// the input in input-chosen chunks (partial lines, lines over the request
// limit, NUL bytes, half or full close), with the test hooks behind the
// handler when the input asks.
// Each input starts from a fresh server, so it is replayable alone.
//
// Invariants (abort on violation):
//  - the readers (nlohmann-json underneath) agree with an independent
//    reader of the same line (reference_json.h, RFC 8259 written out): a field
//    is found only as a top-level member of a line that is one JSON object, a
//    string reads back decoded, a number only if it is an integer in [0, 2^64),
//    a boolean only as true/false; on a miss nothing is written;
//  - on a valid flat JSON object built from the input, each key reads back
//    the value it was given (strings decoded, numbers past 64 bits not at
//    all), wherever the same text appears as a value, and a key it does not
//    hold reads nothing (checked for the keys a reader could confuse with
//    one it holds, and one more);
//  - a string as DumpJson escapes it is a JSON string that decodes back
//    to its input (bytes that are not UTF-8 to U+FFFD), and the string
//    reader reads that decoded value;
//  - every complete non-empty line a client sent gets exactly one reply
//    line, in order, echoing it; the server closes a connection only after
//    a half-close (answering a last unterminated line) or after refusing a
//    line longer than the request limit; bounded Poll() rounds settle it
//    all, and a new client is still served afterwards (when asked);
//  - Listen refuses a path that is a regular file or a live socket and
//    replaces a stale one.
//
// Input: [mode u8][early close after chunk u8][n u8][n chunk sizes u8]
// then the bytes the clients send. Mode bits: 0-1 what is at the socket
// path first (Prelude), 2 two clients, 3 half-close at the end, 4 close the
// first client early, 5 test hooks, 6 probe with a new client. The same
// bytes are read a second way as fields of a JSON object
// (CheckBuiltObject).
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/config.h"
#include "emulator/control/control_server.h"
#include "emulator/control/test_hooks.h"
#include "emulator/logging.h"
#include "emulator/port/rnic_port.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/reference_json.h"
#include "verbs/server/json_writer.h"

namespace {

using namespace rocemu::emulator;  // NOLINT

// A string as the daemon's replies write it (verbs::DumpJson), without its
// quotes: the inside of a JSON string literal, for the lines built here.
std::string JsonEscape(std::string_view s) {
  const std::string quoted =
      rocemu::verbs::DumpJson(nlohmann::json(std::string(s)));
  return quoted.substr(1, quoted.size() - 2);
}

// Every key emulator/daemon.cc and emulator/control/test_hooks.cc look up.
// clang-format off
constexpr std::string_view kKeys[] = {
    "access", "ah", "cmd", "compare_add", "count", "cq", "cqe", "dest_qpn",
    "enable", "imm", "ip", "key", "laddr", "len", "lkey", "max",
    "max_dest_rd_atomic", "max_rd_atomic", "max_recv_wr", "max_send_wr",
    "min_rnr_timer", "mtu", "offset", "opcode", "pkey_index", "port",
    "port_num", "qkey", "qpn", "raddr", "recv_cq", "remote_ip", "remote_qkey",
    "remote_qpn", "retry_cnt", "rkey", "rnr_retry", "rq_psn", "seed",
    "send_cq", "sgid_index", "signaled", "sl", "sq_psn", "state", "summary",
    "swap", "timeout", "traffic_class", "type", "wr_id"};
// clang-format on
// control_server.cc's limit on a request still without its newline.
constexpr size_t kMaxRequest = 4096;
constexpr std::string_view kTooLong = "{\"error\":\"request too long\"}";
constexpr int kMaxRounds = 200;  // Poll() rounds an input may take to settle

// Debian's Abseil has its own string_view; StrCat does not take std's.
absl::string_view A(std::string_view s) { return {s.data(), s.size()}; }

// The readers of `r` (the line `s` parsed once) for `key`, against an
// independent reader of the same line (reference_json.h: RFC 8259
// written out, no nlohmann).
void CheckReaders(const ControlRequest& r, std::string_view s,
                  std::string_view key) {
  using rocemu::fuzz::RefJson;
  using Kind = rocemu::fuzz::RefValue::Kind;
  const std::optional<rocemu::fuzz::RefValue> m = RefJson::Member(s, key);
  FUZZ_CHECK(r.Has(key) == m.has_value());
  const std::string str = r.String(key);
  FUZZ_CHECK(str == (m.has_value() && m->kind == Kind::kString ? m->str : ""));

  constexpr uint64_t kUntouched = 0xDEADBEEFCAFEF00Dull;
  uint64_t num = kUntouched;
  const bool num_ok = r.Uint(key, &num);
  FUZZ_CHECK(num_ok == (m.has_value() && m->kind == Kind::kUnsigned));
  FUZZ_CHECK(num == (num_ok ? m->num : kUntouched));

  std::optional<bool> want_bool;
  if (m.has_value() && m->kind == Kind::kBool) want_bool = m->flag;
  // Starting from the value a hit would not write shows a stray write.
  const bool initial = !want_bool.value_or(false);
  bool b = initial;
  const bool ok = r.Bool(key, &b);
  FUZZ_CHECK(ok == want_bool.has_value());
  FUZZ_CHECK(b == (ok ? *want_bool : initial));
}

// The one-field readers (each parses the line) agree with the parsed
// request.
void CheckOneFieldReaders(const ControlRequest& r, std::string_view s,
                          std::string_view key) {
  FUZZ_CHECK(JsonHasField(s, key) == r.Has(key));
  FUZZ_CHECK(JsonStringField(s, key) == r.String(key));
  uint64_t a = 1, b = 1;
  FUZZ_CHECK(JsonUintField(s, key, &a) == r.Uint(key, &b) && a == b);
  bool x = false, y = false;
  FUZZ_CHECK(JsonBoolField(s, key, &x) == r.Bool(key, &y) && x == y);
}

// Adds `key` to `keys` unless it is there: a line that quotes one key a
// hundred times would otherwise repeat the same check a hundred times.
void AddKey(std::vector<std::string_view>* keys, std::string_view key) {
  if (std::find(keys->begin(), keys->end(), key) == keys->end()) {
    keys->push_back(key);
  }
}

// The keys worth checking on `req`: those it quotes (a reader can only
// find those), the daemon's own and one more.
std::vector<std::string_view> KeysIn(std::string_view req) {
  std::vector<std::string_view> keys = {"cmd", "port", "ip", "enable"};
  AddKey(&keys, kKeys[req.size() % std::size(kKeys)]);
  for (size_t q = req.find('"'); q != std::string_view::npos;) {
    const size_t end = req.find('"', q + 1);
    if (end == std::string_view::npos) break;
    const std::string_view token = req.substr(q + 1, end - q - 1);
    for (std::string_view k : kKeys) {
      if (k == token) AddKey(&keys, k);
    }
    q = end;  // a closing quote can open the next token for a reader
  }
  return keys;
}

// The string a JSON string literal's body decodes to; nullopt if it is not
// one.
std::optional<std::string> Decode(std::string_view body) {
  const std::string quoted = "\"" + std::string(body) + "\"";
  nlohmann::json j = nlohmann::json::parse(quoted, nullptr,
                                           /*allow_exceptions=*/false);
  if (!j.is_string()) return std::nullopt;
  return j.get<std::string>();
}

// Whether `s` is UTF-8 (what the escaper keeps byte for byte).
bool Utf8(std::string_view s) {
  const std::string v(s);
  using nlohmann::json;
  return json(v).dump(-1, ' ', false, json::error_handler_t::replace) ==
         json(v).dump(-1, ' ', false, json::error_handler_t::ignore);
}

void CheckEscape(std::string_view s) {
  const std::string e = JsonEscape(s);
  const std::optional<std::string> back = Decode(e);
  FUZZ_CHECK(back.has_value());
  if (Utf8(s)) FUZZ_CHECK(*back == s);
  FUZZ_CHECK(JsonStringField("{\"k\":\"" + e + "\"}", "k") == *back);
}

class Input {
 public:
  explicit Input(std::string_view d) : d_(d) {}
  bool empty() const { return i_ >= d_.size(); }
  uint8_t U8() { return i_ < d_.size() ? static_cast<uint8_t>(d_[i_++]) : 0; }
  std::string_view Bytes(size_t n) {
    n = std::min(n, d_.size() - std::min(i_, d_.size()));
    std::string_view v = d_.substr(std::min(i_, d_.size()), n);
    i_ += n;
    return v;
  }
  std::string_view Rest() { return Bytes(d_.size()); }

 private:
  std::string_view d_;
  size_t i_ = 0;
};

// A valid flat JSON object from the input read as fields
// [key u8][kind u8][len u8][bytes]: string, number (some past 64 bits),
// boolean or null values, blanks around the colon as the kind says; each
// key must read back.
void CheckBuiltObject(std::string_view data) {
  Input in(data);
  enum class Kind { kAbsent, kString, kNumber, kTooBig, kBool, kNull };
  struct Field {
    Kind kind = Kind::kAbsent;
    std::string text;  // string: raw value
    uint64_t num = 0;
    bool flag = false;
  };
  constexpr size_t kNumKeys = std::size(kKeys);
  Field fields[kNumKeys];
  static constexpr std::string_view kBlanks[] = {"", " ", "\t", " \t "};
  std::string json = "{";
  for (int n = 0; n < 24 && !in.empty(); ++n) {
    const size_t k = in.U8() % kNumKeys;
    const uint8_t kind = in.U8();
    const std::string_view bytes = in.Bytes(in.U8() % 48);
    if (fields[k].kind != Kind::kAbsent) continue;
    Field& f = fields[k];
    std::string value;
    switch (kind % 4) {
      case 0:
        f.kind = Kind::kString;
        f.text = std::string(bytes);
        value = "\"" + JsonEscape(bytes) + "\"";
        break;
      case 1:
        f.kind = Kind::kNumber;
        for (char c : bytes.substr(0, 8)) {
          f.num = (f.num << 8) | static_cast<uint8_t>(c);
        }
        value = absl::StrCat(f.num);
        // One more digit, past 64 bits when the value is large (not after
        // a lone 0: JSON has no leading zeros).
        if ((kind & 0x80) && f.num != 0) {
          value += '7';
          if (__builtin_mul_overflow(f.num, 10, &f.num) ||
              __builtin_add_overflow(f.num, 7, &f.num)) {
            f.kind = Kind::kTooBig;
          }
        }
        break;
      case 2:
        f.kind = Kind::kBool;
        f.flag = (kind & 4) != 0;
        value = f.flag ? "true" : "false";
        break;
      default:
        f.kind = Kind::kNull;
        value = "null";
    }
    absl::StrAppend(&json, json.size() > 1 ? "," : "",
                    A(kBlanks[(kind >> 3) & 3]), "\"", A(kKeys[k]), "\"",
                    A(kBlanks[(kind >> 5) & 3]), ":",
                    A(kBlanks[(kind >> 2) & 1]), value, A(kBlanks[kind >> 6]));
  }
  json += "}";
  // Every key, held or not: a key the object does not hold must read
  // nothing, however much of it a held key contains ("cq" in "send_cq").
  const ControlRequest r(json);
  FUZZ_CHECK(r.is_object());
  for (size_t k = 0; k < kNumKeys; ++k) {
    const Field& f = fields[k];
    const std::string_view key = kKeys[k];
    const std::string str = r.String(key);
    FUZZ_CHECK(r.Has(key) == (f.kind != Kind::kAbsent));
    uint64_t num = 0;
    const bool num_ok = r.Uint(key, &num);
    bool flag = false;
    const bool flag_ok = r.Bool(key, &flag);
    if (f.kind == Kind::kString) {
      const std::optional<std::string> back = Decode(JsonEscape(f.text));
      FUZZ_CHECK(back.has_value() && str == *back);
      if (Utf8(f.text)) FUZZ_CHECK(str == f.text);
    } else {
      FUZZ_CHECK(str.empty());
    }
    FUZZ_CHECK(num_ok == (f.kind == Kind::kNumber));
    if (num_ok) FUZZ_CHECK(num == f.num);
    FUZZ_CHECK(flag_ok == (f.kind == Kind::kBool));
    if (flag_ok) FUZZ_CHECK(flag == f.flag);
  }
}

// The test hooks over one RNIC whose neighbours resolve when the address
// ends in an even byte (the others answer "retry"); made on the first hook
// request of an input that enables them.
struct Hooks {
  bool enabled = false;
  std::unique_ptr<RnicPort> port;
  std::unique_ptr<TestHooks> hooks;
  uint64_t mr_bytes = 0;
  int calls = 0;
};

const rocemu::config::Config& HooksConfig() {
  static const rocemu::config::Config* config = [] {
    absl::StatusOr<rocemu::config::Config> c = rocemu::config::LoadConfigString(
        "ports:\n  - name: p0\n    devargs: net_null0\n"
        "    addresses: [10.77.9.1/24, fd77:9::1/64]\n",
        "hooks.yaml");
    FUZZ_CHECK(c.ok());
    return new rocemu::config::Config(*std::move(c));
  }();
  return *config;
}

void MakeHooks(Hooks* h) {
  absl::StatusOr<std::unique_ptr<RnicPort>> port =
      RnicPort::Create(HooksConfig(), 0, {2, 0, 0, 0x77, 9, 1},
                       [](const IpAddr& ip) -> std::optional<MacAddr> {
                         if (ip[15] % 2 != 0) return std::nullopt;
                         return MacAddr{2, 0, 0, 0x77, 9, ip[15]};
                       });
  FUZZ_CHECK(port.ok());
  h->port = *std::move(port);
  h->hooks = std::make_unique<TestHooks>(std::vector<RnicPort*>{h->port.get()},
                                         std::vector<std::string>{"p0"});
}

// Whether a hooks request stays within what one fuzz input may cost
// (the hooks' own limits allow gigabytes and 2^22-entry CQs).
bool Affordable(Hooks& h, std::string_view cmd, const ControlRequest& req) {
  if (++h.calls > 64) return false;
  uint64_t v = 0;
  if (cmd == "reg_mr" && req.Uint("len", &v)) {
    if (v > (1u << 20) || h.mr_bytes + v > (4u << 20)) return false;
    h.mr_bytes += v;
  }
  for (std::string_view key : {"cqe", "max_send_wr", "max_recv_wr", "count"}) {
    if (req.Uint(key, &v) && v > 1024) return false;
  }
  return true;
}

// The control handler: checks the readers on the request as the daemon
// would read it, runs a test hook if asked, and echoes the request.
std::string Handle(Hooks& hooks, std::string_view req) {
  const ControlRequest r(req);
  for (std::string_view key : KeysIn(req)) CheckReaders(r, req, key);
  CheckOneFieldReaders(r, req, kKeys[req.size() % std::size(kKeys)]);
  const std::string cmd = r.String("cmd");
  std::string hook;
  if (hooks.enabled && TestHooks::Handles(cmd) && Affordable(hooks, cmd, r)) {
    if (hooks.hooks == nullptr) MakeHooks(&hooks);
    hook = hooks.hooks->Handle(cmd, r);
    FUZZ_CHECK(hook.find('\n') == std::string::npos);
  }
  return absl::StrCat("{\"echo\":\"", JsonEscape(req), "\",\"cmd\":\"",
                      JsonEscape(cmd), "\",\"hook\":\"", JsonEscape(hook),
                      "\"}");
}

// The request a reply line echoes.
std::optional<std::string> Echoed(std::string_view reply) {
  if (!reply.starts_with("{\"echo\":\"")) return std::nullopt;
  const std::optional<rocemu::fuzz::RefValue> echo =
      rocemu::fuzz::RefJson::Member(reply, "echo");
  if (!echo.has_value() ||
      echo->kind != rocemu::fuzz::RefValue::Kind::kString) {
    return std::nullopt;
  }
  return echo->str;
}

// What an echo of `text` reads back as (bytes that are not UTF-8 become
// U+FFFD on the way out).
std::string Rendered(std::string_view text) {
  return Decode(JsonEscape(text)).value_or("(not escaped)");
}

std::vector<std::string_view> Split(std::string_view s,
                                    std::string_view* tail) {
  std::vector<std::string_view> lines;
  size_t nl;
  while ((nl = s.find('\n')) != std::string_view::npos) {
    lines.push_back(s.substr(0, nl));
    s.remove_prefix(nl + 1);
  }
  *tail = s;
  return lines;
}

struct Client {
  int fd = -1;
  std::string sent;  // what the socket took
  std::string got;
  bool eof = false;
  bool half_closed = false;
  bool gone = false;  // closed by us early, or refused by the server
};

int Connect(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  FUZZ_CHECK(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  FUZZ_CHECK(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) ==
             0);
  return fd;
}

// Reads what is there; true if anything changed.
bool Drain(Client& c) {
  if (c.fd < 0 || c.eof) return false;
  bool changed = false;
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
    if (n > 0) {
      c.got.append(buf, static_cast<size_t>(n));
      changed = true;
      continue;
    }
    if (n == 0 || errno == ECONNRESET) {
      c.eof = true;
      changed = true;
    }
    return changed;
  }
}

// Runs Poll() and reads the clients until nothing moves for a few rounds.
void Settle(ControlServer& server, std::vector<Client>& clients) {
  int quiet = 0;
  for (int round = 0; round < kMaxRounds; ++round) {
    server.Poll();
    bool changed = false;
    for (Client& c : clients) changed |= Drain(c);
    quiet = changed ? 0 : quiet + 1;
    // The server is synchronous: a round where nothing moved means the
    // next one would not move either (a second one is cheap insurance).
    if (quiet == 2) return;
  }
  FUZZ_CHECK(false && "the server did not settle");
}

// The replies `c` got for what it sent.
void CheckConversation(const Client& c) {
  FUZZ_CHECK(c.got.empty() || c.got.back() == '\n');
  std::string_view tail;
  const std::vector<std::string_view> sent = Split(c.sent, &tail);
  struct Request {
    std::string_view text;
    size_t line;
  };
  std::vector<Request> want;
  for (size_t i = 0; i < sent.size(); ++i) {
    std::string_view l = sent[i];
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (!l.empty()) want.push_back({l, i});
  }
  std::string_view unused;
  const std::vector<std::string_view> replies = Split(c.got, &unused);
  size_t answered = 0;
  bool tail_answered = false;
  bool refused = false;
  for (size_t r = 0; r < replies.size(); ++r) {
    if (replies[r] == kTooLong) {
      FUZZ_CHECK(r + 1 == replies.size());
      refused = true;
      break;
    }
    const std::optional<std::string> echo = Echoed(replies[r]);
    FUZZ_CHECK(echo.has_value());
    if (answered < want.size()) {
      FUZZ_CHECK(*echo == Rendered(want[answered].text));
      ++answered;
      continue;
    }
    // Only a last line without its newline, after the client's shutdown.
    FUZZ_CHECK(c.half_closed && !tail_answered && *echo == Rendered(tail));
    tail_answered = true;
  }
  if (refused) {
    // Only a line over the limit is refused, and the connection then ends.
    FUZZ_CHECK(c.eof);
    bool long_line = tail.size() > kMaxRequest;
    const size_t from =
        answered < want.size() ? want[answered].line : sent.size();
    for (size_t i = from; i < sent.size(); ++i) {
      long_line |= sent[i].size() > kMaxRequest;
    }
    FUZZ_CHECK(long_line);
    return;
  }
  FUZZ_CHECK(answered == want.size());
  FUZZ_CHECK(c.eof == c.half_closed);
  if (c.half_closed) FUZZ_CHECK(tail_answered == !tail.empty());
}

// The socket's path, private to this process; every input leaves nothing
// there (only a crash does). tmpfs when there is one: binding a socket on
// ext4 costs more than the rest of an input.
const std::string& SocketPath() {
  static const std::string path = [] {
    struct stat st;
    const bool shm = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
                     access("/dev/shm", W_OK) == 0;
    return absl::StrCat(shm ? "/dev/shm" : "/tmp", "/rocemu-control-fuzz.",
                        getpid(), ".sock");
  }();
  return path;
}

// The Listen preludes: what is at the path before the server binds it.
enum Prelude { kFresh, kStaleSocket, kRegularFile, kLiveServer };

void Converse(ControlServer& server, const std::string& path, uint8_t mode,
              uint8_t early, std::string_view sizes, std::string_view stream) {
  std::vector<Client> clients((mode & 4) ? 2 : 1);
  for (Client& c : clients) c.fd = Connect(path);
  size_t chunk = 0;
  while (!stream.empty()) {
    const uint8_t s = sizes.empty() ? 0 : sizes[chunk % sizes.size()];
    size_t n = sizes.empty() ? stream.size()
               : s < 0xF0    ? s + 1u
                             : (s - 0xEFu) * 512u;
    n = std::min(n, stream.size());
    Client& c = clients[chunk % clients.size()];
    if (!c.gone) {
      const ssize_t w = send(c.fd, stream.data(), n, MSG_NOSIGNAL);
      if (w > 0) {
        c.sent.append(stream.data(), static_cast<size_t>(w));
      } else {
        // Only a refused client's socket stops taking bytes here.
        FUZZ_CHECK(errno == EPIPE || errno == ECONNRESET);
        c.gone = true;
      }
    }
    stream.remove_prefix(n);
    server.Poll();
    for (Client& d : clients) Drain(d);
    if ((mode & 16) && chunk == early && !clients[0].gone) {
      close(clients[0].fd);  // mid-conversation, replies unread
      clients[0].fd = -1;
      clients[0].gone = true;
    }
    ++chunk;
  }
  if (mode & 8) {
    for (Client& c : clients) {
      if (c.fd >= 0 && shutdown(c.fd, SHUT_WR) == 0) c.half_closed = true;
    }
  }
  Settle(server, clients);
  for (Client& c : clients) {
    if (c.fd < 0) continue;
    // A client whose send failed was refused: its replies still count.
    CheckConversation(c);
    close(c.fd);
  }
  if ((mode & 64) == 0) return;
  // Whatever happened before, a new client is served.
  Client probe;
  probe.fd = Connect(path);
  constexpr std::string_view kPing = "{\"cmd\":\"ping\"}";
  FUZZ_CHECK(send(probe.fd, kPing.data(), kPing.size(), MSG_NOSIGNAL) ==
             static_cast<ssize_t>(kPing.size()));
  FUZZ_CHECK(send(probe.fd, "\n", 1, MSG_NOSIGNAL) == 1);
  probe.sent = std::string(kPing) + "\n";
  std::vector<Client> one;
  one.push_back(std::move(probe));
  Settle(server, one);
  CheckConversation(one[0]);
  close(one[0].fd);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Logger::Get().set_level(rocemu::config::LogLevel::kError);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  CheckEscape(all);
  CheckBuiltObject(all);

  Input in(all);
  const uint8_t mode = in.U8();
  const uint8_t early = in.U8();
  const std::string_view sizes = in.Bytes(in.U8() % 16);
  std::string_view stream = in.Rest();
  Hooks hooks;
  hooks.enabled = (mode & 32) != 0;
  auto handler = [&hooks](std::string_view req) { return Handle(hooks, req); };

  const std::string& path = SocketPath();
  unlink(path.c_str());  // what a crashed run of this pid may have left
  const Prelude prelude = static_cast<Prelude>(mode & 3);
  ControlServer live;
  if (prelude == kStaleSocket) {
    // A socket file nobody listens on, as a killed daemon leaves it.
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    FUZZ_CHECK(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    close(fd);
  } else if (prelude == kRegularFile) {
    int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    FUZZ_CHECK(fd >= 0);
    close(fd);
  } else if (prelude == kLiveServer) {
    FUZZ_CHECK(live.Listen(path, 0600, handler).ok());
  }

  ControlServer server;
  const absl::Status s = server.Listen(path, 0600, handler);
  struct stat st;
  switch (prelude) {
    case kFresh:
    case kStaleSocket:
      FUZZ_CHECK(s.ok());
      Converse(server, path, mode, early, sizes, stream);
      server.Close();
      FUZZ_CHECK(lstat(path.c_str(), &st) != 0);  // the socket is removed
      break;
    case kRegularFile:
      FUZZ_CHECK(absl::IsAlreadyExists(s));
      FUZZ_CHECK(lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode));
      unlink(path.c_str());
      // No server: the handler alone on each line.
      for (size_t nl; !stream.empty();) {
        nl = std::min(stream.find('\n'), stream.size());
        Handle(hooks, stream.substr(0, nl));
        stream.remove_prefix(std::min(nl + 1, stream.size()));
      }
      break;
    case kLiveServer:
      // The daemon already listening keeps its socket and its clients.
      FUZZ_CHECK(absl::IsAlreadyExists(s));
      Converse(live, path, mode, early, sizes, stream);
      live.Close();
      break;
  }
  return 0;
}
