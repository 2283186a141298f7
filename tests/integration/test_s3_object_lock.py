"""Object Lock through the S3 gateway with boto3: buckets made with it (versioning on,
never suspended), default retention, retention and legal hold per version, deletes of
locked versions refused (GOVERNANCE bypassed by an Admin who asks, COMPLIANCE never),
retention that only grows, and the lock of multipart uploads and copies."""

import datetime
import os
import time

import pytest

from s3_fixtures import client, code_of, mini_gateway

AK, SK = "AKALICE", "alice-secret"


@pytest.fixture(scope="module")
def gw(module_cluster):
    return mini_gateway(module_cluster)


@pytest.fixture
def s3(gw):
    return client(gw[1], AK, SK)


def later(seconds):
    return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)


def locked_bucket(s3, name):
    s3.create_bucket(Bucket=name, ObjectLockEnabledForBucket=True)
    return name


def test_lock_configuration(s3):
    b = locked_bucket(s3, "lock-conf")
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    cfg = s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
    assert cfg == {"ObjectLockEnabled": "Enabled"}
    assert code_of(s3.put_bucket_versioning, Bucket=b,
                   VersioningConfiguration={"Status": "Suspended"}) == "InvalidBucketState"
    s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled",
        "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Years": 1}}})
    rule = s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]["Rule"]
    assert rule == {"DefaultRetention": {"Mode": "GOVERNANCE", "Years": 1}}
    for bad, code in (({"Mode": "GOVERNANCE", "Days": 0}, "InvalidRetentionPeriod"),
                      ({"Mode": "SOMETIMES", "Days": 1}, "MalformedXML"),
                      ({"Mode": "COMPLIANCE", "Days": 1, "Years": 1}, "MalformedXML")):
        assert code_of(s3.put_object_lock_configuration, Bucket=b, ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": bad}}) == code
    # a bucket without versioning cannot take a lock; one without a lock refuses lock headers
    s3.create_bucket(Bucket="lock-none")
    assert code_of(s3.get_object_lock_configuration,
                   Bucket="lock-none") == "ObjectLockConfigurationNotFoundError"
    assert code_of(s3.put_object_lock_configuration, Bucket="lock-none",
                   ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"}) == \
        "InvalidBucketState"
    assert code_of(s3.put_object, Bucket="lock-none", Key="k", Body=b"x",
                   ObjectLockLegalHoldStatus="ON") == "InvalidRequest"
    assert code_of(s3.get_object_retention, Bucket="lock-none", Key="k") == "InvalidRequest"


def test_default_retention_and_governance_bypass(s3):
    b = locked_bucket(s3, "lock-gov")
    s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled",
        "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}})
    v = s3.put_object(Bucket=b, Key="k", Body=b"kept")["VersionId"]
    h = s3.head_object(Bucket=b, Key="k")
    assert h["ObjectLockMode"] == "GOVERNANCE"
    assert abs((h["ObjectLockRetainUntilDate"] - later(86400)).total_seconds()) < 60
    assert code_of(s3.delete_object, Bucket=b, Key="k", VersionId=v) == "AccessDenied"
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "k", "VersionId": v}]})
    assert r["Errors"][0]["Code"] == "AccessDenied"
    # a DELETE without a version only hides it behind a marker
    marker = s3.delete_object(Bucket=b, Key="k")["VersionId"]
    assert s3.get_object(Bucket=b, Key="k", VersionId=v)["Body"].read() == b"kept"
    s3.delete_object(Bucket=b, Key="k", VersionId=marker)
    # an Admin who asks may bypass GOVERNANCE
    s3.delete_object(Bucket=b, Key="k", VersionId=v, BypassGovernanceRetention=True)
    assert code_of(s3.head_object, Bucket=b, Key="k") == "404"


def test_compliance_and_retention_changes(s3):
    b = locked_bucket(s3, "lock-comp")
    until = later(3600).replace(microsecond=0)
    v = s3.put_object(Bucket=b, Key="k", Body=b"x", ObjectLockMode="COMPLIANCE",
                      ObjectLockRetainUntilDate=until)["VersionId"]
    got = s3.get_object_retention(Bucket=b, Key="k", VersionId=v)["Retention"]
    assert got["Mode"] == "COMPLIANCE" and got["RetainUntilDate"] == until
    assert code_of(s3.delete_object, Bucket=b, Key="k", VersionId=v,
                   BypassGovernanceRetention=True) == "AccessDenied"
    # COMPLIANCE only grows: shortening or weakening is refused even with a bypass
    for mode, when in (("COMPLIANCE", later(60)), ("GOVERNANCE", later(7200))):
        assert code_of(s3.put_object_retention, Bucket=b, Key="k", VersionId=v,
                       BypassGovernanceRetention=True,
                       Retention={"Mode": mode, "RetainUntilDate": when}) == "AccessDenied"
    longer = later(7200).replace(microsecond=0)
    s3.put_object_retention(Bucket=b, Key="k", VersionId=v,
                            Retention={"Mode": "COMPLIANCE", "RetainUntilDate": longer})
    assert s3.get_object_retention(Bucket=b, Key="k")["Retention"]["RetainUntilDate"] == longer
    # bad requests change nothing
    assert code_of(s3.put_object_retention, Bucket=b, Key="k", Retention={
        "Mode": "COMPLIANCE", "RetainUntilDate": later(-60)}) == "InvalidArgument"
    assert code_of(s3.put_object, Bucket=b, Key="j", Body=b"", ObjectLockMode="FOREVER",
                   ObjectLockRetainUntilDate=until) == "InvalidArgument"
    assert code_of(s3.get_object_retention, Bucket=b, Key="k",
                   VersionId="0" * 24) == "NoSuchVersion"
    assert s3.get_object_retention(Bucket=b, Key="k")["Retention"]["RetainUntilDate"] == longer


def test_legal_hold_and_expiry(s3):
    b = locked_bucket(s3, "lock-hold")
    v = s3.put_object(Bucket=b, Key="k", Body=b"x")["VersionId"]
    assert code_of(s3.get_object_legal_hold, Bucket=b, Key="k") == \
        "NoSuchObjectLockConfiguration"
    s3.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "ON"})
    assert s3.get_object_legal_hold(Bucket=b, Key="k")["LegalHold"]["Status"] == "ON"
    assert s3.head_object(Bucket=b, Key="k")["ObjectLockLegalHoldStatus"] == "ON"
    assert code_of(s3.delete_object, Bucket=b, Key="k", VersionId=v,
                   BypassGovernanceRetention=True) == "AccessDenied"
    s3.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "OFF"})
    # a retention that has run out holds nothing
    s3.put_object_retention(Bucket=b, Key="k", Retention={
        "Mode": "COMPLIANCE", "RetainUntilDate": later(2)})
    assert code_of(s3.delete_object, Bucket=b, Key="k", VersionId=v) == "AccessDenied"
    time.sleep(3)
    s3.delete_object(Bucket=b, Key="k", VersionId=v)
    assert s3.list_object_versions(Bucket=b).get("Versions") is None


def test_multipart_and_copy_take_their_own_lock(s3):
    b = locked_bucket(s3, "lock-mp")
    until = later(3600).replace(microsecond=0)
    up = s3.create_multipart_upload(Bucket=b, Key="big", ObjectLockMode="GOVERNANCE",
                                    ObjectLockRetainUntilDate=until)["UploadId"]
    e = s3.upload_part(Bucket=b, Key="big", UploadId=up, PartNumber=1,
                       Body=os.urandom(1 << 20))["ETag"]
    v = s3.complete_multipart_upload(Bucket=b, Key="big", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e}]})["VersionId"]
    h = s3.head_object(Bucket=b, Key="big", VersionId=v)
    assert h["ObjectLockMode"] == "GOVERNANCE" and h["ObjectLockRetainUntilDate"] == until
    # a copy does not take the source's lock, only the one it asks for
    c = s3.copy_object(Bucket=b, Key="copy", CopySource={"Bucket": b, "Key": "big"})
    assert "ObjectLockMode" not in s3.head_object(Bucket=b, Key="copy")
    s3.delete_object(Bucket=b, Key="copy", VersionId=c["VersionId"])
    s3.copy_object(Bucket=b, Key="copy2", CopySource={"Bucket": b, "Key": "big"},
                   ObjectLockLegalHoldStatus="ON")
    assert s3.head_object(Bucket=b, Key="copy2")["ObjectLockLegalHoldStatus"] == "ON"
    # nothing of the upload's parts shows up as versions
    keys = {x["Key"] for x in s3.list_object_versions(Bucket=b)["Versions"]}
    assert keys == {"big", "copy2"}
