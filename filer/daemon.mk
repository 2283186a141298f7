# filer/daemon.mk: the filer daemon (HTTP API over the store and the blob store).
filer_libfiler_a_SOURCES += \
	filer/filer.h filer/filer_int.h \
	filer/filer_server.c \
	filer/filer_path.c \
	filer/filer_read.c \
	filer/filer_list.c \
	filer/filer_write.c \
	filer/filer_ops.c \
	filer/filer_tag.c \
	filer/filer_events.c \
	filer/filer_ttl.c \
	filer/filer_api.c \
	filer/namespace.h filer/ns_scope.c filer/ns_tree.c filer/ns_entry.c \
	filer/filer_tus.c \
	filer/tus_codec.c filer/tus_codec.h \
	filer/body_chunks.c filer/body_chunks.h \
	filer/filer_api_parse.c filer/filer_api_parse.h \
	filer/filer_hardlink.c filer/filer_hardlink.h \
	filer/filer_inode.c filer/filer_inode.h \
	filer/filer_lock.c filer/filer_lock.h \
	filer/filer_reclaim.c filer/filer_reclaim.h

# The daemon in-process over SQLite: path rules and the metadata paths of the HTTP API.
check_PROGRAMS += tests/unit/test_filer_daemon
TESTS += tests/unit/test_filer_daemon
tests_unit_test_filer_daemon_SOURCES = tests/unit/test_filer_daemon.c tests/unit/tap.h
tests_unit_test_filer_daemon_LDADD = $(FILER_TEST_LDADD) -lpthread
# The namespace core (namespace.h) called directly on an in-process filer over SQLite.
check_PROGRAMS += tests/unit/test_filer_ns
TESTS += tests/unit/test_filer_ns
tests_unit_test_filer_ns_SOURCES = tests/unit/test_filer_ns.c tests/unit/tap.h
tests_unit_test_filer_ns_LDADD = $(FILER_TEST_LDADD) -lpthread
# The lock table behind the "lock" ops (filer_lock.h).
check_PROGRAMS += tests/unit/test_filer_lock
TESTS += tests/unit/test_filer_lock
tests_unit_test_filer_lock_SOURCES = tests/unit/test_filer_lock.c tests/unit/tap.h
tests_unit_test_filer_lock_LDADD = $(FILER_TEST_LDADD) -lpthread

if ENABLE_FUZZ
# The JSON entry API's request parser.
noinst_PROGRAMS += tests/fuzz/fuzz_filer_api
tests_fuzz_fuzz_filer_api_SOURCES = tests/fuzz/fuzz_filer_api.c
tests_fuzz_fuzz_filer_api_LDADD = filer/libfiler.a $(FUZZ_LDADD)
tests_fuzz_fuzz_filer_api_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
# The lock ops' body parser and the lock table (filer_lock.h).
noinst_PROGRAMS += tests/fuzz/fuzz_filer_lock
tests_fuzz_fuzz_filer_lock_SOURCES = tests/fuzz/fuzz_filer_lock.c
tests_fuzz_fuzz_filer_lock_LDADD = filer/libfiler.a $(FUZZ_LDADD) $(SQLITE_LIBS) $(LIBPQ_LIBS) -lpthread
tests_fuzz_fuzz_filer_lock_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
