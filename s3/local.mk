# s3/local.mk: the S3 gateway. Each module's fragment adds its sources to libs3.a
# and its unit tests and fuzz targets.
noinst_LIBRARIES += s3/libs3.a
s3_libs3_a_SOURCES = s3/s3_err.c s3/s3_err.h
# What the gateway's unit tests and fuzz targets link.
S3_TEST_LDADD = s3/libs3.a $(UNIT_LDADD) $(EXPAT_LIBS)

include s3/sigv4.mk
include s3/sigv2.mk
include s3/aws_chunked.mk
include s3/xml.mk
include s3/iam.mk
include s3/post.mk
include s3/policy.mk
include s3/session.mk
include s3/sse.mk
include s3/logging.mk
include s3/acl.mk
include s3/keypath.mk

# The gateway daemon ("weedfs s3").
s3_libs3_a_SOURCES += s3/s3_server.c s3/s3_server.h s3/s3_int.h \
	s3/s3_iam.c s3/s3_iam.h s3/s3_iam_store.c s3/s3_iam_store.h s3/s3_iam_api.c \
	s3/s3_bucket.c s3/s3_acl.c s3/s3_bucket_cache.c s3/s3_budget.c s3/s3_policy.c s3/s3_lock.c s3/s3_version.c s3/s3_versions_list.c s3/s3_list.c s3/s3_object.c s3/s3_body.c \
	s3/s3_meta.c s3/s3_meta.h s3/s3_put.c s3/s3_get.c s3/s3_loop.c s3/s3_commit.c s3/s3_multipart.c s3/s3_copy.c s3/s3_tagging.c s3/s3_cors.c s3/s3_lifecycle.c s3/s3_post.c \
	s3/s3_sse.c s3/s3_sse.h \
	s3/s3_logging_deliver.c \
	s3/s3_metrics.c
include s3/bench.mk
