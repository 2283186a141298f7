# s3/post.mk: the POST policy checker, its unit test and fuzz target; the form reader's fuzz target.
s3_libs3_a_SOURCES += s3/post_policy.c s3/post_policy.h
check_PROGRAMS += tests/unit/test_s3_post_policy
TESTS += tests/unit/test_s3_post_policy
tests_unit_test_s3_post_policy_SOURCES = tests/unit/test_s3_post_policy.c tests/unit/tap.h
tests_unit_test_s3_post_policy_LDADD = $(S3_TEST_LDADD)
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_s3_post_policy
tests_fuzz_fuzz_s3_post_policy_SOURCES = tests/fuzz/fuzz_s3_post_policy.c
tests_fuzz_fuzz_s3_post_policy_LDADD = $(S3_TEST_LDADD)
tests_fuzz_fuzz_s3_post_policy_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_s3_form
tests_fuzz_fuzz_s3_form_SOURCES = tests/fuzz/fuzz_s3_form.c
tests_fuzz_fuzz_s3_form_LDADD = $(S3_TEST_LDADD)
tests_fuzz_fuzz_s3_form_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
