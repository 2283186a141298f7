"""Signed access (security.toml's jwt.signing, jwt.signing.read, jwt.filer_signing(.read)):
volume servers refuse needle writes, deletes and reads without a valid token for exactly
that fid, the master hands tokens out in /dir/assign and /dir/lookup as SeaweedFS does,
replication still works, the filer refuses unsigned requests, and the weedfs clients (S3
gateway, mount, shell) mint their tokens themselves from the same file.

Tokens made here come from python's hmac (independent of weedfs's lib/jwt.c)."""

import base64
import json
import subprocess
import time

import pytest
import requests

from conftest import WEEDFS, assign, curl, jwt_token, wait_until
from filer_fixtures import Filer, start_filer
from mount_fixtures import start_mount

WKEY, RKEY, FWKEY, FRKEY = "vol-write-key", "vol-read-key", "filer-write-key", "filer-read-key"


def security_file(d, expires=10, volume=True, filer=True, name="security.toml"):
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    text = ""
    if volume:
        text += ('[jwt.signing]\nkey = "%s"\nexpires_after_seconds = %d\n'
                 '[jwt.signing.read]\nkey = "%s"\nexpires_after_seconds = %d\n'
                 % (WKEY, expires, RKEY, expires))
    if filer:
        text += ('[jwt.filer_signing]\nkey = "%s"\n[jwt.filer_signing.read]\nkey = "%s"\n'
                 % (FWKEY, FRKEY))
    p.write_text(text)
    return p


def claims(tok):
    part = tok.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


@pytest.fixture(scope="module")
def signed(module_cluster):
    """A master, two volume servers (one rack: replication 001) and a filer, all with keys."""
    sec = security_file(module_cluster.base / "sec")
    m = module_cluster.master(extra=["-security=%s" % sec])
    v1 = module_cluster.volume(m, extra=["-security=%s" % sec])
    v2 = module_cluster.volume(m, extra=["-security=%s" % sec])
    f = start_filer(module_cluster, m, extra=["-security=%s" % sec])
    wait_until(lambda: requests.get("http://%s/healthz" % f.url, timeout=2).status_code == 200,
               30, "filer ready")
    return m, v1, v2, f


def read_auth(m, fid):
    r = requests.get("http://%s/dir/lookup" % m.url, params={"fileId": fid, "read": "yes"},
                     timeout=10)
    assert r.status_code == 200, r.text
    j = r.json()
    assert r.headers["Authorization"] == "BEARER " + j["auth"]  # as SeaweedFS's header
    return j["auth"]


def vget(url, fid, tok=None):
    h = {"Authorization": "Bearer " + tok} if tok else {}
    return requests.get("http://%s/%s" % (url, fid), headers=h, timeout=10)


def vput(url, fid, data, tok=None):
    h = {"Authorization": "Bearer " + tok} if tok else {}
    return requests.put("http://%s/%s" % (url, fid), data=data, headers=h, timeout=10)


def assert_401(r):
    assert r.status_code == 401, (r.status_code, r.text)
    assert r.json()["error"], r.text


def test_assign_auth_works_with_curl(signed, tmp_path):
    m, _, _, _ = signed
    a = assign(m)
    assert claims(a["auth"])["fid"] == a["fid"]
    src = tmp_path / "hello.txt"
    src.write_bytes(b"signed hello")
    st, body = curl("-X", "PUT", "-H", "Authorization: Bearer %s" % a["auth"],
                    "-F", "file=@%s" % src, "http://%s/%s" % (a["url"], a["fid"]))
    assert st == 201, body
    # reading needs a read token: the write token is not one, lookup's is
    assert_401(vget(a["url"], a["fid"]))
    assert_401(vget(a["url"], a["fid"], a["auth"]))
    tok = read_auth(m, a["fid"])
    assert claims(tok)["fid"] == a["fid"]
    r = vget(a["url"], a["fid"], tok)
    assert r.status_code == 200 and r.content == b"signed hello"
    st, body = curl("http://%s/%s?jwt=%s" % (a["url"], a["fid"], tok))
    assert st == 200 and body == b"signed hello"
    assert_401(vget(a["url"], a["fid"], "x.y.z"))
    assert requests.head("http://%s/%s" % (a["url"], a["fid"]), timeout=10).status_code == 401
    # lookup without read=yes gives a write token (a delete looks up first), as SeaweedFS
    r = requests.get("http://%s/dir/lookup" % m.url, params={"fileId": a["fid"]}, timeout=10)
    dtok = r.json()["auth"]
    assert requests.delete("http://%s/%s" % (a["url"], a["fid"]),
                           headers={"Authorization": "Bearer " + dtok},
                           timeout=10).status_code in (200, 202, 204)
    assert vget(a["url"], a["fid"], tok).status_code == 404


def test_writes_without_a_valid_token_change_nothing(signed):
    m, _, _, _ = signed
    a, b = assign(m), assign(m)
    # no token, another fid's token, a tampered token, alg none, a token of another key
    body = claims(a["auth"])
    head, pay, sig = a["auth"].split(".")
    tampered = "%s.%s.%s" % (head, pay, ("A" if sig[0] != "A" else "B") + sig[1:])
    forged_fid = "%s.%s.%s" % (head, base64.urlsafe_b64encode(
        json.dumps({"exp": body["exp"], "fid": b["fid"]}).encode()).rstrip(b"=").decode(), sig)
    none = jwt_token(WKEY, fid=a["fid"], alg="none").rsplit(".", 1)[0] + "."
    hs512 = jwt_token(WKEY, fid=a["fid"], alg="HS512")
    for tok in (None, b["auth"], tampered, none, hs512, jwt_token("other", fid=a["fid"]),
                "garbage", "a." * 2000):
        assert_401(vput(a["url"], a["fid"], b"evil", tok))
        r = requests.post("http://%s/%s?jwt=%s" % (a["url"], a["fid"], tok or ""),
                          files={"file": ("x", b"evil")}, timeout=10)
        assert_401(r)
    assert_401(vput(b["url"], b["fid"], b"evil", forged_fid))
    # nothing was written
    assert vget(a["url"], a["fid"], read_auth(m, a["fid"])).status_code == 404
    # the right token works; then deletes need one too
    assert vput(a["url"], a["fid"], b"good", a["auth"]).status_code == 201
    for tok in (None, b["auth"], tampered, none):
        h = {"Authorization": "Bearer " + tok} if tok else {}
        assert_401(requests.delete("http://%s/%s" % (a["url"], a["fid"]), headers=h, timeout=10))
    assert vget(a["url"], a["fid"], read_auth(m, a["fid"])).content == b"good"
    # a token minted in the test (python hmac) is as good as the master's
    assert vput(b["url"], b["fid"], b"py", jwt_token(WKEY, fid=b["fid"])).status_code == 201
    assert vget(b["url"], b["fid"], jwt_token(RKEY, fid=b["fid"])).content == b"py"
    # /healthz and the status page stay open
    assert requests.get("http://%s/healthz" % a["url"], timeout=10).status_code == 200


def test_batch_ids_share_the_base_token(signed):
    m, _, _, _ = signed
    a = assign(m, count="3")
    assert vput(a["url"], a["fid"] + "_2", b"second", a["auth"]).status_code == 201
    assert vget(a["url"], a["fid"] + "_2", read_auth(m, a["fid"] + "_2")).content == b"second"


def test_replication_with_signing(signed):
    m, v1, v2, _ = signed
    a = assign(m, replication="001")
    assert vput(a["url"], a["fid"], b"replicated", a["auth"]).status_code == 201
    tok = read_auth(m, a["fid"])
    for v in (v1, v2):
        r = vget(v.url, a["fid"], tok)
        assert r.status_code == 200 and r.content == b"replicated", (v.url, r.status_code)
    h = {"Authorization": "Bearer " + a["auth"]}
    assert requests.delete("http://%s/%s" % (a["url"], a["fid"]), headers=h,
                           timeout=10).status_code in (200, 202, 204)
    for v in (v1, v2):
        assert vget(v.url, a["fid"], tok).status_code == 404


def test_expired_token_refused(cluster, tmp_path):
    sec = security_file(tmp_path / "sec", expires=1, filer=False)
    m = cluster.master(extra=["-security=%s" % sec])
    cluster.volume(m, extra=["-security=%s" % sec])
    a = assign(m)
    exp = claims(a["auth"])["exp"]
    wait_until(lambda: time.time() >= exp, 10, "the token's expiry")
    r = vput(a["url"], a["fid"], b"late", a["auth"])
    assert_401(r)
    assert "expired" in r.json()["error"]
    assert vget(a["url"], a["fid"], jwt_token(RKEY, fid=a["fid"])).status_code == 404


def fauth(key):
    return {"Authorization": "Bearer " + jwt_token(key)}


def test_filer_signing(signed):
    _, _, _, f = signed
    base = "http://%s" % f.url
    st, body = curl("-X", "PUT", "--data-binary", "x", "%s/sec/a.txt" % base)
    assert st == 401 and json.loads(body)["error"], body
    assert requests.get("%s/sec/a.txt" % base, headers=fauth(FRKEY),
                        timeout=10).status_code == 404  # never written
    st, body = curl("-X", "PUT", "-H", "Authorization: Bearer %s" % jwt_token(FWKEY),
                    "--data-binary", "filer data", "%s/sec/a.txt" % base)
    assert st in (200, 201), body
    # reads need the read key's token; a write token is not one
    assert requests.get("%s/sec/a.txt" % base, timeout=10).status_code == 401
    assert requests.get("%s/sec/a.txt" % base, headers=fauth(FWKEY), timeout=10).status_code == 401
    r = requests.get("%s/sec/a.txt?jwt=%s" % (base, jwt_token(FRKEY)), timeout=10)
    assert r.status_code == 200 and r.content == b"filer data"
    # the JSON API: lookup is a read, delete a write
    lk = json.dumps({"path": "/sec/a.txt"})
    assert requests.post("%s/.api/v1/lookup" % base, data=lk, timeout=10).status_code == 401
    assert requests.post("%s/.api/v1/lookup" % base, data=lk, headers=fauth(FRKEY),
                         timeout=10).status_code == 200
    assert requests.post("%s/.api/v1/delete" % base, data=lk, headers=fauth(FRKEY),
                         timeout=10).status_code == 401
    assert requests.delete("%s/sec/a.txt" % base, timeout=10).status_code == 401
    assert requests.get("%s/sec/a.txt" % base, headers=fauth(FRKEY), timeout=10).content == \
        b"filer data"
    expired = {"Authorization": "Bearer " + jwt_token(FWKEY, exp=int(time.time()) - 1)}
    assert requests.delete("%s/sec/a.txt" % base, headers=expired, timeout=10).status_code == 401
    assert requests.delete("%s/sec/a.txt" % base, headers=fauth(FWKEY),
                           timeout=10).status_code in (200, 204)
    assert requests.get("%s/healthz" % base, timeout=10).status_code == 200


def test_clients_with_the_signing_file(cluster, tmp_path):
    """S3 gateway, mount and shell of a mini with every key: they mint their own tokens."""
    sec = security_file(tmp_path / "sec")
    mini = cluster.mini(extra=["-security=%s" % sec, "-pulseSeconds=1"])
    filer = Filer(mini, "127.0.0.1:%d" % mini.filer_port)
    s3 = "http://127.0.0.1:%d" % mini.s3_port
    wait_until(lambda: requests.get(s3 + "/", timeout=2).status_code in (200, 403), 30,
               "the S3 gateway")
    assert requests.put(s3 + "/sbucket", timeout=10).status_code == 200
    assert requests.put(s3 + "/sbucket/k.txt", data=b"s3 data", timeout=10).status_code == 200
    r = requests.get(s3 + "/sbucket/k.txt", timeout=10)
    assert r.status_code == 200 and r.content == b"s3 data"
    # the filer itself still refuses an unsigned reader
    assert requests.get("http://%s/buckets/sbucket/k.txt" % filer.url,
                        timeout=10).status_code == 401
    # the mount
    mnt = start_mount(cluster, filer.url, extra=["-security=%s" % sec])
    (mnt.path / "m.txt").write_bytes(b"mount data" * 1000)
    assert (mnt.path / "m.txt").read_bytes() == b"mount data" * 1000
    assert (mnt.path / "buckets" / "sbucket" / "k.txt").read_bytes() == b"s3 data"
    mnt.unmount()
    r = requests.get("http://%s/m.txt" % filer.url, headers=fauth(FRKEY), timeout=10)
    assert r.status_code == 200 and r.content == b"mount data" * 1000
    # the shell
    p = subprocess.run([WEEDFS, "shell", "-security=%s" % sec, "-master=127.0.0.1:%d" % mini.port,
                        "-filer=%s" % filer.url, "-c", "fs.ls /"], capture_output=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    assert "m.txt" in p.stdout.decode()
    # and without the file the shell is refused
    p = subprocess.run([WEEDFS, "shell", "-master=127.0.0.1:%d" % mini.port,
                        "-filer=%s" % filer.url, "-c", "fs.ls /"], capture_output=True,
                       timeout=60)
    assert p.returncode != 0
