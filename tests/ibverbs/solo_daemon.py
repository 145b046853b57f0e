"""One rocemud on a net_ring port in a scratch directory: a device whose
QPs reach each other through the RNIC's loopback, enough for programs that
talk to themselves (pyverbs' suite) or for a server and client on one
host. Needs no root and no network namespace."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "emulator"))
import netns_util  # noqa: E402


class SoloDaemon:
    def __init__(self, rocemud, name="r0", prefix="rocemu-solo-",
                 verbs=None):
        """`verbs`: keys added to the config's verbs section."""
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        os.chmod(self.tmp, 0o755)
        self.name = name
        self.device = f"rocemu_{name}"
        self.ctl = os.path.join(self.tmp, "ctl.sock")
        self.verbs = os.path.join(self.tmp, "verbs.sock")
        self.log = os.path.join(self.tmp, "rocemud.log")
        cfg = os.path.join(self.tmp, "rocemud.yaml")
        self.mac = "02:00:00:78:00:01"
        self.addresses = ["10.78.0.1/24", "fd78::1/64"]
        netns_util.write_rocemud_config(
            cfg, f"rocemu-solo-{os.getpid()}",
            [netns_util.port(name, "net_ring0", self.mac, self.addresses,
                             4200)],
            eal={"memory_mb": 256, "hugepages": "no"},
            control={"socket": self.ctl},
            verbs={"socket": self.verbs, "socket_mode": "0666",
                   **(verbs or {})},
            logging={"file": self.log})
        self.rocemud = rocemud
        self.cfg = cfg
        self.start()

    def start(self):
        """Starts rocemud and returns once its verbs socket accepts (a
        stale socket left by a killed daemon refuses until the new one
        replaced it)."""
        self.proc = subprocess.Popen([self.rocemud, "--config", self.cfg],
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while not self._accepts():
            if self.proc.poll() is not None:
                raise RuntimeError("rocemud exited: " +
                                   self.proc.stdout.read().decode())
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("rocemud: no verbs socket")
            time.sleep(0.05)

    def _accepts(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect(self.verbs)
            return True
        except OSError:
            return False
        finally:
            s.close()

    def env(self, dropin_dir, **extra):
        e = dict(os.environ)
        e["LD_LIBRARY_PATH"] = dropin_dir
        e["ROCEMU_VERBS_SOCKET"] = self.verbs
        e.update(extra)
        return e

    def kill(self):
        """Ends the daemon abruptly (SIGKILL), as a crash would."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self):
        """SIGTERM; returns the exit status (0: clean shutdown)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return -1
        return self.proc.returncode

    def cleanup(self, keep=False):
        self.stop()
        if not keep and not os.environ.get("ROCEMU_KEEP_TMP"):
            shutil.rmtree(self.tmp, ignore_errors=True)


def run_program_test(prefix, ok_line, check):
    """The body of a test that runs one C program over the drop-in library
    and one rocemud (argv: ROCEMUD DROPIN_DIR PROGRAM): the program must
    exit 0 having printed `ok_line`; then check(daemon) inspects
    the daemon and returns False on a failure (it prints its own lines);
    the daemon must stop cleanly. Returns the test's exit status."""
    rocemud, dropin, prog = (os.path.abspath(p) for p in sys.argv[1:4])
    d = SoloDaemon(rocemud, prefix=prefix)
    failed = False
    try:
        r = subprocess.run([prog], env=d.env(dropin), capture_output=True,
                           text=True, timeout=120)
        print(r.stdout, end="")
        print(r.stderr, end="", file=sys.stderr)
        failed = r.returncode != 0 or ok_line not in r.stdout
        print(("FAIL " if failed else "ok   ") +
              f"{os.path.basename(prog)} exit {r.returncode}")
        failed |= not check(d)
    finally:
        rc = d.stop()
        d.cleanup()
    print(("ok   " if rc == 0 else "FAIL ") +
          f"rocemud stops cleanly (exit {rc})")
    return 1 if failed or rc != 0 else 0
