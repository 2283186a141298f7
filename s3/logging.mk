# s3/logging.mk: bucket logging's configuration parser and record formatter
# (s3/s3_logging_deliver.c has the delivery, in the gateway), its unit test and fuzz target.
s3_libs3_a_SOURCES += s3/s3_logging.c s3/s3_logging.h
check_PROGRAMS += tests/unit/test_s3_logging
TESTS += tests/unit/test_s3_logging
tests_unit_test_s3_logging_SOURCES = tests/unit/test_s3_logging.c tests/unit/tap.h
tests_unit_test_s3_logging_LDADD = $(S3_TEST_LDADD)
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_s3_logging
tests_fuzz_fuzz_s3_logging_SOURCES = tests/fuzz/fuzz_s3_logging.c
tests_fuzz_fuzz_s3_logging_LDADD = $(S3_TEST_LDADD)
tests_fuzz_fuzz_s3_logging_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
