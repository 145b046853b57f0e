"""Helpers shared by the net suite's scripts: commands in a namespace, one
JSON request to a daemon's control socket, polling with a deadline, the
one writer of rocemud configs, and starting/stopping rocemud in a
namespace."""
import contextlib
import json
import os
import signal
import socket
import subprocess
import tempfile
import time


def sh(*cmd, ns=None, check=True, timeout=20):
    full = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
    return subprocess.run(full, check=check, timeout=timeout,
                          capture_output=True, text=True)


def veth_pair(ns_a, a, ns_b, b, mtu=9000, quiet=False):
    """A veth pair, end `a` in namespace ns_a and `b` in ns_b, both up with
    `mtu` (9000 by default: 4 KiB RoCE frames fit). quiet: IPv6 off on both
    ends before they come up, so that the kernel sends nothing of its own
    (router solicitations, MLD) and every frame on the wire is the
    daemons'."""
    sh("ip", "link", "add", a, "netns", ns_a, "type", "veth", "peer",
       "name", b, "netns", ns_b)
    for ns, dev in ((ns_a, a), (ns_b, b)):
        if quiet:
            sh("sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1", ns=ns)
        sh("ip", "link", "set", dev, "mtu", str(mtu), ns=ns)
        sh("ip", "link", "set", dev, "up", ns=ns)


def control(path, request, timeout=5):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall((json.dumps(request) + "\n").encode())
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            data += chunk
    return json.loads(data)


def wait_for(what, predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def tcp_listening(pid, port):
    """Whether a socket in the network namespace of process `pid` listens
    on TCP `port` (IPv4 or IPv6), from /proc/<pid>/net/tcp{,6}."""
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            # local_address is ADDR:PORT in hex; state 0A is LISTEN.
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1],
                                         16) == port:
                return True
    return False


def wait_tcp_listener(proc, port, timeout=60.0):
    """Waits until the server `proc` (a Popen; `ip netns exec` and valgrind
    keep its pid) listens on TCP `port`: the moment a client that does
    not retry may connect. Raises if it exits first or the deadline
    passes."""
    deadline = time.monotonic() + timeout
    while not tcp_listening(proc.pid, port):
        if proc.poll() is not None:
            raise AssertionError(f"server exited ({proc.returncode}) before "
                                 f"listening on TCP port {port}")
        if time.monotonic() > deadline:
            raise AssertionError(f"server not listening on TCP port {port} "
                                 f"after {timeout} s")
        time.sleep(0.02)


def cm_listener(ctl, port, timeout=60.0, proc=None):
    """The CM id listening on `port` (any port space) of the daemon whose
    control socket is `ctl`, once it appears: rdma_cm servers listen in the
    RDMA port space, not on a TCP socket. None at the deadline, or as soon
    as the server `proc` (a Popen, if given) has exited."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            p0 = control(ctl, {"cmd": "cm"}, timeout=10)["ports"][0]
            # With eal.lcores > 1 the listener may be on any shard's RNIC.
            ids = p0["cm_ids"] + [e for s in p0.get("shards", [])
                                  for e in s["cm_ids"]]
        except (OSError, ValueError, KeyError, IndexError):
            ids = []
        for e in ids:
            if e["listener"] and int(e["service_id"], 16) & 0xFFFF == port:
                return e
        if proc is not None and proc.poll() is not None:
            return None
        if time.monotonic() > deadline:
            return None
        time.sleep(0.02)


def wait_cm_listener(proc, ctl, port, timeout=60.0):
    """cm_listener for a server that must listen: raises if `proc` exits
    first or the deadline passes."""
    if cm_listener(ctl, port, timeout, proc) is not None:
        return
    if proc.poll() is not None:
        raise AssertionError(f"server exited ({proc.returncode}) before "
                             f"listening on rdma_cm port {port}")
    raise AssertionError(f"server not listening on rdma_cm port "
                         f"{port} after {timeout} s")


# perftest -R's own race: its server creates the data connection's
# listener only after the handshake on its control connection, so a client
# whose REQ comes first is refused (REJ reason 8, invalid service ID, as a
# kernel CM refuses it). A loaded host makes the server lose that race now
# and then. perftest's client means to retry then, but Debian's 4.5-0.17
# retries with the CM IDs it has just destroyed and freed: it crashes
# (SIGSEGV) in rdma_resolve_addr on a freed pointer, with any librdmacm.
# Upstream fixed the retry in perftest 26.04 ("Fix crashes and logical
# flaws in RDMA CM connection retry"). Reproduced by delaying the server's
# second rdma_listen by 2 s (an LD_PRELOAD shim) on 2026-11-29.
PERFTEST_CM_REFUSED = "Event: RDMA_CM_EVENT_REJECTED; error: 8."


def collect_pair(start, timeout, on_hang=None, tries=3):
    """(server rc, server output, client rc, client output) of the pair
    `start()` launches ((server, client) Popens). When perftest's client
    was refused as above, the pair runs again, `tries` times at most, and
    says so; otherwise as collect((client, server), timeout, on_hang)."""
    for attempt in range(tries):
        srv, cli = start()
        deadline = time.monotonic() + timeout
        (crc, cout), = collect((cli,), timeout, on_hang)
        if (attempt + 1 < tries and crc not in (0, None) and
                PERFTEST_CM_REFUSED in (cout or "")):
            collect((srv,), 0)  # kills it: it waits for a client now gone
            print(f"note: perftest's client was refused before its server "
                  f"listened (REJ 8, perftest -R's race); run {attempt + 2} "
                  f"of {tries}", flush=True)
            continue
        # A hung client has had the daemons' account added already.
        (src, sout), = collect((srv,), deadline - time.monotonic(),
                               on_hang if crc is not None else None)
        return src, sout, crc, cout


def collect(procs, timeout, on_hang=None):
    """(returncode, output) of each Popen (stdout piped, text), all within
    `timeout` seconds; one still running at the deadline is killed (its
    process group if it leads one) and reported with returncode None (it
    hung: no exit status) and "(timed out)" after its output. `on_hang`,
    if given, is called once before the first kill (while the hung
    program's QPs still exist: the place to ask the daemons why) and its
    text is added to that program's output."""
    outs = []
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            out, _ = p.communicate(timeout=max(1, deadline -
                                               time.monotonic()))
            rc = p.returncode
        except subprocess.TimeoutExpired:
            note = ""
            if on_hang is not None:
                note, on_hang = "\n" + on_hang(), None
            try:
                if os.getpgid(p.pid) == p.pid:
                    os.killpg(p.pid, signal.SIGKILL)
                else:
                    p.kill()
            except ProcessLookupError:
                pass
            out, _ = p.communicate()
            out = (out or "") + "\n(timed out)" + note
            rc = None
        outs.append((rc, out))
    return outs


def qp_story(ctl, what):
    """Every QP of the daemon whose control socket is `ctl`, with its
    flight recorder's account (`rocemu-ctl qp N --why`), and every
    client's CQs and QPs, as text headed by `what`: what a hung test
    prints before it kills its programs."""
    lines = [f"--- {what}: QPs and their flight recorders ---"]
    try:
        for port in control(ctl, {"cmd": "qps"}, timeout=10)["ports"]:
            for q in port.get("qps", []):
                w = control(ctl, {"cmd": "qp_why", "qpn": q["qpn"]},
                            timeout=10)
                lines.append(w.get("report") or json.dumps(w))
        # The sessions' side: each client's CQs (produced, unconsumed,
        # armed) and QPs, for a hang the wire does not explain.
        for port in control(ctl, {"cmd": "clients"}, timeout=10)["ports"]:
            for c in port.get("verbs", {}).get("clients", []):
                c = {k: c[k] for k in ("id", "pid", "name", "cqs", "qps")
                     if k in c}
                lines.append(f"client {json.dumps(c)}")
    except (OSError, ValueError, KeyError, TypeError) as e:
        lines.append(f"(could not ask: {e})")
    return "\n".join(lines)


def write_rocemud_config(path, prefix, ports, eal=None, **sections):
    """Writes a rocemud config for a test: `ports` the list of port
    mappings, `sections` the other top-level keys (control, verbs,
    logging, capture, pfc, ...) as Python values; eal gets file_prefix
    `prefix` and idle_sleep_us 50 (so that daemons and tools share the
    cores), then whatever `eal` adds or overrides; recorder.dump_dir is
    why/ beside the config unless `sections` has a recorder. Written as JSON, which
    YAML reads as flow style: no indentation or quoting to get wrong."""
    cfg = {"eal": {"file_prefix": prefix, "idle_sleep_us": 50, **(eal or {})},
           "ports": ports,
           # A QP's dump on ERR stays with the test's files (kept when it
           # fails), not in the host's /var/lib/rocemu/why.
           "recorder": {"dump_dir": os.path.join(
               os.path.dirname(os.path.abspath(path)), "why")},
           **sections}
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    return path


def port(name, devargs, mac=None, ip=None, mtu=None, **more):
    """One port mapping; `ip` is one address or a list ("a.b.c.d/24",
    "fd..::x/64")."""
    p = {"name": name, "devargs": devargs}
    if mac is not None:
        p["mac"] = mac
    if mtu is not None:
        p["mtu"] = mtu
    if ip is not None:
        p["addresses"] = [ip] if isinstance(ip, str) else list(ip)
    p.update(more)
    return p


def start_rocemud(ns, rocemud, config_path, wait_path, name,
                  what="control socket", timeout=10.0):
    """Starts rocemud --config config_path inside namespace ns (None: this
    one) and waits until
    wait_path (its `what`; a tuple: all of them) exists; raises with the
    daemon's output if it exits first."""
    paths = (wait_path,) if isinstance(wait_path, str) else tuple(wait_path)
    p = subprocess.Popen((["ip", "netns", "exec", ns] if ns else []) +
                         [rocemud, "--config", config_path],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while (not all(map(os.path.exists, paths))) and p.poll() is None:
        if time.monotonic() > deadline:
            p.kill()
            p.wait()
            raise AssertionError(f"{name}: no {what}")
        time.sleep(0.05)
    if p.poll() is not None:
        raise AssertionError(f"{name} exited: {p.stdout.read().decode()}")
    return p


def stop_rocemud(proc, timeout=15):
    """SIGTERM, then the exit status (0 is a clean shutdown)."""
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=timeout)


def cleanup(procs, namespaces, tmp):
    """Ends what a test left running, deletes its namespaces and its
    temporary directory (kept when $ROCEMU_KEEP_TMP is set)."""
    for p in procs:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    for ns in namespaces:
        sh("ip", "netns", "del", ns, check=False)
    if os.environ.get("ROCEMU_KEEP_TMP"):
        print(f"     kept {tmp}")
    else:
        sh("rm", "-rf", tmp, check=False)


# What a net test counts as a failed check rather than a crash.
TEST_ERRORS = (AssertionError, subprocess.SubprocessError, OSError, KeyError,
               ValueError)


class NetRun:
    """What every net test's run keeps: its pid (names stay unique when
    tests run in parallel), a scratch directory (kept when a check
    failed), the namespaces and processes to clean up, and the failed
    checks. Tests subclass it with their own daemons and tools."""

    def __init__(self, tmp_prefix, world_readable=False):
        self.pid = os.getpid()
        self.tmp = tempfile.mkdtemp(prefix=tmp_prefix)
        if world_readable:  # another uid reaches sockets and files in it
            os.chmod(self.tmp, 0o755)
        self.namespaces, self.procs, self.failures = [], [], []

    def check(self, cond, msg):
        print(("ok   " if cond else "FAIL ") + msg, flush=True)
        if not cond:
            self.failures.append(msg)
        return cond

    def netns(self, name):
        """A namespace `name`-pid with its loopback up, deleted at cleanup."""
        name = f"{name}-{self.pid}"
        sh("ip", "netns", "add", name)
        self.namespaces.append(name)
        sh("ip", "link", "set", "lo", "up", ns=name)
        return name

    def cleanup(self):
        cleanup(self.procs, self.namespaces,
                self.tmp if not self.failures else "/nonexistent")
        if self.failures:
            print(f"     kept {self.tmp}")


@contextlib.contextmanager
def failures_reported(run, errors=TEST_ERRORS):
    """Runs the body of a test: an error in `errors` becomes one of
    run.failures; run.cleanup() runs in every case."""
    try:
        yield
    except errors as e:
        run.failures.append(repr(e))
        print("FAIL", repr(e))
    finally:
        run.cleanup()


def print_pair_output(server_out, client_out, tail=2000):
    """A failed server/client pair's output, each side labelled: the two
    tails printed side by side were misread once (a client's errors taken
    for the server's)."""
    for side, out in (("server", server_out), ("client", client_out)):
        out = out or ""
        cut = len(out) > tail
        print(f"--- {side} output{' (last %d chars)' % tail if cut else ''}"
              " ---")
        print(out[-tail:].rstrip("\n"))
    print("--- end of pair output ---")


def verdict(failures):
    """Prints the closing PASSED/FAILED line; the script's exit status."""
    print(f"{'FAILED' if failures else 'PASSED'}: "
          f"{len(failures)} failure(s)")
    return 1 if failures else 0
