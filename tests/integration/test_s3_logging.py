"""Bucket logging through the S3 gateway: Put/GetBucketLogging and their validation, and
the access-log objects delivered into the target bucket in S3's server access log format
(every request on a logged bucket, answered or refused, on any gateway)."""

import json
import hashlib
import re

import botocore
import pytest
import requests

from conftest import wait_until
from filer_fixtures import start_mini_with_filer
from s3_fixtures import client, code_of, start_gateway

IDS = {"identities": [
    {"name": "alice", "credentials": [{"accessKey": "AKALICE", "secretKey": "alice-secret"}],
     "actions": ["Admin"]},
    {"name": "bob", "credentials": [{"accessKey": "AKBOB", "secretKey": "bob-secret"}],
     "actions": ["Read:pub*", "List:pub*"]},
    {"name": "carol", "credentials": [{"accessKey": "AKCAROL", "secretKey": "carol-secret"}],
     "actions": ["Admin:carol-*"]},
]}

# one field of a record: [time], "quoted" (with \" inside), or a plain token
FIELD = re.compile(r'\[[^\]]*\]|"(?:[^"\\]|\\.)*"|\S+')
NAMES = ["owner", "bucket", "time", "ip", "requester", "request_id", "operation", "key",
         "request_uri", "status", "error", "bytes_sent", "object_size", "total_time",
         "turnaround", "referer", "user_agent", "version_id", "host_id", "sigv",
         "cipher", "auth", "host", "tls", "ap_arn", "acl_required"]
SIMPLE_KEY = re.compile(r"\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d-[0-9A-F]{16}$")


@pytest.fixture(scope="module")
def gw(module_cluster):
    _, filer = start_mini_with_filer(module_cluster)
    g = start_gateway(module_cluster, filer, IDS, extra=["-logging.flushSeconds=1"]).start()
    alice = client(g, "AKALICE", "alice-secret")
    for b in ("src", "logs", "quiet", "part", "self", "big"):
        alice.create_bucket(Bucket=b)
    client(g, "AKCAROL", "carol-secret").create_bucket(Bucket="carol-src")
    return module_cluster, filer, g, alice


def enable(s3, bucket, target, prefix, **extra):
    conf = {"TargetBucket": target, "TargetPrefix": prefix}
    conf.update(extra)
    s3.put_bucket_logging(Bucket=bucket, BucketLoggingStatus={"LoggingEnabled": conf})


def records(s3, target, prefix):
    """Every record of the log objects under prefix, as dicts, with the objects' keys."""
    out, keys = [], []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=target, Prefix=prefix):
        for o in page.get("Contents", []):
            keys.append(o["Key"])
            body = s3.get_object(Bucket=target, Key=o["Key"])["Body"].read().decode()
            for line in body.splitlines():
                fields = FIELD.findall(line)
                assert len(fields) == len(NAMES), line
                out.append(dict(zip(NAMES, fields)))
    return out, keys


def wait_records(s3, target, prefix, ids):
    """The records once those of every request id in ids are delivered."""
    def got():
        rs, keys = records(s3, target, prefix)
        have = {r["request_id"] for r in rs}
        return (rs, keys) if set(ids) <= have else None
    return wait_until(got, timeout=30, what="access-log records %s" % sorted(ids))


def rid(resp):
    return resp["ResponseMetadata"]["RequestId"]


def failed_rid(fn, *args, **kw):
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        fn(*args, **kw)
    return ei.value.response["ResponseMetadata"]["RequestId"], ei.value.response["Error"]["Code"]


def test_logging_config_put_get_and_off(gw):
    _, _, _, s3 = gw
    assert "LoggingEnabled" not in s3.get_bucket_logging(Bucket="quiet")
    enable(s3, "quiet", "logs", "q/")
    got = s3.get_bucket_logging(Bucket="quiet")["LoggingEnabled"]
    assert got["TargetBucket"] == "logs" and got["TargetPrefix"] == "q/"
    assert "TargetObjectKeyFormat" not in got
    enable(s3, "quiet", "logs", "q2/",
           TargetGrants=[{"Grantee": {"Type": "Group",
                                      "URI": "http://acs.amazonaws.com/groups/s3/LogDelivery"},
                          "Permission": "WRITE"}],
           TargetObjectKeyFormat={"PartitionedPrefix": {"PartitionDateSource": "DeliveryTime"}})
    got = s3.get_bucket_logging(Bucket="quiet")["LoggingEnabled"]
    assert got["TargetPrefix"] == "q2/"
    assert got["TargetGrants"] == [{"Grantee": {
        "Type": "Group", "URI": "http://acs.amazonaws.com/groups/s3/LogDelivery"},
        "Permission": "WRITE"}]
    assert got["TargetObjectKeyFormat"] == {
        "PartitionedPrefix": {"PartitionDateSource": "DeliveryTime"}}
    s3.put_bucket_logging(Bucket="quiet", BucketLoggingStatus={})
    assert "LoggingEnabled" not in s3.get_bucket_logging(Bucket="quiet")
    assert code_of(s3.get_bucket_logging, Bucket="nobucket") == "NoSuchBucket"


def test_bad_logging_configs_change_nothing(gw):
    _, _, g, s3 = gw
    enable(s3, "quiet", "logs", "keep/")
    carol = client(g, "AKCAROL", "carol-secret")
    bob = client(g, "AKBOB", "bob-secret")
    assert code_of(enable, s3, "quiet", "nosuchtarget", "x/") == \
        "InvalidTargetBucketForLogging"
    assert code_of(s3.put_bucket_logging, Bucket="quiet", BucketLoggingStatus={
        "LoggingEnabled": {"TargetBucket": "logs", "TargetPrefix": "x/",
                           "TargetGrants": [{"Grantee": {"Type": "Group", "URI": "u"},
                                             "Permission": "WRITE_ACP"}]}}) == "MalformedXML"
    # a body boto3 would not send: not XML, and a LoggingEnabled without TargetBucket
    for body in (b"<BucketLoggingStatus><LoggingEnabled>",
                 b"<BucketLoggingStatus><LoggingEnabled><TargetPrefix>p</TargetPrefix>"
                 b"</LoggingEnabled></BucketLoggingStatus>"):
        def send(params, **kw):
            params["body"] = body
        s3.meta.events.register("before-call.s3.PutBucketLogging", send)
        try:
            assert code_of(enable, s3, "quiet", "logs", "x/") == "MalformedXML"
        finally:
            s3.meta.events.unregister("before-call.s3.PutBucketLogging", send)
    # not allowed to configure the source; allowed there, but not to write the target
    assert code_of(enable, bob, "quiet", "logs", "x/") == "AccessDenied"
    assert code_of(enable, carol, "carol-src", "logs", "x/") == "InvalidTargetBucketForLogging"
    assert "LoggingEnabled" not in carol.get_bucket_logging(Bucket="carol-src")
    enable(carol, "carol-src", "carol-src", "own/")  # its own bucket is fine
    got = s3.get_bucket_logging(Bucket="quiet")["LoggingEnabled"]
    assert (got["TargetBucket"], got["TargetPrefix"]) == ("logs", "keep/")
    s3.put_bucket_logging(Bucket="quiet", BucketLoggingStatus={})
    carol.put_bucket_logging(Bucket="carol-src", BucketLoggingStatus={})


def test_requests_leave_records(gw):
    _, _, g, s3 = gw
    prefix = "a/b/c/"
    enable(s3, "src", "logs", prefix)
    body = b"hello logs!"
    put = rid(s3.put_object(Bucket="src", Key="dir/one two.txt", Body=body))
    get = rid(s3.get_object(Bucket="src", Key="dir/one two.txt"))
    missing, code = failed_rid(s3.get_object, Bucket="src", Key="nope")
    assert code == "NoSuchKey"
    bob = client(g, "AKBOB", "bob-secret")
    denied, code = failed_rid(bob.get_object, Bucket="src", Key="dir/one two.txt")
    assert code == "AccessDenied"
    copy = rid(s3.copy_object(Bucket="src", Key="copied",
                              CopySource={"Bucket": "src", "Key": "dir/one two.txt"}))
    up = s3.create_multipart_upload(Bucket="src", Key="mp")
    part = rid(s3.upload_part(Bucket="src", Key="mp", UploadId=up["UploadId"], PartNumber=1,
                              Body=b"p"))
    abort = rid(s3.abort_multipart_upload(Bucket="src", Key="mp", UploadId=up["UploadId"]))
    anon = requests.get("http://%s/src/dir/x" % g.url, timeout=10)
    assert anon.status_code == 403
    unsigned = anon.headers["x-amz-request-id"]
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "src",
                                                          "Key": "dir/one two.txt"})
    signed_url = requests.get(url, timeout=10)
    assert signed_url.status_code == 200
    presigned = signed_url.headers["x-amz-request-id"]
    rs, keys = wait_records(s3, "logs", prefix,
                            [put, get, missing, denied, rid(up), copy, part, abort, unsigned,
                             presigned])
    assert keys and all(SIMPLE_KEY.match(k[len(prefix):]) for k in keys), keys
    by = {r["request_id"]: r for r in rs}
    v = by[presigned]
    assert (v["requester"], v["auth"], v["status"]) == ("alice", "QueryString", "200")
    assert v["sigv"] in ("SigV2", "SigV4")
    assert re.search(r"[?&](X-Amz-)?Signature=-[& ]", v["request_uri"]), v["request_uri"]
    u = by[unsigned]
    assert (u["requester"], u["sigv"], u["auth"], u["status"], u["error"], u["key"]) == \
        ("-", "-", "-", "403", "AccessDenied", "dir/x")
    assert u["user_agent"].startswith('"python-requests/')
    for r in (by[put], by[get], by[missing], by[denied]):
        assert r["owner"] == "alice" and r["bucket"] == "src"
        assert re.match(r"\[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d \+0000\]$", r["time"])
        assert r["ip"] == "127.0.0.1" and r["host"] == g.url
        assert r["sigv"] == "SigV4" and r["auth"] == "AuthHeader"
        assert r["user_agent"].startswith('"Boto3/') or "botocore" in r["user_agent"]
    p = by[put]
    assert (p["operation"], p["key"], p["status"], p["error"]) == \
        ("REST.PUT.OBJECT", "dir/one%20two.txt", "200", "-")
    assert p["requester"] == "alice" and p["object_size"] == str(len(body))
    assert p["request_uri"].startswith('"PUT /src/dir/one%20two.txt')
    q = by[get]
    assert (q["operation"], q["status"], q["bytes_sent"], q["object_size"]) == \
        ("REST.GET.OBJECT", "200", str(len(body)), str(len(body)))
    m = by[missing]
    assert (m["operation"], m["key"], m["status"], m["error"]) == \
        ("REST.GET.OBJECT", "nope", "404", "NoSuchKey")
    assert [by[i]["operation"] for i in (rid(up), copy, part, abort)] == [
        "REST.POST.UPLOADS", "REST.COPY.OBJECT", "REST.PUT.PART", "REST.DELETE.UPLOAD"]
    d = by[denied]
    assert (d["requester"], d["status"], d["error"]) == ("bob", "403", "AccessDenied")
    # a log object is an object like any other: listed, read, its ETag its MD5
    head = s3.head_object(Bucket="logs", Key=keys[0])
    data = s3.get_object(Bucket="logs", Key=keys[0])["Body"].read()
    assert head["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()
    assert head["ContentLength"] == len(data)


def test_disabling_stops_records(gw):
    _, _, _, s3 = gw
    enable(s3, "quiet", "logs", "stop/")
    before = rid(s3.head_bucket(Bucket="quiet"))
    wait_records(s3, "logs", "stop/", [before])
    s3.put_bucket_logging(Bucket="quiet", BucketLoggingStatus={})
    after = rid(s3.list_objects_v2(Bucket="quiet"))
    # a marker on another logged bucket: once it is delivered, so would "after" have been
    enable(s3, "src", "logs", "marker/")
    marker = rid(s3.list_objects_v2(Bucket="src"))
    wait_records(s3, "logs", "marker/", [marker])
    rs, _ = records(s3, "logs", "stop/")
    assert after not in {r["request_id"] for r in rs}
    s3.put_bucket_logging(Bucket="src", BucketLoggingStatus={})


def test_partitioned_keys_and_own_writes_unlogged(gw):
    _, _, _, s3 = gw
    enable(s3, "part", "part", "log/",
           TargetObjectKeyFormat={"PartitionedPrefix": {"PartitionDateSource": "EventTime"}})
    one = rid(s3.put_object(Bucket="part", Key="k", Body=b"x"))
    rs, keys = wait_records(s3, "part", "log/", [one])
    for k in keys:
        assert re.match(r"log/alice/us-east-1/part/\d{4}/\d\d/\d\d/\d{4}-\d\d-\d\d-"
                        r"\d\d-\d\d-\d\d-[0-9A-F]{16}$", k), k
    # the writes of log objects are no requests: no record names one (the reads of the
    # test's own listing and GETs are requests, and are logged)
    assert not [r for r in rs if r["operation"] == "REST.PUT.OBJECT"
                and r["key"].startswith("log/")]
    s3.put_bucket_logging(Bucket="part", BucketLoggingStatus={})


def test_other_gateway_logs_and_flushes_at_stop(gw):
    cluster, filer, _, s3 = gw
    enable(s3, "self", "logs", "g2/")
    g2 = start_gateway(cluster, filer, IDS, extra=["-logging.flushSeconds=3600"]).start()
    other = client(g2, "AKALICE", "alice-secret")
    one = rid(other.put_object(Bucket="self", Key="from-g2", Body=b"abc"))
    assert g2.stop() == 0
    rs, _ = wait_records(s3, "logs", "g2/", [one])
    r = [r for r in rs if r["request_id"] == one][0]
    assert (r["operation"], r["key"], r["status"]) == ("REST.PUT.OBJECT", "from-g2", "200")
    s3.put_bucket_logging(Bucket="self", BucketLoggingStatus={})


def test_full_buffer_delivered_before_the_interval(gw):
    cluster, filer, _, s3 = gw
    enable(s3, "big", "logs", "big/")
    g3 = start_gateway(cluster, filer, IDS, extra=["-logging.flushSeconds=3600"]).start()
    agent = "x" * (32 << 10)  # a 32 KiB User-Agent: 1 MiB of records in 32 requests
    with requests.Session() as http:
        ids = []
        for _ in range(40):
            r = http.get("http://%s/big/k" % g3.url, headers={"User-Agent": agent}, timeout=10)
            assert r.status_code == 403
            ids.append(r.headers["x-amz-request-id"])
    # delivered long before the hour: the buffer passed 1 MiB
    rs, _ = wait_records(s3, "logs", "big/", ids[:30])
    assert all(r["user_agent"] == '"%s"' % agent for r in rs)
    g3.stop()
    s3.put_bucket_logging(Bucket="big", BucketLoggingStatus={})


def test_target_opened_to_log_delivery(gw):
    """S3's two ways of letting logs into another's bucket: the target's bucket policy
    allowing the service logging.s3.amazonaws.com s3:PutObject (for the source named
    in aws:SourceArn), or the LogDelivery group's WRITE in its ACL."""
    _, _, g, alice = gw
    carol = client(g, "AKCAROL", "carol-secret")
    alice.create_bucket(Bucket="svc-logs")
    assert code_of(enable, carol, "carol-src", "svc-logs", "carol/") == \
        "InvalidTargetBucketForLogging"
    policy = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "logging.s3.amazonaws.com"},
        "Action": "s3:PutObject", "Resource": "arn:aws:s3:::svc-logs/carol/*",
        "Condition": {"ArnLike": {"aws:SourceArn": "arn:aws:s3:::carol-src"}}}]}
    alice.put_bucket_policy(Bucket="svc-logs", Policy=json.dumps(policy))
    enable(carol, "carol-src", "svc-logs", "carol/")
    # the policy names the prefix and the source: another prefix is refused
    assert code_of(enable, carol, "carol-src", "svc-logs", "other/") == \
        "InvalidTargetBucketForLogging"
    carol.put_object(Bucket="carol-src", Key="k", Body=b"x")
    wait_until(lambda: any(r["key"] == "k" for r in records(alice, "svc-logs", "carol/")[0]),
               what="carol's records delivered into alice's bucket")
    carol.put_bucket_logging(Bucket="carol-src", BucketLoggingStatus={})
    # the legacy way: the LogDelivery group's WRITE, in a bucket whose ACLs are on
    alice.create_bucket(Bucket="acl-logs", ObjectOwnership="ObjectWriter")
    assert code_of(enable, carol, "carol-src", "acl-logs", "c/") == \
        "InvalidTargetBucketForLogging"
    alice.put_bucket_acl(Bucket="acl-logs",
                         GrantWrite='uri="http://acs.amazonaws.com/groups/s3/LogDelivery"',
                         GrantFullControl="id=%s" % alice.list_buckets()["Owner"]["ID"])
    enable(carol, "carol-src", "acl-logs", "c/")
    carol.put_bucket_logging(Bucket="carol-src", BucketLoggingStatus={})
