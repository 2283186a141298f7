# s3/sigv4.mk: AWS Signature Version 4: header and presigned-URL authentication, chunk signatures.
s3_libs3_a_SOURCES += s3/sigv4.c s3/sigv4.h
check_PROGRAMS += tests/unit/test_s3_sigv4
TESTS += tests/unit/test_s3_sigv4
tests_unit_test_s3_sigv4_SOURCES = tests/unit/test_s3_sigv4.c tests/unit/tap.h
tests_unit_test_s3_sigv4_LDADD = $(S3_TEST_LDADD)
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_s3_sigv4
tests_fuzz_fuzz_s3_sigv4_SOURCES = tests/fuzz/fuzz_s3_sigv4.c
tests_fuzz_fuzz_s3_sigv4_LDADD = $(S3_TEST_LDADD)
tests_fuzz_fuzz_s3_sigv4_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
