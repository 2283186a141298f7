# s3/aws_chunked.mk: The aws-chunked body decoder and the checksums S3 clients send (CRC32, CRC32C,
# CRC64NVME, SHA1, SHA256).
s3_libs3_a_SOURCES += s3/aws_chunked.c s3/aws_chunked.h s3/checksum.c s3/checksum.h
check_PROGRAMS += tests/unit/test_s3_aws_chunked
TESTS += tests/unit/test_s3_aws_chunked
tests_unit_test_s3_aws_chunked_SOURCES = tests/unit/test_s3_aws_chunked.c tests/unit/tap.h
tests_unit_test_s3_aws_chunked_LDADD = $(S3_TEST_LDADD)
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_s3_aws_chunked
tests_fuzz_fuzz_s3_aws_chunked_SOURCES = tests/fuzz/fuzz_s3_aws_chunked.c
tests_fuzz_fuzz_s3_aws_chunked_LDADD = $(S3_TEST_LDADD)
tests_fuzz_fuzz_s3_aws_chunked_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
