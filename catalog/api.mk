# catalog/api.mk: the S3 Tables API and its storage model on the filer (docs/catalog.md).
noinst_LIBRARIES += catalog/libcatalog_api.a
catalog_libcatalog_api_a_SOURCES = catalog/table_store.c catalog/table_store.h \
	catalog/s3tables.c catalog/s3tables.h catalog/catalog_server.c catalog/catalog_server.h \
	catalog/table_files.c catalog/table_files.h catalog/iceberg_rest.c catalog/iceberg_rest.h \
	catalog/catalog_token.c catalog/catalog_token.h catalog/oauth_tokens.c catalog/oauth_tokens.h \
	catalog/catalog_authz.c catalog/catalog_authz.h \
	catalog/lance_rest.c catalog/lance_rest.h catalog/lance_store.c catalog/lance_store.h
# What the catalog's unit tests link.
CATALOG_API_TEST_LDADD = catalog/libcatalog_api.a catalog/libcatalog.a $(S3_TEST_LDADD)
check_PROGRAMS += tests/unit/test_catalog_store
TESTS += tests/unit/test_catalog_store
tests_unit_test_catalog_store_SOURCES = tests/unit/test_catalog_store.c tests/unit/tap.h
tests_unit_test_catalog_store_LDADD = $(CATALOG_API_TEST_LDADD)
check_PROGRAMS += tests/unit/test_catalog_token
TESTS += tests/unit/test_catalog_token
tests_unit_test_catalog_token_SOURCES = tests/unit/test_catalog_token.c tests/unit/tap.h
tests_unit_test_catalog_token_LDADD = $(CATALOG_API_TEST_LDADD)
check_PROGRAMS += tests/unit/test_lance
TESTS += tests/unit/test_lance
tests_unit_test_lance_SOURCES = tests/unit/test_lance.c tests/unit/tap.h
tests_unit_test_lance_LDADD = $(CATALOG_API_TEST_LDADD)
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_catalog_token
tests_fuzz_fuzz_catalog_token_SOURCES = tests/fuzz/fuzz_catalog_token.c
tests_fuzz_fuzz_catalog_token_LDADD = $(CATALOG_API_TEST_LDADD)
tests_fuzz_fuzz_catalog_token_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
