/*
 * The filer store conformance suite: one program, any store.
 *
 * The store is argv[1] if given, else $WEEDFS_TEST_STORE_DSN, else
 * $WEEDFS_TEST_PG_DSN, else a SQLite database in a temporary directory (what
 * `make check` runs). Every run works under its own top-level directory so
 * runs against a shared PostgreSQL database do not see each other.
 *
 * PostgreSQL outages: when $WEEDFS_TEST_PG_STOP_CMD and
 * $WEEDFS_TEST_PG_START_CMD are set (tests/integration/test_filer_store_pg.py
 * sets them), the suite stops the server mid-run, checks that calls fail
 * with WFS_EUNAVAIL, starts it again and checks that every pooled connection
 * recovers.
 */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "filer/store.h"
#include "tap.h"
#include "util.h"

static struct filer_store *st;
static char root[64]; /* this run's top-level directory, e.g. "/t1234-5678" */

static char *sub(const char *name) { return xasprintf("%s/%s", root, name); }

static struct filer_entry *mk(const char *dir, const char *name, uint64_t size)
{
	struct filer_entry *e = filer_entry_new(dir, name);
	e->attr.mode = S_IFREG | 0644;
	e->attr.size = size;
	e->attr.mtime_ns = (int64_t)time_now_ns();
	return e;
}

static wfs_err insert(const char *dir, const char *name, uint64_t size)
{
	struct filer_entry *e = mk(dir, name, size);
	wfs_err err = filer_store_insert(st, NULL, e);
	filer_entry_free(e);
	return err;
}

/* size of dir/name, or -1 if absent, -2 on another error */
static long long size_of(struct filer_tx *tx, const char *dir, const char *name)
{
	struct filer_entry *e;
	wfs_err err = filer_store_find(st, tx, dir, name, &e);
	long long s;
	if (err)
		return err == WFS_ENOENT ? -1 : -2;
	s = (long long)e->attr.size;
	filer_entry_free(e);
	return s;
}

static void test_crud(void)
{
	char *d = sub("crud");
	struct filer_entry *e = mk(d, "a.txt", 10), *f = NULL;
	filer_entry_xattr_set(e, "user.k", "v\0x", 3);
	filer_entry_set_content(e, "inline", 6);
	for (int i = 0; i < 1000; i++) {
		char fid[32];
		snprintf(fid, sizeof(fid), "%d,%08x01", i % 7 + 1, i);
		filer_entry_add_chunk(e, fid, (uint64_t)i << 20, 1 << 20, i, "etag", false);
	}
	is_int(filer_store_insert(st, NULL, e), WFS_OK, "insert");
	is_int(filer_store_find(st, NULL, d, "a.txt", &f), WFS_OK, "find");
	ok(f && f->attr.size == 10 && f->n_chunks == 1000 && f->content_len == 6 &&
		   !memcmp(f->content, "inline", 6) && filer_entry_xattr_get(f, "user.k") &&
		   filer_entry_xattr_get(f, "user.k")->value_len == 3 && !strcmp(f->dir, d) &&
		   !strcmp(f->name, "a.txt"),
	   "found entry has every field");
	filer_entry_free(f);
	e->attr.size = 99;
	is_int(filer_store_insert(st, NULL, e), WFS_EEXIST, "duplicate insert");
	is_int(size_of(NULL, d, "a.txt"), 10, "duplicate insert changed nothing");
	is_int(filer_store_update(st, NULL, e), WFS_OK, "update");
	is_int(size_of(NULL, d, "a.txt"), 99, "update visible");
	is_int(filer_store_delete(st, NULL, d, "a.txt"), WFS_OK, "delete");
	is_int(size_of(NULL, d, "a.txt"), -1, "gone after delete");
	is_int(filer_store_delete(st, NULL, d, "a.txt"), WFS_ENOENT, "delete absent");
	is_int(filer_store_update(st, NULL, e), WFS_ENOENT, "update absent");
	filer_entry_set_path(e, d, "bad/name");
	is_int(filer_store_insert(st, NULL, e), WFS_EINVAL, "name with a slash refused");
	filer_entry_set_path(e, "relative", "x");
	is_int(filer_store_insert(st, NULL, e), WFS_EINVAL, "relative directory refused");
	filer_entry_set_path(e, "/a/", "x");
	is_int(filer_store_insert(st, NULL, e), WFS_EINVAL, "trailing slash refused");
	filer_entry_free(e);
	free(d);
}

struct collect {
	char **names;
	size_t n, cap;
};

static bool collect_fn(void *ctx, struct filer_entry *e)
{
	struct collect *c = ctx;
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		c->names = xrealloc(c->names, c->cap * sizeof(*c->names));
	}
	c->names[c->n++] = xstrdup(e->name);
	filer_entry_free(e);
	return true;
}

static void collect_free(struct collect *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->names[i]);
	free(c->names);
	memset(c, 0, sizeof(*c));
}

/* Lists into a comma-joined string for compact comparisons. */
static char *list_str(const char *dir, const char *start, bool incl, size_t limit,
		      const char *prefix)
{
	struct collect c = {0};
	buf b = BUF_INIT;
	wfs_err err =
		filer_store_list(st, NULL, dir, start, incl, limit, prefix, collect_fn, &c, NULL);
	if (err)
		buf_printf(&b, "error %d", err);
	for (size_t i = 0; i < c.n; i++)
		buf_printf(&b, "%s%s", i ? "," : "", c.names[i]);
	collect_free(&c);
	/* not buf_steal: it leaves a never-appended buffer unterminated (lib/buf.c) */
	char *out = xstrdup(b.data ? b.data : "");
	buf_free(&b);
	return out;
}

static void test_list_big(void)
{
	char *d = sub("big");
	const int N = 10000;
	struct collect all = {0};
	size_t pages = 0, bad_order = 0;
	char start[32] = "";
	struct filer_tx *tx;
	wfs_err err = WFS_OK;

	/* insert in transactions of 1000 (also exercises commit) */
	for (int i = 0; i < N && !err; i += 1000) {
		err = filer_store_begin(st, &tx);
		for (int j = i; j < i + 1000 && !err; j++) {
			char name[32];
			struct filer_entry *e;
			snprintf(name, sizeof(name), "f%06d", (j * 7919) % N); /* not in order */
			e = mk(d, name, (uint64_t)j);
			err = filer_store_insert(st, tx, e);
			filer_entry_free(e);
		}
		if (err)
			filer_store_rollback(tx);
		else
			err = filer_store_commit(tx);
	}
	is_int(err, WFS_OK, "10000 inserts in 10 transactions");
	for (;;) {
		size_t before = all.n, count = 0;
		err = filer_store_list(st, NULL, d, start, false, 333, NULL, collect_fn, &all,
				       &count);
		if (err || count == 0)
			break;
		pages++;
		if (count != all.n - before)
			bad_order++;
		snprintf(start, sizeof(start), "%s", all.names[all.n - 1]);
	}
	is_int(err, WFS_OK, "paging ends cleanly");
	is_int(pages, (N + 332) / 333, "page count");
	is_int(all.n, N, "every entry listed");
	for (size_t i = 0; i < all.n; i++) {
		char want[32];
		snprintf(want, sizeof(want), "f%06zu", i);
		if (strcmp(all.names[i], want))
			bad_order++;
	}
	is_int(bad_order, 0, "each exactly once, in name order");
	collect_free(&all);

	char *s = list_str(d, "f000100", true, 3, NULL);
	is_str(s, "f000100,f000101,f000102", "inclusive start");
	free(s);
	s = list_str(d, "f000100", false, 3, NULL);
	is_str(s, "f000101,f000102,f000103", "exclusive start");
	free(s);
	s = list_str(d, "f0001", false, 3, NULL);
	is_str(s, "f000100,f000101,f000102", "start between names");
	free(s);
	s = list_str(d, NULL, false, 5, "f00999");
	is_str(s, "f009990,f009991,f009992,f009993,f009994", "prefix");
	free(s);
	s = list_str(d, "f009995", true, 100, "f00999");
	is_str(s, "f009995,f009996,f009997,f009998,f009999", "prefix with start inside");
	free(s);
	s = list_str(d, "f000000", false, 100, "f00999");
	is_str(s, "f009990,f009991,f009992,f009993,f009994,f009995,f009996,f009997,f009998,f009999",
	       "prefix after start");
	free(s);
	s = list_str(d, "g", false, 5, NULL);
	is_str(s, "", "start past the end");
	free(s);
	is_int(filer_store_list(st, NULL, d, NULL, false, 0, NULL, collect_fn, &all, NULL),
	       WFS_EINVAL, "limit 0 refused");
	is_int(filer_store_list(st, NULL, d, NULL, false, FILER_LIST_LIMIT_MAX + 1, NULL,
				collect_fn, &all, NULL),
	       WFS_EINVAL, "absurd limit refused");

	/* listing cost is per page: time a page at the end vs the start */
	uint64_t t0 = time_mono_ns();
	for (int i = 0; i < 50; i++) {
		s = list_str(d, "f000010", false, 10, NULL);
		free(s);
	}
	uint64_t t1 = time_mono_ns();
	for (int i = 0; i < 50; i++) {
		s = list_str(d, "f009980", false, 10, NULL);
		free(s);
	}
	uint64_t t2 = time_mono_ns();
	for (int i = 0; i < 50; i++) {
		s = list_str(d, NULL, false, 10, "f0099");
		free(s);
	}
	uint64_t t3 = time_mono_ns();
	printf("# page of 10 at start %.0f us, at end %.0f us, by prefix %.0f us\n",
	       (t1 - t0) / 50e3, (t2 - t1) / 50e3, (t3 - t2) / 50e3);
	ok((t2 - t1) < 10 * (t1 - t0) + 50000000 && (t3 - t2) < 10 * (t1 - t0) + 50000000,
	   "a page deep in a 10000-entry directory costs about what the first page costs");

	uint64_t deleted = 0;
	is_int(filer_store_delete_children(st, NULL, d, &deleted), WFS_OK, "delete children");
	is_int(deleted, N, "all children deleted");
	s = list_str(d, NULL, false, 10, NULL);
	is_str(s, "", "directory empty afterwards");
	free(s);
	free(d);
}

static void test_names(void)
{
	char *d = sub("names");
	static const char *const names[] = {
		"a%b",
		"a_b",
		"axb",
		"a\\b",
		"a%",
		"a",
		"ab",
		"é",
		"日本語.txt",
		"emoji-😀",
		"a'b\"c",
		"_",
		"%",
		"\xf4\x8f\xbf\xbf"
		"x",
		"\xf4\x8f\xbf\xbf",
		"z\x7f",
		"sp ace",
	};
	size_t bad = 0;
	char *s;
	for (size_t i = 0; i < ARRAY_LEN(names); i++)
		if (insert(d, names[i], i))
			bad++;
	is_int(bad, 0, "insert unusual names");
	for (size_t i = 0; i < ARRAY_LEN(names); i++)
		if (size_of(NULL, d, names[i]) != (long long)i)
			bad++;
	is_int(bad, 0, "find unusual names");
	s = list_str(d, NULL, false, 100, "a%");
	is_str(s, "a%,a%b", "'%' is literal in a prefix");
	free(s);
	s = list_str(d, NULL, false, 100, "a_");
	is_str(s, "a_b", "'_' is literal in a prefix");
	free(s);
	s = list_str(d, NULL, false, 100, "_");
	is_str(s, "_", "prefix '_' alone");
	free(s);
	s = list_str(d, NULL, false, 100, "a\\");
	is_str(s, "a\\b", "backslash is literal in a prefix");
	free(s);
	s = list_str(d, NULL, false, 100, "日本");
	is_str(s, "日本語.txt", "unicode prefix");
	free(s);
	s = list_str(d, NULL, false, 100, "é");
	is_str(s, "é", "two-byte prefix");
	free(s);
	s = list_str(d, NULL, false, 100, "\xf4\x8f\xbf\xbf");
	is_str(s,
	       "\xf4\x8f\xbf\xbf,\xf4\x8f\xbf\xbf"
	       "x",
	       "prefix of the last code point");
	free(s);
	s = list_str(d, NULL, false, 100, "z");
	is_str(s, "z\x7f", "prefix z");
	free(s);
	s = list_str(d, "a", false, 3, NULL);
	is_str(s, "a%,a%b,a'b\"c", "byte order after 'a'");
	free(s);

	char *e1 = filer_store_prefix_end("ab");
	char *e2 = filer_store_prefix_end("a\xc3\xbf"); /* U+00FF -> U+0100 */
	char *e3 = filer_store_prefix_end("\xf4\x8f\xbf\xbf");
	char *e4 = filer_store_prefix_end("a\x7f");
	char *e5 = filer_store_prefix_end("\xed\x9f\xbf"); /* U+D7FF skips the surrogates */
	is_str(e1, "ac", "prefix end ab");
	is_str(e2, "a\xc4\x80", "prefix end across a UTF-8 length");
	ok(e3 == NULL, "no end after U+10FFFF");
	is_str(e4, "a\xc2\x80", "prefix end after DEL");
	is_str(e5, "\xee\x80\x80", "prefix end skips surrogates");
	free(e1);
	free(e2);
	free(e3);
	free(e4);
	free(e5);
	filer_store_delete_children(st, NULL, d, NULL);
	free(d);
}

static uint64_t const_hash(const char *dir)
{
	(void)dir;
	return 42;
}

static void test_collision(void)
{
	char *d1 = sub("c1"), *d2 = sub("c2");
	char *s;
	uint64_t n = 0;
	filer_store_set_hash_for_testing(const_hash);
	ok(filer_store_dir_hash(d1) == filer_store_dir_hash(d2), "hook forces a collision");
	is_int(insert(d1, "same", 1), WFS_OK, "insert in c1");
	is_int(insert(d2, "same", 2), WFS_OK, "same name in colliding c2 is not a duplicate");
	is_int(insert(d1, "only1", 3), WFS_OK, "insert only1");
	is_int(size_of(NULL, d1, "same"), 1, "c1 entry");
	is_int(size_of(NULL, d2, "same"), 2, "c2 entry");
	is_int(size_of(NULL, d2, "only1"), -1, "c1's name not in c2");
	s = list_str(d2, NULL, false, 10, NULL);
	is_str(s, "same", "listing c2 shows only c2");
	free(s);
	s = list_str(d1, NULL, false, 10, NULL);
	is_str(s, "only1,same", "listing c1 shows only c1");
	free(s);
	is_int(filer_store_delete_children(st, NULL, d1, &n), WFS_OK, "delete c1 children");
	is_int(n, 2, "two deleted");
	is_int(size_of(NULL, d2, "same"), 2, "c2 untouched");
	is_int(filer_store_delete(st, NULL, d1, "same"), WFS_ENOENT, "c1/same gone");
	is_int(filer_store_delete(st, NULL, d2, "same"), WFS_OK, "delete c2/same");
	filer_store_set_hash_for_testing(NULL);
	ok(filer_store_dir_hash(d1) != filer_store_dir_hash(d2), "xxh64 restored");
	free(d1);
	free(d2);
}

static void test_delete_children(void)
{
	char *d = sub("dc"), *child = sub("dc/sub");
	uint64_t n = 99;
	insert(d, "x", 1);
	insert(d, "y", 1);
	insert(child, "deep", 1);
	is_int(filer_store_delete_children(st, NULL, d, &n), WFS_OK, "delete children");
	is_int(n, 2, "direct children only");
	is_int(size_of(NULL, child, "deep"), 1, "grandchild kept");
	is_int(filer_store_delete_children(st, NULL, d, &n), WFS_OK, "again");
	is_int(n, 0, "nothing left");
	filer_store_delete(st, NULL, child, "deep");
	free(d);
	free(child);
}

static void test_kv(void)
{
	char key[64];
	void *v = NULL;
	size_t vl = 0;
	int klen = snprintf(key, sizeof(key), "%s", root);
	memcpy(key + klen, "\0bin", 4);
	klen += 4;
	is_int(filer_store_kv_get(st, NULL, key, (size_t)klen, &v, &vl), WFS_ENOENT, "kv absent");
	is_int(filer_store_kv_put(st, NULL, key, (size_t)klen, "v1\0z", 4), WFS_OK, "kv put");
	is_int(filer_store_kv_get(st, NULL, key, (size_t)klen, &v, &vl), WFS_OK, "kv get");
	ok(vl == 4 && !memcmp(v, "v1\0z", 4), "kv value with NUL");
	free(v);
	is_int(filer_store_kv_put(st, NULL, key, (size_t)klen, "", 0), WFS_OK,
	       "kv overwrite empty");
	is_int(filer_store_kv_get(st, NULL, key, (size_t)klen, &v, &vl), WFS_OK, "kv get empty");
	ok(vl == 0 && v == NULL, "empty value");
	is_int(filer_store_kv_get(st, NULL, key, (size_t)klen - 4, &v, &vl), WFS_ENOENT,
	       "key prefix is another key");
	is_int(filer_store_kv_delete(st, NULL, key, (size_t)klen), WFS_OK, "kv delete");
	is_int(filer_store_kv_delete(st, NULL, key, (size_t)klen), WFS_ENOENT, "kv delete twice");
	is_int(filer_store_kv_put(st, NULL, key, 0, "x", 1), WFS_EINVAL, "empty key refused");
}

static void test_tx(void)
{
	char *d = sub("tx");
	struct filer_tx *tx;
	struct filer_entry *e;
	void *v;
	size_t vl;
	char *s;

	insert(d, "existing", 1);
	is_int(filer_store_begin(st, &tx), WFS_OK, "begin");
	e = mk(d, "new", 5);
	is_int(filer_store_insert(st, tx, e), WFS_OK, "insert in tx");
	is_int(size_of(tx, d, "new"), 5, "tx sees its own insert");
	e->attr.size = 7;
	filer_entry_set_path(e, d, "existing");
	is_int(filer_store_update(st, tx, e), WFS_OK, "update in tx");
	is_int(filer_store_delete(st, tx, d, "existing"), WFS_OK, "delete in tx");
	is_int(filer_store_insert(st, tx, e), WFS_OK, "re-insert in tx");
	is_int(filer_store_kv_put(st, tx, "txkey", 5, "v", 1), WFS_OK, "kv put in tx");
	is_int(filer_store_insert(st, tx, e), WFS_EEXIST, "duplicate in tx reports EEXIST");
	filer_store_rollback(tx);
	is_int(size_of(NULL, d, "new"), -1, "rollback: insert undone");
	is_int(size_of(NULL, d, "existing"), 1, "rollback: update and delete undone");
	is_int(filer_store_kv_get(st, NULL, "txkey", 5, &v, &vl), WFS_ENOENT,
	       "rollback: kv undone");
	s = list_str(d, NULL, false, 10, NULL);
	is_str(s, "existing", "rollback leaves nothing");
	free(s);

	is_int(filer_store_begin(st, &tx), WFS_OK, "begin");
	filer_entry_set_path(e, d, "committed");
	is_int(filer_store_insert(st, tx, e), WFS_OK, "insert");
	is_int(filer_store_insert(st, tx, e), WFS_EEXIST, "duplicate inside tx");
	is_int(filer_store_commit(tx), WFS_OK, "commit after a refused duplicate");
	is_int(size_of(NULL, d, "committed"), 7, "committed insert visible");

	/* durable commits (fsync): plain, and with an event (PostgreSQL's pipelined commit) */
	for (int ev = 0; ev < 2; ev++) {
		int64_t ts = 0;
		is_int(filer_store_begin(st, &tx), WFS_OK, "begin (durable)");
		filer_store_tx_durable(tx);
		filer_entry_set_path(e, d, ev ? "durable-ev" : "durable");
		is_int(filer_store_insert(st, tx, e), WFS_OK, "insert (durable)");
		if (ev)
			is_int(filer_store_append_event(st, tx, NULL, e, &ts), WFS_OK,
			       "event (durable)");
		is_int(filer_store_commit(tx), WFS_OK, "durable commit");
		is_int(size_of(NULL, d, ev ? "durable-ev" : "durable"), 7, "durable insert visible");
	}
	is_int(filer_store_sync(st), WFS_OK, "store sync");
	is_int(filer_store_sync(st), WFS_OK, "store sync again");
	filer_entry_free(e);
	filer_store_delete_children(st, NULL, d, NULL);
	free(d);
}

#define NTHREADS 16

struct race {
	pthread_barrier_t *bar;
	const char *dir;
	char name[32];
	int rounds;
	int wins, dups, other;
};

static void *race_thread(void *arg)
{
	struct race *r = arg;
	for (int i = 0; i < r->rounds; i++) {
		char name[48];
		snprintf(name, sizeof(name), "%s-%d", r->name, i);
		pthread_barrier_wait(r->bar);
		wfs_err err = insert(r->dir, name, 1);
		if (err == WFS_OK)
			r->wins++;
		else if (err == WFS_EEXIST)
			r->dups++;
		else
			r->other++;
	}
	return NULL;
}

static void test_race(void)
{
	char *d = sub("race");
	pthread_t t[NTHREADS];
	struct race r[NTHREADS];
	pthread_barrier_t bar;
	int wins = 0, dups = 0, other = 0;
	const int rounds = 20;
	pthread_barrier_init(&bar, NULL, NTHREADS);
	for (int i = 0; i < NTHREADS; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].bar = &bar;
		r[i].dir = d;
		r[i].rounds = rounds;
		snprintf(r[i].name, sizeof(r[i].name), "same");
		pthread_create(&t[i], NULL, race_thread, &r[i]);
	}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		wins += r[i].wins;
		dups += r[i].dups;
		other += r[i].other;
	}
	pthread_barrier_destroy(&bar);
	is_int(wins, rounds, "16 threads inserting one key: exactly one wins, every round");
	is_int(dups, rounds * (NTHREADS - 1), "the other 15 get EEXIST");
	is_int(other, 0, "no other errors");
	filer_store_delete_children(st, NULL, d, NULL);
	free(d);
}

struct cas {
	const char *dir;
	int iters, failures;
};

/* read-modify-write of one counter entry inside transactions */
static void *cas_thread(void *arg)
{
	struct cas *c = arg;
	for (int i = 0; i < c->iters; i++) {
		struct filer_tx *tx;
		struct filer_entry *e;
		wfs_err err = filer_store_begin(st, &tx);
		if (err) {
			c->failures++;
			continue;
		}
		err = filer_store_find(st, tx, c->dir, "counter", &e);
		if (!err) {
			e->attr.size++;
			err = filer_store_update(st, tx, e);
			filer_entry_free(e);
		}
		if (err) {
			filer_store_rollback(tx);
			c->failures++;
		} else if (filer_store_commit(tx)) {
			c->failures++;
		}
	}
	return NULL;
}

static void test_tx_concurrent(void)
{
	char *d = sub("cas");
	pthread_t t[NTHREADS];
	struct cas c[NTHREADS];
	int failures = 0;
	const int iters = 25;
	insert(d, "counter", 0);
	for (int i = 0; i < NTHREADS; i++) {
		c[i] = (struct cas){d, iters, 0};
		pthread_create(&t[i], NULL, cas_thread, &c[i]);
	}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		failures += c[i].failures;
	}
	is_int(failures, 0, "concurrent read-modify-write transactions all commit");
	is_int(size_of(NULL, d, "counter"), NTHREADS * iters, "no lost update");
	filer_store_delete_children(st, NULL, d, NULL);
	free(d);
}

struct finder {
	const char *dir;
	int ok;
};

static void *find_thread(void *arg)
{
	struct finder *f = arg;
	for (int i = 0; i < 5; i++)
		if (size_of(NULL, f->dir, "probe") == 1)
			f->ok++;
	return NULL;
}

/* Finds from 16 threads at once (so the pool holds many connections); returns the successes. */
static int parallel_finds(const char *dir)
{
	pthread_t t[NTHREADS];
	struct finder f[NTHREADS];
	int okc = 0;
	for (int i = 0; i < NTHREADS; i++) {
		f[i] = (struct finder){dir, 0};
		pthread_create(&t[i], NULL, find_thread, &f[i]);
	}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		okc += f[i].ok;
	}
	return okc;
}

/* ---- the metadata event log ---- */

static const char *dsn_g;       /* to open a second handle ("another filer") */
static struct filer_store *st2; /* a second handle on the same database */

struct evlist {
	struct filer_event **ev;
	size_t n, cap;
};

static bool ev_collect(void *ctx, struct filer_event *ev)
{
	struct evlist *l = ctx;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->ev = xrealloc(l->ev, l->cap * sizeof(*l->ev));
	}
	l->ev[l->n++] = ev;
	return true;
}

static void evlist_free(struct evlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		filer_event_free(l->ev[i]);
	free(l->ev);
	memset(l, 0, sizeof(*l));
}

/* Reads every event under prefix since since, in pages of limit, into l. */
static wfs_err read_all(struct filer_store *s, int64_t since, const char *prefix, size_t limit,
			struct evlist *l, size_t *pages)
{
	wfs_err err;
	for (;;) {
		size_t before = l->n;
		int64_t next;
		err = filer_store_read_events(s, since, prefix, 0, limit, ev_collect, l, &next);
		if (err)
			return err;
		if (pages)
			(*pages)++;
		if (next < since)
			return WFS_EINTERNAL; /* the token went backwards */
		if (l->n == before && next == since)
			return WFS_OK;
		since = next;
	}
}

/* Inserts dir/name and appends its create event in one transaction; commits unless rollback. */
static wfs_err insert_with_event(struct filer_store *s, const char *dir, const char *name,
				 bool rollback, int64_t *ts)
{
	struct filer_tx *tx;
	struct filer_entry *e = mk(dir, name, 1);
	wfs_err err = filer_store_begin(s, &tx);
	if (err)
		goto out;
	err = filer_store_insert(s, tx, e);
	if (!err)
		err = filer_store_append_event(s, tx, NULL, e, ts);
	if (err || rollback)
		filer_store_rollback(tx);
	else
		err = filer_store_commit(tx);
out:
	filer_entry_free(e);
	return err;
}

static const char *ev_name(const struct filer_event *ev)
{
	return ev->new_entry ? ev->new_entry->name : ev->old_entry ? ev->old_entry->name : "?";
}

/*
 * Events of a signed transaction (filer_store_tx_sign) are left out for a
 * reader skipping that signature, on both commit paths (events appended with
 * or without other writes), and kept for everyone else. e is a spare entry.
 */
static void test_signed_events(struct filer_entry *e)
{
	char *d = sub("evsig");
	struct filer_entry *x = filer_entry_dup(e);
	struct filer_tx *tx;
	struct evlist l = {0};
	int64_t since = 0, clock = 0, next = 0, ts = 0;

	filer_entry_set_path(x, d, "signed");
	is_int(filer_store_event_clock(st, &since), WFS_OK, "clock before signed events");
	is_int(filer_store_begin(st, &tx), WFS_OK, "begin (signed)");
	filer_store_tx_sign(tx, 77);
	is_int(filer_store_insert(st, tx, x), WFS_OK, "insert (signed)");
	is_int(filer_store_append_event(st, tx, NULL, x, &ts), WFS_OK, "event (signed)");
	is_int(filer_store_commit(tx), WFS_OK, "commit (signed)");
	is_int(filer_store_begin(st, &tx), WFS_OK, "begin (signed by -5)");
	filer_store_tx_sign(tx, -5);
	is_int(filer_store_append_event(st, tx, x, NULL, NULL), WFS_OK, "event (signed by -5)");
	is_int(filer_store_commit(tx), WFS_OK, "commit (signed by -5)");
	is_int(insert_with_event(st, d, "unsigned", false, NULL), WFS_OK, "unsigned event");
	filer_store_event_clock(st, &clock);

	is_int(filer_store_read_events(st, since, d, 77, 100, ev_collect, &l, &next), WFS_OK,
	       "read skipping 77");
	ok(l.n == 2 && l.ev[0]->old_entry && !strcmp(ev_name(l.ev[1]), "unsigned"),
	   "the events signed 77 are left out, -5 and unsigned ones kept");
	ok(next >= clock, "the token passes over the skipped event");
	evlist_free(&l);
	is_int(filer_store_read_events(st, since, NULL, -5, 100, ev_collect, &l, &next), WFS_OK,
	       "read skipping -5 (no prefix)");
	ok(l.n == 2 && l.ev[0]->ts_ns == ts && !l.ev[0]->old_entry, "signed 77 kept, -5 left out");
	evlist_free(&l);
	read_all(st, since, d, 100, &l, NULL);
	is_int(l.n, 3, "a reader skipping nothing gets all three");
	evlist_free(&l);
	filer_store_delete_children(st, NULL, d, NULL);
	filer_entry_free(x);
	free(d);
}

static void test_events(void)
{
	char *d = sub("ev"), *d2 = sub("ev2"), *dx = sub("evx");
	struct evlist l = {0};
	struct filer_tx *tx;
	struct filer_entry *e, *e2;
	int64_t since, ts1 = 0, ts2 = 0, next;
	char *s;

	is_int(filer_store_event_clock(st, &since), WFS_OK, "event clock");
	is_int(insert_with_event(st, d, "rolled", true, &ts1), WFS_OK, "insert+event, rolled back");
	is_int(read_all(st, since, root, 100, &l, NULL), WFS_OK, "read");
	is_int(l.n, 0, "an event in a rolled-back transaction does not appear");
	is_int(size_of(NULL, d, "rolled"), -1, "nor does the entry");

	is_int(insert_with_event(st, d, "a", false, &ts1), WFS_OK, "insert+event committed");
	ok(ts1 > since, "event ts after the clock");
	e = mk(d, "a", 1);
	filer_entry_add_chunk(e, "3,0123abcd", 0, 1, 5, "etag1", false);
	filer_entry_xattr_set(e, "user.x", "\x01\x02", 2);
	e2 = filer_entry_dup(e);
	e2->attr.size = 2;
	is_int(filer_store_begin(st, &tx), WFS_OK, "begin");
	is_int(filer_store_update(st, tx, e2), WFS_OK, "update");
	is_int(filer_store_append_event(st, tx, e, e2, &ts2), WFS_OK, "update event");
	is_int(filer_store_commit(tx), WFS_OK, "commit");
	ok(ts2 > ts1, "ts increases");
	/* a rename from ev/a to ev2/b: one event with both sides */
	filer_entry_set_path(e, d2, "b");
	is_int(filer_store_append_event(st, NULL, e2, e, NULL), WFS_OK, "rename event, no tx");
	filer_entry_set_path(e, dx, "c");
	is_int(filer_store_append_event(st, NULL, NULL, e, NULL), WFS_OK, "create in evx");
	is_int(filer_store_append_event(st, NULL, e, NULL, NULL), WFS_OK, "delete in evx");
	is_int(filer_store_append_event(st, NULL, NULL, NULL, NULL), WFS_EINVAL,
	       "an event with neither side refused");

	is_int(read_all(st, since, root, 2, &l, NULL), WFS_OK, "read all (pages of 2)");
	is_int(l.n, 5, "five events");
	if (l.n == 5) {
		ok(!l.ev[0]->old_entry && l.ev[0]->new_entry && !strcmp(ev_name(l.ev[0]), "a") &&
			   !strcmp(l.ev[0]->dir, d) && l.ev[0]->ts_ns == ts1,
		   "create: new entry only, directory, ts");
		ok(l.ev[1]->old_entry && l.ev[1]->new_entry && l.ev[1]->old_entry->attr.size == 1 &&
			   l.ev[1]->new_entry->attr.size == 2 &&
			   l.ev[1]->new_entry->n_chunks == 1 &&
			   !strcmp(l.ev[1]->new_entry->chunks[0].fid, "3,0123abcd") &&
			   filer_entry_xattr_get(l.ev[1]->new_entry, "user.x"),
		   "update: both sides decoded with chunks and xattrs");
		ok(!strcmp(l.ev[2]->old_entry->dir, d) && !strcmp(l.ev[2]->new_entry->dir, d2) &&
			   !strcmp(l.ev[2]->dir, d),
		   "rename: old and new paths, directory is the old one");
		ok(l.ev[3]->new_entry && !l.ev[3]->old_entry && l.ev[4]->old_entry &&
			   !l.ev[4]->new_entry && !strcmp(l.ev[4]->dir, dx),
		   "create and delete");
		for (size_t i = 1; i < l.n; i++)
			if (l.ev[i]->ts_ns <= l.ev[i - 1]->ts_ns)
				ok(0, "ts order");
	}
	evlist_free(&l);
	read_all(st, since, d2, 100, &l, NULL);
	is_int(l.n, 1, "prefix ev2 matches the rename by its new path");
	evlist_free(&l);
	read_all(st, since, d, 100, &l, NULL);
	is_int(l.n, 3, "prefix ev: create, update, rename (old path); not evx");
	evlist_free(&l);
	s = xasprintf("%s/", d);
	read_all(st, since, s, 100, &l, NULL);
	is_int(l.n, 3, "a trailing slash in the prefix is ignored");
	evlist_free(&l);
	free(s);
	s = xasprintf("%s/a", d);
	read_all(st, since, s, 100, &l, NULL);
	is_int(l.n, 3, "prefix of the file itself");
	evlist_free(&l);
	free(s);
	s = xasprintf("%s/e", root);
	read_all(st, since, s, 100, &l, NULL);
	is_int(l.n, 0, "a name prefix is not a path prefix");
	evlist_free(&l);
	free(s);
	is_int(filer_store_read_events(st, since, dx, 0, 100, ev_collect, &l, &next), WFS_OK,
	       "filtered read");
	ok(l.n == 2 && next >= l.ev[1]->ts_ns, "resume token covers what was read");
	evlist_free(&l);
	is_int(filer_store_read_events(st, since, d2, 0, 100, ev_collect, &l, &next), WFS_OK,
	       "filtered read of the rename only");
	{
		int64_t clock = 0;
		filer_store_event_clock(st, &clock);
		ok(l.n == 1 && next >= clock - 0 && next > l.ev[0]->ts_ns,
		   "the token passes over the non-matching events after it");
	}
	evlist_free(&l);
	is_int(filer_store_read_events(st, since, "relative", 0, 10, ev_collect, &l, &next),
	       WFS_EINVAL, "relative prefix refused");
	is_int(filer_store_read_events(st, since, NULL, 0, 0, ev_collect, &l, &next), WFS_EINVAL,
	       "limit 0 refused");
	is_int(filer_store_read_events(st, since, NULL, 0, FILER_EVENTS_LIMIT_MAX + 1, ev_collect,
				       &l, &next),
	       WFS_EINVAL, "absurd limit refused");

	/* retention: trim everything up to the update event */
	{
		uint64_t del = 0;
		is_int(filer_store_trim_events(st, ts2 + 1, &del), WFS_OK, "trim");
		ok(del >= 2, "trim deleted the old events");
		read_all(st, since, root, 100, &l, NULL);
		is_int(l.n, 3, "the newer events remain");
		evlist_free(&l);
		int64_t t;
		is_int(insert_with_event(st, d, "after-trim", false, &t), WFS_OK,
		       "append after trim");
		ok(t > ts2, "ts still increases after a trim");
	}
	test_signed_events(e);
	filer_entry_free(e);
	filer_entry_free(e2);
	filer_store_delete_children(st, NULL, d, NULL);
	free(d);
	free(d2);
	free(dx);
}

#define EV_PER_THREAD 200

struct evthread {
	struct filer_store *s;
	char *dir;
	int failures;
	int64_t ts[EV_PER_THREAD];
};

static void *ev_thread(void *arg)
{
	struct evthread *t = arg;
	for (int i = 0; i < EV_PER_THREAD; i++) {
		char name[16];
		int64_t ts;
		snprintf(name, sizeof(name), "n%04d", i);
		if (insert_with_event(t->s, t->dir, name, false, &t->ts[i]))
			t->failures++;
		/* a rolled-back transaction in between: its event must never be seen */
		snprintf(name, sizeof(name), "r%04d", i);
		if (i % 5 == 0 && insert_with_event(t->s, t->dir, name, true, &ts))
			t->failures++;
	}
	return NULL;
}

/*
 * A subscriber following the log while the writers run: reads from the
 * resume token, as the metalog does, until it has want events or the writers
 * are done and a read finds nothing more.
 */
struct evsub {
	struct filer_store *s;
	const char *prefix;
	int64_t since;
	size_t want;
	volatile int writers_done; /* set by the main thread after the joins */
	struct evlist l;
	int backwards, errors;
};

static void *ev_subscriber(void *arg)
{
	struct evsub *sb = arg;
	uint64_t deadline = time_mono_ns() + 120000000000ull;
	while (sb->l.n < sb->want && time_mono_ns() < deadline) {
		size_t before = sb->l.n;
		int done = __atomic_load_n(&sb->writers_done, __ATOMIC_ACQUIRE);
		int64_t next = 0;
		if (filer_store_read_events(sb->s, sb->since, sb->prefix, 0, 50, ev_collect, &sb->l,
					    &next)) {
			sb->errors++;
			continue;
		}
		if (next < sb->since)
			sb->backwards++;
		sb->since = next;
		if (sb->l.n == before) {
			if (done)
				break;
			usleep(500);
		}
	}
	return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static void test_events_threads(void)
{
	char *base = sub("evt");
	pthread_t th[NTHREADS];
	struct evthread t[NTHREADS];
	struct evlist l = {0};
	struct evsub sb = {0};
	pthread_t sub_th;
	int64_t since, *all = xmalloc(sizeof(int64_t) * NTHREADS * EV_PER_THREAD);
	int failures = 0, bad = 0, dups = 0;
	size_t pages = 0;
	uint64_t t0;

	filer_store_event_clock(st, &since);
	sb.s = st2;
	sb.prefix = base;
	sb.since = since;
	sb.want = (size_t)NTHREADS * EV_PER_THREAD;
	pthread_create(&sub_th, NULL, ev_subscriber, &sb);
	t0 = time_mono_ns();
	for (int i = 0; i < NTHREADS; i++) {
		t[i].s = i % 2 ? st2 : st; /* half through the other handle: two "filers" */
		t[i].dir = xasprintf("%s/t%02d", base, i);
		t[i].failures = 0;
		pthread_create(&th[i], NULL, ev_thread, &t[i]);
	}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		failures += t[i].failures;
		for (int j = 0; j < EV_PER_THREAD; j++) {
			all[i * EV_PER_THREAD + j] = t[i].ts[j];
			if (j && t[i].ts[j] <= t[i].ts[j - 1])
				bad++;
		}
	}
	printf("# %d insert+event transactions from 16 threads on 2 handles: %.0f/s\n",
	       NTHREADS * EV_PER_THREAD, NTHREADS * EV_PER_THREAD / ((time_mono_ns() - t0) / 1e9));
	is_int(failures, 0, "16 threads on two handles: every insert+event commits");
	is_int(bad, 0, "each thread's ts strictly increase");
	qsort(all, NTHREADS * EV_PER_THREAD, sizeof(*all), cmp_i64);
	for (int i = 1; i < NTHREADS * EV_PER_THREAD; i++)
		if (all[i] == all[i - 1])
			dups++;
	is_int(dups, 0, "no two events share a ts, across threads and handles");

	__atomic_store_n(&sb.writers_done, 1, __ATOMIC_RELEASE);
	pthread_join(sub_th, NULL);
	is_int(sb.errors, 0, "concurrent subscriber: no read failed");
	is_int(sb.backwards, 0, "concurrent subscriber: the resume token never went back");
	is_int((int)sb.l.n, NTHREADS * EV_PER_THREAD,
	       "concurrent subscriber: every committed event, none rolled back");
	bad = 0;
	for (size_t i = 0; i < sb.l.n && i < (size_t)NTHREADS * EV_PER_THREAD; i++)
		if (sb.l.ev[i]->ts_ns != all[i] || ev_name(sb.l.ev[i])[0] != 'n')
			bad++;
	is_int(bad, 0, "concurrent subscriber: exactly once each, in clock order");
	evlist_free(&sb.l);

	is_int(read_all(st, since, base, 333, &l, &pages), WFS_OK, "paged read (333)");
	is_int(l.n, NTHREADS * EV_PER_THREAD, "every event read");
	bad = 0;
	for (size_t i = 0; i < l.n && i < (size_t)NTHREADS * EV_PER_THREAD; i++) {
		if (l.ev[i]->ts_ns != all[i])
			bad++;
		if (i && l.ev[i]->ts_ns <= l.ev[i - 1]->ts_ns)
			bad++;
	}
	is_int(bad, 0, "exactly once each, in ts order");
	evlist_free(&l);

	/* one thread's directory with a small page: a filtered, paged read */
	read_all(st2, since, t[3].dir, 7, &l, NULL);
	is_int(l.n, EV_PER_THREAD, "filtered paged read (7) through the other handle");
	bad = 0;
	for (size_t i = 0; i < l.n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "n%04zu", i);
		if (strcmp(ev_name(l.ev[i]), name) || l.ev[i]->ts_ns != t[3].ts[i])
			bad++;
	}
	is_int(bad, 0, "that directory's events, once each, in order");
	evlist_free(&l);
	for (int i = 0; i < NTHREADS; i++) {
		filer_store_delete_children(st, NULL, t[i].dir, NULL);
		free(t[i].dir);
	}
	free(all);
	free(base);
}

/* Two handles ("filers") on one database see each other's events and entries. */
static void test_events_two_handles(void)
{
	char *d = sub("two");
	struct evlist l = {0};
	int64_t since, ts;
	filer_store_event_clock(st, &since);
	is_int(insert_with_event(st2, d, "from2", false, &ts), WFS_OK, "append through handle 2");
	read_all(st, since, d, 10, &l, NULL);
	ok(l.n == 1 && !strcmp(ev_name(l.ev[0]), "from2") && l.ev[0]->ts_ns == ts,
	   "handle 1 reads handle 2's event");
	evlist_free(&l);
	is_int(size_of(NULL, d, "from2"), 1, "and its entry");
	is_int(insert_with_event(st, d, "from1", false, &ts), WFS_OK, "append through handle 1");
	read_all(st2, since, d, 10, &l, NULL);
	ok(l.n == 2 && !strcmp(ev_name(l.ev[1]), "from1"), "handle 2 reads both in order");
	evlist_free(&l);
	filer_store_delete_children(st, NULL, d, NULL);
	free(d);
}

/* ---- the garbage queue ---- */

static char **gc_fids(const char *tag, int n)
{
	char **f = xmalloc(sizeof(*f) * (size_t)n);
	for (int i = 0; i < n; i++)
		f[i] = xasprintf("%s/%s/%05d", root, tag, i);
	return f;
}

static void gc_fids_free(char **f, int n)
{
	for (int i = 0; i < n; i++)
		free(f[i]);
	free(f);
}

/* How many of the taken items carry tag (other runs may share a PostgreSQL queue). */
static int own(const struct filer_gc_item *it, size_t n, const char *tag)
{
	char *p = xasprintf("%s/%s/", root, tag);
	int c = 0;
	for (size_t i = 0; i < n; i++)
		if (!strncmp(it[i].fid, p, strlen(p)))
			c++;
	free(p);
	return c;
}

static int take_own(struct filer_store *s, const char *tag, int64_t lease_ns, uint32_t *attempts)
{
	struct filer_gc_item *it;
	size_t n;
	int c;
	if (filer_store_gc_take(s, FILER_GC_BATCH_MAX, lease_ns, &it, &n))
		return -1;
	c = own(it, n, tag);
	if (attempts && n)
		*attempts = it[0].attempts;
	filer_gc_items_free(it, n);
	return c;
}

static void test_gc(void)
{
	const int64_t ms = 1000000;
	char **due = gc_fids("due", 50), **later = gc_fids("later", 50), **rb = gc_fids("rb", 10);
	struct filer_tx *tx;
	uint64_t c0 = 0, c1 = 0;
	uint32_t attempts = 0;

	filer_store_gc_count(st, &c0);
	is_int(filer_store_begin(st, &tx), WFS_OK, "begin");
	is_int(filer_store_gc_enqueue(st, tx, (const char *const *)rb, 10, 0), WFS_OK,
	       "enqueue in a tx");
	filer_store_rollback(tx);
	filer_store_gc_count(st, &c1);
	is_int(c1, c0, "rolled-back enqueue leaves nothing");
	is_int(filer_store_begin(st, &tx), WFS_OK, "begin");
	is_int(filer_store_gc_enqueue(st, tx, (const char *const *)due, 50, 0), WFS_OK,
	       "enqueue due");
	is_int(filer_store_gc_enqueue(st, tx, (const char *const *)later, 50,
				      (int64_t)time_now_ns() + 1500 * ms),
	       WFS_OK, "enqueue not before 1.5 s");
	is_int(filer_store_commit(tx), WFS_OK, "commit");
	is_int(filer_store_gc_enqueue(st, NULL, (const char *const *)due, 50, 0), WFS_OK,
	       "enqueue again (no tx): already queued ids keep their state");
	filer_store_gc_count(st, &c1);
	is_int(c1 - c0, 100, "100 queued");
	is_int(take_own(st, "due", 300 * ms, &attempts), 50, "take: the 50 due ones");
	is_int(attempts, 1, "first attempt");
	is_int(take_own(st, "later", 300 * ms, NULL), 0, "not-before respected");
	is_int(take_own(st2, "due", 300 * ms, NULL), 0, "leased: another handle gets none");
	usleep(400000);
	is_int(take_own(st2, "due", 300 * ms, &attempts), 50, "after the lease: retaken");
	is_int(attempts, 2, "second attempt counted");
	is_int(filer_store_gc_done(st2, (const char *const *)due, 50), WFS_OK, "done");
	filer_store_gc_count(st, &c1);
	is_int(c1 - c0, 50, "done ids leave the queue");
	is_int(filer_store_gc_defer(st, (const char *const *)later, 10,
				    (int64_t)time_now_ns() + 100 * ms),
	       WFS_OK, "defer 10 to 100 ms from now");
	is_int(take_own(st, "later", 300 * ms, NULL), 0, "deferred ids not due yet");
	usleep(200000);
	is_int(take_own(st, "later", 300 * ms, NULL), 10, "the deferred 10 come due");
	usleep(1500000);
	is_int(take_own(st, "later", 300 * ms, NULL), 50,
	       "after not-before: the other 40, and the 10 whose lease ran out undone");
	is_int(filer_store_gc_done(st, (const char *const *)later, 50), WFS_OK, "done");
	{
		struct filer_gc_item *it;
		size_t n;
		const char *empty[1] = {""};
		is_int(filer_store_gc_take(st, 0, ms, &it, &n), WFS_EINVAL, "take 0 refused");
		is_int(filer_store_gc_take(st, 1, 0, &it, &n), WFS_EINVAL, "lease 0 refused");
		is_int(filer_store_gc_enqueue(st, NULL, empty, 1, 0), WFS_EINVAL,
		       "empty fid refused");
	}
	gc_fids_free(due, 50);
	gc_fids_free(later, 50);
	gc_fids_free(rb, 10);
}

#define GC_RACE_N 2000

struct taker {
	struct filer_store *s;
	char **got;
	size_t n, cap;
	int errors;
};

static void *taker_thread(void *arg)
{
	struct taker *t = arg;
	for (int empty = 0; empty < 3;) {
		struct filer_gc_item *it;
		size_t n;
		if (filer_store_gc_take(t->s, 37, 60 * 1000000000LL, &it, &n)) {
			t->errors++;
			break;
		}
		if (own(it, n, "race") == 0)
			empty++;
		for (size_t i = 0; i < n; i++) {
			if (t->n == t->cap) {
				t->cap = t->cap ? t->cap * 2 : 64;
				t->got = xrealloc(t->got, t->cap * sizeof(*t->got));
			}
			t->got[t->n++] = xstrdup(it[i].fid);
		}
		filer_gc_items_free(it, n);
	}
	return NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_gc_race(void)
{
	char **f = gc_fids("race", GC_RACE_N);
	pthread_t th[NTHREADS];
	struct taker t[NTHREADS];
	char **all = NULL;
	size_t total = 0, mine = 0, dups = 0;
	int errors = 0;
	char *p = xasprintf("%s/race/", root);

	is_int(filer_store_gc_enqueue(st, NULL, (const char *const *)f, GC_RACE_N, 0), WFS_OK,
	       "enqueue 2000");
	for (int i = 0; i < NTHREADS; i++) {
		memset(&t[i], 0, sizeof(t[i]));
		t[i].s = i % 2 ? st2 : st;
		pthread_create(&th[i], NULL, taker_thread, &t[i]);
	}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		errors += t[i].errors;
		all = xrealloc(all, (total + t[i].n + 1) * sizeof(*all));
		if (t[i].n)
			memcpy(all + total, t[i].got, t[i].n * sizeof(*all));
		total += t[i].n;
		free(t[i].got);
	}
	is_int(errors, 0, "16 takers on two handles: no errors");
	qsort(all, total, sizeof(*all), cmp_str);
	for (size_t i = 0; i < total; i++) {
		if (!strncmp(all[i], p, strlen(p)))
			mine++;
		if (i && !strcmp(all[i], all[i - 1]))
			dups++;
	}
	is_int(mine, GC_RACE_N, "every id taken");
	is_int(dups, 0, "no id taken twice");
	for (size_t i = 0; i < total; i++)
		free(all[i]);
	free(all);
	for (int i = 0; i < GC_RACE_N; i += 500)
		filer_store_gc_done(st, (const char *const *)f + i, 500);
	gc_fids_free(f, GC_RACE_N);
	free(p);
}

static void test_pg_outage(void)
{
	const char *stop = getenv("WEEDFS_TEST_PG_STOP_CMD");
	const char *start = getenv("WEEDFS_TEST_PG_START_CMD");
	char *d = sub("outage");
	int rc;
	if (strcmp(filer_store_name(st), "postgres") || !stop || !start) {
		ok(1, "# SKIP server restart (not postgres, or no WEEDFS_TEST_PG_*_CMD)");
		free(d);
		return;
	}
	is_int(insert(d, "probe", 1), WFS_OK, "insert before the outage");
	is_int(parallel_finds(d), NTHREADS * 5, "finds from 16 threads fill the pool");
	fflush(stdout);
	rc = system(stop);
	is_int(rc, 0, "server stopped");
	is_int(size_of(NULL, d, "probe"), -2, "find while the server is down fails");
	{
		struct filer_entry *e;
		is_int(filer_store_find(st, NULL, d, "probe", &e), WFS_EUNAVAIL,
		       "the error is WFS_EUNAVAIL");
		is_int(insert(d, "down", 1), WFS_EUNAVAIL, "insert while down: WFS_EUNAVAIL");
	}
	fflush(stdout);
	rc = system(start);
	is_int(rc, 0, "server started again");
	is_int(insert(d, "after", 2), WFS_OK, "the first insert after the restart succeeds");
	is_int(size_of(NULL, d, "probe"), 1, "data survived the restart");
	is_int(parallel_finds(d), NTHREADS * 5, "every pooled connection recovered");
	/* a restart with idle connections only (no failed call in between) */
	fflush(stdout);
	rc = system(stop);
	if (!rc)
		rc = system(start);
	is_int(rc, 0, "server restarted");
	is_int(size_of(NULL, d, "after"), 2, "first call after a quiet restart succeeds");
	is_int(parallel_finds(d), NTHREADS * 5, "all connections work after a quiet restart");
	filer_store_delete_children(st, NULL, d, NULL);
	free(d);
}

static long long file_size(const char *path)
{
	struct stat sb;
	return stat(path, &sb) ? -1 : (long long)sb.st_size;
}

/* Inserts /ckpt/f<from>..f<to-1>, one commit each. */
static wfs_err insert_many(struct filer_store *s, int from, int to)
{
	wfs_err err = WFS_OK;
	for (int i = from; i < to && !err; i++) {
		char name[32];
		struct filer_entry *e;
		snprintf(name, sizeof(name), "f%05d", i);
		e = mk("/ckpt", name, (uint64_t)i);
		err = filer_store_insert(s, NULL, e);
		filer_entry_free(e);
	}
	return err;
}

/* Waits up to 5 s for path to grow past size; its last size. */
static long long wait_growth(const char *path, long long size)
{
	long long now = file_size(path);
	for (int waited = 0; waited < 100 && now <= size; waited++) {
		usleep(50 * 1000);
		now = file_size(path);
	}
	return now;
}

/*
 * SQLite's checkpoints run on the store's own thread (store_sqlite.c), none in
 * the committing one: a few commits reach the database file within about a
 * second, and 10,000 one-row commits leave a bounded WAL (with no checkpoint
 * it would hold some 22,000 pages, 90 MB).
 */
static void test_sqlite_checkpoints(void)
{
	char dir[] = "/tmp/test_filer_ckpt.XXXXXX";
	char *dsn, *db, *wal, *shm;
	struct filer_store *s;
	long long db0, db1;

	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp for the checkpoint test");
		return;
	}
	dsn = xasprintf("sqlite://%s/c.db", dir);
	db = xasprintf("%s/c.db", dir);
	wal = xasprintf("%s/c.db-wal", dir);
	shm = xasprintf("%s/c.db-shm", dir);
	is_int(filer_store_open(dsn, &s), WFS_OK, "open a fresh sqlite store");
	db0 = file_size(db);
	is_int(insert_many(s, 0, 10), WFS_OK, "10 commits");
	db1 = wait_growth(db, db0);
	ok(db1 > db0, "they reached the database file while idle (%lld -> %lld bytes)", db0, db1);
	is_int(insert_many(s, 10, 10000), WFS_OK, "9,990 more");
	ok(wait_growth(db, db1 + (1 << 20)) > db1 + (1 << 20), "they reached the database file");
	ok(file_size(wal) < (64 << 20), "the WAL stayed bounded (%lld bytes)", file_size(wal));
	filer_store_close(s);
	unlink(db);
	unlink(wal);
	unlink(shm);
	rmdir(dir);
	free(db);
	free(wal);
	free(shm);
	free(dsn);
}

/* ---- inode numbers ---- */

struct ino_job {
	struct filer_store *s;
	const char *dir;
	int who, n;
	uint64_t *out;
};

static void *ino_worker(void *arg)
{
	struct ino_job *j = arg;
	for (int i = 0; i < j->n; i++) {
		char name[32];
		struct filer_entry *e;
		snprintf(name, sizeof(name), "%d-%05d", j->who, i);
		e = mk(j->dir, name, 0);
		if (filer_store_insert(j->s, NULL, e) == WFS_OK)
			j->out[i] = e->attr.inode;
		filer_entry_free(e);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Inserts number entries, updates keep the number, handles and restarts never repeat one. */
static void test_inodes(const char *dsn)
{
	char *d = sub("inodes");
	struct filer_entry *e = mk(d, "a", 1), *f = NULL, *r;
	struct filer_store *s3 = NULL;
	struct filer_tx *tx = NULL;
	enum { PER = 1500, WORKERS = 4 };
	uint64_t *all = xcalloc(WORKERS * PER, sizeof(*all)), a, rolled = 0, later = 0;
	pthread_t th[WORKERS];
	struct ino_job jobs[WORKERS];
	size_t dups = 0, zeros = 0;

	is_int(filer_store_insert(st, NULL, e), WFS_OK, "insert without an inode");
	a = e->attr.inode;
	ok(a > FILER_ROOT_INODE, "insert gave it one (%llu)", (unsigned long long)a);
	is_int(filer_store_find(st, NULL, d, "a", &f), WFS_OK, "find");
	ok(f && f->attr.inode == a, "stored with the entry");
	filer_entry_free(f);
	e->attr.inode = 0;
	e->attr.size = 2;
	is_int(filer_store_update(st, NULL, e), WFS_OK, "update without an inode");
	ok(e->attr.inode == a, "keeps the stored one");
	/* a name of a hard-linked file replaced by a file of its own is a new file */
	e->attr.hard_link_id = (uint8_t *)xstrdup("0123456789abcdef");
	e->attr.hard_link_id_len = 16;
	is_int(filer_store_update(st, NULL, e), WFS_OK, "make it a link stub");
	free(e->attr.hard_link_id);
	e->attr.hard_link_id = NULL;
	e->attr.hard_link_id_len = 0;
	e->attr.inode = 0;
	is_int(filer_store_update(st, NULL, e), WFS_OK, "replace the stub by a plain file");
	ok(e->attr.inode && e->attr.inode != a, "which gets a new number");
	/* a rename re-inserts the entry with its number */
	filer_entry_set_path(e, d, "b");
	a = e->attr.inode;
	is_int(filer_store_insert(st, NULL, e), WFS_OK, "insert with an inode");
	ok(e->attr.inode == a, "keeps it");
	r = filer_entry_new("/", "");
	r->attr.mode = S_IFDIR | 0755;
	{
		wfs_err err = filer_store_insert(st, NULL, r);
		ok((err == WFS_OK || err == WFS_EEXIST) && r->attr.inode == FILER_ROOT_INODE,
		   "the root is inode 1");
		if (!err)
			filer_store_delete(st, NULL, "/", "");
	}
	filer_entry_free(r);

	/* two handles (two filers), two threads each, more than a block each: all distinct */
	for (int i = 0; i < WORKERS; i++) {
		jobs[i] = (struct ino_job){i % 2 ? st2 : st, d, i, PER, all + (size_t)i * PER};
		pthread_create(&th[i], NULL, ino_worker, &jobs[i]);
	}
	for (int i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	qsort(all, WORKERS * PER, sizeof(*all), cmp_u64);
	for (size_t i = 0; i < WORKERS * PER; i++) {
		zeros += all[i] == 0;
		dups += i && all[i] && all[i] == all[i - 1];
	}
	ok(!zeros && !dups, "%d inserts from 2 handles: %zu without a number, %zu repeated",
	   WORKERS * PER, zeros, dups);

	/* a transaction that reserved a block and rolled back leaves the block reserved */
	is_int(filer_store_open(dsn, &s3), WFS_OK, "a third handle");
	if (s3 && filer_store_begin(s3, &tx) == WFS_OK) {
		struct filer_entry *x = mk(d, "rolled", 0);
		if (filer_store_insert(s3, tx, x) == WFS_OK)
			rolled = x->attr.inode;
		filer_store_rollback(tx);
		filer_entry_free(x);
	}
	filer_store_close(s3);
	s3 = NULL;
	/* a restarted filer continues above what it reserved */
	is_int(filer_store_open(dsn, &s3), WFS_OK, "the third handle again (a restart)");
	if (s3) {
		struct filer_entry *x = mk(d, "later", 0);
		if (filer_store_insert(s3, NULL, x) == WFS_OK)
			later = x->attr.inode;
		filer_entry_free(x);
		filer_store_close(s3);
	}
	ok(rolled && later > rolled && later > all[WORKERS * PER - 1],
	   "after a rollback and a restart: %llu > %llu, above every number given",
	   (unsigned long long)later, (unsigned long long)rolled);
	filer_store_delete_children(st, NULL, d, NULL);
	filer_entry_free(e);
	free(all);
	free(d);
}

int main(int argc, char **argv)
{
	const char *dsn = argc > 1 ? argv[1] : getenv("WEEDFS_TEST_STORE_DSN");
	char tmpdir[] = "/tmp/test_filer_store.XXXXXX";
	char *own = NULL;
	wfs_err err;

	if (!dsn || !dsn[0])
		dsn = getenv("WEEDFS_TEST_PG_DSN");
	if (!dsn || !dsn[0]) {
		if (!mkdtemp(tmpdir)) {
			perror("mkdtemp");
			return 1;
		}
		own = xasprintf("sqlite://%s/filer.db", tmpdir);
		dsn = own;
	}
	snprintf(root, sizeof(root), "/t%d-%llu", (int)getpid(),
		 (unsigned long long)(time_now_ns() / 1000) % 1000000000ull);
	err = filer_store_open(dsn, &st);
	is_int(err, WFS_OK, "open store");
	if (err)
		return done_testing();
	printf("# store %s\n", filer_store_name(st));
	{
		struct filer_store *bad;
		is_int(filer_store_open("mysql://x", &bad), WFS_EINVAL, "unknown scheme refused");
	}
	test_crud();
	test_names();
	test_collision();
	test_delete_children();
	test_kv();
	test_tx();
	test_list_big();
	test_race();
	test_tx_concurrent();
	dsn_g = dsn;
	is_int(filer_store_open(dsn_g, &st2), WFS_OK, "open a second handle on the same database");
	if (st2) {
		test_events();
		test_events_threads();
		test_events_two_handles();
		test_gc();
		test_gc_race();
		test_inodes(dsn);
	}
	test_pg_outage();
	if (!strcmp(filer_store_name(st), "sqlite"))
		test_sqlite_checkpoints();
	filer_store_close(st2);
	filer_store_close(st);
	if (own) {
		char *p;
		static const char *const suffix[] = {"", "-wal", "-shm"};
		for (size_t i = 0; i < ARRAY_LEN(suffix); i++) {
			p = xasprintf("%s/filer.db%s", tmpdir, suffix[i]);
			unlink(p);
			free(p);
		}
		rmdir(tmpdir);
		free(own);
	}
	return done_testing();
}
