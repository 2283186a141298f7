# catalog/api.mk: the S3 Tables API and its storage model on the filer (docs/catalog.md).
noinst_LIBRARIES += catalog/libcatalog_api.a
catalog_libcatalog_api_a_SOURCES = catalog/table_store.c catalog/table_store.h \
	catalog/s3tables.c catalog/s3tables.h catalog/catalog_server.c catalog/catalog_server.h \
	catalog/table_files.c catalog/table_files.h catalog/iceberg_rest.c catalog/iceberg_rest.h
# What the catalog's unit tests link.
CATALOG_API_TEST_LDADD = catalog/libcatalog_api.a catalog/libcatalog.a $(S3_TEST_LDADD)
check_PROGRAMS += tests/unit/test_catalog_store
TESTS += tests/unit/test_catalog_store
tests_unit_test_catalog_store_SOURCES = tests/unit/test_catalog_store.c tests/unit/tap.h
tests_unit_test_catalog_store_LDADD = $(CATALOG_API_TEST_LDADD)
