/*
 * Internals shared by the shell's files: the session, the command table, the
 * per-command flag parser and the HTTP helpers. Single-threaded except for the
 * lock's renewal thread (lock.c), which touches only the lease fields.
 */
#ifndef WEEDFS_SHELL_INT_H
#define WEEDFS_SHELL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "jtree.h"

struct shell_lock; /* lock.c */

struct shell_env {
	const char *master; /* host:port, borrowed from argv */
	const char *filer;  /* host:port, borrowed from argv */
	char *cwd;          /* fs.cd's directory, owned; "/" to start */
	struct shell_lock *lock;
};

/* A command's flags: the parser fills ptr, which holds the default. */
enum shell_flag_type {
	SF_STRING, /* const char ** (borrows the argument) */
	SF_U32,    /* uint32_t *; set is true after a value was given */
	SF_DOUBLE, /* double * */
	SF_BOOL,   /* bool *; "-x" or "-x=false" */
};

struct shell_flag {
	const char *name;
	enum shell_flag_type type;
	void *ptr;
	const char *help;
	bool *set; /* optional: true once the flag was given */
};

struct shell_cmd {
	const char *name;
	/* Runs the command; argv[0] is the command's name. 0 on success. */
	int (*run)(struct shell_env *env, int argc, char **argv);
	const char *summary;
	const char *usage; /* the flags and arguments, for `help NAME` */
	bool changes;      /* needs the admin lock unless -n */
};

/* The tables of each group (NULL-name terminated), joined by cmd_table.c. */
extern const struct shell_cmd shell_cmds_cluster[];
extern const struct shell_cmd shell_cmds_volume[];
extern const struct shell_cmd shell_cmds_fs[];
extern const struct shell_cmd shell_cmds_lock[];
extern const struct shell_cmd shell_cmds_repair[];
extern const struct shell_cmd shell_cmds_ec[];

/* The command called name, or NULL. */
const struct shell_cmd *shell_cmd_find(const char *name);
/* Runs one command line (already split into words). 0 on success. */
int shell_run_words(struct shell_env *env, int argc, char **argv);
/*
 * Splits line into words (whitespace separated, '...' and "..." quote, \ escapes).
 * Returns the count and an owned NULL-terminated array (free with shell_words_free),
 * or -1 with a message on stderr for an unterminated quote.
 */
int shell_split(const char *line, char ***words);
void shell_words_free(char **words);

/*
 * Parses argv[1..argc) against flags (Go style: -name=value, -name value, -bool);
 * parsing stops at the first word that is not a flag, whose index goes to *npos.
 * Returns 0, or -1 after printing "CMD: message" to stderr (unknown flag, missing
 * or malformed value). "-h" prints the command's help and returns 1.
 */
int shell_parse_flags(const struct shell_cmd *cmd, const struct shell_flag *flags,
		      size_t nflags, int argc, char **argv, int *npos);
/* The same for a command that takes no positional argument (refused with a message). */
int shell_parse_all(const char *name, const struct shell_flag *flags, size_t nflags, int argc,
		    char **argv);
/* For commands without flags or arguments. */
#define shell_no_args(name, argc, argv) shell_parse_all(name, NULL, 0, argc, argv)
/* Prints "CMD: message" to stderr and returns 1 (for `return shell_fail(...)`). */
int shell_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * HTTP to host (host:port). pathq is the path and query, already escaped. On a 2xx
 * answer returns 0 and, when out is non-NULL, the parsed JSON (NULL for an empty
 * body). Otherwise -1 with a message in msg: the peer's "error" text when it sent
 * one. *status (when non-NULL) gets the HTTP status, 0 when nothing answered.
 */
int shell_http(const char *method, const char *host, const char *pathq, const char *body,
	       jt **out, int *status, char *msg, size_t msglen);
/* The same with a timeout of its own (shell_http allows minutes: a vacuum). */
int shell_http_timeout(const char *method, const char *host, const char *pathq,
		       const char *body, long timeout_ms, jt **out, int *status, char *msg,
		       size_t msglen);
/* GET shorthand. */
int shell_get(const char *host, const char *pathq, jt **out, char *msg, size_t msglen);
/* Percent-encodes s for a query value or a path (keeping '/'); caller frees. */
char *shell_escape(const char *s, bool keep_slash);

/* One replica of a volume, as the master's /vol/status reports it. */
struct shell_replica {
	char dc[64], rack[64], node[128];
	uint32_t id;
	const jt *v; /* the volume's object in the /vol/status tree */
};
/*
 * Every replica the master knows, from GET /vol/status (*status_out keeps the tree,
 * which the replicas point into; free it with jt_free). -1 with a message.
 */
int shell_replicas(struct shell_env *env, jt **status_out, struct shell_replica **reps,
		   size_t *n, char *msg, size_t msglen);

/* A volume server, as the master's /dir/status lists it. */
struct shell_node {
	const char *dc, *rack, *url; /* borrowed from the /dir/status tree */
	int64_t volumes, max, free;
	const jt *ec; /* its "EcShards": [{Id, Collection, Shards}] */
};
/* Every live volume server (tree in *status_out, freed with jt_free). -1 with a message. */
int shell_nodes(struct shell_env *env, jt **status_out, struct shell_node **nodes, size_t *n,
		char *msg, size_t msglen);

/* POST pathq to a volume server; 0, or 1 after printing "CMD: node: why" (cmd_volume.c). */
int shell_admin_post(const char *cmd, const char *node, const char *pathq);

/* Calls fn for each entry of the filer directory dir, page by page (cmd_fs.c); a non-zero
 * return from fn stops and is returned. -1 with msg when the filer failed. */
typedef int (*shell_entry_fn)(struct shell_env *env, const jt *e, void *arg);
int shell_fs_each(struct shell_env *env, const char *dir, shell_entry_fn fn, void *arg,
		  char *msg, size_t msglen);

/* Lock state (lock.c). True while this shell holds the admin lease. */
bool shell_lock_held(struct shell_env *env);
/* 0 when dry or the lock is held; else prints why cmd refuses and returns 1. */
int shell_need_lock(struct shell_env *env, const char *cmd, bool dry);
/* Releases a held lease (at exit). */
void shell_lock_drop(struct shell_env *env);

#endif
