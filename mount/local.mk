# mount/local.mk: weedfs-mount, the FUSE client (docs/mount.md).
# M1: core (main, inode table, filer entry calls, FUSE operations, event follower).
# M2 adds filer_rpc and file_data, M3 chunk_cache, each with a small edit here.
bin_PROGRAMS += weedfs-mount
weedfs_mount_SOURCES = \
	mount/main.c \
	mount/inode_table.c mount/inode_table.h \
	mount/filer_meta.c mount/filer_meta.h \
	mount/fuse_ops.c mount/fuse_ops.h \
	mount/meta_follower.c mount/meta_follower.h \
	mount/filer_rpc.c mount/filer_rpc.h mount/file_data.c mount/file_data.h mount/chunk_cache.c mount/chunk_cache.h
weedfs_mount_CFLAGS = $(AM_CFLAGS) $(FUSE3_CFLAGS)
weedfs_mount_LDADD = filer/libfiler.a server/libcommon.a lib/libweedfs.a $(FUSE3_LIBS) $(WEEDFS_DEP_LIBS) \
	$(SQLITE_LIBS) $(LIBPQ_LIBS) -lpthread

# M3: the chunk cache (mount/chunk_cache.c is in weedfs_mount_SOURCES above); its unit
# test, micro-benchmark and fuzz target compile the source directly.
check_PROGRAMS += tests/unit/test_chunk_cache
TESTS += tests/unit/test_chunk_cache
tests_unit_test_chunk_cache_SOURCES = tests/unit/test_chunk_cache.c tests/unit/tap.h \
	mount/chunk_cache.c mount/chunk_cache.h
tests_unit_test_chunk_cache_LDADD = $(UNIT_LDADD) -lpthread
noinst_PROGRAMS += tests/bench/chunk_cache
tests_bench_chunk_cache_SOURCES = tests/bench/chunk_cache.c mount/chunk_cache.c \
	mount/chunk_cache.h
tests_bench_chunk_cache_LDADD = $(UNIT_LDADD) -lpthread
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_chunk_cache
tests_fuzz_fuzz_chunk_cache_SOURCES = tests/fuzz/fuzz_chunk_cache.c mount/chunk_cache.c \
	mount/chunk_cache.h
tests_fuzz_fuzz_chunk_cache_LDADD = $(FUZZ_LDADD) -lpthread
tests_fuzz_fuzz_chunk_cache_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif

# M2: the data path (filer_rpc, file_data, in weedfs_mount_SOURCES above). The tests talk
# to a real filer when WEEDFS_TEST_FILER is set (tests/integration/test_mount_data.py).
check_PROGRAMS += tests/unit/test_mount_filer_rpc
TESTS += tests/unit/test_mount_filer_rpc
tests_unit_test_mount_filer_rpc_SOURCES = tests/unit/test_mount_filer_rpc.c tests/unit/tap.h \
	mount/filer_rpc.c mount/filer_rpc.h
tests_unit_test_mount_filer_rpc_LDADD = $(UNIT_LDADD) -lpthread
check_PROGRAMS += tests/unit/test_mount_file_data
TESTS += tests/unit/test_mount_file_data
tests_unit_test_mount_file_data_SOURCES = tests/unit/test_mount_file_data.c tests/unit/tap.h \
	mount/file_data.c mount/file_data.h mount/filer_rpc.c mount/filer_rpc.h \
	mount/chunk_cache.c mount/chunk_cache.h
tests_unit_test_mount_file_data_LDADD = filer/libfiler.a $(UNIT_LDADD) -lpthread

# M1: the inode table (numbering, names, hard links, forget, rename).
check_PROGRAMS += tests/unit/test_mount_inode_table
TESTS += tests/unit/test_mount_inode_table
tests_unit_test_mount_inode_table_SOURCES = tests/unit/test_mount_inode_table.c tests/unit/tap.h \
	mount/inode_table.c mount/inode_table.h
tests_unit_test_mount_inode_table_LDADD = filer/libfiler.a $(UNIT_LDADD) -lpthread
