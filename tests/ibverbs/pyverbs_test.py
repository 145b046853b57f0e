#!/usr/bin/env python3
"""rdma-core's own test suite (Debian's python3-pyverbs, all 273 tests)
against a rocemu device through the drop-in libibverbs.so.1.

The suite finds a device's IP address the kernel's way: the netdev named in
/sys/class/infiniband/DEV/device/net/, then `ip addr show` of it; without
one its rdma_cm tests skip ("doesn't have net interface"). A rocemu device
has no sysfs entry, so the suite runs in its own user, mount and network
namespaces (`unshare -r -m -n`, root not needed) that give it one: a tmpfs
over /sys/class with that entry (/sys/class/net bound back), and a veth of
that name carrying the daemon port's address and MAC. The rdma_cm tests
(sync and async connections, UD, reject, READ/WRITE, multicast join and
leave) then run over the drop-in librdmacm.so.1 and rocemu's CM.

Every test must end as tests/ibverbs/pyverbs_expected.tsv says: `pass`
tests pass (a drop in the pass count fails this test), `pass-if-hugepages`
tests pass where 2 MB pages are reserved (scripts/hugepages.sh) and skip for
that reason elsewhere, `skip` tests skip
with the reason recorded there (the suite's own message for a device that
lacks the feature: no dmabuf, no raw packet QP, not an mlx5 ...). No test may
fail or error. A test that newly passes is reported, so the file can be
updated with --record.

Usage: pyverbs_test.py ROCEMUD DROPIN_DIR EXPECTED_TSV [--record]
"""
import glob
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from solo_daemon import SoloDaemon  # noqa: E402

SUITE = "/usr/share/doc/rdma-core/tests"
HUGE_SKIP = "There are no huge pages of size 2M allocated"
# Run by `sh -c` inside the namespaces; $1 the netdev, $2 its address, $3
# its MAC, $4 the device, $5 a scratch directory, then the suite's argv.
IN_NAMESPACES = r"""
set -e
ip link set lo up
ip link add "$1" address "$3" type veth peer name "$1p"
ip addr add "$2" dev "$1"
ip link set "$1" up
mkdir -p "$5/net"
mount --bind /sys/class/net "$5/net"
mount -t tmpfs rocemu-sysfs /sys/class
mkdir -p /sys/class/net "/sys/class/infiniband/$4/device/net/$1"
mount --bind "$5/net" /sys/class/net
shift 5
exec "$@"
"""
RESULT = re.compile(r"^(test_\S+) \((\S+)\)(?:\n.*?)? \.\.\. "
                    r"(ok|FAIL|ERROR|skipped (['\"])(.*)\4|expected failure)$",
                    re.M)


def unpack(dst):
    for src in glob.glob(os.path.join(SUITE, "*")):
        name = os.path.basename(src)
        if name.endswith(".gz"):
            with gzip.open(src, "rb") as i, \
                    open(os.path.join(dst, name[:-3]), "wb") as o:
                shutil.copyfileobj(i, o)
        elif os.path.isfile(src):
            shutil.copy(src, dst)


def main():
    rocemud, dropin, expected_path = (os.path.abspath(p) for p in sys.argv[1:4])
    record = "--record" in sys.argv[4:]
    if not os.path.isdir(SUITE):
        print(f"FAIL: {SUITE} missing (python3-pyverbs not installed)")
        return 1
    work = tempfile.mkdtemp(prefix="rocemu-pyverbs-")
    daemon = SoloDaemon(rocemud)
    failed = False
    try:
        tests = os.path.join(work, "tests")
        os.mkdir(tests)
        unpack(tests)
        # The drop-in librdmacm.so.1 is built beside the drop-in
        # libibverbs.so.1.
        libs = f"{os.path.join(os.path.dirname(dropin), 'rdmacm')}:{dropin}"
        r = subprocess.run(
            ["unshare", "-r", "-m", "-n", "sh", "-c", IN_NAMESPACES, "sh",
             daemon.name, daemon.addresses[0], daemon.mac, daemon.device,
             os.path.join(work, "mnt"), "/usr/bin/python3",
             # The DM tests' randrange() warnings would land between a
             # test's "..." and its verdict, which RESULT reads as one line.
             "-W", "ignore::DeprecationWarning",
             "tests/run_tests.py", "--dev", daemon.device, "-v"],
            cwd=work, env=daemon.env(libs), capture_output=True, text=True,
            timeout=900)
        out = r.stdout + r.stderr
        if r.returncode != 0 and not re.search(r"^Ran \d+ tests", out, re.M):
            print(f"FAIL: the suite did not run (exit {r.returncode}):\n"
                  f"{out[-3000:]}")
            failed = True
            return 1
        got = {}
        for m in RESULT.finditer(out):
            test_id = m.group(2)
            kind = m.group(3)
            if kind == "ok":
                got[test_id] = ("pass", "")
            elif kind.startswith("skipped"):
                got[test_id] = ("skip", m.group(5))
            else:
                got[test_id] = ("fail", kind)
        total = re.search(r"^Ran (\d+) tests", out, re.M)
        print(f"suite ran {total.group(1) if total else '?'} tests; "
              f"parsed {len(got)}: "
              f"{sum(v[0] == 'pass' for v in got.values())} passed, "
              f"{sum(v[0] == 'skip' for v in got.values())} skipped, "
              f"{sum(v[0] == 'fail' for v in got.values())} failed")
        if record:
            with open(expected_path) as f:
                huge_tests = {line.split("\t")[0] for line in f
                              if "\tpass-if-hugepages" in line}
            with open(expected_path, "w") as f:
                f.write("# pyverbs test id\texpected "
                        "(pass|pass-if-hugepages|skip)\t"
                        "the suite's skip reason\n")
                for t in sorted(got):
                    if t in huge_tests or got[t][1] == HUGE_SKIP:
                        f.write(f"{t}\tpass-if-hugepages\t\n")
                    else:
                        f.write(f"{t}\t{got[t][0]}\t{got[t][1]}\n")
            print(f"recorded {expected_path}")
            return 0
        expected = {}
        with open(expected_path) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                t, outcome, reason = (line.rstrip("\n").split("\t") + [""])[:3]
                expected[t] = (outcome, reason)
        # The suite's own test for 2 MB pages: where set-up could reserve
        # them the huge-page tests must pass, elsewhere skip for that reason.
        huge = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
        have_huge = os.path.isfile(huge) and int(open(huge).read()) > 0
        for t, (outcome, reason) in sorted(expected.items()):
            if outcome == "pass-if-hugepages":
                outcome, reason = (("pass", "") if have_huge else
                                   ("skip", HUGE_SKIP))
            g = got.get(t)
            if g is None:
                print(f"FAIL {t}: did not run")
                failed = True
            elif outcome == "pass" and g[0] != "pass":
                print(f"FAIL {t}: expected to pass, {g[0]} {g[1]}")
                failed = True
            elif outcome == "skip" and g[0] == "skip" and g[1] != reason:
                print(f"FAIL {t}: skipped for a new reason: {g[1]!r} "
                      f"(expected {reason!r})")
                failed = True
            elif outcome == "skip" and g[0] == "pass":
                print(f"note {t}: passes now (was skipped: {reason})")
        for t, g in sorted(got.items()):
            if g[0] == "fail":
                print(f"FAIL {t}: {g[1]}")
                failed = True
            elif t not in expected:
                print(f"FAIL {t}: not in {expected_path} ({g[0]} {g[1]})")
                failed = True
        if failed:
            print(out[-6000:])
        want = sum(1 for v in expected.values()
                   if v[0] == "pass" or (v[0] == "pass-if-hugepages" and
                                         have_huge))
        print(f"{'FAIL' if failed else 'ok'}: {want} expected passes")
        return 1 if failed else 0
    finally:
        daemon.cleanup(keep=failed)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
