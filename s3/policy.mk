# s3/policy.mk: the bucket policy evaluator, its unit test and fuzz target.
s3_libs3_a_SOURCES += s3/bucket_policy.c s3/bucket_policy.h
check_PROGRAMS += tests/unit/test_s3_bucket_policy
TESTS += tests/unit/test_s3_bucket_policy
tests_unit_test_s3_bucket_policy_SOURCES = tests/unit/test_s3_bucket_policy.c tests/unit/tap.h
tests_unit_test_s3_bucket_policy_LDADD = $(S3_TEST_LDADD)
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_s3_bucket_policy
tests_fuzz_fuzz_s3_bucket_policy_SOURCES = tests/fuzz/fuzz_s3_bucket_policy.c
tests_fuzz_fuzz_s3_bucket_policy_LDADD = $(S3_TEST_LDADD)
tests_fuzz_fuzz_s3_bucket_policy_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
