# The volume server: needle storage (needle, needle_map, volume, volume_store) and its HTTP front end.
noinst_LIBRARIES += server/volume/libvolume.a
server_volume_libvolume_a_SOURCES = \
	server/volume/needle.c server/volume/needle.h \
	server/volume/needle_map.c server/volume/needle_map.h \
	server/volume/volume.c server/volume/volume.h \
	server/volume/volume_store.c server/volume/volume_store.h \
	server/volume/volume_server.c server/volume/volume_server.h \
	server/volume/volume_handlers.c server/volume/vs_int.h \
	server/volume/spill.c server/volume/spill.h \
	server/volume/vs_upload.c server/volume/vs_download.c server/volume/vs_short_circuit.c \
	server/volume/vs_copy.c server/volume/vs_metrics.c server/volume/vs_ec.c \
	server/volume/ec_codec.c server/volume/ec_codec.h \
	server/volume/ec_volume.c server/volume/ec_volume.h

VOLUME_UNIT_LDADD = server/volume/libvolume.a $(UNIT_LDADD)
check_PROGRAMS += tests/unit/test_needle tests/unit/test_volume tests/unit/test_volume_vacuum \
	tests/unit/test_volume_large tests/unit/test_ec
TESTS += tests/unit/test_needle tests/unit/test_volume tests/unit/test_volume_vacuum \
	tests/unit/test_volume_large tests/unit/test_ec
tests_unit_test_needle_SOURCES = tests/unit/test_needle.c tests/unit/tap.h
tests_unit_test_needle_LDADD = $(VOLUME_UNIT_LDADD)
tests_unit_test_volume_SOURCES = tests/unit/test_volume.c tests/unit/tap.h
tests_unit_test_volume_LDADD = $(VOLUME_UNIT_LDADD) -lpthread
tests_unit_test_volume_vacuum_SOURCES = tests/unit/test_volume_vacuum.c tests/unit/tap.h
tests_unit_test_volume_vacuum_LDADD = $(VOLUME_UNIT_LDADD) -lpthread
tests_unit_test_volume_large_SOURCES = tests/unit/test_volume_large.c tests/unit/tap.h
tests_unit_test_volume_large_LDADD = $(VOLUME_UNIT_LDADD)
tests_unit_test_ec_SOURCES = tests/unit/test_ec.c tests/unit/tap.h
tests_unit_test_ec_LDADD = $(VOLUME_UNIT_LDADD) -lpthread

# RS(10,4) figures: isa-l's raw rate, a volume's encode and reconstruction, a plain copy.
noinst_PROGRAMS += tests/bench/ec_encode
tests_bench_ec_encode_SOURCES = tests/bench/ec_encode.c
tests_bench_ec_encode_LDADD = $(VOLUME_UNIT_LDADD) -lpthread

if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_needle tests/fuzz/fuzz_idx tests/fuzz/fuzz_needle_raw \
	tests/fuzz/fuzz_ec_vif
tests_fuzz_fuzz_ec_vif_SOURCES = tests/fuzz/fuzz_ec_vif.c
tests_fuzz_fuzz_ec_vif_LDADD = server/volume/libvolume.a $(FUZZ_LDADD)
tests_fuzz_fuzz_ec_vif_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
tests_fuzz_fuzz_needle_SOURCES = tests/fuzz/fuzz_needle.c
tests_fuzz_fuzz_needle_LDADD = server/volume/libvolume.a $(FUZZ_LDADD)
tests_fuzz_fuzz_needle_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
tests_fuzz_fuzz_idx_SOURCES = tests/fuzz/fuzz_idx.c
tests_fuzz_fuzz_idx_LDADD = server/volume/libvolume.a $(FUZZ_LDADD)
tests_fuzz_fuzz_idx_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
tests_fuzz_fuzz_needle_raw_SOURCES = tests/fuzz/fuzz_needle_raw.c
tests_fuzz_fuzz_needle_raw_LDADD = server/volume/libvolume.a $(FUZZ_LDADD)
tests_fuzz_fuzz_needle_raw_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
