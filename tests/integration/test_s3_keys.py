"""Keys that are no plain path through the S3 gateway (s3/s3_keypath.h): keys ending in
'/' with content, keys with an empty component ('a//b', '/a'), '.' and '..' components,
and a key that is also the prefix of other keys ('a' and 'a/b' both objects). Each is
written, read, listed (against a model of S3's listing: byte order, common prefixes,
pages of 1 and 2 rebuilt exactly), copied, tagged, completed as a multipart upload and
deleted in both orders, and seen through the filer's HTTP API as documented in
docs/s3-gateway.md."""

import os
import subprocess

import pytest

from s3_fixtures import client, code_of, mini_gateway, signed

AK, SK = "AKALICE", "alice-secret"
B = "keys"

# every case at once, with neighbours that sort between them ('a-x', 'a.b' < 'a/')
KEYS = ["a", "a/", "a//b", "a/b", "a/b/c", "a-x", "a.b", "/lead", "//", "b//", "b///c",
        "dot/./x", "dot/../y", "dot/-", "z/.s3~x", ".s3~object", "q/.s3~empty/"]


@pytest.fixture(scope="module")
def gw(module_cluster):
    filer, g = mini_gateway(module_cluster, B)
    s3 = client(g, AK, SK)
    for k in KEYS:
        s3.put_object(Bucket=B, Key=k, Body=("body of %s" % k).encode())
    return filer, g


def model(keys, prefix="", delimiter=None, after=""):
    """What S3 lists: keys and common prefixes after `after`, in byte order."""
    out = []
    for k in sorted(keys, key=lambda s: s.encode()):
        if not k.startswith(prefix):
            continue
        cut = k.find(delimiter, len(prefix)) if delimiter else -1
        item = (k[:cut + len(delimiter)], True) if cut >= 0 else (k, False)
        if item[0].encode() <= after.encode() or (item[1] and after.startswith(item[0])):
            continue
        if not out or out[-1] != item:
            out.append(item)
    return out


def listed(s3, page=None, **kw):
    """Every (name, is_prefix) of a ListObjectsV2, page by page: (items, pages)."""
    items, pages, token = [], [], None
    while True:
        args = dict(Bucket=B, **kw)
        if page:
            args["MaxKeys"] = page
        if token:
            args["ContinuationToken"] = token
        r = s3.list_objects_v2(**args)
        got = [(o["Key"], False) for o in r.get("Contents", [])] + \
            [(p["Prefix"], True) for p in r.get("CommonPrefixes", [])]
        got.sort(key=lambda it: it[0].encode())
        assert r["KeyCount"] == len(got)
        pages.append(got)
        items += got
        if not r["IsTruncated"]:
            return items, pages
        token = r["NextContinuationToken"]


@pytest.mark.parametrize("page", [None, 1, 2])
@pytest.mark.parametrize("prefix,delimiter", [
    ("", None), ("", "/"), ("a", "/"), ("a/", "/"), ("a//", "/"), ("a/", None),
    ("b/", "/"), ("dot/", "/"), ("/", "/"), ("", "b")])
def test_listing_matches_s3(gw, page, prefix, delimiter):
    """ListObjectsV2 gives S3's exact items in S3's order, and pages of 1 and 2 (with
    continuation tokens across common prefixes and escaped names) rebuild it exactly."""
    _, g = gw
    s3 = client(g, AK, SK)
    kw = {"Prefix": prefix}
    if delimiter:
        kw["Delimiter"] = delimiter
    want = model(KEYS, prefix, delimiter)
    items, pages = listed(s3, page, **kw)
    assert items == want
    if page:
        assert all(len(p) == page for p in pages[:-1]) and len(pages[-1]) <= page


@pytest.mark.parametrize("after", ["a", "a-x", "a/", "a//", "a//b", "a/b", "/", "b//", "dot/.",
                                   "dot/..", "z"])
def test_start_after_in_the_middle(gw, after):
    """StartAfter (v2) and Marker (v1) anywhere, escaped names included."""
    _, g = gw
    s3 = client(g, AK, SK)
    want = model(KEYS, after=after)
    items, _ = listed(s3, 3, StartAfter=after)
    assert items == want
    v1 = s3.list_objects(Bucket=B, Marker=after)
    assert [o["Key"] for o in v1.get("Contents", [])] == [k for k, _ in want]


def test_delimiter_shapes(gw):
    """With '/' the object 'a' is a key and 'a/' a common prefix; the object 'a/' lies
    inside it and is a key of the listing of prefix 'a/'."""
    _, g = gw
    s3 = client(g, AK, SK)
    r = s3.list_objects_v2(Bucket=B, Delimiter="/")
    keys = [o["Key"] for o in r["Contents"]]
    prefixes = [p["Prefix"] for p in r["CommonPrefixes"]]
    assert "a" in keys and "a/" in prefixes and "a/" not in keys and "/" in prefixes
    r = s3.list_objects_v2(Bucket=B, Prefix="a/", Delimiter="/")
    assert [o["Key"] for o in r["Contents"]] == ["a/", "a/b"]
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a//", "a/b/"]
    r = s3.list_objects_v2(Bucket=B, Prefix="a/", Delimiter="/", EncodingType="url")
    assert [o["Key"] for o in r["Contents"]] == ["a/", "a/b"]


def test_get_head_every_key(gw):
    """Every key reads back its own bytes, size and ETag."""
    _, g = gw
    s3 = client(g, AK, SK)
    listing = {o["Key"]: o for o in s3.list_objects_v2(Bucket=B)["Contents"]}
    for k in KEYS:
        body = ("body of %s" % k).encode()
        got = s3.get_object(Bucket=B, Key=k)
        assert got["Body"].read() == body, k
        h = s3.head_object(Bucket=B, Key=k)
        assert h["ContentLength"] == len(body) and h["ETag"] == got["ETag"], k
        assert listing[k]["ETag"] == h["ETag"] and listing[k]["Size"] == len(body), k
    for k in ("a//", "b/", "dot/.", "dot", "q/.s3~empty", "q"):
        assert code_of(s3.head_object, Bucket=B, Key=k) == "404", k
        assert code_of(s3.get_object, Bucket=B, Key=k) == "NoSuchKey", k


def test_filer_view(gw):
    """The documented layout: 'a' is a directory holding the object 'a' as .s3~object and
    the object 'a/' as .s3~empty; escaped components are names of the reserved prefix."""
    filer, _ = gw
    root = "/buckets/" + B
    assert filer.meta(root + "/a")["IsDirectory"]
    assert filer.get(root + "/a/.s3~object").content == b"body of a"
    # 'a/' beside 'a//b': the directory a/.s3~empty holds the object 'a/' in turn
    assert filer.get(root + "/a/.s3~empty/.s3~object").content == b"body of a/"
    assert filer.get(root + "/a/.s3~empty/b").content == b"body of a//b"
    assert filer.get(root + "/a/b/c").content == b"body of a/b/c"
    assert filer.get(root + "/.s3~empty/lead").content == b"body of /lead"
    assert filer.get(root + "/.s3~empty/.s3~empty/.s3~empty").content == b"body of //"
    assert filer.get(root + "/dot/.s3~dot/x").content == b"body of dot/./x"
    assert filer.get(root + "/dot/.s3~dotdot/y").content == b"body of dot/../y"
    assert filer.get(root + "/z/.s3~.s3~x").content == b"body of z/.s3~x"
    assert filer.get(root + "/.s3~.s3~object").content == b"body of .s3~object"
    assert filer.get(root + "/a-x").content == b"body of a-x"  # plain keys: plain paths
    assert sorted(filer.names(root + "/a")) == [".s3~empty", ".s3~object", "b"]


def test_object_becomes_directory_and_back(gw):
    """'p' then 'p/q': the file p turns into a directory keeping the object p (same
    bytes, ETag and metadata); deleting either leaves the other; the last delete leaves
    no directory behind."""
    filer, g = gw
    s3 = client(g, AK, SK)
    root = "/buckets/" + B
    for first in ("plain", "prefix"):
        k = "conv-" + first
        e = s3.put_object(Bucket=B, Key=k, Body=b"the object", Metadata={"m": "1"})["ETag"]
        assert not filer.meta(root + "/" + k).get("IsDirectory")
        s3.put_object(Bucket=B, Key=k + "/q", Body=b"below")
        h = s3.head_object(Bucket=B, Key=k)
        assert h["ETag"] == e and h["Metadata"] == {"m": "1"}
        assert s3.get_object(Bucket=B, Key=k)["Body"].read() == b"the object"
        assert filer.meta(root + "/" + k)["IsDirectory"]
        assert [o["Key"] for o in s3.list_objects_v2(Bucket=B, Prefix=k)["Contents"]] == \
            [k, k + "/q"]
        gone, stays = (k, k + "/q") if first == "plain" else (k + "/q", k)
        s3.delete_object(Bucket=B, Key=gone)
        assert code_of(s3.head_object, Bucket=B, Key=gone) == "404"
        assert [o["Key"] for o in s3.list_objects_v2(Bucket=B, Prefix=k)["Contents"]] == \
            [stays]
        assert s3.get_object(Bucket=B, Key=stays)["Body"].read() in (b"the object", b"below")
        s3.delete_object(Bucket=B, Key=stays)
        assert "Contents" not in s3.list_objects_v2(Bucket=B, Prefix=k)
        assert filer.get(root + "/" + k).status_code == 404  # S3 has no empty prefixes
    # a directory first, then the key of its name; overwritten in place
    s3.put_object(Bucket=B, Key="dfirst/x", Body=b"x")
    s3.put_object(Bucket=B, Key="dfirst", Body=b"one")
    s3.put_object(Bucket=B, Key="dfirst", Body=b"two")
    assert s3.get_object(Bucket=B, Key="dfirst")["Body"].read() == b"two"
    assert code_of(s3.put_object, Bucket=B, Key="dfirst", Body=b"3",
                   IfNoneMatch="*") == "PreconditionFailed"
    etag = s3.head_object(Bucket=B, Key="dfirst")["ETag"]
    assert code_of(s3.put_object, Bucket=B, Key="dfirst", Body=b"3",
                   IfMatch='"%s"' % ("0" * 32)) == "PreconditionFailed"
    s3.put_object(Bucket=B, Key="dfirst", Body=b"three", IfMatch=etag)
    assert s3.get_object(Bucket=B, Key="dfirst")["Body"].read() == b"three"
    attrs = s3.get_object_attributes(Bucket=B, Key="dfirst", ObjectAttributes=["ObjectSize"])
    assert attrs["ObjectSize"] == 5
    assert filer.get(root + "/dfirst/.s3~object").content == b"three"
    # a deeper file in the way: only that one turns into a directory
    s3.put_object(Bucket=B, Key="deep/f", Body=b"f")
    s3.put_object(Bucket=B, Key="deep/f/g/h", Body=b"h")
    assert s3.get_object(Bucket=B, Key="deep/f")["Body"].read() == b"f"
    assert filer.get(root + "/deep/f/.s3~object").content == b"f"


def test_trailing_slash_and_empty_components_delete(gw):
    """'e/' with content beside 'e//f' and 'e/g': deleted in both orders, the tree ends
    clean; a zero-byte 'folder/' (what consoles make) is an object of its own."""
    filer, g = gw
    s3 = client(g, AK, SK)
    root = "/buckets/" + B
    for order in (["e/", "e//f", "e/g"], ["e/g", "e//f", "e/"]):
        for k in ("e/", "e//f", "e/g"):
            s3.put_object(Bucket=B, Key=k, Body=k.encode())
        for i, k in enumerate(order):
            s3.delete_object(Bucket=B, Key=k)
            left = [o["Key"] for o in
                    s3.list_objects_v2(Bucket=B, Prefix="e").get("Contents", [])]
            assert left == sorted(order[i + 1:], key=str.encode)
        assert filer.get(root + "/e").status_code == 404
    s3.put_object(Bucket=B, Key="folder/", Body=b"")
    assert s3.head_object(Bucket=B, Key="folder/")["ContentLength"] == 0
    r = s3.list_objects_v2(Bucket=B, Prefix="folder", Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["folder/"] and "Contents" not in r
    r = s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": "folder/"}]})
    assert [d["Key"] for d in r["Deleted"]] == ["folder/"]
    assert filer.get(root + "/folder").status_code == 404


def test_copy_tagging_multipart(gw):
    """CopyObject from and to each kind of key, tagging of them, and multipart uploads
    completing onto 'm/', onto 'm' beside 'm/x', and onto 'm/x/y' with 'm/x' a file."""
    filer, g = gw
    s3 = client(g, AK, SK)
    s3.copy_object(Bucket=B, Key="cp//to/", CopySource={"Bucket": B, "Key": "a"})
    assert s3.get_object(Bucket=B, Key="cp//to/")["Body"].read() == b"body of a"
    s3.copy_object(Bucket=B, Key="cp", CopySource={"Bucket": B, "Key": "a/"})
    s3.copy_object(Bucket=B, Key="cp/x", CopySource={"Bucket": B, "Key": "dot/../y"})
    assert s3.get_object(Bucket=B, Key="cp")["Body"].read() == b"body of a/"
    assert s3.get_object(Bucket=B, Key="cp/x")["Body"].read() == b"body of dot/../y"
    for k in ("a", "a/", "a//b"):
        s3.put_object_tagging(Bucket=B, Key=k, Tagging={"TagSet": [{"Key": "k", "Value": k}]})
    for k in ("a", "a/", "a//b"):
        assert s3.get_object_tagging(Bucket=B, Key=k)["TagSet"] == [{"Key": "k", "Value": k}]
    part = os.urandom(5 << 20)
    s3.put_object(Bucket=B, Key="m/x", Body=b"small")
    for k in ("m/", "m", "m/x/y"):
        up = s3.create_multipart_upload(Bucket=B, Key=k)["UploadId"]
        e1 = s3.upload_part(Bucket=B, Key=k, UploadId=up, PartNumber=1, Body=part)["ETag"]
        e2 = s3.upload_part(Bucket=B, Key=k, UploadId=up, PartNumber=2, Body=k.encode())["ETag"]
        s3.complete_multipart_upload(Bucket=B, Key=k, UploadId=up, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
        assert s3.get_object(Bucket=B, Key=k)["Body"].read() == part + k.encode(), k
    assert s3.get_object(Bucket=B, Key="m/x")["Body"].read() == b"small"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=B, Prefix="m")["Contents"]] == \
        ["m", "m/", "m/x", "m/x/y"]
    assert [u["Key"] for u in s3.list_multipart_uploads(Bucket=B).get("Uploads", [])] == []


def test_versioned_bucket(gw):
    """With versioning, escaped components keep versions and list them; a key beside a
    longer key ('w' and 'w/x', also 'v/' and 'v//x') is written there too."""
    _, g = gw
    s3 = client(g, AK, SK)
    s3.create_bucket(Bucket="keys-v")
    s3.put_bucket_versioning(Bucket="keys-v", VersioningConfiguration={"Status": "Enabled"})
    ids = {}
    for n, k in enumerate(("v/", "x//w", "v/", "/v")):
        vid = s3.put_object(Bucket="keys-v", Key=k, Body=b"%s#%d" % (k.encode(), n))["VersionId"]
        ids.setdefault(k, []).append(vid)
    got = s3.list_object_versions(Bucket="keys-v")
    assert [(v["Key"], v["VersionId"]) for v in got["Versions"]] == [
        ("/v", ids["/v"][0]), ("v/", ids["v/"][1]), ("v/", ids["v/"][0]),
        ("x//w", ids["x//w"][0])]
    assert s3.get_object(Bucket="keys-v", Key="v/", VersionId=ids["v/"][0])["Body"].read() == b"v/#0"
    s3.delete_object(Bucket="keys-v", Key="v/")
    assert code_of(s3.get_object, Bucket="keys-v", Key="v/") == "NoSuchKey"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="keys-v")["Contents"]] == ["/v", "x//w"]
    assert [(v["Key"], v.get("IsLatest")) for v in
            s3.list_object_versions(Bucket="keys-v", Prefix="v/")["DeleteMarkers"]] == \
        [("v/", True)]
    s3.put_object(Bucket="keys-v", Key="w/x", Body=b"x")
    for k in ("w", "w/x/y", "/v/"):
        s3.put_object(Bucket="keys-v", Key=k, Body=k.encode())
    for k in ("w", "w/x", "w/x/y", "/v/"):
        assert s3.get_object(Bucket="keys-v", Key=k)["Body"].read() == \
            (b"x" if k == "w/x" else k.encode()), k


def versions_xml(g, bucket, prefix=None):
    """[(tag, key, version id, is latest)] of ListObjectVersions in the document's order."""
    import xml.etree.ElementTree as ET
    r = signed(g, AK, SK, "GET", "/" + bucket,
               query=("prefix=%s&" % prefix if prefix else "") + "versions=")
    assert r.status_code == 200, r.text
    ns = "{http://s3.amazonaws.com/doc/2006-03-01/}"
    return [(el.tag[len(ns):], el.find(ns + "Key").text or "", el.find(ns + "VersionId").text,
             el.find(ns + "IsLatest").text == "true")
            for el in ET.fromstring(r.content) if el.tag in (ns + "Version", ns + "DeleteMarker")]


@pytest.mark.parametrize("state", ["Enabled", "Suspended"])
def test_versioned_object_beside_its_prefix(gw, state):
    """'a' beside 'a/b' (and 'a/' beside 'a//b') in a bucket with versioning: both orders
    of writing, every version kept and listed in S3's order (keys in byte order, newest
    first, IsLatest), GET ?versionId of old ones, a delete marker on 'a' leaving 'a/b',
    deleting versions by id bringing the previous one back to a/.s3~object, a copy from
    a version, and 8 racing writers of 'a' beside 'a/b' keeping 8 versions."""
    import concurrent.futures
    filer, g = gw
    s3 = client(g, AK, SK)
    b = "keys-vb-" + state.lower()
    root = "/buckets/" + b
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})

    def put(k, body):
        return s3.put_object(Bucket=b, Key=k, Body=body).get("VersionId", "null")

    # Enabled history first: 'a' then 'a/b'; 'c/b' then 'c'; 'd//b' then 'd/'
    a1 = put("a", b"a1")
    ab1 = put("a/b", b"ab1")
    a2 = put("a", b"a2")
    cb1 = put("c/b", b"cb1")
    c1 = put("c", b"c1")
    c2 = put("c", b"c2")
    db1 = put("d//b", b"db1")
    d1 = put("d/", b"d1")
    d2 = put("d/", b"d2")
    assert filer.get(root + "/a/.s3~object").content == b"a2"
    assert filer.get(root + "/c/.s3~object").content == b"c2"
    assert filer.get(root + "/d/.s3~empty/.s3~object").content == b"d2"
    if state == "Suspended":
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": state})
    assert versions_xml(g, b) == [
        ("Version", "a", a2, True), ("Version", "a", a1, False),
        ("Version", "a/b", ab1, True),
        ("Version", "c", c2, True), ("Version", "c", c1, False),
        ("Version", "c/b", cb1, True),
        ("Version", "d/", d2, True), ("Version", "d/", d1, False),
        ("Version", "d//b", db1, True)]
    for k, vid, body in (("a", a1, b"a1"), ("a", a2, b"a2"), ("c", c1, b"c1"),
                         ("d/", d1, b"d1"), ("a/b", ab1, b"ab1")):
        assert s3.get_object(Bucket=b, Key=k, VersionId=vid)["Body"].read() == body, k
        assert s3.head_object(Bucket=b, Key=k, VersionId=vid)["ContentLength"] == len(body)
    assert s3.head_object(Bucket=b, Key="c")["VersionId"] == c2
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=b)["Contents"]] == \
        ["a", "a/b", "c", "c/b", "d/", "d//b"]
    whole = [(v[1], v[2]) for v in versions_xml(g, b)]
    for page in (1, 2):  # pages rebuilt exactly from the key and version-id markers
        got = [(v["Key"], v["VersionId"]) for p in s3.get_paginator("list_object_versions")
               .paginate(Bucket=b, PaginationConfig={"PageSize": page}) for v in p["Versions"]]
        assert got == whole, page
    dl = s3.list_object_versions(Bucket=b, Delimiter="/")
    assert [(v["Key"], v["VersionId"]) for v in dl["Versions"]] == \
        [("a", a2), ("a", a1), ("c", c2), ("c", c1)]
    assert [p["Prefix"] for p in dl["CommonPrefixes"]] == ["a/", "c/", "d/"]
    dl = s3.list_object_versions(Bucket=b, Prefix="d/", Delimiter="/")
    assert [(v["Key"], v["VersionId"]) for v in dl["Versions"]] == [("d/", d2), ("d/", d1)]
    assert [p["Prefix"] for p in dl["CommonPrefixes"]] == ["d//"]

    # a copy from an old version of 'a' to 'c' (beside 'c/b')
    cp = s3.copy_object(Bucket=b, Key="c", CopySource={"Bucket": b, "Key": "a",
                                                       "VersionId": a1})
    assert s3.get_object(Bucket=b, Key="c")["Body"].read() == b"a1"
    assert filer.get(root + "/c/.s3~object").content == b"a1"
    # DeleteObjects of that version by id: c2 comes back to c/.s3~object
    s3.delete_objects(Bucket=b, Delete={"Objects": [
        {"Key": "c", "VersionId": cp.get("VersionId", "null")}]})
    assert s3.get_object(Bucket=b, Key="c")["Body"].read() == b"c2"
    assert filer.get(root + "/c/.s3~object").content == b"c2"

    # a delete marker on 'a' leaves 'a/b'; deleting the marker brings a2 back in place
    m = s3.delete_object(Bucket=b, Key="a")
    assert m["DeleteMarker"]
    assert code_of(s3.get_object, Bucket=b, Key="a") == "NoSuchKey"
    assert s3.get_object(Bucket=b, Key="a/b")["Body"].read() == b"ab1"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=b, Prefix="a")["Contents"]] == ["a/b"]
    assert versions_xml(g, b, "a")[:3] == [
        ("DeleteMarker", "a", m["VersionId"], True), ("Version", "a", a2, False),
        ("Version", "a", a1, False)]
    s3.delete_object(Bucket=b, Key="a", VersionId=m["VersionId"])
    assert s3.get_object(Bucket=b, Key="a")["Body"].read() == b"a2"
    assert filer.get(root + "/a/.s3~object").content == b"a2"
    # deleting the current version by id: the previous one becomes current, in place
    s3.delete_object(Bucket=b, Key="a", VersionId=a2)
    r = s3.get_object(Bucket=b, Key="a")
    assert (r["Body"].read(), r["VersionId"]) == (b"a1", a1)
    assert filer.get(root + "/a/.s3~object").content == b"a1"
    # 'd/' likewise, one level down
    s3.delete_object(Bucket=b, Key="d/", VersionId=d2)
    assert s3.get_object(Bucket=b, Key="d/")["Body"].read() == b"d1"
    assert filer.get(root + "/d/.s3~empty/.s3~object").content == b"d1"
    # deleting 'a/b' (a marker) keeps 'a'; deleting every version of 'a/b' too
    mb = s3.delete_object(Bucket=b, Key="a/b")
    assert s3.get_object(Bucket=b, Key="a")["Body"].read() == b"a1"
    for vid in (mb["VersionId"], ab1):
        s3.delete_object(Bucket=b, Key="a/b", VersionId=vid)
    assert s3.get_object(Bucket=b, Key="a")["Body"].read() == b"a1"
    assert versions_xml(g, b, "a") == [("Version", "a", a1, True)]
    assert filer.get(root + "/a/.s3~object").content == b"a1"

    # a plain file with history ('e', two versions) becomes e/.s3~object under 'e/x'
    e1, e2 = put("e", b"e1"), put("e", b"e2")
    ex_ = put("e/x", b"ex")
    assert filer.get(root + "/e/.s3~object").content == b"e2"
    # suspended, e2 replaced the null version e1
    assert s3.get_object(Bucket=b, Key="e", VersionId=e1)["Body"].read() == \
        (b"e1" if state == "Enabled" else b"e2")
    assert s3.get_object(Bucket=b, Key="e/x", VersionId=ex_)["Body"].read() == b"ex"
    assert [(v[1], v[3]) for v in versions_xml(g, b, "e")] == \
        [("e", True)] + [("e", False)] * (state == "Enabled") + [("e/x", True)]
    assert versions_xml(g, b, "e")[0][2] == e2

    # 'f/g' restored by deleting its marker while 'f' became an object meanwhile: 'f'
    # moves into f/.s3~object as the version comes back (suspended, the null marker
    # would have replaced the null version: nothing to restore)
    if state == "Enabled":
        big = b"fg" * 150000  # chunked: the restore passes the chunks over
        fg = put("f/g", big)
        mf = s3.delete_object(Bucket=b, Key="f/g")
        f1 = put("f", b"f1")
        assert not filer.meta(root + "/f")["IsDirectory"]
        s3.delete_object(Bucket=b, Key="f/g", VersionId=mf["VersionId"])
        r = s3.get_object(Bucket=b, Key="f/g")
        assert (r["Body"].read(), r["VersionId"]) == (big, fg)
        assert filer.get(root + "/f/.s3~object").content == b"f1"
        assert s3.get_object(Bucket=b, Key="f", VersionId=f1)["Body"].read() == b"f1"
        assert versions_xml(g, b, "f") == [("Version", "f", f1, True),
                                           ("Version", "f/g", fg, True)]

    # 8 racing writers of 'r' beside 'r/b': every version kept
    put("r/b", b"rb")
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        got = list(ex.map(lambda i: s3.put_object(Bucket=b, Key="r", Body=b"r%d" % i),
                          range(8)))
    ids = [x.get("VersionId", "null") for x in got]
    listed = versions_xml(g, b, "r")
    if state == "Enabled":
        assert len(set(ids)) == 8
        assert sorted(v[2] for v in listed if v[1] == "r") == sorted(ids)
        assert [v[3] for v in listed if v[1] == "r"] == [True] + [False] * 7
        newest = [v[2] for v in listed if v[1] == "r"][0]
        body = s3.get_object(Bucket=b, Key="r")["Body"].read()
        assert s3.get_object(Bucket=b, Key="r", VersionId=newest)["Body"].read() == body
    else:
        # suspended: each write replaces the null version; one is left
        assert [(v[1], v[2], v[3]) for v in listed if v[1] == "r"] == [("r", "null", True)]
    assert [v[1] for v in listed][-1] == "r/b"
    assert s3.get_object(Bucket=b, Key="r/b")["Body"].read() == b"rb"
    # a multipart upload completed onto 'r' beside 'r/b' is one more version of 'r'
    up = s3.create_multipart_upload(Bucket=b, Key="r")["UploadId"]
    pe = s3.upload_part(Bucket=b, Key="r", UploadId=up, PartNumber=1, Body=b"mp")["ETag"]
    s3.complete_multipart_upload(Bucket=b, Key="r", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": pe}]})
    assert filer.get(root + "/r/.s3~object").content == b"mp"
    assert [v[3] for v in versions_xml(g, b, "r") if v[1] == "r"] == \
        [True] + [False] * (8 if state == "Enabled" else 0)

    # writers of 'q' racing writers of 'q/<j>' that turn the file q into q/.s3~object
    q0 = put("q", b"q0")
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        futs = [ex.submit(put, "q", b"q%d" % i) for i in range(1, 5)] + \
            [ex.submit(put, "q/%d" % j, b"below") for j in range(4)]
        qids = [f.result() for f in futs[:4]]
        for f in futs[4:]:
            f.result()
    listed = versions_xml(g, b, "q")
    assert [v[1] for v in listed] == ["q"] * (5 if state == "Enabled" else 1) + \
        ["q/%d" % j for j in range(4)]
    if state == "Enabled":
        assert sorted(v[2] for v in listed[:5]) == sorted(qids + [q0])
    assert filer.meta(root + "/q")["IsDirectory"]
    body = s3.get_object(Bucket=b, Key="q")["Body"].read()
    assert body in [b"q%d" % i for i in range(1, 5)]
    assert s3.get_object(Bucket=b, Key="q", VersionId=listed[0][2])["Body"].read() == body


def test_awscli_ls(gw, tmp_path):
    """aws s3 ls shows the object 'a' beside the prefix 'a/', and 'a/' inside it."""
    _, g = gw
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK,
               AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE=str(tmp_path / "none"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"))

    def ls(path):
        p = subprocess.run(["aws", "--endpoint-url", "http://%s" % g.url, "s3", "ls", path],
                           env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        # "PRE name" for a common prefix; "date time size name" for a key, the size in
        # ten columns, so the name (maybe "") starts at column 31
        return [("PRE", line.split(None, 1)[1]) if line.lstrip().startswith("PRE ")
                else ("KEY", line[31:]) for line in p.stdout.splitlines()]

    top = ls("s3://%s/" % B)
    assert ("PRE", "a/") in top and ("KEY", "a") in top and ("KEY", "a-x") in top
    assert ls("s3://%s/a/" % B) == [("PRE", "/"), ("PRE", "b/"), ("KEY", ""), ("KEY", "b")]


def test_no_window_while_a_file_becomes_a_directory(gw):
    """Readers of 'r<n>' while 'r<n>/x' is written: never a miss (the move into
    r<n>/.s3~object is part of the create's transaction)."""
    import concurrent.futures
    _, g = gw
    s3 = client(g, AK, SK)
    misses = []

    def read_all(k, stop):
        n = 0
        while not stop() or n == 0:
            try:
                assert s3.get_object(Bucket=B, Key=k)["Body"].read() == b"kept"
            except Exception as e:  # noqa: BLE001 - every failure is a miss
                misses.append((k, repr(e)))
            n += 1
        return n

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        for i in range(8):
            k = "race%d" % i
            s3.put_object(Bucket=B, Key=k, Body=b"kept")
            done = []
            readers = [ex.submit(read_all, k, lambda: bool(done)) for _ in range(4)]
            try:
                writers = [ex.submit(s3.put_object, Bucket=B, Key="%s/%d" % (k, j),
                                     Body=b"w") for j in range(4)]
                for w in writers:
                    w.result()  # racing writers all succeed
            finally:
                done.append(True)
            assert all(r.result() > 0 for r in readers)
            assert [o["Key"] for o in s3.list_objects_v2(Bucket=B, Prefix=k)["Contents"]] \
                == [k] + ["%s/%d" % (k, j) for j in range(4)]
    assert misses == []


def test_etag_conditions_on_an_object_beside_its_prefix(gw):
    """'c' beside 'c/d' (kept as c/.s3~object): If-Match and If-None-Match with its ETag
    on PUT and If-Match on DELETE judge the object 'c', not the directory."""
    _, g = gw
    s3 = client(g, AK, SK)
    e = s3.put_object(Bucket=B, Key="cond", Body=b"one")["ETag"]
    s3.put_object(Bucket=B, Key="cond/d", Body=b"below")
    assert code_of(s3.put_object, Bucket=B, Key="cond", Body=b"x", IfNoneMatch=e) == \
        "PreconditionFailed"
    assert code_of(s3.put_object, Bucket=B, Key="cond", Body=b"x", IfMatch='"0"') == \
        "PreconditionFailed"
    e2 = s3.put_object(Bucket=B, Key="cond", Body=b"two", IfMatch=e)["ETag"]
    assert code_of(s3.delete_object, Bucket=B, Key="cond", IfMatch=e) == "PreconditionFailed"
    assert s3.get_object(Bucket=B, Key="cond")["Body"].read() == b"two"
    s3.delete_object(Bucket=B, Key="cond", IfMatch=e2)
    assert code_of(s3.head_object, Bucket=B, Key="cond") == "404"
    assert s3.get_object(Bucket=B, Key="cond/d")["Body"].read() == b"below"
    assert code_of(s3.delete_object, Bucket=B, Key="cond", IfMatch=e2) == "NoSuchKey"
