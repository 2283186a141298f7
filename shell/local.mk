# weedfs shell: the operator's console (REPL, command table, HTTP calls, one file per
# command group), linked into the weedfs binary (cmd/local.mk).
noinst_LIBRARIES += shell/libshell.a
shell_libshell_a_CFLAGS = $(AM_CFLAGS) $(LIBEDIT_CFLAGS)
shell_libshell_a_SOURCES = \
	shell/shell.h shell/shell_int.h \
	shell/repl.c \
	shell/command.c \
	shell/http.c \
	shell/lock.c \
	shell/cmd_cluster.c \
	shell/cmd_volume.c \
	shell/cmd_repair.c \
	shell/cmd_ec.c \
	shell/cmd_fs.c
