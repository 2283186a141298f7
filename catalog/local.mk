# catalog/local.mk: the table catalogs behind the REST endpoints. The Iceberg
# metadata engine is pure (lib/ only): read, check, apply, write metadata JSON.
noinst_LIBRARIES += catalog/libcatalog.a
catalog_libcatalog_a_SOURCES = catalog/iceberg_meta.c catalog/iceberg_meta.h
CATALOG_TEST_LDADD = catalog/libcatalog.a lib/libweedfs.a $(WEEDFS_DEP_LIBS)

check_PROGRAMS += tests/unit/test_iceberg_meta
TESTS += tests/unit/test_iceberg_meta
tests_unit_test_iceberg_meta_SOURCES = tests/unit/test_iceberg_meta.c tests/unit/tap.h
tests_unit_test_iceberg_meta_LDADD = $(CATALOG_TEST_LDADD)
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_iceberg_commit
tests_fuzz_fuzz_iceberg_commit_SOURCES = tests/fuzz/fuzz_iceberg_commit.c
tests_fuzz_fuzz_iceberg_commit_LDADD = $(CATALOG_TEST_LDADD)
tests_fuzz_fuzz_iceberg_commit_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
catalog_libcatalog_a_SOURCES += catalog/iceberg_view_meta.c catalog/iceberg_view_meta.h

check_PROGRAMS += tests/unit/test_iceberg_view_meta
TESTS += tests/unit/test_iceberg_view_meta
tests_unit_test_iceberg_view_meta_SOURCES = tests/unit/test_iceberg_view_meta.c tests/unit/tap.h
tests_unit_test_iceberg_view_meta_LDADD = $(CATALOG_TEST_LDADD)
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_iceberg_view tests/fuzz/fuzz_iceberg_meta
tests_fuzz_fuzz_iceberg_view_SOURCES = tests/fuzz/fuzz_iceberg_view.c
tests_fuzz_fuzz_iceberg_view_LDADD = $(CATALOG_TEST_LDADD)
tests_fuzz_fuzz_iceberg_view_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
tests_fuzz_fuzz_iceberg_meta_SOURCES = tests/fuzz/fuzz_iceberg_meta.c
tests_fuzz_fuzz_iceberg_meta_LDADD = $(CATALOG_TEST_LDADD)
tests_fuzz_fuzz_iceberg_meta_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
catalog_libcatalog_a_SOURCES += catalog/lance_id.c catalog/lance_id.h catalog/lance_req.c \
	catalog/lance_req.h
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_lance_req
tests_fuzz_fuzz_lance_req_SOURCES = tests/fuzz/fuzz_lance_req.c
tests_fuzz_fuzz_lance_req_LDADD = $(CATALOG_TEST_LDADD)
tests_fuzz_fuzz_lance_req_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
