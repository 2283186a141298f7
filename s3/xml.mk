# s3/xml.mk: XML for S3: a writer for answers and a bounded reader (expat) for request bodies.
s3_libs3_a_SOURCES += s3/xml.c s3/xml.h
check_PROGRAMS += tests/unit/test_s3_xml
TESTS += tests/unit/test_s3_xml
tests_unit_test_s3_xml_SOURCES = tests/unit/test_s3_xml.c tests/unit/tap.h
tests_unit_test_s3_xml_LDADD = $(S3_TEST_LDADD)
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_s3_xml
tests_fuzz_fuzz_s3_xml_SOURCES = tests/fuzz/fuzz_s3_xml.c
tests_fuzz_fuzz_s3_xml_LDADD = $(S3_TEST_LDADD)
tests_fuzz_fuzz_s3_xml_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
