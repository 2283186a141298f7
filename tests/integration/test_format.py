"""The on-disk format of docs/blob-store.md, checked from outside the C code:
files written by weedfs decode with an independent Python reader, and volumes
written by this Python writer (as SeaweedFS would write them) are served."""

import struct
import time

import requests

from conftest import lookup_urls, parse_fid, put_file, wait_until

_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(c):
    """SeaweedFS's legacy stored form of a CRC."""
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def padding(size):
    return 8 - ((16 + size + 12) % 8)


def encode_needle(cookie, key, data, name=b"", mime=b"", last_modified=None, masked_crc=False):
    flags = 0
    extra = b""
    if name:
        flags |= 0x02
        extra += bytes([len(name)]) + name
    if mime:
        flags |= 0x04
        extra += bytes([len(mime)]) + mime
    if last_modified is not None:
        flags |= 0x08
        extra += last_modified.to_bytes(5, "big")
    body = struct.pack(">I", len(data)) + data + bytes([flags]) + extra
    size = len(body)
    crc = crc32c(data)
    out = struct.pack(">IQI", cookie, key, size) + body
    out += struct.pack(">IQ", masked(crc) if masked_crc else crc, time.time_ns())
    return out + b"\0" * padding(size)


def decode_needles(dat):
    """Yields dicts for every needle after the superblock; asserts the layout."""
    off = 8 + struct.unpack(">H", dat[6:8])[0]
    while off < len(dat):
        assert off % 8 == 0, off
        cookie, key, size = struct.unpack(">IQI", dat[off:off + 16])
        n = {"offset": off, "cookie": cookie, "key": key, "size": size}
        p = off + 16
        if size:
            dsize = struct.unpack(">I", dat[p:p + 4])[0]
            n["data"] = dat[p + 4:p + 4 + dsize]
            q = p + 4 + dsize
            flags = dat[q]
            q += 1
            n["flags"] = flags
            if flags & 0x02:
                n["name"] = dat[q + 1:q + 1 + dat[q]]
                q += 1 + dat[q]
            if flags & 0x04:
                n["mime"] = dat[q + 1:q + 1 + dat[q]]
                q += 1 + dat[q]
            if flags & 0x08:
                n["last_modified"] = int.from_bytes(dat[q:q + 5], "big")
                q += 5
            if flags & 0x10:
                n["ttl"] = dat[q:q + 2]
                q += 2
            if flags & 0x20:
                plen = struct.unpack(">H", dat[q:q + 2])[0]
                q += 2 + plen
            assert q == p + size, "body fields do not add up to size at %d" % off
        crc, append_ns = struct.unpack(">IQ", dat[p + size:p + size + 12])
        n["crc"], n["append_ns"] = crc, append_ns
        pad = dat[p + size + 12:p + size + 12 + padding(size)]
        assert len(pad) == padding(size) and pad == b"\0" * len(pad), "padding at %d" % off
        off = p + size + 12 + padding(size)
        yield n


def test_written_files_match_the_documented_format(cluster):
    m = cluster.master()
    v = cluster.volume(m, max_volumes=1)
    payloads = [b"", b"a", b"x" * 3, b"y" * 4, b"z" * 12, b"w" * 1000]
    written = []
    for i, data in enumerate(payloads):
        fid, url = put_file(m, data, name="n%d.txt" % i, mime="text/plain")
        written.append((fid, data))
    fid0, _ = written[0]
    r = requests.delete("http://%s/%s" % (v.url, written[1][0]))
    assert r.status_code in (200, 202)
    v.stop()
    dats = list(v.dir.glob("*.dat"))
    assert len(dats) == 1
    dat = dats[0].read_bytes()
    idx = dats[0].with_suffix(".idx").read_bytes()
    assert dat[0] == 3, "superblock version"
    assert dat[1] == 0 and dat[2:4] == b"\0\0"
    needles = list(decode_needles(dat))
    live = [n for n in needles if n["size"]]
    assert len(live) == len(payloads)
    for n, (fid, data) in zip(live, written):
        vid, key, cookie = parse_fid(fid)
        assert (n["key"], n["cookie"]) == (key, cookie)
        assert n["data"] == data
        assert n["name"] == b"n%d.txt" % written.index((fid, data))
        assert n["mime"] == b"text/plain"
        assert n["crc"] in (crc32c(data), masked(crc32c(data))), "CRC32C of the data"
        assert abs(n["append_ns"] - time.time_ns()) < 600 * 10**9
    # The delete is a needle with size 0 and a tombstone in the .idx.
    tomb = [n for n in needles if n["size"] == 0]
    assert len(tomb) == 1 and tomb[0]["key"] == parse_fid(written[1][0])[1]
    assert len(idx) % 16 == 0
    entries = [struct.unpack(">QII", idx[i:i + 16]) for i in range(0, len(idx), 16)]
    assert len(entries) == len(payloads) + 1
    for (key, off8, size), n in zip(entries, live):
        assert key == n["key"] and off8 * 8 == n["offset"] and size == n["size"]
    assert entries[-1][0] == parse_fid(written[1][0])[1]
    assert entries[-1][2] == 0xFFFFFFFF


def test_serves_a_volume_written_elsewhere(cluster):
    """A volume in SeaweedFS's layout, written by this test, is served as is."""
    m = cluster.master()
    vdir = cluster.base / "foreign"
    vdir.mkdir()
    vid = 42
    files = {
        (1, 0x11111111): (b"hello from elsewhere", b"hello.txt", b"text/plain", False),
        (2, 0x22222222): (bytes(range(256)) * 3, b"", b"", True),    # legacy masked CRC
        (0x1234567890, 0x33333333): (b"x" * 5, b"five.bin", b"", False),
    }
    dat = bytearray(b"\x03\x00\x00\x00\x00\x00\x00\x00")
    idx = bytearray()
    for (key, cookie), (data, name, mime, mcrc) in files.items():
        off = len(dat)
        nd = encode_needle(cookie, key, data, name=name, mime=mime, last_modified=1600000000,
                           masked_crc=mcrc)
        dat += nd
        size = struct.unpack(">I", nd[12:16])[0]
        idx += struct.pack(">QII", key, off // 8, size)
    (vdir / ("%d.dat" % vid)).write_bytes(bytes(dat))
    (vdir / ("%d.idx" % vid)).write_bytes(bytes(idx))
    v = cluster.volume(m, vdir=vdir)
    wait_until(lambda: lookup_urls(m, vid) == [v.url], 10, "master learns volume 42")
    for (key, cookie), (data, name, mime, _) in files.items():
        kc = "%x%08x" % (key, cookie)
        if len(kc) % 2:
            kc = "0" + kc
        r = requests.get("http://%s/%d,%s" % (v.url, vid, kc))
        assert r.status_code == 200, (key, r.status_code, r.text)
        assert r.content == data
        assert r.headers["Last-Modified"] == "Sun, 13 Sep 2020 12:26:40 GMT"
        if mime:
            assert r.headers["Content-Type"].startswith(mime.decode())
    # Without its .idx, the volume is rebuilt from the .dat alone.
    v.stop()
    (vdir / ("%d.idx" % vid)).unlink()
    cluster.restart(v)
    for (key, cookie), (data, _, _, _) in files.items():
        kc = "%x%08x" % (key, cookie)
        kc = "0" + kc if len(kc) % 2 else kc
        assert requests.get("http://%s/%d,%s" % (v.url, vid, kc)).content == data
    # And new writes append after the foreign needles.
    fid, url = put_file(m, b"new one")
    assert requests.get("http://%s/%s" % (url, fid)).content == b"new one"
    # The master's key sequence moved past the largest key the server reported.
    assert parse_fid(fid)[1] > 0x1234567890
