# The master: topology, placement, file-key sequence, volume growth, HTTP API.
noinst_LIBRARIES += server/master/libmaster.a
server_master_libmaster_a_SOURCES = \
	server/master/admin.c server/master/repair.c \
	server/master/admin_lock.c server/master/admin_lock.h \
	server/master/assign.c \
	server/master/forward.c \
	server/master/growth.c server/master/growth.h \
	server/master/leader.c server/master/leader.h \
	server/master/master_pg.c server/master/master_pg.h \
	server/master/master.c server/master/master.h server/master/master_int.h \
	server/master/parse.c server/master/parse.h \
	server/master/placement.c server/master/placement.h \
	server/master/sequence.c server/master/sequence.h server/master/sequence_int.h \
	server/master/sequence_pg.c \
	server/master/topology.c server/master/topology.h

check_PROGRAMS += tests/unit/test_master_sequence tests/unit/test_master_placement \
	tests/unit/test_master_topology tests/unit/test_master_http tests/unit/test_master_list
TESTS += tests/unit/test_master_sequence tests/unit/test_master_placement \
	tests/unit/test_master_topology tests/unit/test_master_http tests/unit/test_master_list
tests_unit_test_master_list_SOURCES = tests/unit/test_master_list.c tests/unit/tap.h
tests_unit_test_master_list_LDADD = $(UNIT_LDADD)
tests_unit_test_master_sequence_SOURCES = tests/unit/test_master_sequence.c tests/unit/tap.h
tests_unit_test_master_sequence_LDADD = server/master/libmaster.a $(UNIT_LDADD) $(LIBPQ_LIBS)
tests_unit_test_master_placement_SOURCES = tests/unit/test_master_placement.c tests/unit/tap.h
tests_unit_test_master_placement_LDADD = server/master/libmaster.a $(UNIT_LDADD) $(LIBPQ_LIBS)
tests_unit_test_master_topology_SOURCES = tests/unit/test_master_topology.c tests/unit/tap.h
tests_unit_test_master_topology_LDADD = server/master/libmaster.a $(UNIT_LDADD) $(LIBPQ_LIBS)
tests_unit_test_master_http_SOURCES = tests/unit/test_master_http.c tests/unit/tap.h
tests_unit_test_master_http_LDADD = server/master/libmaster.a $(UNIT_LDADD) $(LIBPQ_LIBS)

if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_master_parse
tests_fuzz_fuzz_master_parse_SOURCES = tests/fuzz/fuzz_master_parse.c
tests_fuzz_fuzz_master_parse_LDADD = server/master/libmaster.a $(FUZZ_LDADD)
tests_fuzz_fuzz_master_parse_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
