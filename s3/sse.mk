# s3/sse.mk: the bucket encryption configuration parser (s3/s3_sse.c has the rest of
# server-side encryption, in the gateway), its unit test and fuzz target.
s3_libs3_a_SOURCES += s3/sse_config.c
check_PROGRAMS += tests/unit/test_s3_sse_config
TESTS += tests/unit/test_s3_sse_config
tests_unit_test_s3_sse_config_SOURCES = tests/unit/test_s3_sse_config.c tests/unit/tap.h
tests_unit_test_s3_sse_config_LDADD = $(S3_TEST_LDADD)
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_s3_sse_config
tests_fuzz_fuzz_s3_sse_config_SOURCES = tests/fuzz/fuzz_s3_sse_config.c
tests_fuzz_fuzz_s3_sse_config_LDADD = $(S3_TEST_LDADD)
tests_fuzz_fuzz_s3_sse_config_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
