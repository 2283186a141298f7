# s3/session.mk: session credentials (the token, the cluster key, STS on the S3 port),
# their unit test and the token parser's fuzz target.
s3_libs3_a_SOURCES += s3/s3_session.c s3/s3_session.h s3/s3_session_policy.c \
	s3/s3_session_key.c s3/s3_session_key.h s3/s3_session_sts.c s3/s3_session_gw.h
check_PROGRAMS += tests/unit/test_s3_session
TESTS += tests/unit/test_s3_session
tests_unit_test_s3_session_SOURCES = tests/unit/test_s3_session.c tests/unit/tap.h
tests_unit_test_s3_session_LDADD = $(S3_TEST_LDADD)
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_s3_session
tests_fuzz_fuzz_s3_session_SOURCES = tests/fuzz/fuzz_s3_session.c
tests_fuzz_fuzz_s3_session_LDADD = $(S3_TEST_LDADD)
tests_fuzz_fuzz_s3_session_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
