"""Bucket versioning through the S3 gateway with boto3: version ids, the history kept
under .versions while the current version stays a plain file, delete markers and
undelete, deletes of one version, Suspended buckets (null versions),
ListObjectVersions with paging and delimiters, GET/HEAD/Copy of a version, racing
writers that all get kept."""

import concurrent.futures
import hashlib
import os

import botocore
import pytest

from conftest import wait_until
from s3_fixtures import IDENTITIES, client, code_of, mini_gateway, start_gateway

AK, SK = "AKALICE", "alice-secret"


@pytest.fixture(scope="module")
def gw(module_cluster):
    return mini_gateway(module_cluster)


@pytest.fixture
def s3(gw):
    return client(gw[1], AK, SK)


def new_bucket(s3, name, state="Enabled"):
    s3.create_bucket(Bucket=name)
    if state:
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": state})
    return name


def versions(s3, bucket, **kw):
    """[(key, version id, is latest, is marker, etag)] in the listing's order."""
    out = []
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, **kw):
        items = [(v["Key"], v["VersionId"], v["IsLatest"], False, v["ETag"], v["LastModified"])
                 for v in page.get("Versions", [])]
        items += [(m["Key"], m["VersionId"], m["IsLatest"], True, None, m["LastModified"])
                  for m in page.get("DeleteMarkers", [])]
        # the two lists interleave in the XML: restore the document order by key, then age
        items.sort(key=lambda t: (t[0], -t[5].timestamp(), t[1]))
        out += [t[:5] for t in items]
    return out


def error_headers(fn, *args, **kw):
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        fn(*args, **kw)
    r = ei.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPHeaders"]


def test_versioning_configuration(s3, gw):
    b = new_bucket(s3, "vconf", None)
    assert "Status" not in s3.get_bucket_versioning(Bucket=b)
    for state in ("Enabled", "Suspended", "Enabled"):
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": state})
        assert s3.get_bucket_versioning(Bucket=b)["Status"] == state
    assert code_of(s3.put_bucket_versioning, Bucket=b,
                   VersioningConfiguration={"Status": "Off"}) == "MalformedXML"
    assert code_of(s3.put_bucket_versioning, Bucket=b,
                   VersioningConfiguration={"MFADelete": "Enabled",
                                            "Status": "Enabled"}) == "InvalidArgument"
    assert code_of(s3.put_bucket_versioning, Bucket="no-such-bucket",
                   VersioningConfiguration={"Status": "Enabled"}) == "NoSuchBucket"
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"


def test_history_kept_and_readable(s3, gw):
    filer, _ = gw
    b = new_bucket(s3, "vhist", None)
    s3.put_object(Bucket=b, Key="dir/k", Body=b"before versioning")
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    bodies = [b"one", os.urandom(3 << 20), b"three"]
    ids = [s3.put_object(Bucket=b, Key="dir/k", Body=d)["VersionId"] for d in bodies]
    assert len(set(ids)) == 3 and "null" not in ids
    got = versions(s3, b)
    assert [(k, v, latest, m) for k, v, latest, m, _ in got] == \
        [("dir/k", ids[2], True, False), ("dir/k", ids[1], False, False),
         ("dir/k", ids[0], False, False), ("dir/k", "null", False, False)]
    for vid, data in zip(ids + ["null"], bodies + [b"before versioning"]):
        o = s3.get_object(Bucket=b, Key="dir/k", VersionId=vid)
        assert o["Body"].read() == data and o["VersionId"] == vid
        assert o["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()
        assert s3.head_object(Bucket=b, Key="dir/k", VersionId=vid)["ContentLength"] == len(data)
    cur = s3.get_object(Bucket=b, Key="dir/k")
    assert cur["Body"].read() == b"three" and cur["VersionId"] == ids[2]
    # the current version is the plain file; the history is not listed as objects
    assert filer.get("/buckets/vhist/dir/k").content == b"three"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=b)["Contents"]] == ["dir/k"]
    assert code_of(s3.get_object, Bucket=b, Key="dir/k", VersionId="bogus") == "InvalidArgument"
    assert code_of(s3.get_object, Bucket=b, Key="dir/k",
                   VersionId="0" * 24) == "NoSuchVersion"
    # keys cannot reach into the history
    assert code_of(s3.get_object, Bucket=b, Key=".versions/dir/k/" + ids[0]) == "NoSuchKey"
    assert code_of(s3.put_object, Bucket=b, Key=".versions/x", Body=b"") == "InvalidArgument"


def test_delete_marker_and_undelete(s3, gw):
    filer, _ = gw
    b = new_bucket(s3, "vdel")
    v1 = s3.put_object(Bucket=b, Key="a/b/k", Body=b"v1")["VersionId"]
    d = s3.delete_object(Bucket=b, Key="a/b/k")
    assert d["DeleteMarker"] is True and d["VersionId"] not in (v1, "null")
    marker = d["VersionId"]
    code, hdrs = error_headers(s3.get_object, Bucket=b, Key="a/b/k")
    assert code == "NoSuchKey"
    assert hdrs.get("x-amz-delete-marker") == "true" and hdrs.get("x-amz-version-id") == marker
    assert filer.get("/buckets/vdel/a/b/k").status_code == 404
    assert s3.list_objects_v2(Bucket=b).get("KeyCount") == 0
    assert [(v, latest, m) for _, v, latest, m, _ in versions(s3, b)] == \
        [(marker, True, True), (v1, False, False)]
    code, hdrs = error_headers(s3.get_object, Bucket=b, Key="a/b/k", VersionId=marker)
    assert code == "MethodNotAllowed" and hdrs.get("x-amz-delete-marker") == "true"
    # deleting the marker brings the object back, also as a file
    d = s3.delete_object(Bucket=b, Key="a/b/k", VersionId=marker)
    assert d["DeleteMarker"] is True and d["VersionId"] == marker
    assert s3.get_object(Bucket=b, Key="a/b/k")["Body"].read() == b"v1"
    assert filer.get("/buckets/vdel/a/b/k").content == b"v1"
    assert [(v, latest) for _, v, latest, _, _ in versions(s3, b)] == [(v1, True)]
    # DeleteObjects makes markers and deletes versions too
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "a/b/k"}, {"Key": "nokey"}]})
    made = {x["Key"]: x for x in r["Deleted"]}
    assert made["a/b/k"]["DeleteMarker"] and made["a/b/k"]["DeleteMarkerVersionId"]
    assert made["nokey"]["DeleteMarker"]
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [
        {"Key": "a/b/k", "VersionId": made["a/b/k"]["DeleteMarkerVersionId"]},
        {"Key": "nokey", "VersionId": made["nokey"]["DeleteMarkerVersionId"]},
        {"Key": "a/b/k", "VersionId": "bad id"}]})
    assert len(r["Deleted"]) == 2 and r["Errors"][0]["Code"] == "InvalidArgument"
    assert s3.get_object(Bucket=b, Key="a/b/k")["Body"].read() == b"v1"


def test_delete_versions_promotes_and_cleans_up(s3, gw):
    filer, _ = gw
    b = new_bucket(s3, "vprom")
    ids = [s3.put_object(Bucket=b, Key="p/k", Body=b"%d" % i)["VersionId"] for i in range(3)]
    # deleting the current version makes the one before it current
    s3.delete_object(Bucket=b, Key="p/k", VersionId=ids[2])
    o = s3.get_object(Bucket=b, Key="p/k")
    assert o["Body"].read() == b"1" and o["VersionId"] == ids[1]
    # a noncurrent one just goes
    s3.delete_object(Bucket=b, Key="p/k", VersionId=ids[0])
    assert [v for _, v, _, _, _ in versions(s3, b)] == [ids[1]]
    assert code_of(s3.delete_bucket, Bucket=b) == "BucketNotEmpty"
    s3.delete_object(Bucket=b, Key="p/k", VersionId=ids[1])
    assert versions(s3, b) == []
    # nothing left behind: no file, no history directory, and the bucket can go
    assert filer.get("/buckets/vprom/p/k").status_code == 404
    assert filer.get("/buckets/vprom/.versions/p/k/").status_code == 404
    s3.delete_bucket(Bucket=b)


def test_suspended_null_versions(s3, gw):
    b = new_bucket(s3, "vsusp")
    real = s3.put_object(Bucket=b, Key="k", Body=b"real")["VersionId"]
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    assert "VersionId" not in s3.put_object(Bucket=b, Key="k", Body=b"null 1")
    s3.put_object(Bucket=b, Key="k", Body=b"null 2")  # replaces the null version
    assert [(v, latest) for _, v, latest, _, _ in versions(s3, b)] == \
        [("null", True), (real, False)]
    assert s3.get_object(Bucket=b, Key="k", VersionId="null")["Body"].read() == b"null 2"
    d = s3.delete_object(Bucket=b, Key="k")  # a null marker replaces the null version
    assert d["DeleteMarker"] and d["VersionId"] == "null"
    assert [(v, m) for _, v, _, m, _ in versions(s3, b)] == [("null", True), (real, False)]
    # enabled again: the null marker stays in the history
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    v3 = s3.put_object(Bucket=b, Key="k", Body=b"v3")["VersionId"]
    assert [(v, m) for _, v, _, m, _ in versions(s3, b)] == \
        [(v3, False), ("null", True), (real, False)]
    assert s3.get_object(Bucket=b, Key="k", VersionId=real)["Body"].read() == b"real"


def test_list_versions_paging_and_delimiter(s3, gw):
    b = new_bucket(s3, "vlist")
    want = []
    for key in ["a", "a-x", "a/b", "a/c/d", "b"]:
        ids = [s3.put_object(Bucket=b, Key=key, Body=key.encode())["VersionId"]
               for _ in range(3)]
        want += [(key, v) for v in reversed(ids)]
        if key == "a":  # deleted: its history and the keys under "a/" share .versions/a
            s3.delete_object(Bucket=b, Key="a")
            want.insert(0, ("a", None))
    for size in (1, 2, 4, 1000):
        got = [(k, v) for k, v, _, _, _ in versions(s3, b, PaginationConfig={"PageSize": size})]
        assert len(got) == len(want)
        assert [(k, v) for (k, v), w in zip(got, want) if w[1]] == [w for w in want if w[1]]
    r = s3.list_object_versions(Bucket=b, Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/"]
    assert sorted({v["Key"] for v in r["Versions"]}) == ["a", "a-x", "b"]
    r = s3.list_object_versions(Bucket=b, Prefix="a/", Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/c/"]
    assert {v["Key"] for v in r["Versions"]} == {"a/b"}
    r = s3.list_object_versions(Bucket=b, MaxKeys=2)
    assert r["IsTruncated"] and r["NextKeyMarker"] == "a"
    assert len(r["Versions"]) == 1 and r["DeleteMarkers"][0]["IsLatest"]
    assert code_of(s3.list_object_versions, Bucket=b, VersionIdMarker="null") == \
        "InvalidArgument"


def test_racing_writers_all_kept(s3, gw):
    b = new_bucket(s3, "vrace")
    s3.put_object(Bucket=b, Key="hot", Body=b"first")

    def put(i):
        return client(gw[1], AK, SK).put_object(Bucket=b, Key="hot", Body=b"w%d" % i)

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        ids = [r["VersionId"] for r in ex.map(put, range(8))]
    got = versions(s3, b)
    assert len(got) == 9 and sum(1 for g in got if g[2]) == 1
    assert set(ids) <= {v for _, v, _, _, _ in got}
    bodies = {s3.get_object(Bucket=b, Key="hot", VersionId=v)["Body"].read() for v in ids}
    assert bodies == {b"w%d" % i for i in range(8)}


def test_copy_and_multipart_make_versions(s3, gw):
    b = new_bucket(s3, "vcopy")
    v1 = s3.put_object(Bucket=b, Key="src", Body=b"old source")["VersionId"]
    s3.put_object(Bucket=b, Key="src", Body=b"new source")
    r = s3.copy_object(Bucket=b, Key="dst", CopySource={"Bucket": b, "Key": "src",
                                                        "VersionId": v1})
    assert r["CopySourceVersionId"] == v1 and r["VersionId"]
    assert s3.get_object(Bucket=b, Key="dst")["Body"].read() == b"old source"
    marker = s3.delete_object(Bucket=b, Key="src")["VersionId"]
    assert code_of(s3.copy_object, Bucket=b, Key="x", CopySource={
        "Bucket": b, "Key": "src", "VersionId": marker}) == "InvalidRequest"
    assert code_of(s3.copy_object, Bucket=b, Key="x", CopySource={
        "Bucket": b, "Key": "src", "VersionId": "0" * 24}) == "NoSuchVersion"
    part = os.urandom(5 << 20)
    up = s3.create_multipart_upload(Bucket=b, Key="dst")["UploadId"]
    e = s3.upload_part(Bucket=b, Key="dst", UploadId=up, PartNumber=1, Body=part)["ETag"]
    done = s3.complete_multipart_upload(Bucket=b, Key="dst", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e}]})
    assert done["VersionId"]
    assert [v for k, v, _, _, _ in versions(s3, b) if k == "dst"] == [done["VersionId"],
                                                                      r["VersionId"]]
    assert s3.get_object(Bucket=b, Key="dst", VersionId=r["VersionId"])["Body"].read() == \
        b"old source"


def test_lifecycle_expiration_makes_markers(module_cluster, gw, monkeypatch):
    """In a versioned bucket, expiring an object hides it behind a delete marker: its
    data stays as a noncurrent version (a lifecycle day lasts 1 s here)."""
    monkeypatch.setenv("WEEDFS_S3_LIFECYCLE_DAY_SECONDS", "1")
    g = start_gateway(module_cluster, gw[0], IDENTITIES, extra=["-lifecycleSeconds=1"]).start()
    s3 = client(g, AK, SK)
    b = new_bucket(s3, "vlife")
    v = s3.put_object(Bucket=b, Key="tmp/k", Body=b"data")["VersionId"]
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "tmp", "Status": "Enabled", "Filter": {"Prefix": "tmp/"},
         "Expiration": {"Days": 1}}]})
    wait_until(lambda: s3.list_objects_v2(Bucket=b).get("KeyCount") == 0, timeout=20,
               what="expiration")
    got = versions(s3, b)
    assert [(vid == v, latest, m) for _, vid, latest, m, _ in got] == \
        [(False, True, True), (True, False, False)]
    assert s3.get_object(Bucket=b, Key="tmp/k", VersionId=v)["Body"].read() == b"data"


def test_lifecycle_noncurrent_versions_and_lone_markers(module_cluster, gw, monkeypatch):
    """NoncurrentVersionExpiration deletes versions a day after a newer one replaced
    them, keeping NewerNoncurrentVersions; ExpiredObjectDeleteMarker removes a marker
    left alone; other keys keep their history (a lifecycle day lasts 1 s here)."""
    monkeypatch.setenv("WEEDFS_S3_LIFECYCLE_DAY_SECONDS", "1")
    g = start_gateway(module_cluster, gw[0], IDENTITIES, extra=["-lifecycleSeconds=1"]).start()
    s3 = client(g, AK, SK)
    b = new_bucket(s3, "vlife2")
    old = [s3.put_object(Bucket=b, Key="old/k", Body=b"%d" % i)["VersionId"] for i in range(3)]
    kept = [s3.put_object(Bucket=b, Key="keep/k", Body=b"%d" % i)["VersionId"]
            for i in range(2)]
    v = s3.put_object(Bucket=b, Key="gone/k", Body=b"x")["VersionId"]
    s3.delete_object(Bucket=b, Key="gone/k")
    s3.delete_object(Bucket=b, Key="gone/k", VersionId=v)  # only the marker is left
    rules = [{"ID": "nc", "Status": "Enabled", "Filter": {"Prefix": "old/"},
              "NoncurrentVersionExpiration": {"NoncurrentDays": 1,
                                              "NewerNoncurrentVersions": 1}},
             {"ID": "dm", "Status": "Enabled", "Filter": {"Prefix": "gone/"},
              "Expiration": {"ExpiredObjectDeleteMarker": True}}]
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": rules})
    got = s3.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]
    assert got[0]["NoncurrentVersionExpiration"] == {"NoncurrentDays": 1,
                                                     "NewerNoncurrentVersions": 1}
    assert got[1]["Expiration"] == {"ExpiredObjectDeleteMarker": True}

    def left():
        return [(k, vid) for k, vid, _, _, _ in versions(s3, b)]
    wait_until(lambda: left() == [("keep/k", kept[1]), ("keep/k", kept[0]),
                                  ("old/k", old[2]), ("old/k", old[1])],
               timeout=20, what="noncurrent expiration")
    assert s3.get_object(Bucket=b, Key="old/k")["Body"].read() == b"2"
    for bad in ({"Expiration": {"Days": 1, "ExpiredObjectDeleteMarker": True}},
                {"NoncurrentVersionExpiration": {"NoncurrentDays": 0}},
                {"NoncurrentVersionExpiration": {"NoncurrentDays": 1,
                                                 "NewerNoncurrentVersions": 101}}):
        rule = dict({"ID": "x", "Status": "Enabled", "Filter": {"Prefix": ""}}, **bad)
        assert code_of(s3.put_bucket_lifecycle_configuration, Bucket=b,
                       LifecycleConfiguration={"Rules": [rule]}) in (
                           "InvalidRequest", "MalformedXML", "InvalidArgument")


def test_tags_of_one_version(s3):
    b = new_bucket(s3, "vtags")
    v1 = s3.put_object(Bucket=b, Key="k", Body=b"1", Tagging="gen=one")["VersionId"]
    v2 = s3.put_object(Bucket=b, Key="k", Body=b"2", Tagging="gen=two")["VersionId"]
    got = s3.get_object_tagging(Bucket=b, Key="k", VersionId=v1)
    assert got["TagSet"] == [{"Key": "gen", "Value": "one"}] and got["VersionId"] == v1
    s3.put_object_tagging(Bucket=b, Key="k", VersionId=v1,
                          Tagging={"TagSet": [{"Key": "kept", "Value": "yes"}]})
    assert s3.get_object_tagging(Bucket=b, Key="k", VersionId=v1)["TagSet"] == \
        [{"Key": "kept", "Value": "yes"}]
    assert s3.get_object_tagging(Bucket=b, Key="k")["TagSet"] == [{"Key": "gen", "Value": "two"}]
    s3.delete_object_tagging(Bucket=b, Key="k", VersionId=v1)
    assert s3.get_object_tagging(Bucket=b, Key="k", VersionId=v1)["TagSet"] == []
    assert s3.get_object_tagging(Bucket=b, Key="k", VersionId=v2)["TagSet"] == \
        [{"Key": "gen", "Value": "two"}]
    marker = s3.delete_object(Bucket=b, Key="k")["VersionId"]
    assert code_of(s3.get_object_tagging, Bucket=b, Key="k", VersionId=marker) == \
        "MethodNotAllowed"
    assert code_of(s3.get_object_tagging, Bucket=b, Key="k", VersionId="0" * 24) == \
        "NoSuchVersion"
