# s3/bench.mk: the S3 load generator (tests/bench/s3_load.c), written by the benchmark.
# Built by `make tests/bench/s3_load` (and by `make`, like tests/bench/filer_store);
# tests/bench/s3.sh runs it.
noinst_PROGRAMS += tests/bench/s3_load
tests_bench_s3_load_SOURCES = tests/bench/s3_load.c tests/bench/load_stats.h
tests_bench_s3_load_LDADD = s3/libs3.a $(UNIT_LDADD)

# The catalogs' load generator (tests/bench/catalog_load.c): tests/bench/catalog.sh runs it
# against the Iceberg REST catalog, tests/bench/lance.sh against the Lance Namespace one.
noinst_PROGRAMS += tests/bench/catalog_load
tests_bench_catalog_load_SOURCES = tests/bench/catalog_load.c tests/bench/load_stats.h
tests_bench_catalog_load_LDADD = $(UNIT_LDADD)

# MD5's rate (tests/bench/md5_rate.c): OpenSSL's, and weedfs's with and without its AVX2 lanes.
noinst_PROGRAMS += tests/bench/md5_rate
tests_bench_md5_rate_SOURCES = tests/bench/md5_rate.c
tests_bench_md5_rate_LDADD = $(UNIT_LDADD)

# One loopback TCP hop's rate (tests/bench/tcp_hop.c): what two hops per byte leave of a
# large transfer through the gateway on one machine.
noinst_PROGRAMS += tests/bench/tcp_hop
tests_bench_tcp_hop_SOURCES = tests/bench/tcp_hop.c
tests_bench_tcp_hop_LDADD = -lpthread
