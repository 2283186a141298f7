# The blob store: replica placement shared by the master and the volume server
# (server/master/local.mk and server/volume/local.mk build the two daemons).
noinst_LIBRARIES += server/libcommon.a
server_libcommon_a_SOURCES = \
	server/common/placement.c server/common/placement.h \
	server/common/replica_sync.c server/common/replica_sync.h
