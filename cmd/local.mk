# cmd/local.mk: the weedfs binary, the glue on top of every layer: the subcommand table
# (main.c), `weedfs mini` (one process, every daemon) and `weedfs benchmark`;
# `weedfs shell` is shell/.
bin_PROGRAMS += weedfs
weedfs_SOURCES = \
	cmd/main.c \
	cmd/mini.c cmd/mini.h \
	cmd/s3_cmd.c cmd/s3_cmd.h \
	cmd/benchmark.c cmd/benchmark.h
weedfs_LDADD = shell/libshell.a catalog/libcatalog_api.a catalog/libcatalog.a s3/libs3.a filer/libfiler.a server/master/libmaster.a server/volume/libvolume.a \
	client/libclient.a server/libcommon.a lib/libweedfs.a $(WEEDFS_DEP_LIBS) $(SQLITE_LIBS) \
	$(LIBPQ_LIBS) $(EXPAT_LIBS) $(LIBEDIT_LIBS)
