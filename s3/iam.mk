# s3/iam.mk: the identities file reader's unit test and fuzz target.
check_PROGRAMS += tests/unit/test_s3_iam
TESTS += tests/unit/test_s3_iam
tests_unit_test_s3_iam_SOURCES = tests/unit/test_s3_iam.c tests/unit/tap.h
tests_unit_test_s3_iam_LDADD = $(S3_TEST_LDADD)
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_s3_iam
tests_fuzz_fuzz_s3_iam_SOURCES = tests/fuzz/fuzz_s3_iam.c
tests_fuzz_fuzz_s3_iam_LDADD = $(S3_TEST_LDADD)
tests_fuzz_fuzz_s3_iam_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
