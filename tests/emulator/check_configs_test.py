#!/usr/bin/env python3
"""rocemud --check-config on the shipped configs (exit 0) and on every file in
bad_configs/ (exit 2, exactly one line on stderr naming file:line:col and the
key given in the file's first line, "# expect: LINE:COL KEY").
Usage: check_configs_test.py ROCEMUD SOURCE_ROOT
"""
import glob
import os
import subprocess
import sys


def main():
    rocemud, root = sys.argv[1], sys.argv[2]
    here = os.path.dirname(os.path.abspath(__file__))
    failures = 0
    bad = sorted(glob.glob(os.path.join(here, "bad_configs", "*.yaml")))
    if len(bad) < 10:
        print(f"FAIL only {len(bad)} bad configs")
        failures += 1
    for path in bad:
        with open(path) as f:
            first = f.readline()
        assert first.startswith("# expect: "), path
        where, key = first[len("# expect: "):].split(None, 1)
        key = key.strip()
        p = subprocess.run([rocemud, "--check-config", "--config", path],
                           capture_output=True, text=True, timeout=20)
        lines = p.stderr.splitlines()
        want = f"rocemud: {path}:{where}: {key}: "
        ok = (p.returncode == 2 and len(lines) == 1 and
              lines[0].startswith(want) and p.stdout == "")
        print(("ok   " if ok else "FAIL ") +
              f"{os.path.basename(path)}: rc={p.returncode} {p.stderr.strip()}")
        failures += not ok
    good = [os.path.join(root, "config", "rocemu.yaml")] + sorted(
        glob.glob(os.path.join(root, "config", "examples", "*.yaml")))
    for path in good:
        p = subprocess.run([rocemud, "--check-config", "--config", path],
                           capture_output=True, text=True, timeout=20)
        ok = p.returncode == 0 and p.stderr == ""
        print(("ok   " if ok else "FAIL ") +
              f"{os.path.relpath(path, root)}: rc={p.returncode} {p.stderr.strip()}")
        failures += not ok
    missing = subprocess.run([rocemud, "--check-config", "--config",
                              "/nonexistent/rocemu.yaml"],
                             capture_output=True, text=True, timeout=20)
    ok = missing.returncode == 2 and len(missing.stderr.splitlines()) == 1
    print(("ok   " if ok else "FAIL ") + "missing file: rc=2, one line")
    failures += not ok
    print(f"{'FAILED' if failures else 'PASSED'}: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
