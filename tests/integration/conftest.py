"""Fixtures for the weedfs integration tests: real daemons on loopback.

Every daemon is a real `weedfs` process started in a temporary directory on a
free 127.0.0.1 port. Readiness is polled (GET /healthz, then the master's
topology), never slept for. Each daemon's output goes to a log file; the logs
of a failed test are attached to its report, and a sanitizer report in any
daemon log fails the test that was running. Daemons are stopped by PID:
SIGTERM, then SIGKILL after a timeout.

The binary is $WEEDFS_BIN, else ./weedfs, ./build/weedfs or /tmp/build-ci/weedfs.
"""

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]

# Seconds a single test may run before it is failed (guards against hangs).
TEST_TIMEOUT = int(os.environ.get("WEEDFS_TEST_TIMEOUT", "180"))
# Seconds a daemon may take to become ready (ASan builds start slower).
READY_TIMEOUT = float(os.environ.get("WEEDFS_READY_TIMEOUT", "30"))
PULSE = 1

# WEEDFS_TEST_SECURITY=FILE: every daemon the fixtures start (and weedfs-mount)
# gets -security=FILE, and requests made with `requests` to the volume servers
# and filers they start carry a token minted from FILE's keys, as a weedfs
# client with that file would send (the "security smoke" of contrib/test-all.sh).
SECURITY_FILE = os.environ.get("WEEDFS_TEST_SECURITY") or None
SECURITY_ARGS = ["-security=%s" % SECURITY_FILE] if SECURITY_FILE else []
SECURITY_COMMANDS = ("master", "volume", "filer", "s3", "mini", "shell")
_VOLUME_HOSTS, _FILER_HOSTS = set(), set()


def jwt_token(key, exp=None, fid=None, alg="HS256", expires=10):
    """An HS256 token as SeaweedFS makes them (python hmac: independent of weedfs)."""
    import base64
    import hashlib
    import hmac

    def b64(b):
        return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

    claims = {"exp": int(time.time()) + expires if exp is None else exp}
    if fid is not None:
        claims["fid"] = fid
    head = b64(json.dumps({"alg": alg, "typ": "JWT"}, separators=(",", ":")).encode())
    body = b64(json.dumps(claims, separators=(",", ":")).encode())
    sig = hmac.new(key.encode(), ("%s.%s" % (head, body)).encode(), hashlib.sha256).digest()
    return "%s.%s.%s" % (head, body, b64(sig))


def _security_keys():
    import tomllib
    with open(SECURITY_FILE, "rb") as f:
        t = tomllib.load(f)
    jwt = t.get("jwt", {})
    sign = jwt.get("signing", {})
    fsign = jwt.get("filer_signing", {})
    return {"vw": sign.get("key"), "vr": sign.get("read", {}).get("key"),
            "fw": fsign.get("key"), "fr": fsign.get("read", {}).get("key")}


_NEEDLE_PATH = re.compile(r"^/(\d+)[,/]([0-9a-fA-F]+(?:_\d+)?)")


def _install_security_tokens():
    """Adds Authorization to requests' sends to the daemons started here (redirects too)."""
    from urllib.parse import urlsplit
    keys = _security_keys()
    orig = requests.Session.send

    def send(self, req, **kw):
        u = urlsplit(req.url)
        if "Authorization" not in req.headers:
            read = req.method in ("GET", "HEAD")
            m = _NEEDLE_PATH.match(u.path)
            tok = None
            if u.netloc in _VOLUME_HOSTS and m:
                k = keys["vr"] if read else keys["vw"]
                if k:
                    tok = jwt_token(k, fid="%s,%s" % (m.group(1), m.group(2).split("_")[0]))
            elif u.netloc in _FILER_HOSTS:
                api_read = req.method == "POST" and u.path in (
                    "/.api/v1/lookup", "/.api/v1/list", "/.api/v1/lookupVolume",
                    "/.api/v1/statfs")
                k = keys["fr"] if read or api_read else keys["fw"]
                if k:
                    tok = jwt_token(k)
            if tok:
                req.headers["Authorization"] = "Bearer " + tok
        return orig(self, req, **kw)

    requests.Session.send = send


if SECURITY_FILE:
    _install_security_tokens()


def _note_hosts(args):
    """Remembers which ports are volume servers and filers (for the tokens above)."""
    if not args:
        return
    flags = dict(a[1:].split("=", 1) for a in args[1:] if a.startswith("-") and "=" in a)
    ip = flags.get("ip", "127.0.0.1")
    if args[0] == "volume" and "port" in flags:
        _VOLUME_HOSTS.add("%s:%s" % (ip, flags["port"]))
    elif args[0] == "filer" and "port" in flags:
        _FILER_HOSTS.add("%s:%s" % (ip, flags["port"]))
    elif args[0] == "mini":
        if "volume.port" in flags:
            _VOLUME_HOSTS.add("%s:%s" % (ip, flags["volume.port"]))
        if "filer.port" in flags:
            _FILER_HOSTS.add("%s:%s" % (ip, flags["filer.port"]))


SANITIZER_PATTERNS = re.compile(
    r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|"
    r"UndefinedBehaviorSanitizer|ERROR: ThreadSanitizer|WARNING: ThreadSanitizer"
)


def find_binary():
    env = os.environ.get("WEEDFS_BIN")
    if env:
        return str(Path(env).resolve())
    for cand in (ROOT / "weedfs", ROOT / "build" / "weedfs", Path("/tmp/build-ci/weedfs")):
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return None


WEEDFS = find_binary()

_used_ports = set()


def free_port():
    """A free loopback TCP port not handed out before in this session."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _used_ports:
            _used_ports.add(port)
            return port
    raise RuntimeError("no free port")


# Every daemon started and not yet reaped, for log attachment on failure.
_live = []


class Daemon:
    """One weedfs process. `url` is host:port of the HTTP endpoint to poll."""

    def __init__(self, name, args, workdir, url, extra_urls=()):
        self.name = name
        args = list(args)
        if SECURITY_FILE and args[:1] and args[0] in SECURITY_COMMANDS and \
                not any(a.startswith("-security=") for a in args):
            args = args[:1] + SECURITY_ARGS + args[1:]
        _note_hosts(args)
        self.args = [WEEDFS] + args
        self.workdir = Path(workdir)
        self.url = url
        self.extra_urls = list(extra_urls)
        self.log_path = self.workdir / (name + ".log")
        self.proc = None
        self.starts = 0
        self._checked_upto = 0
        self.returncodes = []
        self.reaped = False
        # mini's gateway and catalogs start after its filer answers: ready is its ready line
        self.ready_line = "mini ready:" if list(args)[:1] == ["mini"] else None

    # ---- lifecycle -------------------------------------------------------
    def start(self, wait=True):
        assert self.proc is None or self.proc.poll() is not None
        self.workdir.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            log.write(("==== start %d: %s\n" % (self.starts, " ".join(self.args))).encode())
            log.flush()
            self.proc = subprocess.Popen(
                self.args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=str(self.workdir),
                start_new_session=True,
            )
        self.starts += 1
        self.reaped = False
        if self not in _live:
            _live.append(self)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=READY_TIMEOUT):
        deadline = time.monotonic() + timeout
        pending = [self.url] + self.extra_urls
        while pending:
            if self.proc.poll() is not None:
                raise AssertionError(
                    "%s exited with %s before it was ready\n%s"
                    % (self.name, self.proc.returncode, self.log_tail())
                )
            try:
                r = requests.get("http://%s/healthz" % pending[0], timeout=1)
                if r.status_code == 200:
                    pending.pop(0)
                    continue
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(
                    "%s not ready on %s after %ss\n%s"
                    % (self.name, pending[0], timeout, self.log_tail())
                )
            time.sleep(0.02)
        while self.ready_line and self.ready_line not in self.log_text().rsplit("==== start ", 1)[-1]:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("%s never logged %r\n%s"
                                     % (self.name, self.ready_line, self.log_tail()))
            time.sleep(0.02)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            os.kill(self.proc.pid, sig)

    def stop(self, timeout=15):
        """SIGTERM, SIGKILL after timeout. Returns the exit status (negative: signal)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGCONT)
                os.kill(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                with open(self.log_path, "ab") as log:
                    log.write(b"==== test harness: no exit %ds after SIGTERM, killed\n" % timeout)
        self.returncodes.append(self.proc.returncode)
        return self.proc.returncode

    def kill9(self):
        if self.alive():
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.returncodes.append(self.proc.returncode)

    def pause(self):
        self.signal(signal.SIGSTOP)

    def resume(self):
        self.signal(signal.SIGCONT)

    # ---- logs --------------------------------------------------------------
    def log_text(self):
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines=150):
        text = self.log_text().splitlines()
        return "\n".join(text[-lines:])

    def new_sanitizer_reports(self):
        """Sanitizer report text logged since the last call, or ''."""
        text = self.log_text()
        fresh = text[self._checked_upto:]
        self._checked_upto = len(text)
        m = SANITIZER_PATTERNS.search(fresh)
        if not m:
            return ""
        start = fresh.rfind("\n", 0, m.start()) + 1
        return fresh[start:start + 6000]


class Cluster:
    """Starts daemons for one test (or module) and tears them down."""

    def __init__(self, base):
        self.base = Path(base)
        self.daemons = []
        self._n = 0

    def _dir(self, role):
        self._n += 1
        d = self.base / ("%s%d" % (role, self._n))
        d.mkdir(parents=True, exist_ok=True)
        return d

    def master(self, volume_size_limit_mb=64, extra=(), port=None, mdir=None):
        port = port or free_port()
        d = Path(mdir) if mdir else self._dir("master")
        args = [
            "master",
            "-ip=127.0.0.1",
            "-port=%d" % port,
            "-mdir=%s" % d,
            "-pulseSeconds=%d" % PULSE,
            "-volumeSizeLimitMB=%d" % volume_size_limit_mb,
        ] + list(extra)
        m = Daemon("master-%d" % port, args, d, "127.0.0.1:%d" % port)
        m.port, m.dir = port, d
        self.daemons.append(m)
        return m.start()

    def volume(self, master, dc=None, rack=None, max_volumes=8, extra=(), port=None, vdir=None,
               wait_registered=True):
        port = port or free_port()
        d = Path(vdir) if vdir else self._dir("volume")
        args = [
            "volume",
            "-ip=127.0.0.1",
            "-port=%d" % port,
            "-dir=%s" % d,
            "-max=%d" % max_volumes,
            "-mserver=%s" % master.url,
            "-pulseSeconds=%d" % PULSE,
        ]
        if dc:
            args.append("-dataCenter=%s" % dc)
        if rack:
            args.append("-rack=%s" % rack)
        args += list(extra)
        v = Daemon("volume-%d" % port, args, d, "127.0.0.1:%d" % port)
        v.port, v.dir, v.master = port, d, master
        v.dc, v.rack = dc, rack
        self.daemons.append(v)
        v.start()
        if wait_registered:
            wait_registered_with(master, v)
        return v

    def restart(self, d, wait_registered=True):
        if d.alive():
            d.stop()
        d.start()
        if wait_registered and hasattr(d, "master"):
            wait_registered_with(d.master, d)
        return d

    def mini(self, extra=()):
        mport, vport, fport, sport = free_port(), free_port(), free_port(), free_port()
        cport, lport, iport = free_port(), free_port(), free_port()
        d = self._dir("mini")
        args = [
            "mini",
            "-dir=%s" % d,
            "-ip=127.0.0.1",
            "-master.port=%d" % mport,
            "-volume.port=%d" % vport,
            "-filer.port=%d" % fport,
            "-s3.port=%d" % sport,
            "-iceberg.port=%d" % cport,
            "-lance.port=%d" % lport,
            "-iam.port=%d" % iport,
        ] + list(extra)
        m = Daemon("mini-%d" % mport, args, d, "127.0.0.1:%d" % mport,
                   extra_urls=["127.0.0.1:%d" % vport, "127.0.0.1:%d" % fport])
        m.port, m.volume_port, m.filer_port, m.s3_port, m.dir = mport, vport, fport, sport, d
        m.catalog_port, m.lance_port, m.iam_port = cport, lport, iport
        self.daemons.append(m)
        return m.start()

    def teardown(self):
        for d in reversed(self.daemons):
            d.stop()
            d.reaped = True  # the sanitizer guard checks its log once more, then drops it


def wait_registered_with(master, vol, timeout=READY_TIMEOUT):
    """Polls the master's topology until it lists the volume server."""
    wait_until(lambda: vol.url in requests.get("http://%s/dir/status" % master.url,
                                               timeout=2).text,
               timeout, "master %s never listed volume server %s" % (master.url, vol.url))


def wait_until(pred, timeout=15, what="condition"):
    """Polls pred() (exceptions count as False) until true; fails after timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            v = pred()
            if v:
                return v
        except Exception as e:  # noqa: BLE001 - a poll may hit a half-started daemon
            last = e
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %ss waiting for %s (last error: %r)"
                                 % (timeout, what, last))
        time.sleep(0.05)


def _check_sanitizers():
    reports = []
    for d in list(_live):
        rep = d.new_sanitizer_reports()
        if rep:
            reports.append("%s:\n%s" % (d.name, rep))
    return reports


@pytest.fixture(scope="session", autouse=True)
def _weedfs_binary():
    if WEEDFS is None:
        pytest.fail("weedfs binary not found: set WEEDFS_BIN or build ./weedfs", pytrace=False)
    return WEEDFS


@pytest.fixture
def cluster(tmp_path):
    """A per-test cluster factory: cluster.master(), cluster.volume(m), cluster.mini()."""
    c = Cluster(tmp_path)
    yield c
    c.teardown()


@contextlib.contextmanager
def module_scratch(request, name):
    """A module fixture's directory, removed afterwards when none of the module's tests
    failed: pytest's "failed" retention (pytest.ini) covers only tmp_path, and volumes
    and caches kept until the session ends filled CI's disk. Leave it only after
    stopping every daemon and mount that uses it; an exception out of the block keeps it."""
    failed_before = request.session.testsfailed
    path = request.getfixturevalue("tmp_path_factory").mktemp(name)
    yield path
    if request.session.testsfailed == failed_before:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def module_cluster(request):
    with module_scratch(request, "cluster") as path:
        c = Cluster(path)
        yield c
        c.teardown()
        # Exit-time reports (leaks) come after the last test's guard ran.
        reports = ["%s:\n%s" % (d.name, r) for d in c.daemons
                   for r in [d.new_sanitizer_reports()] if r]
        _live[:] = [d for d in _live if not d.reaped]
        if reports:
            pytest.fail("sanitizer report in daemon log:\n" + "\n".join(reports), pytrace=False)


@pytest.fixture(autouse=True)
def _sanitizer_guard(request):
    """Fails the test if any daemon logged a sanitizer report while it ran."""
    _check_sanitizers()  # reports from earlier tests were charged to them
    yield
    # Daemons of a per-test cluster are stopped (and their exit reports
    # logged) before this runs, since function fixtures finalize in reverse.
    reports = _check_sanitizers()
    _live[:] = [d for d in _live if not d.reaped]
    if reports:
        pytest.fail("sanitizer report in daemon log:\n" + "\n".join(reports), pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    def on_alarm(signum, frame):
        raise TimeoutError("test exceeded %ss" % TEST_TIMEOUT)

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(TEST_TIMEOUT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        seen = set()
        daemons = list(_live)
        for fixname in ("cluster", "module_cluster"):
            c = item.funcargs.get(fixname) if hasattr(item, "funcargs") else None
            if c is not None:
                daemons += c.daemons
        for d in daemons:
            if id(d) in seen:
                continue
            seen.add(id(d))
            rep.sections.append(("daemon log %s (%s)" % (d.name, d.log_path), d.log_tail()))


# ---------------------------------------------------------------------------
# Client helpers shared by the tests.

FID_RE = re.compile(r"^(\d+),([0-9a-f]+)([0-9a-f]{8})$")


def parse_fid(fid):
    """(volume id, key, cookie) of a canonical fid; asserts the format."""
    m = FID_RE.match(fid)
    assert m, "malformed fid %r" % fid
    assert len(m.group(2)) >= 1
    return int(m.group(1)), int(m.group(2), 16), int(m.group(3), 16)


def assign(master, expect_ok=True, **params):
    r = requests.get("http://%s/dir/assign" % master.url, params=params, timeout=30)
    if not expect_ok:
        return r
    assert r.status_code == 200, "assign %s: %s %s" % (params, r.status_code, r.text)
    j = r.json()
    assert "fid" in j and "url" in j, j
    parse_fid(j["fid"])
    return j


def upload(url, fid, data, name="file.bin", mime=None, params=None):
    files = {"file": (name, data, mime) if mime else (name, data)}
    return requests.post("http://%s/%s" % (url, fid), files=files, params=params, timeout=30)


def put_file(master, data, name="file.bin", mime=None, **assign_params):
    """Assigns and uploads; returns (fid, url). Asserts success."""
    a = assign(master, **assign_params)
    r = upload(a["url"], a["fid"], data, name=name, mime=mime)
    assert r.status_code in (200, 201), "upload %s: %s %s" % (a["fid"], r.status_code, r.text)
    return a["fid"], a["url"]


def lookup(master, vid, **params):
    params = dict(params, volumeId=str(vid))
    return requests.get("http://%s/dir/lookup" % master.url, params=params, timeout=10)


def lookup_urls(master, vid):
    r = lookup(master, vid)
    if r.status_code != 200:
        return []
    return sorted(loc["url"] for loc in r.json().get("locations") or [])


def curl(*args, timeout=60):
    """Runs the real curl binary; returns (status code, body bytes)."""
    cmd = ["curl", "-sS", "-o", "-", "-w", "\n%{http_code}"] + list(args)
    p = subprocess.run(cmd, capture_output=True, timeout=timeout)
    assert p.returncode == 0, "curl %s failed: %s" % (args, p.stderr.decode(errors="replace"))
    body, _, code = p.stdout.rpartition(b"\n")
    return int(code), body


def json_error(r):
    """Asserts r is a JSON error response and returns the message."""
    try:
        j = r.json()
    except ValueError:
        raise AssertionError("not a JSON error body (%s): %r" % (r.status_code, r.text[:300]))
    assert isinstance(j, dict) and j.get("error"), "no \"error\" in %r" % j
    return j["error"]


def walk(obj):
    """Yields every dict nested anywhere in a JSON value."""
    if isinstance(obj, dict):
        yield obj
        for v in obj.values():
            yield from walk(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from walk(v)


def ci_get(d, *names):
    """Case-insensitive lookup of the first of names present in dict d."""
    low = {k.lower(): v for k, v in d.items()}
    for n in names:
        if n.lower() in low:
            return low[n.lower()]
    return None


def volume_records(status_json, vid):
    """Dicts describing volume vid anywhere in a /status or /vol/status reply."""
    out = []
    for d in walk(status_json):
        v = ci_get(d, "id", "volumeId", "vid")
        if v is not None and str(v) == str(vid) and ci_get(d, "size", "fileCount") is not None:
            out.append(d)
    return out


def file_count(vol):
    """Sum of file counts the volume server reports in /status."""
    j = requests.get("http://%s/status" % vol.url, timeout=10).json()
    total = 0
    for d in walk(j):
        v = ci_get(d, "fileCount")
        if isinstance(v, int) and ci_get(d, "id", "volumeId") is not None:
            total += v
    return total


def dat_bytes(vol):
    return sum(p.stat().st_size for p in Path(vol.dir).rglob("*.dat"))


def json_dumps(j):
    return json.dumps(j, indent=1)[:3000]
