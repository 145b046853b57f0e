#!/usr/bin/env python3
"""The drop-in libibverbs.so.1 has Debian 12's ABI: the same exported names
and version nodes (reference/ibverbs-abi/libibverbs.versions, read off the
real library), and every Debian program and provider library that links
libibverbs resolves all of its imports against it at load time (they are
BIND_NOW: one missing name or version node is a load failure).

Usage: abi_test.py DROPIN_DIR SHARED_DIR
"""
import os
import re
import subprocess
import sys

failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg, flush=True)
    if not cond:
        failures.append(msg)


def exports(lib):
    out = subprocess.run(["readelf", "--dyn-syms", "-W", lib], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 8 or f[3] not in ("FUNC", "OBJECT") or f[6] == "UND":
            continue
        if "@" in f[7]:
            names.add(f[7])
    return names


def main():
    dropin, shared = sys.argv[1], sys.argv[2]
    ref_dir = os.path.join(shared, "reference", "ibverbs-abi")
    lib = os.path.join(dropin, "libibverbs.so.1")
    check(os.path.exists(lib), f"{lib} exists")

    want = set()
    with open(os.path.join(ref_dir, "libibverbs.versions")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                want.add(line.split("\t")[0])
    got = exports(lib)
    # Beyond Debian's: one node of our own, which only our librdmacm binds
    # (libibverbs.map, ROCEMU_PRIVATE_1); no program built against
    # rdma-core's headers can name it.
    private = {n for n in got - want
               if re.fullmatch(r"rocemu_rdmacm_\w+@@ROCEMU_PRIVATE_1", n)}
    check(got - private == want,
          f"exports = Debian's {len(want)} versioned names "
          f"(missing {sorted(want - got)[:5]}, "
          f"extra {sorted(got - want - private)[:5]})")
    check(len(private) == 1,
          f"and our librdmacm's private node: {sorted(private)}")
    soname = subprocess.run(["readelf", "-d", lib], check=True,
                            capture_output=True, text=True).stdout
    check("Library soname: [libibverbs.so.1]" in soname, "SONAME libibverbs.so.1")
    # Nothing of the system's libibverbs is pulled in underneath.
    check("[libibverbs.so" not in soname.replace("soname: [libibverbs", ""),
          "does not itself need a libibverbs")

    env = dict(os.environ, LD_LIBRARY_PATH=dropin)
    consumers = []
    with open(os.path.join(ref_dir, "consumers-needed.tsv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            path, _pkg, needed = line.split("\t")[:3]
            if "libibverbs.so.1" in needed and os.path.exists(path):
                consumers.append(path)
    check(len(consumers) >= 20,
          f"{len(consumers)} installed consumers of libibverbs to load")
    for path in consumers:
        r = subprocess.run(["ldd", "-r", path], env=env, capture_output=True,
                           text=True, timeout=60)
        text = r.stdout + r.stderr
        bad = [l.strip() for l in text.splitlines()
               if "undefined symbol" in l or "not found" in l]
        used = re.search(r"libibverbs\.so\.1 => (\S+)", text)
        ours = used is not None and os.path.realpath(used.group(1)) == \
            os.path.realpath(lib)
        check(not bad and ours,
              f"{path} loads over the drop-in "
              f"({'ours' if ours else 'NOT ours'}; {bad[:2]})")

    # pyverbs' test runner imports the mlx5 and efa modules whatever the
    # device: they load libmlx5/libefa, which need IBVERBS_PRIVATE_34.
    r = subprocess.run(["/usr/bin/python3", "-c",
                        "import pyverbs.device, pyverbs.providers.mlx5.mlx5dv,"
                        " pyverbs.providers.efa.efadv"],
                       env=env, capture_output=True, text=True, timeout=60)
    check(r.returncode == 0,
          f"pyverbs (device, mlx5dv, efadv) imports: {r.stderr.strip()[-200:]}")

    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
