# libFuzzer targets, built only with --enable-fuzz (CC=clang). Each component's
# local.mk adds its own targets to FUZZ_TARGETS inside "if ENABLE_FUZZ".
if ENABLE_FUZZ
FUZZ_LDADD = client/libclient.a server/libcommon.a lib/libweedfs.a $(WEEDFS_DEP_LIBS)
noinst_PROGRAMS += tests/fuzz/fuzz_fid
tests_fuzz_fuzz_fid_SOURCES = tests/fuzz/fuzz_fid.c
tests_fuzz_fuzz_fid_LDADD = $(FUZZ_LDADD)
tests_fuzz_fuzz_fid_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
noinst_PROGRAMS += tests/fuzz/fuzz_sc_wire
tests_fuzz_fuzz_sc_wire_SOURCES = tests/fuzz/fuzz_sc_wire.c
tests_fuzz_fuzz_sc_wire_LDADD = $(FUZZ_LDADD)
tests_fuzz_fuzz_sc_wire_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
