noinst_LIBRARIES += server/volume/libvolume.a
server_volume_libvolume_a_SOURCES = server/volume/placeholder.c
