# s3/acl.mk: ACLs (canned, XML bodies, grant headers, the stored form), their unit test
# and fuzz target; s3/s3_acl.c, in the gateway, applies them.
s3_libs3_a_SOURCES += s3/acl.c s3/acl.h
check_PROGRAMS += tests/unit/test_s3_acl
TESTS += tests/unit/test_s3_acl
tests_unit_test_s3_acl_SOURCES = tests/unit/test_s3_acl.c tests/unit/tap.h
tests_unit_test_s3_acl_LDADD = $(S3_TEST_LDADD)
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_s3_acl
tests_fuzz_fuzz_s3_acl_SOURCES = tests/fuzz/fuzz_s3_acl.c
tests_fuzz_fuzz_s3_acl_LDADD = $(S3_TEST_LDADD)
tests_fuzz_fuzz_s3_acl_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
