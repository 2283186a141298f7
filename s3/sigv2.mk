# s3/sigv2.mk: AWS Signature Version 2 (legacy clients, boto3's default presigned URLs).
s3_libs3_a_SOURCES += s3/sigv2.c s3/sigv2.h
check_PROGRAMS += tests/unit/test_s3_sigv2
TESTS += tests/unit/test_s3_sigv2
tests_unit_test_s3_sigv2_SOURCES = tests/unit/test_s3_sigv2.c tests/unit/tap.h
tests_unit_test_s3_sigv2_LDADD = $(S3_TEST_LDADD)
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_s3_sigv2
tests_fuzz_fuzz_s3_sigv2_SOURCES = tests/fuzz/fuzz_s3_sigv2.c
tests_fuzz_fuzz_s3_sigv2_LDADD = $(S3_TEST_LDADD)
tests_fuzz_fuzz_s3_sigv2_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
