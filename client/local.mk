# client/local.mk: the filer's wire-protocol client (JSON entry API calls), shared by
# weedfs-mount and the S3 gateway. It uses lib/ and the filer's entry types only.
noinst_LIBRARIES += client/libclient.a
client_libclient_a_SOURCES = \
	client/filer_rpc.c client/filer_rpc.h \
	client/filer_meta.c client/filer_meta.h

if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_filer_answer
tests_fuzz_fuzz_filer_answer_SOURCES = tests/fuzz/fuzz_filer_answer.c
tests_fuzz_fuzz_filer_answer_LDADD = client/libclient.a filer/libfiler.a $(FUZZ_LDADD)
tests_fuzz_fuzz_filer_answer_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
