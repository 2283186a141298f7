"""Encryption at rest (`weedfs mini -encryptVolumeData`, the filer's flag): every chunk
written through the filer, the S3 gateway and the mount is sealed with its own AES-256-GCM
key kept in the entry's chunk record, so no volume server file holds the plaintext; reads
open the chunks transparently (ranges included); a filer without the flag reads plain and
sealed files alike; a damaged ciphertext is an error everywhere, never other bytes."""

import base64
import os
import re
import struct
import subprocess
from pathlib import Path

import boto3
import botocore
import pytest
import requests
from botocore.config import Config
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from filer_fixtures import Filer
from mount_fixtures import start_mount
from test_format import crc32c
from test_shell import shell

MiB = 1 << 20
MARKER = b"PLAINTEXT-MARKER-9f7c1e"
OLD_MARKER = b"OLD-PLAIN-MARKER-51b2"


def body(n, seed, marker=MARKER):
    """n bytes: the marker every 1000 bytes between pseudo-random filler."""
    out = bytearray()
    x = seed * 2654435761 % (1 << 32) or 1
    while len(out) < n:
        out += marker
        for _ in range(1000 - len(marker)):
            x = (x * 1103515245 + 12345) % (1 << 31)
            out.append(x >> 16 & 0xFF)
    return bytes(out[:n])


def dat_files(mini):
    return sorted(Path(mini.dir).rglob("*.dat"))


def scan_dats(mini, marker):
    """The .dat files holding marker."""
    return [str(p) for p in dat_files(mini) if marker in p.read_bytes()]


class Cluster:
    """The module's one mini, restartable with or without -encryptVolumeData."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.mini = cluster.mini(extra=["-pulseSeconds=1", "-filer.maxMB=1"])
        self.base_args = list(self.mini.args)
        self.filer = Filer(self.mini, "127.0.0.1:%d" % self.mini.filer_port)
        self.encrypted = False

    def restart(self, encrypt):
        self.mini.stop()
        self.mini.args = self.base_args + (["-encryptVolumeData"] if encrypt else [])
        self.mini.start()
        self.encrypted = encrypt

    def s3(self):
        return boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % self.mini.s3_port,
                            aws_access_key_id="any", aws_secret_access_key="any",
                            region_name="us-east-1",
                            config=Config(retries={"max_attempts": 1},
                                          s3={"addressing_style": "path"}))


@pytest.fixture(scope="module")
def enc(module_cluster):
    c = Cluster(module_cluster)
    # written before encryption was turned on: stays plain, must stay readable
    c.old = body(3 * MiB + 5000, 1, OLD_MARKER)
    r = c.filer.put("/old/plain.bin", c.old)
    assert r.status_code == 201, r.text
    c.restart(encrypt=True)
    return c


def chunks_of(f, path):
    return f.meta(path)["chunks"]


def assert_sealed(f, path, size):
    """Every chunk of path carries a 32-byte key; the blobs are nonce+ciphertext+tag."""
    ch = chunks_of(f, path)
    assert ch, "%s has no chunks" % path
    assert sum(c["size"] for c in ch) >= size
    for c in ch:
        assert len(base64.b64decode(c["cipher_key"])) == 32, c
        loc = f.api("lookupVolume", {"volumeId": int(c["file_id"].split(",")[0])})
        raw = requests.get("http://%s/%s" % (loc["locations"][0]["url"], c["file_id"]),
                           timeout=30).content
        assert len(raw) == c["size"] + 28, (len(raw), c)
        assert MARKER not in raw
    return ch


def ranges_for(ch, size):
    """Ranges that start, end and cross at every chunk boundary, and the odd ones."""
    out = [(0, 0), (0, size - 1), (size - 1, size - 1), (1, size - 2)]
    for c in ch:
        b = c["offset"]
        if 0 < b < size:
            out += [(b - 1, b), (b - 7, min(size - 1, b + 7)), (b, min(size - 1, b + 100))]
    return out


def test_filer_uploads_are_sealed_and_read_back(enc):
    f = enc.filer
    small = MARKER + b" inline small file"
    one = body(3000, 2)         # over the inline limit: one chunk
    multi = body(3 * MiB + 12345, 3)  # -maxMB=1: four chunks
    for path, data in (("/f/small.txt", small), ("/f/one.bin", one), ("/f/multi.bin", multi)):
        r = f.put(path, data)
        assert r.status_code == 201, r.text
        assert f.get(path).content == data
    # inline content is metadata, kept in the entry (docs/security.md): no chunks
    assert f.meta("/f/small.txt")["Inline"] is True
    assert_sealed(f, "/f/one.bin", len(one))
    ch = assert_sealed(f, "/f/multi.bin", len(multi))
    assert len(ch) == 4
    for a, b in ranges_for(ch, len(multi)):
        r = f.get("/f/multi.bin", headers={"Range": "bytes=%d-%d" % (a, b)})
        assert r.status_code == 206 and r.content == multi[a:b + 1], (a, b, r.status_code)
    r = f.get("/f/multi.bin", headers={"Range": "bytes=-1500000"})
    assert r.status_code == 206 and r.content == multi[-1500000:]
    # an append (op=append) seals its new chunk too
    r = f.post("/f/multi.bin", params={"op": "append"}, data=b"tail" + MARKER)
    assert r.status_code in (200, 201), r.text
    assert f.get("/f/multi.bin").content == multi + b"tail" + MARKER
    assert all("cipher_key" in c for c in chunks_of(f, "/f/multi.bin"))
    # a server-side copy (cp) keeps every chunk sealed
    r = f.post("/f/copy.bin", params={"cp.from": "/f/multi.bin"})
    assert r.status_code in (200, 201, 204), r.text
    assert f.get("/f/copy.bin").content == multi + b"tail" + MARKER
    assert all("cipher_key" in c for c in chunks_of(f, "/f/copy.bin"))
    # a resumable (TUS) upload in two patches
    tus = {"Tus-Resumable": "1.0.0"}
    data = body(2 * MiB + 999, 11)
    r = requests.post(f.u("/.tus/f/tus.bin"), timeout=60,
                      headers=dict(tus, **{"Upload-Length": str(len(data))}))
    assert r.status_code == 201, r.text
    loc = r.headers["Location"]
    for a, b in ((0, MiB + 3), (MiB + 3, len(data))):
        r = requests.patch(f.u(loc), data=data[a:b], timeout=120, headers=dict(tus, **{
            "Upload-Offset": str(a), "Content-Type": "application/offset+octet-stream"}))
        assert r.status_code == 204, r.text
    assert f.get("/f/tus.bin").content == data
    assert_sealed(f, "/f/tus.bin", len(data))
    # a rename keeps the records (and so the keys)
    r = f.post("/f/renamed.bin", params={"mv.from": "/f/one.bin"})
    assert r.status_code in (200, 201, 204), r.text
    assert f.get("/f/renamed.bin").content == one


def test_s3_objects_are_sealed_and_ranges_read_back(enc):
    s3 = enc.s3()
    s3.create_bucket(Bucket="enc")
    put = body(9 * MiB + 333, 4)
    s3.put_object(Bucket="enc", Key="put.bin", Body=put)
    assert s3.get_object(Bucket="enc", Key="put.bin")["Body"].read() == put
    ch = assert_sealed(enc.filer, "/buckets/enc/put.bin", len(put))
    assert len(ch) >= 2
    for a, b in ranges_for(ch, len(put)):
        got = s3.get_object(Bucket="enc", Key="put.bin", Range="bytes=%d-%d" % (a, b))
        assert got["Body"].read() == put[a:b + 1], (a, b)
    assert s3.get_object(Bucket="enc", Key="put.bin",
                         Range="bytes=-5")["Body"].read() == put[-5:]
    assert s3.get_object(Bucket="enc", Key="put.bin",
                         Range="bytes=%d-" % (len(put) - 4 * MiB - 1))["Body"].read() == \
        put[len(put) - 4 * MiB - 1:]

    # multipart: two parts, then a part copied from put.bin
    parts_data = [body(5 * MiB, 5), body(5 * MiB + 77, 6)]
    up = s3.create_multipart_upload(Bucket="enc", Key="mp.bin")["UploadId"]
    parts = []
    for i, d in enumerate(parts_data, 1):
        e = s3.upload_part(Bucket="enc", Key="mp.bin", UploadId=up, PartNumber=i, Body=d)
        parts.append({"PartNumber": i, "ETag": e["ETag"]})
    e = s3.upload_part_copy(Bucket="enc", Key="mp.bin", UploadId=up, PartNumber=3,
                            CopySource={"Bucket": "enc", "Key": "put.bin"},
                            CopySourceRange="bytes=1000-%d" % (1000 + 3 * MiB))
    parts.append({"PartNumber": 3, "ETag": e["CopyPartResult"]["ETag"]})
    s3.complete_multipart_upload(Bucket="enc", Key="mp.bin", UploadId=up,
                                 MultipartUpload={"Parts": parts})
    mp = parts_data[0] + parts_data[1] + put[1000:1000 + 3 * MiB + 1]
    assert s3.get_object(Bucket="enc", Key="mp.bin")["Body"].read() == mp
    ch = assert_sealed(enc.filer, "/buckets/enc/mp.bin", len(mp))
    for a, b in ranges_for(ch, len(mp)):
        got = s3.get_object(Bucket="enc", Key="mp.bin", Range="bytes=%d-%d" % (a, b))
        assert got["Body"].read() == mp[a:b + 1], (a, b)

    s3.copy_object(Bucket="enc", Key="copy.bin", CopySource={"Bucket": "enc", "Key": "put.bin"})
    assert s3.get_object(Bucket="enc", Key="copy.bin")["Body"].read() == put
    assert_sealed(enc.filer, "/buckets/enc/copy.bin", len(put))


def test_mount_writes_are_sealed_and_read_after_remount(enc):
    m = start_mount(enc.cluster, enc.filer.url)
    data = body(2 * MiB + 999, 7)
    with open(m.p("mnt.bin"), "wb") as fh:
        fh.write(data)
    with open(m.p("mnt.bin"), "rb") as fh:
        assert fh.read() == data
    assert m.unmount() == 0
    assert_sealed(enc.filer, "/mnt.bin", len(data))
    # a new mount has an empty cache: every byte comes from the sealed blobs
    m2 = start_mount(enc.cluster, enc.filer.url)
    out = subprocess.run(["cat", str(m2.p("mnt.bin"))], capture_output=True, timeout=60)
    assert out.returncode == 0 and out.stdout == data
    with open(m2.p("mnt.bin"), "rb") as fh:
        fh.seek(MiB - 3)
        assert fh.read(10) == data[MiB - 3:MiB + 7]
    # files written elsewhere read the same through the mount
    with open(m2.p("f", "multi.bin"), "rb") as fh:
        assert fh.read(4 * MiB) == enc.filer.get("/f/multi.bin").content[:4 * MiB]
    assert m2.unmount() == 0


def manifest_blob(chunks):
    """A manifest blob (docs/filer-entry-format.md) listing the JSON API's chunks, keys
    included (chunk flags bit 1 and 32 bytes)."""
    out = bytearray([1]) + struct.pack(">I", len(chunks))
    for c in chunks:
        fid, etag = c["fileId"].encode(), c.get("eTag", "").encode()
        key = base64.b64decode(c["cipherKey"])
        out += struct.pack(">H", len(fid)) + fid
        out += struct.pack(">QQq", c["offset"], c["size"], c["mtimeNs"])
        out += struct.pack(">H", len(etag)) + etag + bytes([0x02]) + key
    return bytes(out)


def seal(plain):
    """(key, blob) as chunk_cipher.h seals: nonce || ciphertext || tag."""
    key, nonce = os.urandom(32), os.urandom(12)
    return key, nonce + AESGCM(key).encrypt(nonce, plain, None)


def upload_blob(f, blob):
    a = f.api("assign", {})["fids"][0]
    r = requests.post("http://%s/%s" % (a["url"], a["fid"]), files={"file": ("b", blob)},
                      timeout=30)
    assert r.status_code in (200, 201), r.text
    return a["fid"]


def test_sealed_manifest_reads_and_counts_in_fsck(enc):
    """A file whose chunks sit in a sealed manifest (what the filer makes past 1,000
    chunks), sealed here by an independent implementation (Python's cryptography) so
    the file stays small: the filer, the mount and volume.fsck open it with the key from
    the record, and no stored blob shows the plaintext or the members' ids."""
    f = enc.filer
    data = body(3 * 300000 + 77, 10)
    chunks, off = [], 0
    for n in (300000, 300000, 300077):
        key, blob = seal(data[off:off + n])
        chunks.append({"fileId": upload_blob(f, blob), "offset": off, "size": n,
                       "mtimeNs": 1000 + off, "cipherKey": base64.b64encode(key).decode()})
        off += n
    mkey, mblob = seal(manifest_blob(chunks))
    assert not any(c["fileId"].encode() in mblob for c in chunks)
    mfid = upload_blob(f, mblob)

    def manifest_chunk(key):
        return {"fileId": mfid, "offset": 0, "size": len(data), "mtimeNs": 2000,
                "isManifest": True, "cipherKey": base64.b64encode(key).decode()}
    assert f.post("/mf/").status_code in (200, 201)
    f.api("create", {"entry": {"path": "/mf/file.bin", "mode": 0o100644,
                               "chunks": [manifest_chunk(mkey)]}})
    assert f.get("/mf/file.bin").content == data
    r = f.get("/mf/file.bin", headers={"Range": "bytes=299990-600010"})
    assert r.status_code == 206 and r.content == data[299990:600011]
    m = start_mount(enc.cluster, f.url)
    with open(m.p("mf", "file.bin"), "rb") as fh:
        assert fh.read() == data
    assert m.unmount() == 0
    # volume.fsck opens the manifest: its members are referenced, not orphans
    rc, out, err = shell(enc.mini, f, "volume.fsck -cutoffTimeAgo=0")
    assert "volume.fsck:" in out, out + err
    orphans = " ".join(re.findall(r"^orphan: volume \d+ needle (\S+)", out, re.M))
    for c in chunks:
        assert c["fileId"].split(",")[1] not in orphans, (c, out)
    # a record with a wrong key is an error for both, not a guess
    bad = bytearray(mkey)
    bad[0] ^= 1
    f.api("update", {"path": "/mf/file.bin", "set": {"chunks": [manifest_chunk(bytes(bad))]}})
    assert f.get("/mf/file.bin").status_code >= 500
    rc, out, err = shell(enc.mini, f, "volume.fsck -cutoffTimeAgo=0")
    assert rc != 0 and "does not open" in out + err, out + err
    f.api("update", {"path": "/mf/file.bin", "set": {"chunks": [manifest_chunk(mkey)]}})
    assert f.get("/mf/file.bin").content == data


def test_no_plaintext_on_any_volume_server(enc):
    assert dat_files(enc.mini), "no .dat files found under %s" % enc.mini.dir
    assert scan_dats(enc.mini, MARKER) == []
    # the plain file from before the flag is there in clear: the scan does find markers
    assert scan_dats(enc.mini, OLD_MARKER) != []


def test_filer_without_the_flag_reads_plain_and_sealed(enc):
    enc.restart(encrypt=False)
    try:
        f = enc.filer
        assert f.get("/old/plain.bin").content == enc.old
        multi = f.get("/f/multi.bin")
        assert multi.status_code == 200 and MARKER in multi.content
        assert f.get("/f/multi.bin", headers={"Range": "bytes=1048570-1048590"}).content == \
            multi.content[1048570:1048591]
        s3 = enc.s3()
        put = s3.get_object(Bucket="enc", Key="put.bin")["Body"].read()
        assert put == body(9 * MiB + 333, 4)
        # new writes are plain again: no key in their records
        r = f.put("/f/plain-again.bin", body(5000, 8))
        assert r.status_code == 201
        assert all("cipher_key" not in c for c in chunks_of(f, "/f/plain-again.bin"))
    finally:
        enc.restart(encrypt=True)


def flip_in_dat(mini, raw):
    """Flips one byte of the ciphertext raw (a blob fetched from its volume server) where
    it sits in a .dat file, and rewrites the needle's CRC32C to match (server/volume/needle.h:
    header 16 bytes, body = data size u32 + data + ..., then the CRC), so the volume server
    serves the damaged bytes and only the GCM tag can tell. Returns the file."""
    for p in dat_files(mini):
        b = bytearray(p.read_bytes())
        at = b.find(raw)
        if at < 0:
            continue
        head = at - 4 - 16
        assert int.from_bytes(b[at - 4:at], "big") == len(raw), "not a needle's data"
        body_size = int.from_bytes(b[head + 12:head + 16], "big")
        b[at + len(raw) // 2] ^= 0x01
        crc_at = head + 16 + body_size
        assert int.from_bytes(b[crc_at:crc_at + 4], "big") == crc32c(raw)
        b[crc_at:crc_at + 4] = crc32c(bytes(b[at:at + len(raw)])).to_bytes(4, "big")
        p.write_bytes(bytes(b))
        return p
    raise AssertionError("ciphertext not found in any .dat file")


def test_damaged_ciphertext_is_an_error_everywhere(enc):
    f = enc.filer
    data = body(2 * MiB + 10, 9)
    assert f.put("/dmg/file.bin", data).status_code == 201
    s3 = enc.s3()
    s3.put_object(Bucket="enc", Key="dmg.bin", Body=data)
    for path in ("/dmg/file.bin", "/buckets/enc/dmg.bin"):
        c = chunks_of(f, path)[0]
        loc = f.api("lookupVolume", {"volumeId": int(c["file_id"].split(",")[0])})
        raw = requests.get("http://%s/%s" % (loc["locations"][0]["url"], c["file_id"]),
                           timeout=30).content
        flip_in_dat(enc.mini, raw)
    # the volume server may keep needles open or cached: restart to read the damaged bytes
    enc.restart(encrypt=True)

    def filer_read(path, headers=None):
        try:
            r = f.get(path, headers=headers)
            return r.status_code, r.content
        except requests.RequestException as e:  # a stream cut after the headers
            return None, str(e)

    for hdr in (None, {"Range": "bytes=10-20"}):
        st, got = filer_read("/dmg/file.bin", hdr)
        assert st is None or st >= 500, (st, hdr)
        assert st is None or not (isinstance(got, bytes) and data[10:21] in got[:64])
    with pytest.raises((botocore.exceptions.ClientError,
                        botocore.exceptions.ResponseStreamingError,
                        botocore.exceptions.IncompleteReadError)):
        s3.get_object(Bucket="enc", Key="dmg.bin", Range="bytes=0-99")["Body"].read()
    m = start_mount(enc.cluster, f.url)
    with pytest.raises(OSError) as ei:
        with open(m.p("dmg", "file.bin"), "rb") as fh:
            fh.read(4096)
    assert ei.value.errno == 5  # EIO
    assert m.unmount() == 0
    # the other files are untouched
    assert f.get("/f/renamed.bin").content == body(3000, 2)
    assert "failed authentication" in enc.mini.log_text()
