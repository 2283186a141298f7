# mount/local.mk: weedfs-mount, the FUSE client (docs/mount.md).
# Everything but main.c goes into mount/libmount.a, which the unit tests link too.
noinst_LIBRARIES += mount/libmount.a
mount_libmount_a_SOURCES = \
	mount/inode_table.c mount/inode_table.h \
	mount/fuse_ops.c mount/fuse_ops.h mount/fuse_ops_int.h \
	mount/fuse_names.c mount/fuse_data.c mount/fuse_attrs.c \
	mount/fuse_locks.c mount/fuse_locks.h \
	mount/meta_follower.c mount/meta_follower.h \
	mount/file_data.c mount/file_data.h mount/file_data_int.h \
	mount/file_data_write.c mount/file_data_upload.c mount/file_data_commit.c \
	mount/file_data_read.c mount/mount_data.c \
	mount/chunk_cache.c mount/chunk_cache.h \
	mount/buf_pool.c mount/buf_pool.h
mount_libmount_a_CFLAGS = $(AM_CFLAGS) $(FUSE3_CFLAGS)
MOUNT_LDADD = mount/libmount.a client/libclient.a lib/libweedfs.a \
	$(FUSE3_LIBS) $(WEEDFS_DEP_LIBS) -lpthread

bin_PROGRAMS += weedfs-mount
weedfs_mount_SOURCES = mount/main.c
weedfs_mount_CFLAGS = $(AM_CFLAGS) $(FUSE3_CFLAGS)
weedfs_mount_LDADD = $(MOUNT_LDADD)

# Unit tests. filer_rpc and file_data also talk to a real filer when WEEDFS_TEST_FILER
# is set (tests/integration/test_mount_data.py runs them so).
check_PROGRAMS += tests/unit/test_chunk_cache tests/unit/test_mount_filer_rpc \
	tests/unit/test_mount_file_data tests/unit/test_mount_inode_table
TESTS += tests/unit/test_chunk_cache tests/unit/test_mount_filer_rpc \
	tests/unit/test_mount_file_data tests/unit/test_mount_inode_table
tests_unit_test_chunk_cache_SOURCES = tests/unit/test_chunk_cache.c tests/unit/tap.h
tests_unit_test_chunk_cache_LDADD = $(MOUNT_LDADD)
tests_unit_test_mount_filer_rpc_SOURCES = tests/unit/test_mount_filer_rpc.c tests/unit/tap.h
tests_unit_test_mount_filer_rpc_LDADD = $(MOUNT_LDADD)
tests_unit_test_mount_file_data_SOURCES = tests/unit/test_mount_file_data.c tests/unit/tap.h
tests_unit_test_mount_file_data_LDADD = $(MOUNT_LDADD)
tests_unit_test_mount_inode_table_SOURCES = tests/unit/test_mount_inode_table.c tests/unit/tap.h
tests_unit_test_mount_inode_table_LDADD = $(MOUNT_LDADD)

# The chunk cache's micro-benchmark and fuzz target (cache files are read from disk).
noinst_PROGRAMS += tests/bench/chunk_cache
tests_bench_chunk_cache_SOURCES = tests/bench/chunk_cache.c
tests_bench_chunk_cache_LDADD = $(MOUNT_LDADD)
# The inode table's operation rates on a million-file tree.
noinst_PROGRAMS += tests/bench/inode_table
tests_bench_inode_table_SOURCES = tests/bench/inode_table.c
tests_bench_inode_table_LDADD = $(MOUNT_LDADD)
if ENABLE_FUZZ
noinst_PROGRAMS += tests/fuzz/fuzz_chunk_cache
tests_fuzz_fuzz_chunk_cache_SOURCES = tests/fuzz/fuzz_chunk_cache.c
tests_fuzz_fuzz_chunk_cache_LDADD = $(MOUNT_LDADD) $(FUZZ_LDADD)
tests_fuzz_fuzz_chunk_cache_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
endif

# mount(8) helper for `mount -t fuse.weedfs` and /etc/fstab (docs/mount.md). mount(8) looks
# for helpers in /sbin only: `make install mounthelperdir=/sbin` with a /usr/local prefix.
mounthelperdir = $(sbindir)
EXTRA_DIST += mount/mount.weedfs
install-exec-hook: install-mount-helper
uninstall-hook: uninstall-mount-helper
install-mount-helper:
	$(MKDIR_P) $(DESTDIR)$(mounthelperdir)
	sed 's|^bindir=.*|bindir=$(bindir) # set by make install|' $(srcdir)/mount/mount.weedfs \
		>$(DESTDIR)$(mounthelperdir)/mount.fuse.weedfs
	chmod 755 $(DESTDIR)$(mounthelperdir)/mount.fuse.weedfs
	ln -sf mount.fuse.weedfs $(DESTDIR)$(mounthelperdir)/mount.weedfs
uninstall-mount-helper:
	rm -f $(DESTDIR)$(mounthelperdir)/mount.fuse.weedfs $(DESTDIR)$(mounthelperdir)/mount.weedfs
.PHONY: install-mount-helper uninstall-mount-helper
