"""The filer store conformance suite against a real PostgreSQL server.

The test initdb's a private cluster in a temporary directory (as an
unprivileged user when run as root, since postgres refuses root), listens on
127.0.0.1 with a free port and a unix socket inside the temp dir, creates a
database, and runs the C conformance binary (tests/unit/test_filer_store in
the build directory, i.e. next to $WEEDFS_BIN) with WEEDFS_TEST_PG_DSN. The
binary stops and starts the server mid-run through WEEDFS_TEST_PG_STOP_CMD /
WEEDFS_TEST_PG_START_CMD to show that calls fail with WFS_EUNAVAIL during the
outage and succeed on the next call after the restart. Only the server this
test started is stopped (pg_ctl stop -m fast on its own data directory).
"""

import glob
import os
import pwd
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import WEEDFS, free_port

SANITIZER = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def pg_bindir():
    cands = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: [
        int(x) if x.isdigit() else x for x in p.split("/")[-2].split(".")])
    for d in reversed(cands):
        if all(os.access(os.path.join(d, b), os.X_OK) for b in ("initdb", "pg_ctl", "postgres")):
            return d
    for b in ("initdb", "pg_ctl"):
        if not shutil.which(b):
            return None
    return os.path.dirname(shutil.which("initdb"))


def unit_binary(name, env_var):
    env = os.environ.get(env_var)
    if env:
        return env
    if not WEEDFS:
        return None
    p = Path(WEEDFS).parent / "tests" / "unit" / name
    return str(p) if p.is_file() else None


def conformance_binary():
    return unit_binary("test_filer_store", "WEEDFS_FILER_STORE_TEST")


def metalog_binary():
    return unit_binary("test_filer_metalog", "WEEDFS_FILER_METALOG_TEST")


class PgServer:
    """A private PostgreSQL cluster: initdb, start, stop, restart, by its data dir."""

    def __init__(self, bindir):
        self.bindir = bindir
        self.tmp = tempfile.mkdtemp(prefix="weedfs-pg-")
        self.data = os.path.join(self.tmp, "data")
        self.sock = os.path.join(self.tmp, "sock")
        self.log = os.path.join(self.tmp, "pg.log")
        self.port = free_port()
        self.user = None
        os.mkdir(self.sock)
        if os.geteuid() == 0:
            self.user = "nobody"
            pw = pwd.getpwnam(self.user)
            for p in (self.tmp, self.sock):
                os.chown(p, pw.pw_uid, pw.pw_gid)
            os.chmod(self.tmp, 0o755)
        self.started = False

    def cmd(self, args):
        """args as a list, wrapped to run as the unprivileged user if needed."""
        if self.user:
            return ["runuser", "-u", self.user, "--"] + args
        return args

    def run(self, args, **kw):
        return subprocess.run(self.cmd(args), check=True, capture_output=True, text=True,
                              timeout=120, **kw)

    def pg_ctl(self, action):
        """The shell command for pg_ctl start/stop of this cluster."""
        base = [os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-w", "-t", "60"]
        if action == "start":
            opts = ("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s "
                    "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
                    "-c max_connections=60" % (self.port, self.sock))
            args = base + ["-l", self.log, "-o", opts, "start"]
        else:
            args = base + ["-m", "fast", "stop"]
        return " ".join(shlex.quote(a) for a in self.cmd(args))

    def init(self):
        self.run([os.path.join(self.bindir, "initdb"), "-D", self.data, "-U", "weedfs",
                  "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"])

    def start(self):
        subprocess.run(self.pg_ctl("start"), shell=True, check=True, timeout=120,
                       capture_output=True)
        self.started = True

    def stop(self):
        if self.started:
            subprocess.run(self.pg_ctl("stop"), shell=True, timeout=120, capture_output=True)
            self.started = False

    def createdb(self, name):
        self.run([os.path.join(self.bindir, "createdb"), "-h", "127.0.0.1", "-p",
                  str(self.port), "-U", "weedfs", name])

    def log_text(self):
        try:
            return Path(self.log).read_text(errors="replace")
        except OSError:
            return ""

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


@pytest.fixture
def pg():
    bindir = pg_bindir()
    if not bindir:
        pytest.skip("PostgreSQL server binaries not installed")
    srv = PgServer(bindir)
    try:
        srv.init()
        srv.start()
        srv.createdb("weedfs_test")
        yield srv
    finally:
        srv.cleanup()


def run_suite(binary, env, timeout=300):
    r = subprocess.run([binary], env=env, capture_output=True, text=True, timeout=timeout)
    out = r.stdout + r.stderr
    return r.returncode, out


def test_conformance_postgres_with_restart(pg):
    binary = conformance_binary()
    if not binary:
        pytest.skip("tests/unit/test_filer_store not built next to WEEDFS_BIN")
    env = dict(os.environ)
    env["WEEDFS_TEST_PG_DSN"] = ("host=127.0.0.1 port=%d user=weedfs dbname=weedfs_test"
                                 % pg.port)
    env["WEEDFS_TEST_PG_STOP_CMD"] = pg.pg_ctl("stop") + " >/dev/null"
    env["WEEDFS_TEST_PG_START_CMD"] = pg.pg_ctl("start") + " >/dev/null"
    env.pop("WEEDFS_TEST_STORE_DSN", None)
    code, out = run_suite(binary, env)
    pg.started = True  # the suite leaves the server running; stop it in cleanup
    failed = [l for l in out.splitlines() if l.startswith("not ok")]
    assert code == 0 and not failed, "conformance suite failed:\n%s\n--- server log ---\n%s" % (
        out[-6000:], pg.log_text()[-3000:])
    assert "# store postgres" in out
    assert "server started again" in out, "the restart phase did not run"
    assert "# SKIP" not in out
    assert not any(s in out for s in SANITIZER), out[-6000:]
    # a second run against the same database: the schema already exists and runs are isolated
    env.pop("WEEDFS_TEST_PG_STOP_CMD")
    env.pop("WEEDFS_TEST_PG_START_CMD")
    code, out = run_suite(binary, env)
    assert code == 0, out[-6000:]


def test_unreachable_postgres_is_unavailable():
    """Opening a store on a port nobody listens on fails cleanly (no hang, no crash)."""
    binary = conformance_binary()
    if not binary:
        pytest.skip("tests/unit/test_filer_store not built next to WEEDFS_BIN")
    env = dict(os.environ)
    env["WEEDFS_TEST_PG_DSN"] = "host=127.0.0.1 port=%d user=weedfs dbname=x" % free_port()
    code, out = run_suite(binary, env, timeout=60)
    assert code != 0
    assert "not ok 1 - open store" in out


def test_metalog_and_gc_postgres(pg):
    """Subscriptions (local wake-up, another filer's events through the poller,
    resume) and the garbage worker (retries, crash recovery, two filers) on
    PostgreSQL: two store handles on one database act as two filers."""
    binary = metalog_binary()
    if not binary:
        pytest.skip("tests/unit/test_filer_metalog not built next to WEEDFS_BIN")
    env = dict(os.environ)
    env["WEEDFS_TEST_PG_DSN"] = ("host=127.0.0.1 port=%d user=weedfs dbname=weedfs_test"
                                 % pg.port)
    code, out = run_suite(binary, env)
    failed = [l for l in out.splitlines() if l.startswith("not ok")]
    assert code == 0 and not failed, "metalog suite failed:\n%s\n--- server log ---\n%s" % (
        out[-6000:], pg.log_text()[-3000:])
    assert "# store postgres" in out
    assert not any(s in out for s in SANITIZER), out[-6000:]
