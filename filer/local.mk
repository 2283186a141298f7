# The filer daemon: the store interface with its SQLite and PostgreSQL backends, the
# metadata log, the garbage queue and the HTTP and JSON APIs. Built on client/ (entries,
# chunk lists, the blob client).
noinst_LIBRARIES += filer/libfiler.a
filer_libfiler_a_SOURCES = \
	filer/store.c filer/store.h filer/store_impl.h \
	filer/store_sqlite.c \
	filer/store_postgres.c \
	filer/store_schema.h

# The stores' schemas are SQL files; the build writes them into filer/store_schema.c as the
# C strings of store_schema.h (each line a literal ending in "\n", quotes and backslashes
# escaped).
FILER_SCHEMAS = filer/store_sqlite_schema.sql filer/store_postgres_schema.sql
EXTRA_DIST += $(FILER_SCHEMAS)
nodist_filer_libfiler_a_SOURCES = filer/store_schema.c
CLEANFILES = filer/store_schema.c
FILER_SQL_TO_C = sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/'
filer/store_schema.c: $(srcdir)/filer/store_sqlite_schema.sql \
		$(srcdir)/filer/store_postgres_schema.sql $(srcdir)/filer/local.mk
	$(AM_V_GEN)$(MKDIR_P) filer && { \
	  echo '/* Written from $(FILER_SCHEMAS) by filer/local.mk: do not edit. */'; \
	  echo '#include "filer/store_schema.h"'; \
	  echo 'const char filer_store_sqlite_schema[] ='; \
	  $(FILER_SQL_TO_C) $(srcdir)/filer/store_sqlite_schema.sql; \
	  echo ';'; \
	  echo 'const char filer_store_postgres_schema[] ='; \
	  $(FILER_SQL_TO_C) $(srcdir)/filer/store_postgres_schema.sql; \
	  echo ';'; \
	} >$@-t && mv $@-t $@

FILER_TEST_LDADD = filer/libfiler.a $(UNIT_LDADD) $(SQLITE_LIBS) $(LIBPQ_LIBS)

check_PROGRAMS += tests/unit/test_filer_store
TESTS += tests/unit/test_filer_store
check_PROGRAMS += tests/unit/test_filer_tus_codec
TESTS += tests/unit/test_filer_tus_codec
tests_unit_test_filer_tus_codec_SOURCES = tests/unit/test_filer_tus_codec.c tests/unit/tap.h
tests_unit_test_filer_tus_codec_LDADD = $(FILER_TEST_LDADD)
# The store conformance suite: SQLite by default, PostgreSQL when WEEDFS_TEST_PG_DSN is set
# (tests/integration/test_filer_store_pg.py starts a real server and runs it).
tests_unit_test_filer_store_SOURCES = tests/unit/test_filer_store.c tests/unit/tap.h
tests_unit_test_filer_store_LDADD = $(FILER_TEST_LDADD) -lpthread

# Store micro-benchmark: inserts/s and finds/s from N threads (prints figures).
noinst_PROGRAMS += tests/bench/filer_store
tests_bench_filer_store_SOURCES = tests/bench/filer_store.c
tests_bench_filer_store_LDADD = $(FILER_TEST_LDADD) -lpthread

# The JSON entry API's round trip against a running filer (tests/bench/filer_rtt.sh).
noinst_PROGRAMS += tests/bench/filer_rtt
tests_bench_filer_rtt_SOURCES = tests/bench/filer_rtt.c
tests_bench_filer_rtt_LDADD = $(UNIT_LDADD)

if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_filer_tus
tests_fuzz_fuzz_filer_tus_SOURCES = tests/fuzz/fuzz_filer_tus.c
tests_fuzz_fuzz_filer_tus_LDADD = filer/libfiler.a $(FUZZ_LDADD)
tests_fuzz_fuzz_filer_tus_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif

# Fragments of the parts written separately (each owns its own).
include filer/metalog.mk
include filer/daemon.mk
