"""rocemu-perf pairs for the bench_*.sh scripts: a server and a client in one
network namespace, either on two daemons' verbs sockets or each with its
RNIC in-process (embedded mode, docs/embedded.md) over one memif link.

`r` is a tests/emulator/net_perf_test.Run: it owns the namespaces, the
processes to kill on the way out and the next TCP port (`r.port`).
"""
import json
import os
import subprocess
import time

import netns_util


def _ex(ns):
    return ["ip", "netns", "exec", ns]


def perf_pair(r, ns, perf, test, args, server, client, wait_for=None,
              use_yield=False, cpus=None):
    """rocemu-perf's server, then its client; `server` and `client` are
    (extra argv, environment or None). The client starts once the server
    made `wait_for` (a path), if given; both run on `cpus` (taskset's
    list) if given. Returns (the client's last JSON line, "") or (None,
    why)."""
    extra = ["--yield"] if use_yield else []
    if cpus is not None:
        perf_cmd = ["taskset", "-c", cpus, perf]
    else:
        perf_cmd = [perf]
    r.port += 1
    common = [test, "-p", str(r.port), "--json", "--timeout", "60"] + extra + args
    srv = subprocess.Popen(_ex(ns) + [*perf_cmd, *common, *server[0]],
                           env=server[1], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    r.procs.append(srv)
    try:
        deadline = time.monotonic() + 20
        while wait_for and not os.path.exists(wait_for) and \
                srv.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        cli = subprocess.run(_ex(ns) + [*perf_cmd, *common, *client[0],
                                        "127.0.0.1"],
                             env=client[1], capture_output=True, text=True,
                             timeout=180)
        srv.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
        r.procs.remove(srv)
    if cli.returncode != 0:
        return None, cli.stderr.strip()[-400:]
    return [json.loads(l) for l in cli.stdout.splitlines()
            if l.startswith("{")][-1], ""


def embedded_run(r, ns, perf, test, args, memif_extra="", use_yield=False,
                 module=None):
    """rocemu-perf with each side's RNIC in its own process: two configs
    naming the two ends of one memif link (`memif_extra` is appended to
    the devargs, e.g. ",rsize=8"). `module`: the librocemu_embedded.so to
    load, where not the one whose path the library was built with."""
    tmp = os.path.join(r.tmp, "embedded")
    os.makedirs(tmp, exist_ok=True)
    pid = os.getpid()
    env = []
    for name, role, last in (("a", "server", 1), ("b", "client", 2)):
        cfg = os.path.join(tmp, f"{name}.yaml")
        netns_util.write_rocemud_config(
            cfg, f"bperf-emb-{name}-{pid}",
            [netns_util.port("p0", f"net_memif0,role={role},"
                             f"socket=bperf-emb-{pid},bsize=8192{memif_extra}",
                             f"02:00:00:79:03:0{last}", f"10.79.3.{last}/24",
                             4200)],
            control={"socket": os.path.join(tmp, f"{name}-ctl.sock")},
            verbs={"socket": os.path.join(tmp, f"{name}-verbs.sock")},
            logging={"file": os.path.join(tmp, f"{name}.log")})
        e = dict(os.environ, ROCEMU_EMBEDDED=cfg)
        if module:
            e["ROCEMU_EMBEDDED_MODULE"] = module
        env.append(e)
    dev = ["-d", "rocemu_p0"]
    try:
        return perf_pair(r, ns, perf, test, args, (dev, env[0]),
                         (dev, env[1]),
                         wait_for=os.path.join(tmp, "a-verbs.sock"),
                         use_yield=use_yield)
    finally:
        for f in os.listdir(tmp):
            if f.endswith(".sock"):
                os.unlink(os.path.join(tmp, f))
