"""`weedfs mini -mount.dir=DIR`: the one-command cluster also mounts its filer,
and stopping mini commits the mount's data and unmounts before the servers go."""

import os
import time

import requests

from conftest import Daemon, free_port
from mount_fixtures import is_mounted


def test_mini_mounts_and_unmounts(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    d = tmp_path / "data"
    fport = free_port()
    args = ["mini", "-dir=%s" % d, "-ip=127.0.0.1", "-master.port=%d" % free_port(),
            "-volume.port=%d" % free_port(), "-filer.port=%d" % fport, "-pulseSeconds=1",
            "-s3.port=%d" % free_port(),
            "-mount.dir=%s" % mnt]
    mini = Daemon("mini-mount", args, tmp_path, "127.0.0.1:%d" % fport)
    try:
        mini.start()
        deadline = time.monotonic() + 20
        while not is_mounted(mnt):
            assert time.monotonic() < deadline, mini.log_tail()
            time.sleep(0.05)
        with open(mnt / "hello.txt", "wb") as f:
            f.write(b"hello from mini")
        fd = os.open(mnt / "pending.txt", os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, b"not closed before the stop")
        assert mini.stop() == 0, mini.log_tail()
        assert not is_mounted(mnt)
        try:
            os.close(fd)
        except OSError:
            pass
    finally:
        mini.stop()
        if is_mounted(mnt):
            os.system("fusermount3 -uz %s" % mnt)
    # the data is in the filer: start mini again without a mount and read it over HTTP
    mini2 = Daemon("mini-again", args[:-1], tmp_path, "127.0.0.1:%d" % fport)
    try:
        mini2.start()
        r = requests.get("http://127.0.0.1:%d/hello.txt" % fport, timeout=10)
        assert r.status_code == 200 and r.content == b"hello from mini"
        r = requests.get("http://127.0.0.1:%d/pending.txt" % fport, timeout=10)
        assert r.status_code == 200 and r.content == b"not closed before the stop"
    finally:
        mini2.stop()
