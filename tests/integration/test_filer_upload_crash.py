"""A filer killed in the middle of a PUT leaks nothing: every chunk the dead upload
stored on the volume server is in the persistent garbage queue under a lease and is
deleted after the restart, and no entry appears (docs/api-filer.md, "Uploads")."""

import os
import socket
import time

from conftest import file_count, wait_until
from test_filer_tus import MiB, delete_count
from test_filer_tus_expiry import cluster_with_filer, gc_rows


def test_put_killed_mid_body_leaks_nothing(cluster, monkeypatch):
    f, v = cluster_with_filer(cluster, monkeypatch, 3600,
                              env={"WEEDFS_FILER_UPLOAD_LEASE_SECONDS": "2"})
    assert f.put("/crash/before.bin", b"b" * (2 * MiB)).status_code == 201
    files0, deleted0 = file_count(v), delete_count(v)
    assert gc_rows(f) == 0

    # a slow PUT: 4.5 of 6 MiB sent, then the client stalls
    data = os.urandom(6 * MiB)
    host, port = f.url.split(":")
    s = socket.create_connection((host, int(port)), timeout=30)
    s.sendall(("PUT /crash/dead.bin HTTP/1.1\r\nHost: %s\r\n"
               "Content-Length: %d\r\n\r\n" % (f.url, len(data))).encode())
    for i in range(9):
        s.sendall(data[i * (MiB // 2):(i + 1) * (MiB // 2)])
        time.sleep(0.05)
    # at least three 1 MiB chunks stored, and every stored one recorded
    wait_until(lambda: file_count(v) >= files0 + 3, timeout=30, what="chunks uploaded")
    wait_until(lambda: gc_rows(f) == file_count(v) - files0, timeout=30,
               what="every stored chunk recorded")
    stored = file_count(v) - files0
    f.daemon.kill9()
    s.close()

    f.daemon.start()
    # the leases run out: the queue deletes exactly what the dead PUT stored
    wait_until(lambda: delete_count(v) >= deleted0 + stored, timeout=30, what="orphans deleted")
    wait_until(lambda: gc_rows(f) == 0, timeout=30, what="garbage queue drained")
    assert delete_count(v) == deleted0 + stored
    assert f.get("/crash/dead.bin").status_code == 404
    assert f.get("/crash/before.bin").content == b"b" * (2 * MiB)
    # a complete PUT leaves nothing queued: its chunks are claimed by its commit
    assert f.put("/crash/after.bin", data).status_code == 201
    assert gc_rows(f) == 0
    assert f.get("/crash/after.bin").content == data
