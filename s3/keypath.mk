# s3/keypath.mk: how an S3 key becomes a path of its bucket's tree (s3_keypath.h).
s3_libs3_a_SOURCES += s3/s3_keypath.c s3/s3_keypath.h
check_PROGRAMS += tests/unit/test_s3_keypath
TESTS += tests/unit/test_s3_keypath
tests_unit_test_s3_keypath_SOURCES = tests/unit/test_s3_keypath.c tests/unit/tap.h
tests_unit_test_s3_keypath_LDADD = $(S3_TEST_LDADD)
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_s3_keypath
tests_fuzz_fuzz_s3_keypath_SOURCES = tests/fuzz/fuzz_s3_keypath.c
tests_fuzz_fuzz_s3_keypath_LDADD = $(S3_TEST_LDADD)
tests_fuzz_fuzz_s3_keypath_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
