noinst_LIBRARIES += server/master/libmaster.a
server_master_libmaster_a_SOURCES = server/master/placeholder.c
