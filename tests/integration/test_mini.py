"""`weedfs mini`, `weedfs benchmark` and the command line itself."""

import os
import signal
import subprocess

import requests

from conftest import SECURITY_ARGS, WEEDFS, assign, free_port, parse_fid, upload, wait_until


def test_mini_serves_assign_upload_read(cluster):
    mini = cluster.mini()
    master = "127.0.0.1:%d" % mini.port
    r = requests.get("http://%s/dir/assign" % master, timeout=60)
    assert r.status_code == 200, r.text
    a = r.json()
    assert a["url"] == "127.0.0.1:%d" % mini.volume_port
    parse_fid(a["fid"])
    r = upload(a["url"], a["fid"], b"hello mini", name="hello.txt")
    assert r.status_code in (200, 201), r.text
    r = requests.get("http://%s/%s" % (a["url"], a["fid"]))
    assert r.status_code == 200 and r.content == b"hello mini"
    assert r.headers["Content-Type"].startswith("text/plain")
    # Through the master's redirect too.
    assert requests.get("http://%s/%s" % (master, a["fid"])).content == b"hello mini"
    # The documented layout: DIR/master and DIR/volume.
    assert (mini.dir / "master").is_dir()
    assert list((mini.dir / "volume").glob("*.dat"))
    # Data survives a restart of the whole process.
    assert mini.stop() == 0
    mini.start()
    r = requests.get("http://%s/%s" % (a["url"], a["fid"]))
    assert r.status_code == 200 and r.content == b"hello mini"
    b = requests.get("http://%s/dir/assign" % master, timeout=60).json()
    assert parse_fid(b["fid"])[1] > parse_fid(a["fid"])[1]


def thread_names(pid):
    names = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
            name = f.read().strip()
        names[name] = names.get(name, 0) + 1
    return names


def test_mini_threads_are_named_by_role(cluster):
    """top -H, perf and gdb show what each thread of a mini does: its loops,
    worker pools and helper threads are named after their server."""
    mini = cluster.mini()
    # the gateway answers once its loops run; a request reaches the filer's workers too
    wait_until(lambda: requests.get("http://127.0.0.1:%d/" % mini.s3_port, timeout=2)
               .status_code in (200, 403), 30, "the S3 gateway never answered")
    names = thread_names(mini.proc.pid)
    for role in ("wfs-master-loop", "wfs-vol-loop", "wfs-filer-loop", "wfs-s3-loop",
                 "wfs-master-work", "wfs-vol-work", "wfs-vol-read", "wfs-filer-meta",
                 "wfs-filer-io", "wfs-s3-work", "wfs-blob-io", "wfs-sqlite-ckpt",
                 "wfs-heartbeat", "wfs-filer-gc"):
        assert names.get(role), "no %s thread among %s" % (role, sorted(names))
    # every thread but the main one has a role: none is left with the process's name
    assert names.get("weedfs", 0) == 1, sorted(names.items())


def test_benchmark_against_mini(cluster):
    mini = cluster.mini()
    # with WEEDFS_TEST_SECURITY the benchmark mints read tokens from the same file
    p = subprocess.run([WEEDFS, "benchmark", "-master=127.0.0.1:%d" % mini.port, "-n=2000", "-c=4"]
                       + SECURITY_ARGS,
                       capture_output=True, timeout=240, stdin=subprocess.DEVNULL)
    out = p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")
    assert p.returncode == 0, out[-3000:]
    assert "Requests per second" in out, out[-3000:]
    # Both the write and the read phase ran.
    assert out.count("Requests per second") >= 2, out[-3000:]


def test_daemons_exit_cleanly_on_sigterm(cluster):
    m = cluster.master()
    v = cluster.volume(m)
    a = assign(m)
    assert upload(a["url"], a["fid"], b"x").status_code in (200, 201)
    assert v.stop() == 0, v.log_tail()
    assert m.stop() == 0, m.log_tail()
    mini = cluster.mini()
    mini.signal(signal.SIGINT)
    assert mini.proc.wait(15) == 0, mini.log_tail()


def test_listening_log_line(cluster):
    m = cluster.master()
    v = cluster.volume(m)
    assert "master listening on 127.0.0.1:%d" % m.port in m.log_text()
    assert "listening on 127.0.0.1:%d" % v.port in v.log_text()


def _run(*args):
    p = subprocess.run([WEEDFS] + list(args), capture_output=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")


def test_cli_version_and_help():
    code, out = _run("version")
    assert code == 0 and "0." in out, out
    code, out = _run("help")
    assert code == 0
    for cmd in ("master", "volume", "mini", "benchmark", "version"):
        assert cmd in out, (cmd, out)
    for cmd, flag in (("master", "-mdir"), ("volume", "-mserver"), ("mini", "-dir"),
                      ("benchmark", "-master")):
        code, out = _run(cmd, "-h")
        assert code == 0, (cmd, out)
        assert flag in out, (cmd, out)


def test_cli_errors(tmp_path):
    code, out = _run("nosuchcommand")
    assert code != 0 and out.strip()
    code, out = _run("master", "-nosuchflag=1")
    assert code != 0 and "nosuchflag" in out
    code, out = _run("volume", "-port=notanumber")
    assert code != 0 and out.strip()
    # A port already in use: a clear start-up failure, not a hang.
    port = free_port()
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        code, out = _run("master", "-port=%d" % port, "-mdir=%s" % tmp_path)
        assert code != 0 and out.strip()
