/* fs.cd, fs.pwd, fs.ls, fs.du, fs.tree, fs.meta.cat over the filer's JSON API. */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "buf.h"
#include "json.h"
#include "shell/shell_int.h"
#include "util.h"

#define LIST_PAGE 1000

/* cwd joined with arg, with "." and ".." resolved; owned. */
static char *fs_resolve(const char *cwd, const char *arg)
{
	char *joined = arg && arg[0] == '/' ? xstrdup(arg)
					    : xasprintf("%s/%s", cwd, arg ? arg : "");
	buf out = BUF_INIT;
	char *save = NULL;

	for (char *part = strtok_r(joined, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
		if (!strcmp(part, "."))
			continue;
		if (!strcmp(part, "..")) {
			char *slash = out.len ? strrchr(out.data, '/') : NULL;
			if (slash) {
				out.len = (size_t)(slash - out.data);
				out.data[out.len] = 0;
			}
			continue;
		}
		buf_append_byte(&out, '/');
		buf_append_str(&out, part);
	}
	free(joined);
	if (!out.len)
		buf_append_byte(&out, '/');
	return buf_steal(&out, NULL);
}

/* POST /.api/v1/OP with {"KEY": path, extra...}; the answer in *out. */
static int fs_api(struct shell_env *env, const char *op, const char *path, const char *start,
		  jt **out, char *msg, size_t msglen)
{
	buf body = BUF_INIT;
	json_w *w = jw_new(&body, false);
	char *pq = xasprintf("/.api/v1/%s", op);
	int rc;

	jw_obj_begin(w);
	jw_kv_str(w, start ? "dir" : "path", path);
	if (start) {
		jw_kv_str(w, "startName", start);
		jw_kv_i64(w, "limit", LIST_PAGE);
	}
	jw_obj_end(w);
	jw_free(w);
	rc = shell_http("POST", env->filer, pq, body.data, out, NULL, msg, msglen);
	free(pq);
	buf_free(&body);
	return rc;
}

static int fs_lookup(struct shell_env *env, const char *path, jt **entry, char *msg,
		     size_t msglen)
{
	return fs_api(env, "lookup", path, NULL, entry, msg, msglen);
}

static bool entry_is_dir(const jt *e)
{
	bool d = false;
	jt_as_bool(jt_get(e, "isDirectory"), &d);
	return d;
}

static uint64_t entry_u64(const jt *e, const char *key)
{
	uint64_t x = 0;
	jt_as_u64(jt_get(e, key), &x);
	return x;
}

/* Calls fn for each entry of dir, page by page. Non-zero from fn stops. */
typedef int (*entry_fn)(struct shell_env *env, const jt *e, void *arg);

static int fs_each(struct shell_env *env, const char *dir, entry_fn fn, void *arg, char *msg,
		   size_t msglen)
{
	char *start = xstrdup("");
	int rc = 0;

	for (;;) {
		jt *page = NULL;
		const jt *es;
		bool more = false;
		if (fs_api(env, "list", dir, start, &page, msg, msglen)) {
			rc = -1;
			break;
		}
		es = jt_get(page, "entries");
		for (size_t i = 0; i < jt_len(es) && !rc; i++)
			rc = fn(env, jt_at(es, i), arg);
		jt_as_bool(jt_get(page, "more"), &more);
		free(start);
		start = xstrdup(jt_get_str(page, "lastName") ? jt_get_str(page, "lastName") : "");
		jt_free(page);
		if (rc || !more || !*start)
			break;
	}
	free(start);
	return rc;
}

int shell_fs_each(struct shell_env *env, const char *dir, shell_entry_fn fn, void *arg,
		  char *msg, size_t msglen)
{
	return fs_each(env, dir, fn, arg, msg, msglen);
}

/* Parses [-flags] [PATH] and looks PATH up; 0 with the entry and its path. */
static int fs_args(struct shell_env *env, const char *name, const struct shell_flag *flags,
		   size_t nflags, int argc, char **argv, char **path, jt **entry)
{
	char msg[512];
	int npos, rc = shell_parse_flags(shell_cmd_find(name), flags, nflags, argc, argv, &npos);

	*path = NULL;
	*entry = NULL;
	if (rc)
		return rc < 0 ? -1 : 1;
	if (argc - npos > 1)
	{
		shell_fail(name, "too many arguments (one PATH)");
		return -1;
	}
	*path = fs_resolve(env->cwd, npos < argc ? argv[npos] : ".");
	if (fs_lookup(env, *path, entry, msg, sizeof(msg))) {
		shell_fail(name, "%s: %s", *path, msg);
		free(*path);
		*path = NULL;
		return -1;
	}
	return 0;
}

/* ---- fs.pwd, fs.cd ---- */

static int fs_pwd(struct shell_env *env, int argc, char **argv)
{
	int rc = shell_no_args("fs.pwd", argc, argv);
	if (rc)
		return rc < 0;
	printf("%s\n", env->cwd);
	return 0;
}

static int fs_cd(struct shell_env *env, int argc, char **argv)
{
	char *path;
	jt *e;
	int rc = fs_args(env, "fs.cd", NULL, 0, argc, argv, &path, &e);

	if (rc)
		return rc < 0;
	if (!entry_is_dir(e)) {
		rc = shell_fail("fs.cd", "%s: not a directory", path);
	} else {
		free(env->cwd);
		env->cwd = path;
		path = NULL;
	}
	free(path);
	jt_free(e);
	return rc;
}

/* ---- fs.ls ---- */

static void mode_string(uint64_t mode, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";
	out[0] = S_ISDIR(mode) ? 'd' : S_ISLNK(mode) ? 'l' : '-';
	for (int i = 0; i < 9; i++)
		out[i + 1] = mode & (1u << (8 - i)) ? rwx[i] : '-';
	out[10] = 0;
}

static int ls_one(struct shell_env *env, const jt *e, void *arg)
{
	const bool *longf = arg;
	const char *name = jt_get_str(e, "name");

	(void)env;
	if (!name || !*name)
		name = jt_get_str(e, "fullPath") ? jt_get_str(e, "fullPath") : "?";
	if (*longf) {
		char mode[11], when[32] = "";
		time_t t = (time_t)(entry_u64(e, "mtimeNs") / 1000000000);
		struct tm tm;
		mode_string(entry_u64(e, "mode"), mode);
		if (gmtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
		printf("%s %3" PRIu64 " %5" PRIu64 " %5" PRIu64 " %10" PRIu64 " %s %s%s\n", mode,
		       entry_u64(e, "nlink"), entry_u64(e, "uid"), entry_u64(e, "gid"),
		       entry_u64(e, "size"), when, name, entry_is_dir(e) ? "/" : "");
	} else {
		printf("%s%s\n", name, entry_is_dir(e) ? "/" : "");
	}
	return 0;
}

static int fs_ls(struct shell_env *env, int argc, char **argv)
{
	bool longf = false;
	const struct shell_flag flags[] = {
		{"l", SF_BOOL, &longf, "long listing: mode, links, uid, gid, size, mtime", NULL},
	};
	char *path, msg[512];
	jt *e;
	int rc = fs_args(env, "fs.ls", flags, ARRAY_LEN(flags), argc, argv, &path, &e);

	if (rc)
		return rc < 0;
	if (!entry_is_dir(e))
		rc = ls_one(env, e, &longf);
	else if (fs_each(env, path, ls_one, &longf, msg, sizeof(msg)))
		rc = shell_fail("fs.ls", "%s: %s", path, msg);
	free(path);
	jt_free(e);
	return rc;
}

/* ---- fs.du ---- */

struct du_sum {
	uint64_t bytes, blocks, files, dirs;
	char *err; /* first error, owned */
};

static int du_walk(struct shell_env *env, const jt *e, void *arg)
{
	struct du_sum *s = arg;
	char msg[512];

	if (!entry_is_dir(e)) {
		s->bytes += entry_u64(e, "size");
		s->blocks += jt_len(jt_get(e, "chunks"));
		s->files++;
		return 0;
	}
	s->dirs++;
	if (fs_each(env, jt_get_str(e, "fullPath"), du_walk, s, msg, sizeof(msg)) && !s->err)
		s->err = xstrdup(msg);
	return s->err ? 1 : 0;
}

static int fs_du(struct shell_env *env, int argc, char **argv)
{
	struct du_sum s = {0};
	char *path;
	jt *e;
	int rc = fs_args(env, "fs.du", NULL, 0, argc, argv, &path, &e);

	if (rc)
		return rc < 0;
	jt_set(e, "fullPath", jt_str(path));
	du_walk(env, e, &s);
	if (s.err)
		rc = shell_fail("fs.du", "%s", s.err);
	else
		printf("block:%4" PRIu64 "\tbyte:%10" PRIu64 "\tfiles:%" PRIu64 "\tdirs:%" PRIu64
		       "\t%s\n",
		       s.blocks, s.bytes, s.files, s.dirs ? s.dirs - entry_is_dir(e) : 0, path);
	free(s.err);
	free(path);
	jt_free(e);
	return rc;
}

/* ---- fs.tree ---- */

struct tree_ctx {
	buf prefix;
	size_t dirs, files;
	jt *items; /* one directory's entries, collected to know the last one */
	char *err;
};

static int tree_collect(struct shell_env *env, const jt *e, void *arg)
{
	(void)env;
	jt_append(arg, jt_copy(e));
	return 0;
}

static void tree_dir(struct shell_env *env, struct tree_ctx *t, const char *dir)
{
	jt *items = jt_arr();
	char msg[512];

	if (fs_each(env, dir, tree_collect, items, msg, sizeof(msg)) && !t->err)
		t->err = xasprintf("%s: %s", dir, msg);
	for (size_t i = 0; i < jt_len(items) && !t->err; i++) {
		const jt *e = jt_at(items, i);
		bool last = i + 1 == jt_len(items);
		size_t keep = t->prefix.len;
		printf("%s%s %s\n", t->prefix.data ? t->prefix.data : "", last ? "└──" : "├──",
		       jt_get_str(e, "name") ? jt_get_str(e, "name") : "?");
		if (!entry_is_dir(e)) {
			t->files++;
			continue;
		}
		t->dirs++;
		buf_append_str(&t->prefix, last ? "    " : "│   ");
		tree_dir(env, t, jt_get_str(e, "fullPath"));
		t->prefix.len = keep;
		t->prefix.data[keep] = 0;
	}
	jt_free(items);
}

static int fs_tree(struct shell_env *env, int argc, char **argv)
{
	struct tree_ctx t = {0};
	char *path;
	jt *e;
	int rc = fs_args(env, "fs.tree", NULL, 0, argc, argv, &path, &e);

	if (rc)
		return rc < 0;
	printf("%s\n", path);
	if (entry_is_dir(e))
		tree_dir(env, &t, path);
	if (t.err)
		rc = shell_fail("fs.tree", "%s", t.err);
	else
		printf("\n%zu directories, %zu files\n", t.dirs, t.files);
	free(t.err);
	buf_free(&t.prefix);
	free(path);
	jt_free(e);
	return rc;
}

/* ---- fs.meta.cat ---- */

static int fs_meta_cat(struct shell_env *env, int argc, char **argv)
{
	buf out = BUF_INIT;
	char *path;
	jt *e;
	int rc = fs_args(env, "fs.meta.cat", NULL, 0, argc, argv, &path, &e);

	if (rc)
		return rc < 0;
	jt_to_buf(e, &out, true);
	printf("%s\n", out.data ? out.data : "");
	buf_free(&out);
	free(path);
	jt_free(e);
	return 0;
}

const struct shell_cmd shell_cmds_fs[] = {
	{"fs.cd", fs_cd, "change the current directory of the fs.* commands", "[PATH]", false},
	{"fs.pwd", fs_pwd, "print the current directory", "", false},
	{"fs.ls", fs_ls, "list a directory (or one file)", "[-l] [PATH]", false},
	{"fs.du", fs_du, "sum the bytes, chunks, files and directories under a path", "[PATH]",
	 false},
	{"fs.tree", fs_tree, "print the tree under a directory", "[PATH]", false},
	{"fs.meta.cat", fs_meta_cat, "print an entry's metadata as JSON", "PATH", false},
	{NULL, NULL, NULL, NULL, false},
};
