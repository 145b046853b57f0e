#!/usr/bin/env python3
"""Prints 'N passed, N failed' from meson testlog.json files.

A skipped test counts as failed: a check that did not run proves nothing.
Exit status 1 if anything failed or nothing ran.
"""
import json
import sys

passed = failed = 0
for path in sys.argv[1:]:
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                rec = json.loads(line)
                if rec.get("result") in ("OK", "EXPECTEDFAIL"):
                    passed += 1
                else:
                    failed += 1
                    print(f"FAILED: {rec.get('name')} ({rec.get('result')})")
    except FileNotFoundError:
        print(f"missing test log {path}")
        failed += 1
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or passed == 0 else 0)
