"""Helpers of the S3 gateway tests: a gateway daemon, boto3 clients, requests signed by
hand (SigV4, with aws-chunked streaming bodies) and the checksums botocore lacks without
awscrt (CRC32C, CRC64NVME)."""

import datetime
import hashlib
import hmac
import json
import urllib.parse

import boto3
import botocore
import pytest
import requests
from botocore.config import Config

from conftest import Daemon, free_port
from filer_fixtures import start_mini_with_filer

IDENTITIES = {"identities": [
    {"name": "alice", "credentials": [{"accessKey": "AKALICE", "secretKey": "alice-secret"}],
     "actions": ["Admin"]},
    {"name": "bob", "credentials": [{"accessKey": "AKBOB", "secretKey": "bob-secret"}],
     "actions": ["Read:pub*", "List:pub*"]},
]}


def start_gateway(cluster, filer, config=None, extra=()):
    port, cport, lport, iport = free_port(), free_port(), free_port(), free_port()
    d = cluster._dir("s3")
    args = ["s3", "-ip=127.0.0.1", "-port=%d" % port, "-filer=%s" % filer.url,
            "-iceberg.port=%d" % cport, "-lance.port=%d" % lport,
            "-iam.port=%d" % iport] + list(extra)
    if config is not None:
        path = d / "identities.json"
        d.mkdir(parents=True, exist_ok=True)
        path.write_text(config if isinstance(config, str) else json.dumps(config))
        args.append("-config=%s" % path)
    g = Daemon("s3-%d" % port, args, d, "127.0.0.1:%d" % port)
    g.catalog_port, g.lance_port, g.iam_port = cport, lport, iport
    cluster.daemons.append(g)
    return g


def two_gateways(cluster, objects):
    """A mini's filer with two gateways on it (IDENTITIES), and alice's buckets made with
    objects ({bucket: {key: bytes}}) through the first; returns (filer, g, g2)."""
    _, filer = start_mini_with_filer(cluster)
    g = start_gateway(cluster, filer, IDENTITIES).start()
    g2 = start_gateway(cluster, filer, IDENTITIES).start()
    alice = client(g, "AKALICE", "alice-secret")
    for b, keys in objects.items():
        alice.create_bucket(Bucket=b)
        for k, body in keys.items():
            alice.put_object(Bucket=b, Key=k, Body=body)
    return filer, g, g2


def client(g, ak, sk):
    return boto3.client("s3", endpoint_url="http://%s" % g.url, aws_access_key_id=ak,
                        aws_secret_access_key=sk, region_name="us-east-1",
                        config=Config(retries={"max_attempts": 1}))


def code_of(fn, *args, **kw):
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        fn(*args, **kw)
    return ei.value.response["Error"]["Code"]




def mini_gateway(cluster, bucket=None):
    """A mini (its filer) and a gateway with IDENTITIES in front of it; alice (Admin)
    makes bucket when given. Returns (filer, gateway)."""
    _, filer = start_mini_with_filer(cluster)
    g = start_gateway(cluster, filer, IDENTITIES).start()
    if bucket:
        client(g, "AKALICE", "alice-secret").create_bucket(Bucket=bucket)
    return filer, g


# ---- SigV4 by hand: the streaming modes botocore does not send ----

def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def _sha(data):
    return hashlib.sha256(data).hexdigest()


class Signer:
    """Signs one request for (ak, sk) in us-east-1; keeps the chunk signature chain."""

    def __init__(self, ak, sk, when=None):
        self.ak, self.sk = ak, sk
        now = when or datetime.datetime.now(datetime.timezone.utc)
        self.amz_date = now.strftime("%Y%m%dT%H%M%SZ")
        self.date = self.amz_date[:8]
        self.scope = "%s/us-east-1/s3/aws4_request" % self.date
        k = _hmac(("AWS4" + sk).encode(), self.date)
        k = _hmac(k, "us-east-1")
        k = _hmac(k, "s3")
        self.key = _hmac(k, "aws4_request")
        self.prev = None

    def sign(self, method, host, path, headers, payload_hash, query=""):
        headers = dict(headers, host=host, **{"x-amz-date": self.amz_date,
                                               "x-amz-content-sha256": payload_hash})
        names = sorted(h.lower() for h in headers)
        low = {k.lower(): str(v).strip() for k, v in headers.items()}
        canon = "\n".join([method, urllib.parse.quote(path, safe="/~"), query,
                           "".join("%s:%s\n" % (n, low[n]) for n in names),
                           ";".join(names), payload_hash])
        sts = "\n".join(["AWS4-HMAC-SHA256", self.amz_date, self.scope, _sha(canon.encode())])
        self.prev = hmac.new(self.key, sts.encode(), hashlib.sha256).hexdigest()
        headers["Authorization"] = (
            "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s"
            % (self.ak, self.scope, ";".join(names), self.prev))
        del headers["host"]
        return headers

    def chunk_sig(self, data):
        sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", self.amz_date, self.scope, self.prev,
                         _sha(b""), _sha(data)])
        self.prev = hmac.new(self.key, sts.encode(), hashlib.sha256).hexdigest()
        return self.prev

    def trailer_sig(self, trailer):
        sts = "\n".join(["AWS4-HMAC-SHA256-TRAILER", self.amz_date, self.scope, self.prev,
                         _sha(trailer)])
        self.prev = hmac.new(self.key, sts.encode(), hashlib.sha256).hexdigest()
        return self.prev


def signed(g, ak, sk, method, path, body=b"", headers=None, query="", payload_hash=None,
           host=None):
    """A request signed with the body's SHA-256 (or payload_hash as given); host is the
    Host header to send and sign (default the gateway's address)."""
    s = Signer(ak, sk)
    h = s.sign(method, host or g.url, path, headers or {},
               payload_hash or _sha(body), query)
    if host:
        h["Host"] = host
    url = "http://%s%s%s" % (g.url, urllib.parse.quote(path, safe="/~"),
                             "?" + query if query else "")
    return requests.request(method, url, data=body, headers=h, timeout=30)


def put_streaming(g, ak, sk, path, data, chunk=65536, trailer=None, signed_trailer=True,
                  tamper=None):
    """PUT with an aws-chunked body: signed chunks (and a signed trailer "name:value"),
    or with signed_trailer False the unsigned-trailer mode. tamper(body) may spoil it."""
    s = Signer(ak, sk)
    mode = ("STREAMING-AWS4-HMAC-SHA256-PAYLOAD" + ("-TRAILER" if trailer else "")
            if signed_trailer else "STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    pieces = [data[i:i + chunk] for i in range(0, len(data), chunk)] + [b""]
    headers = {"Content-Encoding": "aws-chunked",
               "x-amz-decoded-content-length": str(len(data))}
    if trailer:
        headers["x-amz-trailer"] = trailer.split(":")[0]
    # the encoded length is needed before signing: frame once with dummy signatures
    def frame(sigs):
        body = b""
        for p, sig in zip(pieces, sigs):
            body += b"%x" % len(p)
            if signed_trailer:
                body += b";chunk-signature=" + sig.encode()
            body += b"\r\n" + p + (b"\r\n" if p else b"")
        if trailer:
            body += trailer.encode() + b"\r\n"
            if signed_trailer:
                body += b"x-amz-trailer-signature:" + sigs[-1].encode() + b"\r\n"
        return body + b"\r\n"
    dummy = ["0" * 64] * (len(pieces) + 1)
    headers["Content-Length"] = str(len(frame(dummy)))
    h = s.sign("PUT", g.url, path, headers, mode)
    sigs = []
    if signed_trailer:
        for p in pieces:
            sigs.append(s.chunk_sig(p))
        if trailer:
            sigs.append(s.trailer_sig(trailer.encode() + b"\n"))
    else:
        sigs = dummy
    body = frame(sigs + ([sigs[-1]] if not trailer else []))
    if tamper:
        body = tamper(body)
    return requests.put("http://%s%s" % (g.url, urllib.parse.quote(path, safe="/~")),
                        data=body, headers=h, timeout=30)


# ---- checksums botocore computes only with awscrt ----

def _crc_table(poly, width):
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_T32C = _crc_table(0x82F63B78, 32)
_T64 = _crc_table(0x9A6C9329AC4BC9B5, 64)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _T32C[(c ^ b) & 0xFF] ^ (c >> 8)
    return (c ^ 0xFFFFFFFF).to_bytes(4, "big")


def crc64nvme(data):
    c = 0xFFFFFFFFFFFFFFFF
    for b in data:
        c = _T64[(c ^ b) & 0xFF] ^ (c >> 8)
    return (c ^ 0xFFFFFFFFFFFFFFFF).to_bytes(8, "big")
