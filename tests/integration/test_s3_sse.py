"""Server-side encryption through the S3 gateway: SSE-C, SSE-S3 and SSE-KMS on PUT, GET,
HEAD, ranges, copies and multipart uploads; the bucket's default encryption; the wrong,
missing and malformed keys S3 refuses; and the bytes the volume servers hold, which
must be ciphertext."""

import base64
import hashlib
import json
import os
import pathlib
import subprocess

import botocore
import pytest
import requests

from conftest import lookup_urls
from filer_fixtures import start_mini_with_filer
from s3_fixtures import IDENTITIES, client, code_of, signed, start_gateway

AK, SK = "AKALICE", "alice-secret"
MIB = 1 << 20
KMS = {"default": "app-key-2", "keys": {"app-key-1": base64.b64encode(b"k" * 32).decode(),
                                        "app-key-2": base64.b64encode(b"K" * 32).decode()}}
CKEY = b"c" * 32
OTHER = b"d" * 32


def b64(b):
    return base64.b64encode(b).decode()


def md5_b64(b):
    return b64(hashlib.md5(b).digest())


def marked(size, tag):
    """size bytes repeating a recognisable pattern: plaintext a scan of the disks can find."""
    unit = (b"PLAINTEXT-%s-" % tag.encode()) * 4
    return (unit * (size // len(unit) + 1))[:size]


@pytest.fixture(scope="module")
def gw(module_cluster, tmp_path_factory):
    d = tmp_path_factory.mktemp("sse")
    kms = d / "kms.json"
    kms.write_text(json.dumps(KMS))
    mini, filer = start_mini_with_filer(module_cluster)
    g = start_gateway(module_cluster, filer, IDENTITIES, extra=["-sse.kmsKeys=%s" % kms]).start()
    s3 = client(g, AK, SK)
    s3.create_bucket(Bucket="enc")
    return mini, filer, g, s3


def sse_c(key=CKEY):
    return {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}


def chunks_of(filer, path):
    return [c["file_id"] for c in filer.meta(path).get("chunks") or []]


def disk_has(mini, needle):
    """Whether any file under the mini's directory (volumes, filer store) holds needle."""
    for p in pathlib.Path(mini.dir).rglob("*"):
        if p.is_file() and needle in p.read_bytes():
            return True
    return False


def raw_needles(mini, filer, path):
    """The stored bytes of the object's chunks, read from the volume server."""
    out = b""
    for fid in chunks_of(filer, path):
        url = lookup_urls(mini, fid.split(",")[0])[0]
        r = requests.get("http://%s/%s" % (url, fid), timeout=30)
        assert r.status_code == 200
        out += r.content
    return out


# ---- SSE-S3 ----

@pytest.mark.parametrize("size", [100, 5 * MIB + 7])
def test_sse_s3_put_get_head_range(gw, size):
    mini, filer, g, s3 = gw
    data = marked(size, "s3-%d" % size)
    key = "s3/obj-%d" % size
    r = s3.put_object(Bucket="enc", Key=key, Body=data, ServerSideEncryption="AES256")
    assert r["ServerSideEncryption"] == "AES256"
    assert r["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()  # SSE-S3: the plaintext's MD5
    got = s3.get_object(Bucket="enc", Key=key)
    assert got["Body"].read() == data and got["ServerSideEncryption"] == "AES256"
    h = s3.head_object(Bucket="enc", Key=key)
    assert h["ServerSideEncryption"] == "AES256" and h["ContentLength"] == size
    for a, b in [(0, 0), (3, 50), (17, size - 1), (size - 20, size - 1)]:
        part = s3.get_object(Bucket="enc", Key=key, Range="bytes=%d-%d" % (a, b))
        assert part["Body"].read() == data[a:b + 1]
    # the filer's own view of the file is ciphertext: the gateway alone decrypts
    stored = filer.get("/buckets/enc/" + key).content
    assert len(stored) == size and stored != data
    assert b"PLAINTEXT-s3-%d" % size not in stored
    if size > 4096:
        raw = raw_needles(mini, filer, "/buckets/enc/" + key)
        assert len(raw) == size and b"PLAINTEXT-s3" not in raw


def test_ciphertext_on_disk(gw):
    """No plaintext of any mode reaches a file of the cluster's directories."""
    mini, filer, g, s3 = gw
    big = marked(2 * MIB, "disk-scan-big")
    small = marked(300, "disk-scan-small")
    s3.put_object(Bucket="enc", Key="disk/big", Body=big, ServerSideEncryption="AES256")
    s3.put_object(Bucket="enc", Key="disk/small", Body=small, **sse_c())
    s3.put_object(Bucket="enc", Key="disk/kms", Body=big, ServerSideEncryption="aws:kms")
    assert not disk_has(mini, b"PLAINTEXT-disk-scan-big-PLAINTEXT")
    assert not disk_has(mini, b"PLAINTEXT-disk-scan-small-PLAINTEXT")
    # the check can fail: an unencrypted object's bytes are found
    s3.put_object(Bucket="enc", Key="disk/plain", Body=marked(2 * MIB, "disk-plain"))
    assert disk_has(mini, b"PLAINTEXT-disk-plain-PLAINTEXT")


# ---- SSE-C ----

@pytest.mark.parametrize("size", [10, 6 * MIB])
def test_sse_c_round_trip_and_keys(gw, size):
    mini, filer, g, s3 = gw
    data = marked(size, "c")
    key = "c/obj-%d" % size
    r = s3.put_object(Bucket="enc", Key=key, Body=data, **sse_c())
    assert r["SSECustomerAlgorithm"] == "AES256"
    assert r["SSECustomerKeyMD5"] == md5_b64(CKEY)
    got = s3.get_object(Bucket="enc", Key=key, **sse_c())
    assert got["Body"].read() == data
    assert got["SSECustomerKeyMD5"] == md5_b64(CKEY)
    h = s3.head_object(Bucket="enc", Key=key, **sse_c())
    assert h["ContentLength"] == size and h["SSECustomerAlgorithm"] == "AES256"
    rng = s3.get_object(Bucket="enc", Key=key, Range="bytes=5-8", **sse_c())
    assert rng["Body"].read() == data[5:9]
    # the key is needed, and must be the one the object was written with
    assert code_of(s3.get_object, Bucket="enc", Key=key) == "InvalidRequest"
    assert code_of(s3.get_object, Bucket="enc", Key=key, **sse_c(OTHER)) == "AccessDenied"
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.head_object(Bucket="enc", Key=key)
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        s3.head_object(Bucket="enc", Key=key, **sse_c(OTHER))
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    # the key is not stored: no xattr holds it or its base64
    meta = json.dumps(filer.meta("/buckets/enc/" + key))
    assert b64(CKEY) not in meta and CKEY.decode() not in meta


def test_sse_c_headers_on_plain_object(gw):
    mini, filer, g, s3 = gw
    s3.put_object(Bucket="enc", Key="c/plain", Body=b"plain")
    assert code_of(s3.get_object, Bucket="enc", Key="c/plain", **sse_c()) == "InvalidRequest"


def raw_put(g, key, headers, body=b"x" * 10):
    return signed(g, AK, SK, "PUT", "/enc/" + key, body=body, headers=headers)


def err_code(r):
    return r.text.split("<Code>")[1].split("</Code>")[0]


@pytest.mark.parametrize("headers,status,code", [
    ({"x-amz-server-side-encryption-customer-algorithm": "AES256",
      "x-amz-server-side-encryption-customer-key": b64(CKEY),
      "x-amz-server-side-encryption-customer-key-MD5": md5_b64(OTHER)}, 400, "InvalidArgument"),
    ({"x-amz-server-side-encryption-customer-algorithm": "AES256",
      "x-amz-server-side-encryption-customer-key": "not*base64!",
      "x-amz-server-side-encryption-customer-key-MD5": md5_b64(CKEY)}, 400, "InvalidArgument"),
    ({"x-amz-server-side-encryption-customer-algorithm": "AES256",
      "x-amz-server-side-encryption-customer-key": b64(b"short"),
      "x-amz-server-side-encryption-customer-key-MD5": md5_b64(b"short")}, 400,
     "InvalidArgument"),
    ({"x-amz-server-side-encryption-customer-algorithm": "DES",
      "x-amz-server-side-encryption-customer-key": b64(CKEY),
      "x-amz-server-side-encryption-customer-key-MD5": md5_b64(CKEY)}, 400, "InvalidArgument"),
    ({"x-amz-server-side-encryption-customer-algorithm": "AES256",
      "x-amz-server-side-encryption-customer-key-MD5": md5_b64(CKEY)}, 400, "InvalidArgument"),
    ({"x-amz-server-side-encryption-customer-algorithm": "AES256",
      "x-amz-server-side-encryption-customer-key": b64(CKEY)}, 400, "InvalidArgument"),
    ({"x-amz-server-side-encryption": "AES256",
      "x-amz-server-side-encryption-customer-algorithm": "AES256",
      "x-amz-server-side-encryption-customer-key": b64(CKEY),
      "x-amz-server-side-encryption-customer-key-MD5": md5_b64(CKEY)}, 400, "InvalidArgument"),
    ({"x-amz-server-side-encryption": "AES128"}, 400, "InvalidArgument"),
    ({"x-amz-server-side-encryption-aws-kms-key-id": "app-key-1"}, 400, "InvalidArgument"),
    ({"x-amz-server-side-encryption": "AES256",
      "x-amz-server-side-encryption-aws-kms-key-id": "app-key-1"}, 400, "InvalidArgument"),
    ({"x-amz-server-side-encryption": "aws:kms",
      "x-amz-server-side-encryption-aws-kms-key-id": "no-such-key"}, 400,
     "KMS.NotFoundException"),
], ids=["md5-mismatch", "bad-base64", "short-key", "unknown-alg", "no-key", "no-md5",
        "sse-c-and-sse", "unknown-sse", "kms-id-alone", "kms-id-with-aes", "unknown-kms-key"])
def test_bad_headers_change_nothing(gw, headers, status, code):
    mini, filer, g, s3 = gw
    key = "bad/" + code + str(abs(hash(json.dumps(headers))))
    r = raw_put(g, key, headers)
    assert r.status_code == status, r.text
    assert err_code(r) == code
    assert code_of(s3.head_object, Bucket="enc", Key=key) == "404"


def test_md5_mismatch_message(gw):
    mini, filer, g, s3 = gw
    r = raw_put(g, "bad/msg", {"x-amz-server-side-encryption-customer-algorithm": "AES256",
                               "x-amz-server-side-encryption-customer-key": b64(CKEY),
                               "x-amz-server-side-encryption-customer-key-MD5": md5_b64(b"x")})
    assert "The calculated MD5 hash of the key did not match the hash that was provided." \
        in r.text


# ---- SSE-KMS ----

def test_sse_kms_named_and_default_key(gw):
    mini, filer, g, s3 = gw
    data = marked(3 * MIB, "kms")
    r = s3.put_object(Bucket="enc", Key="kms/named", Body=data, ServerSideEncryption="aws:kms",
                      SSEKMSKeyId="app-key-1")
    assert r["ServerSideEncryption"] == "aws:kms" and r["SSEKMSKeyId"] == "app-key-1"
    got = s3.get_object(Bucket="enc", Key="kms/named")
    assert got["Body"].read() == data and got["SSEKMSKeyId"] == "app-key-1"
    assert s3.head_object(Bucket="enc", Key="kms/named")["SSEKMSKeyId"] == "app-key-1"
    rng = s3.get_object(Bucket="enc", Key="kms/named", Range="bytes=1000000-1000099")
    assert rng["Body"].read() == data[1000000:1000100]
    r = s3.put_object(Bucket="enc", Key="kms/default", Body=b"d" * 50,
                      ServerSideEncryption="aws:kms")
    assert r["SSEKMSKeyId"] == "app-key-2"  # the store's default
    arn = "arn:aws:kms:us-east-1:000000000000:key/app-key-1"
    r = s3.put_object(Bucket="enc", Key="kms/arn", Body=b"a", ServerSideEncryption="aws:kms",
                      SSEKMSKeyId=arn)
    assert r["SSEKMSKeyId"] == "app-key-1"
    assert code_of(s3.put_object, Bucket="enc", Key="kms/unknown", Body=b"a",
                   ServerSideEncryption="aws:kms", SSEKMSKeyId="nope") == "KMS.NotFoundException"


# ---- bucket default encryption ----

def test_bucket_default_encryption(gw):
    mini, filer, g, s3 = gw
    s3.create_bucket(Bucket="dflt")
    assert code_of(s3.get_bucket_encryption, Bucket="dflt") == \
        "ServerSideEncryptionConfigurationNotFoundError"
    s3.put_object(Bucket="dflt", Key="before", Body=b"plain before")
    s3.put_bucket_encryption(Bucket="dflt", ServerSideEncryptionConfiguration={
        "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
    rule = s3.get_bucket_encryption(Bucket="dflt")["ServerSideEncryptionConfiguration"]
    assert rule["Rules"][0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    r = s3.put_object(Bucket="dflt", Key="after", Body=b"secret after")
    assert r["ServerSideEncryption"] == "AES256"
    assert s3.get_object(Bucket="dflt", Key="after")["Body"].read() == b"secret after"
    assert filer.get("/buckets/dflt/after").content != b"secret after"
    assert "ServerSideEncryption" not in s3.head_object(Bucket="dflt", Key="before")
    # a request's own mode wins over the default
    r = s3.put_object(Bucket="dflt", Key="own", Body=b"own", **sse_c())
    assert "ServerSideEncryption" not in r and r["SSECustomerAlgorithm"] == "AES256"
    # KMS default with a key id
    s3.put_bucket_encryption(Bucket="dflt", ServerSideEncryptionConfiguration={
        "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms",
                                                          "KMSMasterKeyID": "app-key-1"}}]})
    r = s3.put_object(Bucket="dflt", Key="kms", Body=b"k")
    assert r["ServerSideEncryption"] == "aws:kms" and r["SSEKMSKeyId"] == "app-key-1"
    # refused configurations change nothing
    assert code_of(s3.put_bucket_encryption, Bucket="dflt", ServerSideEncryptionConfiguration={
        "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms",
                                                          "KMSMasterKeyID": "nope"}}]}) \
        == "KMS.NotFoundException"
    bad = signed(g, AK, SK, "PUT", "/dflt", body=b"<ServerSideEncryptionConfiguration><Rule>"
                 b"<ApplyServerSideEncryptionByDefault><SSEAlgorithm>ROT13</SSEAlgorithm>"
                 b"</ApplyServerSideEncryptionByDefault></Rule>"
                 b"</ServerSideEncryptionConfiguration>", query="encryption=")
    assert bad.status_code == 400 and err_code(bad) == "InvalidArgument"
    bad = signed(g, AK, SK, "PUT", "/dflt", body=b"<Nope/>", query="encryption=")
    assert bad.status_code == 400 and err_code(bad) == "MalformedXML"
    rule = s3.get_bucket_encryption(Bucket="dflt")["ServerSideEncryptionConfiguration"]
    assert rule["Rules"][0]["ApplyServerSideEncryptionByDefault"]["KMSMasterKeyID"] == "app-key-1"
    s3.delete_bucket_encryption(Bucket="dflt")
    assert code_of(s3.get_bucket_encryption, Bucket="dflt") == \
        "ServerSideEncryptionConfigurationNotFoundError"
    assert "ServerSideEncryption" not in s3.put_object(Bucket="dflt", Key="plain2", Body=b"p")


# ---- multipart ----

@pytest.mark.parametrize("mode", ["s3", "kms", "c"])
def test_multipart_encrypted(gw, mode):
    mini, filer, g, s3 = gw
    extra = {"s3": {"ServerSideEncryption": "AES256"},
             "kms": {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "app-key-1"},
             "c": sse_c()}[mode]
    part_extra = sse_c() if mode == "c" else {}
    key = "mp/" + mode
    parts = [marked(5 * MIB, "mp1-" + mode), marked(MIB + 3, "mp2-" + mode)]
    up = s3.create_multipart_upload(Bucket="enc", Key=key, **extra)
    uid = up["UploadId"]
    if mode == "c":
        assert code_of(s3.upload_part, Bucket="enc", Key=key, UploadId=uid, PartNumber=1,
                       Body=parts[0]) == "InvalidRequest"
        assert code_of(s3.upload_part, Bucket="enc", Key=key, UploadId=uid, PartNumber=1,
                       Body=parts[0], **sse_c(OTHER)) == "AccessDenied"
    # a part uploaded again replaces the first (with an IV of its own)
    s3.upload_part(Bucket="enc", Key=key, UploadId=uid, PartNumber=1, Body=marked(5 * MIB, "x"),
                   **part_extra)
    etags = []
    for i, p in enumerate(parts, 1):
        r = s3.upload_part(Bucket="enc", Key=key, UploadId=uid, PartNumber=i, Body=p,
                           **part_extra)
        etags.append(r["ETag"])
    s3.complete_multipart_upload(Bucket="enc", Key=key, UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
    data = b"".join(parts)
    got = s3.get_object(Bucket="enc", Key=key, **part_extra)
    assert got["Body"].read() == data
    # a range across the parts' boundary decrypts each side with its part's IV
    a, b = 5 * MIB - 100, 5 * MIB + 100
    rng = s3.get_object(Bucket="enc", Key=key, Range="bytes=%d-%d" % (a, b), **part_extra)
    assert rng["Body"].read() == data[a:b + 1]
    assert s3.get_object(Bucket="enc", Key=key, PartNumber=2, **part_extra)["Body"].read() \
        == parts[1]
    h = s3.head_object(Bucket="enc", Key=key, **part_extra)
    # (botocore does not encode this operation's key: it is sent as given, base64)
    attrs = s3.get_object_attributes(
        Bucket="enc", Key=key, ObjectAttributes=["ObjectSize"],
        **({"SSECustomerAlgorithm": "AES256", "SSECustomerKey": b64(CKEY),
            "SSECustomerKeyMD5": md5_b64(CKEY)} if mode == "c" else {}))
    assert attrs["ObjectSize"] == len(data)
    if mode == "c":
        assert code_of(s3.get_object_attributes, Bucket="enc", Key=key,
                       ObjectAttributes=["ObjectSize"]) == "InvalidRequest"

        assert h["SSECustomerKeyMD5"] == md5_b64(CKEY)
        assert code_of(s3.get_object, Bucket="enc", Key=key) == "InvalidRequest"
    else:
        assert h["ServerSideEncryption"] == ("AES256" if mode == "s3" else "aws:kms")
    raw = raw_needles(mini, filer, "/buckets/enc/" + key)
    assert len(raw) == len(data) and b"PLAINTEXT-mp" not in raw


# ---- copy ----

def test_copy_between_modes(gw):
    mini, filer, g, s3 = gw
    data = marked(2 * MIB + 11, "copy")
    s3.put_object(Bucket="enc", Key="cp/src-c", Body=data, **sse_c())
    # SSE-C source needs its key as copy-source headers
    assert code_of(s3.copy_object, Bucket="enc", Key="cp/dst", CopySource="enc/cp/src-c") \
        == "InvalidRequest"
    r = s3.copy_object(Bucket="enc", Key="cp/to-s3", CopySource="enc/cp/src-c",
                       CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=CKEY,
                       ServerSideEncryption="AES256")
    assert r["ServerSideEncryption"] == "AES256"
    assert s3.get_object(Bucket="enc", Key="cp/to-s3")["Body"].read() == data
    r = s3.copy_object(Bucket="enc", Key="cp/to-kms", CopySource="enc/cp/to-s3",
                       ServerSideEncryption="aws:kms", SSEKMSKeyId="app-key-1")
    assert r["SSEKMSKeyId"] == "app-key-1"
    assert s3.get_object(Bucket="enc", Key="cp/to-kms")["Body"].read() == data
    s3.copy_object(Bucket="enc", Key="cp/to-c2", CopySource="enc/cp/to-kms", **sse_c(OTHER))
    assert s3.get_object(Bucket="enc", Key="cp/to-c2", **sse_c(OTHER))["Body"].read() == data
    s3.copy_object(Bucket="enc", Key="cp/to-plain", CopySource="enc/cp/to-c2",
                   CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=OTHER)
    assert filer.get("/buckets/enc/cp/to-plain").content == data  # decrypted, stored plain
    # re-encrypting an object in place (a key change) is allowed
    s3.copy_object(Bucket="enc", Key="cp/to-c2", CopySource="enc/cp/to-c2",
                   CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=OTHER,
                   **sse_c())
    assert s3.get_object(Bucket="enc", Key="cp/to-c2", **sse_c())["Body"].read() == data


def test_upload_part_copy_encrypted(gw):
    mini, filer, g, s3 = gw
    src = marked(5 * MIB, "upc")
    s3.put_object(Bucket="enc", Key="upc/src", Body=src, ServerSideEncryption="aws:kms")
    up = s3.create_multipart_upload(Bucket="enc", Key="upc/dst", **sse_c())
    p1 = s3.upload_part_copy(Bucket="enc", Key="upc/dst", UploadId=up["UploadId"],
                             PartNumber=1, CopySource="enc/upc/src", **sse_c())
    p2 = s3.upload_part(Bucket="enc", Key="upc/dst", UploadId=up["UploadId"], PartNumber=2,
                        Body=b"tail", **sse_c())
    s3.complete_multipart_upload(Bucket="enc", Key="upc/dst", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": [
                                     {"PartNumber": 1, "ETag": p1["CopyPartResult"]["ETag"]},
                                     {"PartNumber": 2, "ETag": p2["ETag"]}]})
    assert s3.get_object(Bucket="enc", Key="upc/dst", **sse_c())["Body"].read() == src + b"tail"


# ---- the master key ----

def test_master_key_shared_by_gateways(gw, module_cluster):
    """The generated SSE-S3 master key lives in the filer: a second gateway reads what the
    first wrote."""
    mini, filer, g, s3 = gw
    s3.put_object(Bucket="enc", Key="mk/shared", Body=b"shared secret",
                  ServerSideEncryption="AES256")
    g2 = start_gateway(module_cluster, filer, IDENTITIES).start()
    s3b = client(g2, AK, SK)
    assert s3b.get_object(Bucket="enc", Key="mk/shared")["Body"].read() == b"shared secret"
    g2.stop()


def test_master_key_generated_once_by_racing_gateways(module_cluster):
    """Two gateways of a fresh cluster both need the key at once: one key is made, and
    each reads what the other wrote."""
    import concurrent.futures
    _, filer = start_mini_with_filer(module_cluster)
    gs = [start_gateway(module_cluster, filer, IDENTITIES).start() for _ in range(2)]
    cs = [client(g, AK, SK) for g in gs]
    cs[0].create_bucket(Bucket="race")

    def put(i):
        cs[i % 2].put_object(Bucket="race", Key="k%d" % i, Body=b"v%d" % i,
                             ServerSideEncryption="AES256")
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(put, range(16)))
    for i in range(16):
        assert cs[(i + 1) % 2].get_object(Bucket="race", Key="k%d" % i)["Body"].read() == \
            b"v%d" % i
    keys = filer.get("/etc/s3/sse-master.keys").content.decode()
    assert len(keys.strip().splitlines()) == 1
    for g in gs:
        g.stop()


def test_master_key_file_rotation(gw, module_cluster, tmp_path):
    mini, filer, g, s3 = gw
    keys = tmp_path / "master.keys"
    keys.write_text("# weedfs SSE-S3 master keys\nold-1 %s\n" % ("11" * 32))
    g2 = start_gateway(module_cluster, filer, IDENTITIES,
                       extra=["-sse.keyFile=%s" % keys]).start()
    c2 = client(g2, AK, SK)
    c2.put_object(Bucket="enc", Key="mk/old", Body=b"under old", ServerSideEncryption="AES256")
    g2.stop()
    keys.write_text("new-2 %s\nold-1 %s\n" % ("22" * 32, "11" * 32))
    g3 = start_gateway(module_cluster, filer, IDENTITIES,
                       extra=["-sse.keyFile=%s" % keys]).start()
    c3 = client(g3, AK, SK)
    assert c3.get_object(Bucket="enc", Key="mk/old")["Body"].read() == b"under old"
    c3.put_object(Bucket="enc", Key="mk/new", Body=b"under new", ServerSideEncryption="AES256")
    assert c3.get_object(Bucket="enc", Key="mk/new")["Body"].read() == b"under new"
    # the cluster's generated key cannot unwrap a file key's object
    assert code_of(s3.get_object, Bucket="enc", Key="mk/new") == "InternalError"
    g3.stop()
    # a file without the old key refuses to start
    keys.write_text("bad line\n")
    g4 = start_gateway(module_cluster, filer, IDENTITIES, extra=["-sse.keyFile=%s" % keys])
    with pytest.raises(Exception):
        g4.start()


# ---- awscli ----

def test_awscli_sse_c_and_bucket_encryption(gw, tmp_path):
    mini, filer, g, s3 = gw
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK,
               AWS_DEFAULT_REGION="us-east-1")
    env.pop("AWS_CA_BUNDLE", None)
    aws = ["aws", "--endpoint-url", "http://" + g.url]

    def run(*args):
        r = subprocess.run(aws + list(args), env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout

    src, down = tmp_path / "in.bin", tmp_path / "out.bin"
    data = marked(7 * MIB, "awscli")  # above the CLI's multipart threshold
    src.write_bytes(data)
    key = "k" * 32
    run("s3", "cp", str(src), "s3://enc/cli/obj", "--sse-c", "AES256", "--sse-c-key", key)
    run("s3", "cp", "s3://enc/cli/obj", str(down), "--sse-c", "AES256", "--sse-c-key", key)
    assert down.read_bytes() == data
    r = subprocess.run(aws + ["s3", "cp", "s3://enc/cli/obj", str(down)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    s3.create_bucket(Bucket="clidflt")
    run("s3api", "put-bucket-encryption", "--bucket", "clidflt",
        "--server-side-encryption-configuration",
        '{"Rules":[{"ApplyServerSideEncryptionByDefault":{"SSEAlgorithm":"AES256"}}]}')
    out = json.loads(run("s3api", "get-bucket-encryption", "--bucket", "clidflt"))
    assert out["ServerSideEncryptionConfiguration"]["Rules"][0][
        "ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    run("s3", "cp", str(src), "s3://clidflt/big")  # multipart under the bucket's default
    h = s3.head_object(Bucket="clidflt", Key="big")
    assert h["ServerSideEncryption"] == "AES256"
    assert s3.get_object(Bucket="clidflt", Key="big")["Body"].read() == data
    raw = raw_needles(mini, filer, "/buckets/clidflt/big")
    assert b"PLAINTEXT-awscli" not in raw


# ---- versions and ranged part copies ----

def test_versions_keep_their_encryption(gw):
    mini, filer, g, s3 = gw
    s3.create_bucket(Bucket="encver")
    s3.put_bucket_versioning(Bucket="encver", VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket="encver", Key="k", Body=b"first, SSE-C", **sse_c())["VersionId"]
    v2 = s3.put_object(Bucket="encver", Key="k", Body=b"second, SSE-S3",
                       ServerSideEncryption="AES256")["VersionId"]
    assert s3.get_object(Bucket="encver", Key="k")["Body"].read() == b"second, SSE-S3"
    assert code_of(s3.get_object, Bucket="encver", Key="k", VersionId=v1) == "InvalidRequest"
    old = s3.get_object(Bucket="encver", Key="k", VersionId=v1, **sse_c())
    assert old["Body"].read() == b"first, SSE-C"
    assert s3.head_object(Bucket="encver", Key="k", VersionId=v2)["ServerSideEncryption"] == \
        "AES256"


def test_upload_part_copy_range_across_source_parts(gw):
    """A copy-source range of an encrypted multipart source spanning its two parts."""
    mini, filer, g, s3 = gw
    parts = [marked(5 * MIB, "rng1"), marked(2 * MIB, "rng2")]
    up = s3.create_multipart_upload(Bucket="enc", Key="rng/src", ServerSideEncryption="AES256")
    et = [s3.upload_part(Bucket="enc", Key="rng/src", UploadId=up["UploadId"], PartNumber=i,
                         Body=p)["ETag"] for i, p in enumerate(parts, 1)]
    s3.complete_multipart_upload(Bucket="enc", Key="rng/src", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": e}
                                                            for i, e in enumerate(et)]})
    data = b"".join(parts)
    a, b = 5 * MIB - 1000, 5 * MIB + 999
    up2 = s3.create_multipart_upload(Bucket="enc", Key="rng/dst", ServerSideEncryption="aws:kms")
    p1 = s3.upload_part_copy(Bucket="enc", Key="rng/dst", UploadId=up2["UploadId"],
                             PartNumber=1, CopySource="enc/rng/src",
                             CopySourceRange="bytes=%d-%d" % (a, b))
    s3.complete_multipart_upload(Bucket="enc", Key="rng/dst", UploadId=up2["UploadId"],
                                 MultipartUpload={"Parts": [
                                     {"PartNumber": 1, "ETag": p1["CopyPartResult"]["ETag"]}]})
    got = s3.get_object(Bucket="enc", Key="rng/dst")
    assert got["Body"].read() == data[a:b + 1] and got["ServerSideEncryption"] == "aws:kms"


def test_post_object_under_bucket_default(gw):
    """A browser form upload into a bucket with default encryption is encrypted too."""
    mini, filer, g, s3 = gw
    s3.create_bucket(Bucket="encpost")
    s3.put_bucket_encryption(Bucket="encpost", ServerSideEncryptionConfiguration={
        "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms"}}]})
    for key, body in [("small", marked(3000, "post-small")), ("big", marked(3 * MIB, "post-big"))]:
        post = s3.generate_presigned_post("encpost", key, ExpiresIn=300)
        r = requests.post(post["url"], data=post["fields"], files={"file": body}, timeout=30)
        assert r.status_code in (200, 204), r.text
        h = s3.head_object(Bucket="encpost", Key=key)
        assert h["ServerSideEncryption"] == "aws:kms" and h["SSEKMSKeyId"] == "app-key-2"
        assert s3.get_object(Bucket="encpost", Key=key)["Body"].read() == body
        assert b"PLAINTEXT-post" not in filer.get("/buckets/encpost/" + key).content
    post = s3.generate_presigned_post("enc", "post-plain", ExpiresIn=300)
    r = requests.post(post["url"], data=post["fields"], files={"file": b"plain form"}, timeout=30)
    assert r.status_code in (200, 204)
    assert filer.get("/buckets/enc/post-plain").content == b"plain form"


def test_post_object_encryption_fields(gw):
    """A browser form's x-amz-server-side-encryption* fields choose the object's encryption
    as the headers of a PUT do (S3 takes them as form fields); a bad one stores nothing."""
    mini, filer, g, s3 = gw
    cases = [
        ({"x-amz-server-side-encryption": "AES256"}, "AES256", None),
        ({"x-amz-server-side-encryption": "aws:kms",
          "x-amz-server-side-encryption-aws-kms-key-id": "app-key-1"}, "aws:kms", "app-key-1"),
    ]
    for i, (fields, mode, kid) in enumerate(cases):
        key = "post-enc-%d" % i
        body = marked(2 * MIB + i, "post-field-%d" % i)
        post = s3.generate_presigned_post("enc", key, Fields=fields,
                                          Conditions=[{k: v} for k, v in fields.items()],
                                          ExpiresIn=300)
        r = requests.post(post["url"], data=post["fields"], files={"file": body}, timeout=30)
        assert r.status_code in (200, 204), r.text
        assert r.headers["x-amz-server-side-encryption"] == mode
        h = s3.head_object(Bucket="enc", Key=key)
        assert h["ServerSideEncryption"] == mode and h.get("SSEKMSKeyId") == kid
        assert s3.get_object(Bucket="enc", Key=key)["Body"].read() == body
        assert b"PLAINTEXT-post-field" not in raw_needles(mini, filer, "/buckets/enc/" + key)
    # SSE-C through the form: the object needs the key afterwards
    fields = {"x-amz-server-side-encryption-customer-algorithm": "AES256",
              "x-amz-server-side-encryption-customer-key": b64(CKEY),
              "x-amz-server-side-encryption-customer-key-MD5": md5_b64(CKEY)}
    post = s3.generate_presigned_post("enc", "post-enc-c", Fields=fields,
                                      Conditions=[{k: v} for k, v in fields.items()],
                                      ExpiresIn=300)
    r = requests.post(post["url"], data=post["fields"], files={"file": b"customer form"},
                      timeout=30)
    assert r.status_code in (200, 204), r.text
    assert code_of(s3.get_object, Bucket="enc", Key="post-enc-c") == "InvalidRequest"
    assert s3.get_object(Bucket="enc", Key="post-enc-c", **sse_c())["Body"].read() == \
        b"customer form"
    # an unknown mode: S3's InvalidArgument, nothing stored
    fields = {"x-amz-server-side-encryption": "DES"}
    post = s3.generate_presigned_post("enc", "post-enc-bad", Fields=fields,
                                      Conditions=[fields], ExpiresIn=300)
    r = requests.post(post["url"], data=post["fields"], files={"file": b"never"}, timeout=30)
    assert r.status_code == 400 and b"<Code>InvalidArgument</Code>" in r.content, r.text
    assert code_of(s3.head_object, Bucket="enc", Key="post-enc-bad") == "404"


def test_policy_condition_on_encryption(gw):
    """A bucket policy that refuses writes not asking for SSE-S3, through the
    s3:x-amz-server-side-encryption condition key (bob writes only by the policy)."""
    mini, filer, g, s3 = gw
    s3.create_bucket(Bucket="encpol")
    s3.put_bucket_policy(Bucket="encpol", Policy=json.dumps({
        "Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": "bob"}, "Action": "s3:PutObject",
             "Resource": "arn:aws:s3:::encpol/*",
             "Condition": {"StringEquals": {"s3:x-amz-server-side-encryption": "AES256"}}}]}))
    bob = client(g, "AKBOB", "bob-secret")
    r = bob.put_object(Bucket="encpol", Key="ok", Body=b"x", ServerSideEncryption="AES256")
    assert r["ServerSideEncryption"] == "AES256"
    assert code_of(bob.put_object, Bucket="encpol", Key="kms", Body=b"x",
                   ServerSideEncryption="aws:kms") == "AccessDenied"
    assert code_of(bob.put_object, Bucket="encpol", Key="plain", Body=b"x") == "AccessDenied"
