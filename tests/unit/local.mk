# Unit tests of lib/, file ids and server/common; each component's local.mk adds its own.
UNIT_LDADD = client/libclient.a server/libcommon.a lib/libweedfs.a $(WEEDFS_DEP_LIBS)

check_PROGRAMS += tests/unit/test_lib tests/unit/test_common
TESTS += tests/unit/test_lib tests/unit/test_common
tests_unit_test_lib_SOURCES = tests/unit/test_lib.c tests/unit/tap.h
tests_unit_test_lib_LDADD = $(UNIT_LDADD)
tests_unit_test_common_SOURCES = tests/unit/test_common.c tests/unit/tap.h
tests_unit_test_common_LDADD = $(UNIT_LDADD)

# The layer rules of docs/architecture.md, and weedfs-mount without a database library.
TESTS += tests/check_layers.py
EXTRA_DIST += tests/check_layers.py
