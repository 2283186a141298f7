# Code shared by the master and the volume server, and the weedfs binary itself.
noinst_LIBRARIES += server/libcommon.a
server_libcommon_a_SOURCES = \
	server/common/fid.c server/common/fid.h \
	server/common/placement.c server/common/placement.h

bin_PROGRAMS += weedfs
weedfs_SOURCES = \
	server/main.c \
	server/mini.c server/mini.h \
	server/benchmark.c server/benchmark.h
weedfs_LDADD = s3/libs3.a client/libclient.a filer/libfiler.a server/master/libmaster.a server/volume/libvolume.a \
	server/libcommon.a lib/libweedfs.a $(WEEDFS_DEP_LIBS) $(SQLITE_LIBS) $(LIBPQ_LIBS) \
	$(EXPAT_LIBS)
