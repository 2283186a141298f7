# filer/metalog.mk: the metadata event log subscriptions and the garbage worker.
filer_libfiler_a_SOURCES += \
	filer/metalog.c filer/metalog.h \
	filer/gc_queue.c filer/gc_queue.h

# Subscriptions, event JSON and the garbage worker: SQLite by default, PostgreSQL when
# WEEDFS_TEST_PG_DSN is set (tests/integration/test_filer_store_pg.py runs it that way too).
check_PROGRAMS += tests/unit/test_filer_metalog
TESTS += tests/unit/test_filer_metalog
tests_unit_test_filer_metalog_SOURCES = tests/unit/test_filer_metalog.c tests/unit/tap.h
tests_unit_test_filer_metalog_LDADD = $(FILER_TEST_LDADD) -lpthread

# What the event log costs per create (prints figures): tests/bench/filer_metalog [DSN] [N]
noinst_PROGRAMS += tests/bench/filer_metalog
tests_bench_filer_metalog_SOURCES = tests/bench/filer_metalog.c
tests_bench_filer_metalog_LDADD = $(FILER_TEST_LDADD) -lpthread
