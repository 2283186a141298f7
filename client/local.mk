# client/local.mk: the client library, everything a client of the cluster needs and
# nothing of a daemon (docs/architecture.md): file ids, the filer entry and its binary and
# JSON codecs, chunk lists, the blob client (master and volume calls), the chunk reader and
# writer, the filer's JSON entry API client. The mount, the S3 gateway and the filer itself
# use it; it links no database library.
noinst_LIBRARIES += client/libclient.a
client_libclient_a_SOURCES = \
	client/fid.c client/fid.h \
	client/entry.c client/entry.h \
	client/entry_json.c client/entry_json.h \
	client/chunks.c client/chunks.h \
	client/chunk_cipher.c client/chunk_cipher.h \
	client/blob_client.c client/blob_client.h \
	client/short_circuit.c client/short_circuit.h \
	client/chunk_io.c client/chunk_io.h \
	client/chunk_stream.c client/chunk_stream.h \
	client/filer_wire.h \
	client/filer_rpc.c client/filer_rpc.h \
	client/filer_meta.c client/filer_meta.h \
	client/meta_stream.c client/meta_stream.h \
	client/lock_ranges.c client/lock_ranges.h \
	client/master_list.c client/master_list.h

check_PROGRAMS += tests/unit/test_filer_entry tests/unit/test_filer_chunks
TESTS += tests/unit/test_filer_entry tests/unit/test_filer_chunks
tests_unit_test_filer_entry_SOURCES = tests/unit/test_filer_entry.c tests/unit/tap.h \
	tests/unit/entry_fixture.h
tests_unit_test_filer_entry_LDADD = $(UNIT_LDADD)
tests_unit_test_filer_chunks_SOURCES = tests/unit/test_filer_chunks.c tests/unit/tap.h
tests_unit_test_filer_chunks_LDADD = $(UNIT_LDADD)

# The entry JSON codec both ways; it links the filer's request parser, which reads what the
# client writes.
check_PROGRAMS += tests/unit/test_entry_json
TESTS += tests/unit/test_entry_json
tests_unit_test_entry_json_SOURCES = tests/unit/test_entry_json.c tests/unit/tap.h \
	tests/unit/entry_fixture.h
tests_unit_test_entry_json_LDADD = filer/libfiler.a $(UNIT_LDADD)

# The chunk writer and reader against a master and a volume server started in-process.
check_PROGRAMS += tests/unit/test_filer_chunk_io
TESTS += tests/unit/test_filer_chunk_io
tests_unit_test_filer_chunk_io_SOURCES = tests/unit/test_filer_chunk_io.c tests/unit/tap.h
tests_unit_test_filer_chunk_io_LDADD = server/master/libmaster.a server/volume/libvolume.a \
	$(UNIT_LDADD) $(LIBPQ_LIBS) -lpthread

# Throughput of chunk_writer / chunk_read against a running cluster (prints figures).
noinst_PROGRAMS += tests/bench/filer_chunk_io
tests_bench_filer_chunk_io_SOURCES = tests/bench/filer_chunk_io.c
tests_bench_filer_chunk_io_LDADD = $(UNIT_LDADD) -lpthread

if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_filer_entry tests/fuzz/fuzz_filer_answer
tests_fuzz_fuzz_filer_entry_SOURCES = tests/fuzz/fuzz_filer_entry.c
tests_fuzz_fuzz_filer_entry_LDADD = $(FUZZ_LDADD)
tests_fuzz_fuzz_filer_entry_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
tests_fuzz_fuzz_filer_answer_SOURCES = tests/fuzz/fuzz_filer_answer.c
tests_fuzz_fuzz_filer_answer_LDADD = $(FUZZ_LDADD)
tests_fuzz_fuzz_filer_answer_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif

# The entry JSON codec's rate: entries/s written and read, answers and create requests (prints
# figures). It links the filer's request parser, which reads what the client writes.
noinst_PROGRAMS += tests/bench/entry_json
tests_bench_entry_json_SOURCES = tests/bench/entry_json.c
tests_bench_entry_json_LDADD = filer/libfiler.a $(UNIT_LDADD)
