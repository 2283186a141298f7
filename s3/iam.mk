# s3/iam.mk: the identities file reader, the IAM API's stored users and query forms,
# their unit tests and fuzz targets.
s3_libs3_a_SOURCES += s3/s3_iam_user.c s3/s3_iam_user.h s3/query_form.c s3/query_form.h
check_PROGRAMS += tests/unit/test_s3_iam
TESTS += tests/unit/test_s3_iam
tests_unit_test_s3_iam_SOURCES = tests/unit/test_s3_iam.c tests/unit/tap.h
tests_unit_test_s3_iam_LDADD = $(S3_TEST_LDADD)
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_s3_iam tests/fuzz/fuzz_s3_iam_api
tests_fuzz_fuzz_s3_iam_SOURCES = tests/fuzz/fuzz_s3_iam.c
tests_fuzz_fuzz_s3_iam_LDADD = $(S3_TEST_LDADD)
tests_fuzz_fuzz_s3_iam_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
tests_fuzz_fuzz_s3_iam_api_SOURCES = tests/fuzz/fuzz_s3_iam_api.c
tests_fuzz_fuzz_s3_iam_api_LDADD = $(S3_TEST_LDADD)
tests_fuzz_fuzz_s3_iam_api_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
