"""Faults under the S3 gateway: a volume server lost during an upload and during a
download, a gateway killed mid-upload and restarted. The client sees an error or a
complete object, never a truncated one."""

import hashlib
import http.client
import os
import time

import pytest

from filer_fixtures import start_filer
from s3_fixtures import IDENTITIES, Signer, client, code_of, start_gateway

AK, SK = "AKALICE", "alice-secret"
MIB = 1 << 20


@pytest.fixture
def stack(cluster):
    master = cluster.master()
    vol = cluster.volume(master)
    filer = start_filer(cluster, master)
    g = start_gateway(cluster, filer, IDENTITIES).start()
    client(g, AK, SK).create_bucket(Bucket="faults")
    return cluster, master, vol, filer, g


def start_put(g, path, size):
    """Starts an UNSIGNED-PAYLOAD PUT of size bytes; returns the connection."""
    host, port = g.url.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    h = Signer(AK, SK).sign("PUT", g.url, path, {"Content-Length": str(size)},
                            "UNSIGNED-PAYLOAD")
    conn.putrequest("PUT", path)
    for k, v in h.items():
        conn.putheader(k, v)
    conn.endheaders()
    return conn


def test_volume_server_lost_during_upload_and_download(stack):
    cluster, master, vol, filer, g = stack
    s3 = client(g, AK, SK)
    data = os.urandom(12 * MIB)
    s3.put_object(Bucket="faults", Key="kept", Body=data)
    # an upload that loses its only volume server half way: an error, no object
    conn = start_put(g, "/faults/lost", 64 * MIB)
    block = os.urandom(MIB)
    for _ in range(16):
        conn.send(block)
    vol.kill9()
    status = None
    try:
        for _ in range(48):
            conn.send(block)
        resp = conn.getresponse()
        status = resp.status
        body = resp.read()
        assert status in (500, 503), (status, body)
        assert b"<Error>" in body
    except (BrokenPipeError, ConnectionResetError):
        pass  # the gateway answered and closed while the body was still coming
    conn.close()
    assert code_of(s3.head_object, Bucket="faults", Key="lost") == "404"
    # a download while the data is unreachable: a 503 before any byte, not a short 200
    assert code_of(s3.get_object, Bucket="faults", Key="kept") == "ServiceUnavailable"
    cluster.restart(vol)
    got = s3.get_object(Bucket="faults", Key="kept")["Body"].read()
    assert hashlib.md5(got).digest() == hashlib.md5(data).digest()


def test_gateway_killed_mid_upload(stack):
    cluster, master, vol, filer, g = stack
    s3 = client(g, AK, SK)
    s3.put_object(Bucket="faults", Key="obj", Body=b"version one")
    conn = start_put(g, "/faults/obj", 32 * MIB)
    for _ in range(20):
        conn.send(os.urandom(MIB))
    time.sleep(0.3)
    g.kill9()
    conn.close()
    g.start()
    # the old version is whole and untouched; nothing half-written shows
    assert s3.get_object(Bucket="faults", Key="obj")["Body"].read() == b"version one"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="faults")["Contents"]] == ["obj"]
