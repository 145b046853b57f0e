#include "ns3/topology.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "ns3/units.h"

namespace rocemu::ns3sim {

absl::Status TopologySpec::Validate() const {
  if (hosts < 2) return absl::InvalidArgumentError("topology: < 2 hosts");
  const uint32_t nodes = hosts + switches;
  std::vector<uint32_t> host_links(hosts, 0);
  for (const LinkSpec& l : links) {
    if (l.a >= nodes || l.b >= nodes || l.a == l.b) {
      return absl::InvalidArgumentError(
          absl::StrFormat("topology: bad link %d-%d", l.a, l.b));
    }
    if (l.rate_bps == 0) {
      return absl::InvalidArgumentError("topology: link rate 0");
    }
    if (l.a < hosts) ++host_links[l.a];
    if (l.b < hosts) ++host_links[l.b];
  }
  for (uint32_t h = 0; h < hosts; ++h) {
    if (host_links[h] != 1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "topology: host %d has %d links (an RNIC has one port)", h,
          host_links[h]));
    }
  }
  return absl::OkStatus();
}

TopologySpec FatTree(uint32_t k, uint32_t hosts_per_edge, uint64_t rate_bps,
                     uint64_t fabric_rate_bps, nic::TimeNs delay_ns) {
  const uint32_t half = k / 2;
  const uint32_t hpe = hosts_per_edge == 0 ? half : hosts_per_edge;
  if (fabric_rate_bps == 0) fabric_rate_bps = rate_bps;
  TopologySpec t;
  t.hosts = k * half * hpe;
  const uint32_t edges = k * half;
  const uint32_t aggs = k * half;
  const uint32_t cores = half * half;
  t.switches = edges + aggs + cores;
  const uint32_t edge0 = t.hosts;
  const uint32_t agg0 = edge0 + edges;
  const uint32_t core0 = agg0 + aggs;
  for (uint32_t e = 0; e < edges; ++e) {
    for (uint32_t h = 0; h < hpe; ++h) {
      t.links.push_back({e * hpe + h, edge0 + e, rate_bps, delay_ns});
    }
  }
  for (uint32_t pod = 0; pod < k; ++pod) {
    for (uint32_t e = 0; e < half; ++e) {
      for (uint32_t a = 0; a < half; ++a) {
        t.links.push_back({edge0 + pod * half + e, agg0 + pod * half + a,
                           fabric_rate_bps, delay_ns});
      }
    }
  }
  for (uint32_t pod = 0; pod < k; ++pod) {
    for (uint32_t a = 0; a < half; ++a) {
      for (uint32_t c = 0; c < half; ++c) {
        t.links.push_back({agg0 + pod * half + a, core0 + a * half + c,
                           fabric_rate_bps, delay_ns});
      }
    }
  }
  t.description = absl::StrFormat(
      "fattree k=%d hosts_per_edge=%d (%d hosts, %d switches, %d links; "
      "%.0f/%.0f Gb/s)",
      k, hpe, t.hosts, t.switches, t.links.size(), rate_bps / 1e9,
      fabric_rate_bps / 1e9);
  return t;
}

TopologySpec Incast(uint32_t senders, uint64_t rate_bps, nic::TimeNs delay_ns) {
  TopologySpec t;
  t.hosts = senders + 1;
  t.switches = 1;
  for (uint32_t h = 0; h <= senders; ++h) {
    t.links.push_back({h, t.hosts, rate_bps, delay_ns});
  }
  t.description = absl::StrFormat("incast %d:1", senders);
  return t;
}

TopologySpec Dumbbell(uint32_t left, uint32_t right, uint64_t rate_bps,
                      uint64_t bottleneck_rate_bps, nic::TimeNs delay_ns) {
  TopologySpec t;
  t.hosts = left + right;
  t.switches = 2;
  for (uint32_t h = 0; h < t.hosts; ++h) {
    t.links.push_back({h, t.hosts + (h < left ? 0 : 1), rate_bps, delay_ns});
  }
  t.links.push_back({t.hosts, t.hosts + 1,
                     bottleneck_rate_bps ? bottleneck_rate_bps : rate_bps,
                     delay_ns});
  t.description = absl::StrFormat("dumbbell %d+%d", left, right);
  return t;
}

namespace {

absl::Status Err(int line, absl::string_view msg) {
  return absl::InvalidArgumentError(
      absl::StrCat("topology line ", line, ": ", msg));
}

// "h3" -> 3, "s1" -> hosts + 1.
absl::StatusOr<uint32_t> NodeRef(absl::string_view s, const TopologySpec& t) {
  uint32_t n = 0;
  if (s.size() < 2 || (s[0] != 'h' && s[0] != 's') ||
      !absl::SimpleAtoi(s.substr(1), &n)) {
    return absl::InvalidArgumentError(absl::StrCat("bad node '", s, "'"));
  }
  if (s[0] == 'h') {
    if (n >= t.hosts) return absl::InvalidArgumentError("no such host");
    return n;
  }
  if (n >= t.switches) return absl::InvalidArgumentError("no such switch");
  return t.hosts + n;
}

}  // namespace

absl::StatusOr<TopologySpec> ParseTopology(absl::string_view text) {
  TopologySpec t;
  std::string kind;
  std::map<std::string, std::string, std::less<>> kv;
  uint64_t rate = 100'000'000'000, delay = 1000;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (size_t hash = line.find('#'); hash != absl::string_view::npos) {
      line = line.substr(0, hash);
    }
    std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (words.empty()) continue;
    if (kind.empty()) {
      kind = std::string(words[0]);
      for (size_t i = 1; i < words.size(); ++i) {
        std::pair<std::string, std::string> p = absl::StrSplit(words[i], '=');
        if (p.second.empty()) return Err(line_no, "expected key=value");
        kv[p.first] = p.second;
      }
      auto take = [&](const char* key, auto parse, uint64_t* out) {
        auto it = kv.find(key);
        if (it == kv.end()) return absl::OkStatus();
        absl::StatusOr<uint64_t> v = parse(it->second);
        if (!v.ok()) return v.status();
        *out = *v;
        kv.erase(it);
        return absl::OkStatus();
      };
      auto count = [](absl::string_view s) -> absl::StatusOr<uint64_t> {
        uint64_t v = 0;
        if (!absl::SimpleAtoi(s, &v)) {
          return absl::InvalidArgumentError(
              absl::StrCat("bad count '", s, "'"));
        }
        return v;
      };
      uint64_t k = 0, hpe = 0, fabric_rate = 0, senders = 0, left = 0,
               right = 0, bottleneck = 0, hosts = 0, switches = 0;
      for (absl::Status st :
           {take("rate", ParseRateBps, &rate),
            take("delay", ParseTimeNs, &delay),
            take("fabric_rate", ParseRateBps, &fabric_rate),
            take("bottleneck_rate", ParseRateBps, &bottleneck),
            take("k", count, &k), take("hosts_per_edge", count, &hpe),
            take("senders", count, &senders), take("left", count, &left),
            take("right", count, &right), take("hosts", count, &hosts),
            take("switches", count, &switches)}) {
        if (!st.ok()) return Err(line_no, st.message());
      }
      if (!kv.empty()) {
        return Err(line_no, absl::StrCat("unknown key '", kv.begin()->first,
                                         "' for ", kind));
      }
      if (kind == "fattree") {
        if (k < 2 || k % 2 != 0 || k > 256) {
          return Err(line_no, "fattree needs an even k in 2..256");
        }
        t = FatTree(static_cast<uint32_t>(k), static_cast<uint32_t>(hpe), rate,
                    fabric_rate, delay);
      } else if (kind == "incast") {
        if (senders < 1) return Err(line_no, "incast needs senders >= 1");
        t = Incast(static_cast<uint32_t>(senders), rate, delay);
      } else if (kind == "dumbbell") {
        if (left < 1 || right < 1) {
          return Err(line_no, "dumbbell needs left, right >= 1");
        }
        t = Dumbbell(static_cast<uint32_t>(left), static_cast<uint32_t>(right),
                     rate, bottleneck, delay);
      } else if (kind == "edges") {
        t.hosts = static_cast<uint32_t>(hosts);
        t.switches = static_cast<uint32_t>(switches);
        t.description = absl::StrFormat("edges (%d hosts, %d switches)",
                                        t.hosts, t.switches);
      } else {
        return Err(line_no, absl::StrCat("unknown topology '", kind,
                                         "' (fattree, incast, dumbbell, "
                                         "edges)"));
      }
      continue;
    }
    if (kind != "edges" || words[0] != "link") {
      return Err(line_no, "only an 'edges' topology takes 'link' lines");
    }
    if (words.size() < 3 || words.size() > 5) {
      return Err(line_no, "link A B [rate] [delay]");
    }
    LinkSpec l{0, 0, rate, delay};
    absl::StatusOr<uint32_t> a = NodeRef(words[1], t);
    absl::StatusOr<uint32_t> b = NodeRef(words[2], t);
    if (!a.ok()) return Err(line_no, a.status().message());
    if (!b.ok()) return Err(line_no, b.status().message());
    l.a = *a;
    l.b = *b;
    if (words.size() > 3) {
      absl::StatusOr<uint64_t> r = ParseRateBps(words[3]);
      if (!r.ok()) return Err(line_no, r.status().message());
      l.rate_bps = *r;
    }
    if (words.size() > 4) {
      absl::StatusOr<uint64_t> d = ParseTimeNs(words[4]);
      if (!d.ok()) return Err(line_no, d.status().message());
      l.delay_ns = *d;
    }
    t.links.push_back(l);
  }
  if (kind.empty()) return absl::InvalidArgumentError("topology: empty");
  absl::Status st = t.Validate();
  if (!st.ok()) return st;
  return t;
}

}  // namespace rocemu::ns3sim
