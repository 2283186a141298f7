noinst_LIBRARIES += lib/libweedfs.a
lib_libweedfs_a_SOURCES = \
	lib/buf.c lib/buf.h \
	lib/crc32c.c lib/crc32c.h \
	lib/err.c lib/err.h \
	lib/flags.c lib/flags.h \
	lib/http_client.c lib/http_client.h \
	lib/http_server.c lib/http_server.h \
	lib/http_util.c lib/http_util.h \
	lib/json.c lib/json.h \
	lib/log.c lib/log.h \
	lib/pool.c lib/pool.h \
	lib/util.c lib/util.h
