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

static char *sub(const char *name)
{
	return xasprintf("%s/%s", root, name);
}

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
	wfs_err err = filer_store_list(st, NULL, dir, start, incl, limit, prefix, collect_fn, &c,
				       NULL);
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
		err = filer_store_list(st, NULL, d, start, false, 333, NULL, collect_fn, &all, &count);
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
	is_int(filer_store_list(st, NULL, d, NULL, false, FILER_LIST_LIMIT_MAX + 1, NULL, collect_fn,
				&all, NULL),
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
		"a%b", "a_b", "axb", "a\\b", "a%", "a", "ab", "é", "日本語.txt", "emoji-😀",
		"a'b\"c", "_", "%", "\xf4\x8f\xbf\xbf" "x", "\xf4\x8f\xbf\xbf", "z\x7f", "sp ace",
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
	is_str(s, "\xf4\x8f\xbf\xbf,\xf4\x8f\xbf\xbf" "x", "prefix of the last code point");
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
	is_int(filer_store_kv_put(st, NULL, key, (size_t)klen, "", 0), WFS_OK, "kv overwrite empty");
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
	is_int(filer_store_kv_get(st, NULL, "txkey", 5, &v, &vl), WFS_ENOENT, "rollback: kv undone");
	s = list_str(d, NULL, false, 10, NULL);
	is_str(s, "existing", "rollback leaves nothing");
	free(s);

	is_int(filer_store_begin(st, &tx), WFS_OK, "begin");
	filer_entry_set_path(e, d, "committed");
	is_int(filer_store_insert(st, tx, e), WFS_OK, "insert");
	is_int(filer_store_insert(st, tx, e), WFS_EEXIST, "duplicate inside tx");
	is_int(filer_store_commit(tx), WFS_OK, "commit after a refused duplicate");
	is_int(size_of(NULL, d, "committed"), 7, "committed insert visible");
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
	test_pg_outage();
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
