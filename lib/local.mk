noinst_LIBRARIES += lib/libweedfs.a
lib_libweedfs_a_SOURCES = \
	lib/base64.c lib/base64.h \
	lib/bigbuf.c lib/bigbuf.h \
	lib/buf.c lib/buf.h \
	lib/crc32c.c lib/crc32c.h \
	lib/daemon.c lib/daemon.h \
	lib/err.c lib/err.h \
	lib/flags.c lib/flags.h \
	lib/hashmap.c lib/hashmap.h \
	lib/http_client.c lib/http_client.h \
	lib/http_loop_client.c lib/http_loop_client.h \
	lib/http_fetch.c lib/http_fetch.h \
	lib/http_parse.c lib/http_parse.h \
	lib/http_response_parser.c lib/http_response_parser.h \
	lib/http_server.c lib/http_server.h \
	lib/http_util.c lib/http_util.h \
	lib/json.c lib/json.h \
	lib/jwt.c lib/jwt.h \
	lib/jtree.c lib/jtree.h \
	lib/log.c lib/log.h \
	lib/metrics.c lib/metrics.h \
	lib/md5.c lib/md5.h lib/md5_rounds.h lib/md5_x8.c lib/md5_x8.h \
	lib/pool.c lib/pool.h \
	lib/sc_wire.c lib/sc_wire.h \
	lib/security.c lib/security.h \
	lib/utf8.c lib/utf8.h \
	lib/util.c lib/util.h

# The short-circuit wire format and descriptor passing.
check_PROGRAMS += tests/unit/test_sc_wire
TESTS += tests/unit/test_sc_wire
tests_unit_test_sc_wire_SOURCES = tests/unit/test_sc_wire.c tests/unit/tap.h
tests_unit_test_sc_wire_LDADD = $(UNIT_LDADD)

# The metrics registry and its exposition format.
check_PROGRAMS += tests/unit/test_metrics
TESTS += tests/unit/test_metrics
tests_unit_test_metrics_SOURCES = tests/unit/test_metrics.c tests/unit/tap.h
tests_unit_test_metrics_LDADD = $(UNIT_LDADD)

# The hash table.
check_PROGRAMS += tests/unit/test_hashmap
TESTS += tests/unit/test_hashmap
tests_unit_test_hashmap_SOURCES = tests/unit/test_hashmap.c tests/unit/tap.h
tests_unit_test_hashmap_LDADD = $(UNIT_LDADD)

# HTTP layer tests (the echo server is also the wrk benchmark target).
check_PROGRAMS += tests/unit/test_http_util tests/unit/test_http_server tests/unit/http_echo_server
TESTS += tests/unit/test_http_util tests/unit/test_http_server
tests_unit_test_http_util_SOURCES = tests/unit/test_http_util.c tests/unit/tap.h
tests_unit_test_http_util_LDADD = $(UNIT_LDADD)
tests_unit_test_http_server_SOURCES = tests/unit/test_http_server.c tests/unit/tap.h
tests_unit_test_http_server_LDADD = $(UNIT_LDADD)
tests_unit_http_echo_server_SOURCES = tests/unit/http_echo_server.c
tests_unit_http_echo_server_LDADD = $(UNIT_LDADD)

# Client-side response parsing (used by weedfs benchmark).
check_PROGRAMS += tests/unit/test_http_response_parser
TESTS += tests/unit/test_http_response_parser
tests_unit_test_http_response_parser_SOURCES = tests/unit/test_http_response_parser.c \
	tests/unit/tap.h
tests_unit_test_http_response_parser_LDADD = $(UNIT_LDADD)

if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_http_request tests/fuzz/fuzz_multipart tests/fuzz/fuzz_range
tests_fuzz_fuzz_http_request_SOURCES = tests/fuzz/fuzz_http_request.c
tests_fuzz_fuzz_http_request_LDADD = $(FUZZ_LDADD)
tests_fuzz_fuzz_http_request_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
tests_fuzz_fuzz_multipart_SOURCES = tests/fuzz/fuzz_multipart.c
tests_fuzz_fuzz_multipart_LDADD = $(FUZZ_LDADD)
tests_fuzz_fuzz_multipart_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
tests_fuzz_fuzz_range_SOURCES = tests/fuzz/fuzz_range.c
tests_fuzz_fuzz_range_LDADD = $(FUZZ_LDADD)
tests_fuzz_fuzz_range_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
noinst_PROGRAMS += tests/fuzz/fuzz_http_response
tests_fuzz_fuzz_http_response_SOURCES = tests/fuzz/fuzz_http_response.c
tests_fuzz_fuzz_http_response_LDADD = $(FUZZ_LDADD)
tests_fuzz_fuzz_http_response_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif

# The large-buffer stash.
check_PROGRAMS += tests/unit/test_bigbuf
TESTS += tests/unit/test_bigbuf
tests_unit_test_bigbuf_SOURCES = tests/unit/test_bigbuf.c tests/unit/tap.h
tests_unit_test_bigbuf_LDADD = $(UNIT_LDADD)

# The event-loop client (the gateway's filer lookups).
check_PROGRAMS += tests/unit/test_http_fetch
TESTS += tests/unit/test_http_fetch
tests_unit_test_http_fetch_SOURCES = tests/unit/test_http_fetch.c tests/unit/http_peer.h \
	tests/unit/tap.h
tests_unit_test_http_fetch_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/test_http_loop_client
TESTS += tests/unit/test_http_loop_client
tests_unit_test_http_loop_client_SOURCES = tests/unit/test_http_loop_client.c \
	tests/unit/http_peer.h tests/unit/tap.h
tests_unit_test_http_loop_client_LDADD = $(UNIT_LDADD)

# MD5 and its hashing groups.
check_PROGRAMS += tests/unit/test_md5
TESTS += tests/unit/test_md5
tests_unit_test_md5_SOURCES = tests/unit/test_md5.c tests/unit/tap.h
tests_unit_test_md5_LDADD = $(UNIT_LDADD)

# The mutable JSON tree.
check_PROGRAMS += tests/unit/test_jtree
TESTS += tests/unit/test_jtree
tests_unit_test_jtree_SOURCES = tests/unit/test_jtree.c tests/unit/tap.h
tests_unit_test_jtree_LDADD = $(UNIT_LDADD)

# The security file.
check_PROGRAMS += tests/unit/test_security
TESTS += tests/unit/test_security
tests_unit_test_security_SOURCES = tests/unit/test_security.c tests/unit/tap.h
tests_unit_test_security_LDADD = $(UNIT_LDADD)

if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_security_conf
tests_fuzz_fuzz_security_conf_SOURCES = tests/fuzz/fuzz_security_conf.c
tests_fuzz_fuzz_security_conf_LDADD = $(FUZZ_LDADD)
tests_fuzz_fuzz_security_conf_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif

# JSON Web Tokens and base64url.
check_PROGRAMS += tests/unit/test_jwt
TESTS += tests/unit/test_jwt
tests_unit_test_jwt_SOURCES = tests/unit/test_jwt.c tests/unit/tap.h
tests_unit_test_jwt_LDADD = $(UNIT_LDADD)

if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_jwt
tests_fuzz_fuzz_jwt_SOURCES = tests/fuzz/fuzz_jwt.c
tests_fuzz_fuzz_jwt_LDADD = $(FUZZ_LDADD)
tests_fuzz_fuzz_jwt_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif
