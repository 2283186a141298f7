# The filer's data path to the blob store: master client with a location cache
# (blob_client), chunk writer and reader (chunk_io). Included from filer/local.mk after
# filer/libfiler.a is defined.
filer_libfiler_a_SOURCES += \
	filer/blob_client.c filer/blob_client.h \
	filer/chunk_io.c filer/chunk_io.h

# Starts a master and a volume server in-process on loopback ports.
check_PROGRAMS += tests/unit/test_filer_chunk_io
TESTS += tests/unit/test_filer_chunk_io
tests_unit_test_filer_chunk_io_SOURCES = tests/unit/test_filer_chunk_io.c tests/unit/tap.h
tests_unit_test_filer_chunk_io_LDADD = filer/libfiler.a server/master/libmaster.a \
	server/volume/libvolume.a $(FILER_TEST_LDADD) -lpthread

# Throughput of chunk_writer / chunk_read against a running cluster (prints figures).
noinst_PROGRAMS += tests/bench/filer_chunk_io
tests_bench_filer_chunk_io_SOURCES = tests/bench/filer_chunk_io.c
tests_bench_filer_chunk_io_LDADD = filer/libfiler.a $(FILER_TEST_LDADD) -lpthread
