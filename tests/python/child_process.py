"""A Python child process for the tests that send it signals (Ctrl-C): it runs a script, and the
test reads its stdout line by line with a time limit, writes to its stdin, interrupts it and checks
that it exits cleanly."""
import os
import selectors
import signal
import subprocess
import sys
import time

import pytest


class Child:
    """Runs `script` under this interpreter; stdin, stdout and stderr are pipes."""

    def __init__(self, script):
        self.proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.fd = self.proc.stdout.fileno()
        self.buf = b""
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.fd, selectors.EVENT_READ)

    def line(self, limit=60.0):
        """The child's next stdout line (fails after `limit` seconds without one). Reads the pipe
        itself: a buffered readline could hold lines the selector no longer reports."""
        deadline = time.monotonic() + limit
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not self.sel.select(timeout=left):
                self.proc.kill()
                pytest.fail(f"no line from the child in {limit} s; "
                            f"stderr: {self.proc.stderr.read()}")
            chunk = os.read(self.fd, 4096)
            if not chunk:
                pytest.fail(f"the child ended (status {self.proc.wait()}); "
                            f"stderr: {self.proc.stderr.read()}")
            self.buf += chunk
        text, self.buf = self.buf.split(b"\n", 1)
        return text.decode().strip()

    def wait_for(self, prefix):
        """The first next line that starts with `prefix`."""
        while True:
            text = self.line()
            if text.startswith(prefix):
                return text

    def write(self, text):
        self.proc.stdin.write(text.encode())
        self.proc.stdin.flush()

    def interrupt(self):
        """Sends SIGINT; returns when (time.monotonic())."""
        return self.signal(signal.SIGINT)

    def signal(self, signo):
        """Sends `signo`; returns when (time.monotonic())."""
        self.proc.send_signal(signo)
        return time.monotonic()

    def wait_blocked(self, limit=60.0):
        """Returns once the child's main thread sleeps in a futex wait (Linux: the syscall
        /proc/<pid>/task/<pid>/syscall shows), as it does blocked in a chanflow call: the fact
        to wait for before a signal that must find the call blocked. Polls that file."""
        path = f"/proc/{self.proc.pid}/task/{self.proc.pid}/syscall"
        futex = 202  # x86_64
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"the child ended (status {self.proc.returncode}); "
                            f"stderr: {self.proc.stderr.read()}")
            with open(path) as f:
                fields = f.read().split()
            if fields and fields[0] == str(futex):
                return
            time.sleep(0.001)
        self.proc.kill()
        pytest.fail(f"the child's main thread did not block in {limit} s")

    def finish(self):
        """Waits for the child's exit, which must be a clean one."""
        _, err = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, err.decode()
