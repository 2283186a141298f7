/*
 * The filer daemon in-process: path rules, and the HTTP API's metadata paths
 * (mkdir, inline files, listing, move, delete, bad input) over a SQLite store
 * in a temp dir. Inline content needs no volume server, so no master runs.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "filer/filer.h"
#include "filer/filer_int.h"
#include "filer/store.h"
#include "http_client.h"
#include "tap.h"
#include "util.h"

static void test_normalize(void)
{
	static const struct {
		const char *in, *out;
		bool trailing;
	} good[] = {
		{"/", "/", true},
		{"/a", "/a", false},
		{"/a/", "/a", true},
		{"//a///b//", "/a/b", true},
		{"/a/..b", "/a/..b", false},
	};
	static const char *const bad[] = {"", "a", "/a/../b", "/..", "/a/./b", "/.", "/a/."};
	char *out, longname[300];
	bool t;

	for (size_t i = 0; i < ARRAY_LEN(good); i++) {
		wfs_err err = filer_path_normalize(good[i].in, &out, &t);
		is_int(err, WFS_OK, good[i].in);
		if (!err) {
			is_str(out, good[i].out, good[i].in);
			ok(t == good[i].trailing, "trailing slash of %s", good[i].in);
			free(out);
		}
	}
	for (size_t i = 0; i < ARRAY_LEN(bad); i++)
		is_int(filer_path_normalize(bad[i], &out, &t), WFS_EINVAL, bad[i]);
	longname[0] = '/';
	memset(longname + 1, 'n', 256);
	longname[257] = '\0';
	is_int(filer_path_normalize(longname, &out, &t), WFS_EINVAL, "256-byte name");
	longname[256] = '\0';
	ok(filer_path_normalize(longname, &out, &t) == WFS_OK, "255-byte name");
	free(out);
}

static int req(const char *method, int port, const char *target, const char *body, buf *out)
{
	struct http_result r;
	char url[512];
	int status;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, target);
	http_result_init(&r);
	if (http_request(method, url, NULL, body, body ? strlen(body) : 0, 10000, &r)) {
		http_result_free(&r);
		return -1;
	}
	status = r.status;
	if (out) {
		buf_reset(out);
		buf_append(out, r.body.data ? r.body.data : "", r.body.len);
	}
	http_result_free(&r);
	return status;
}

struct seen {
	buf log; /* one "old>new" line per event, "-" for a missing side */
};

static bool on_event(void *ctx, struct filer_event *ev)
{
	struct seen *sn = ctx;
	char *o = ev->old_entry ? filer_entry_full_path(ev->old_entry) : xstrdup("-");
	char *n = ev->new_entry ? filer_entry_full_path(ev->new_entry) : xstrdup("-");
	buf_printf(&sn->log, "%s>%s\n", o, n);
	free(o);
	free(n);
	filer_event_free(ev);
	return true;
}

/* Every mutation above left its event in the store's log, in order. */
static void check_events(const char *dir)
{
	char *dsn = xasprintf("sqlite://%s/filer.db", dir);
	struct filer_store *s = NULL;
	struct seen sn = {BUF_INIT};
	int64_t next = 0;
	static const char *const want[] = {
		"->/a\n",  "->/a/b\n", "->/a/b/f.txt\n", "->/c\n", "/a/b/f.txt>/c/g.txt\n",
		"/c>/z\n", "/a/b>-\n", "/a>-\n",
	};
	const char *p;

	ok(filer_store_open(dsn, &s) == WFS_OK, "reopen the store");
	if (s) {
		is_int(filer_store_read_events(s, 0, NULL, 0, 1000, on_event, &sn, &next), WFS_OK,
		       "read events");
		p = sn.log.data ? sn.log.data : "";
		for (size_t i = 0; i < ARRAY_LEN(want); i++) {
			const char *at = strstr(p, want[i]);
			ok(at != NULL, "event %.*s in order", (int)strlen(want[i]) - 1, want[i]);
			if (at)
				p = at + strlen(want[i]);
		}
		filer_store_close(s);
	}
	buf_free(&sn.log);
	free(dsn);
}

static void test_daemon(void)
{
	char dir[] = "/tmp/weedfs-filer-test.XXXXXX";
	struct filer_opts o;
	struct filer *f;
	buf b = BUF_INIT;
	wfs_err err;
	int p;

	ok(mkdtemp(dir) != NULL, "temp dir");
	filer_opts_default(&o);
	o.port = 0;
	o.dir = dir;
	o.master = "127.0.0.1:1"; /* never asked: everything here is inline */
	o.threads = 2;
	f = filer_start(&o, &err);
	ok(f != NULL, "filer starts");
	if (!f)
		return;
	p = filer_port(f);
	is_int(req("GET", p, "/healthz", NULL, NULL), 200, "healthz");
	is_int(req("POST", p, "/a/b/", NULL, NULL), 201, "mkdir -p");
	is_int(req("PUT", p, "/a/b/f.txt", "hello", &b), 201, "put inline");
	ok(strstr(b.data, "\"size\":5") != NULL, "answer has the size: %s", b.data);
	is_int(req("GET", p, "/a/b/f.txt", NULL, &b), 200, "get");
	is_str(b.data, "hello", "content");
	is_int(req("GET", p, "/a/b/", NULL, &b), 200, "list");
	ok(strstr(b.data, "\"FullPath\":\"/a/b/f.txt\"") != NULL, "listed: %s", b.data);
	is_int(req("DELETE", p, "/a", NULL, NULL), 409, "non-empty dir refused");
	is_int(req("POST", p, "/c/g.txt?mv.from=/a/b/f.txt", NULL, NULL), 204, "mv");
	is_int(req("GET", p, "/a/b/f.txt", NULL, NULL), 404, "source gone");
	is_int(req("GET", p, "/c/g.txt", NULL, &b), 200, "target there");
	is_str(b.data, "hello", "moved content");
	is_int(req("POST", p, "/z?mv.from=/c", NULL, NULL), 204, "mv dir");
	is_int(req("GET", p, "/z/g.txt", NULL, &b), 200, "tree moved");
	is_int(req("GET", p, "/a/b/x?limit=0", NULL, NULL), 404, "missing file");
	is_int(req("GET", p, "/a/?limit=0", NULL, NULL), 400, "limit 0");
	is_int(req("GET", p, "/a/?bogus=1", NULL, NULL), 400, "unknown parameter");
	is_int(req("PUT", p, "/a/x?op=zap", "x", NULL), 400, "unknown op");
	is_int(req("DELETE", p, "/a?recursive=true", NULL, NULL), 204, "recursive delete");
	is_int(req("GET", p, "/a/b", NULL, NULL), 404, "tree gone");
	filer_stop(f);

	/* a restart keeps everything */
	f = filer_start(&o, &err);
	ok(f != NULL, "filer restarts");
	if (f) {
		p = filer_port(f);
		is_int(req("GET", p, "/z/g.txt", NULL, &b), 200, "after restart");
		is_str(b.data, "hello", "content after restart");
		filer_stop(f);
	}
	buf_free(&b);
	check_events(dir);
	{
		char *db = xasprintf("%s/filer.db", dir), *cmd = xasprintf("rm -rf '%s'", dir);
		ok(access(db, F_OK) == 0, "store at DIR/filer.db");
		if (system(cmd) != 0)
			fprintf(stderr, "# could not remove %s\n", dir);
		free(db);
		free(cmd);
	}
}

int main(void)
{
	http_client_global_init();
	test_normalize();
	test_daemon();
	return done_testing();
}
