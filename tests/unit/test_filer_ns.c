/*
 * The filer's namespace core (filer/namespace.h) called directly on a filer
 * running in-process over SQLite in a temp dir: create (parents, exclusive,
 * ifEtag, moves, consume), update, xattrs, link, rename (POSIX, exchange,
 * SeaweedFS's into-a-directory), delete (recursive over more than a page of
 * children, with a hard link), a batch of xattrs (all or nothing, also through
 * the client over HTTP, and from threads in different orders), the verdicts
 * each gives and the events each records. Inline content needs no volume
 * server, so no master runs. After every operation the namespace locks must
 * be free again.
 */
#include "config.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "client/filer_meta.h"
#include "filer/filer.h"
#include "filer/filer_hardlink.h"
#include "filer/filer_int.h"
#include "filer/namespace.h"
#include "filer/store.h"
#include "http_client.h"
#include "tap.h"
#include "util.h"

#define MANY 1030 /* children of one directory: more than a page of the walk */

static struct filer *f;
static int64_t ev_since; /* events before this were looked at already */

/* Whether every namespace lock is free (nothing left held by an operation). */
static bool unlocked(void)
{
	bool free_ = pthread_rwlock_trywrlock(&f->ns_lock) == 0;
	if (free_)
		pthread_rwlock_unlock(&f->ns_lock);
	return free_;
}

static bool on_event(void *ctx, struct filer_event *ev)
{
	buf *log = ctx;
	char *o = ev->old_entry ? filer_entry_full_path(ev->old_entry) : xstrdup("-");
	char *n = ev->new_entry ? filer_entry_full_path(ev->new_entry) : xstrdup("-");
	buf_printf(log, "%s>%s\n", o, n);
	free(o);
	free(n);
	filer_event_free(ev);
	return true;
}

/* The events since the last call, one "old>new" line each ("-" for a missing side). */
static char *events(void)
{
	buf log = BUF_INIT;
	int64_t next = ev_since;
	wfs_err err;
	do {
		ev_since = next;
		err = filer_store_read_events(f->store, ev_since, NULL, 0, FILER_EVENTS_LIMIT_MAX,
					      on_event, &log, &next);
	} while (!err && next != ev_since);
	buf_append(&log, "", 1);
	return (char *)log.data;
}

static void is_events(const char *want, const char *name)
{
	char *got = events();
	is_str(got, want, name);
	free(got);
}

/* got is want; shows res's message when not. */
static void is_err(wfs_err got, wfs_err want, const struct ns_result *res, const char *name)
{
	if (!is_int(got, want, name))
		printf("#   msg: %s\n", res->msg);
}

/* A regular file entry at path with content s. */
static struct filer_entry *file_at(const char *path, const char *s)
{
	char *d = NULL, *n = NULL;
	struct filer_entry *e;
	filer_path_split(path, &d, &n);
	e = filer_entry_new(d, n);
	e->attr.mode = S_IFREG | 0644;
	e->attr.nlink = 1;
	e->attr.size = strlen(s);
	filer_entry_set_content(e, s, strlen(s));
	free(d);
	free(n);
	return e;
}

/* ns_create of a file at path with content s; the error. */
static wfs_err create(const char *path, const char *s, bool parents, struct ns_result *res)
{
	struct filer_entry *e = file_at(path, s);
	struct ns_create c = {.path = path, .dir = e->dir, .name = e->name, .parents = parents};
	bool replaced;
	wfs_err err = ns_create(f, 0, &c, e, &replaced, res);
	filer_entry_free(e);
	return err;
}

static struct filer_entry *find(const char *path)
{
	char *d = NULL, *n = NULL;
	struct filer_entry *e = NULL;
	filer_path_split(path, &d, &n);
	if (filer_find(f, NULL, d, n, &e))
		e = NULL;
	free(d);
	free(n);
	return e;
}

/* The content of the file at path ("" when missing). */
static char *content(const char *path)
{
	struct filer_entry *e = find(path);
	char *s = e && e->has_content ? xstrndup((const char *)e->content, e->content_len)
				      : xstrdup("");
	filer_entry_free(e);
	return s;
}

static void is_content(const char *path, const char *want, const char *name)
{
	char *s = content(path);
	is_str(s, want, name);
	free(s);
}

static void test_create(void)
{
	struct ns_result res = {0};
	struct filer_entry *e;
	char etag[NS_ETAG_SIZE];
	bool replaced = true;

	is_int(create("/c/a/f", "one", false, &res), WFS_ENOENT, "create without the parent");
	ok(!res.below, "a missing parent is a verdict: %s", res.msg);
	is_int(create("/c/a/f", "one", true, &res), WFS_OK, "create with parents");
	/* a directory made: its parent's link count too (the root is not counted) */
	is_events("->/c\n->/c/a\n/c>/c\n->/c/a/f\n", "an event per directory made, then the file");
	is_int(create("/c/a/f/g", "x", true, &res), WFS_ENOTDIR, "a file among the parents");
	is_events("", "a refused create records nothing");
	ok(unlocked(), "create released its locks");

	/* exclusive and ifEtag */
	e = file_at("/c/a/f", "two");
	{
		struct ns_create c = {.path = "/c/a/f", .dir = "/c/a", .name = "f",
				      .exclusive = true};
		is_int(ns_create(f, 0, &c, e, &replaced, &res), WFS_EEXIST, "exclusive");
		c.exclusive = false;
		c.if_etag = "0123456789abcdef";
		is_int(ns_create(f, 0, &c, e, &replaced, &res), WFS_EPRECOND, "ifEtag mismatch");
		filer_entry_free(e);
		e = find("/c/a/f");
		ns_etag(e, etag);
		filer_entry_free(e);
		e = file_at("/c/a/f", "two");
		for (char *p = etag; *p; p++)
			*p = (char)(*p >= 'a' ? *p - 'a' + 'A' : *p);
		c.if_etag = etag; /* any case of the hex digits */
		is_err(ns_create(f, 0, &c, e, &replaced, &res), WFS_OK, &res, "ifEtag match");
		ok(replaced, "the create replaced the file");
	}
	filer_entry_free(e);
	is_content("/c/a/f", "two", "replaced content");
	is_events("/c/a/f>/c/a/f\n", "one update event");

	/* moves and consume in one transaction */
	is_int(create("/c/p1", "p1", false, &res), WFS_OK, "part 1");
	is_int(create("/c/p2", "p2", false, &res), WFS_OK, "part 2");
	free(events()); /* skip what came before */
	e = file_at("/c/whole", "p1p2");
	{
		const char *consume[] = {"/c/p2"};
		struct ns_move mv[] = {{"/c/p1", "/c/v/p1", NULL}};
		struct ns_create c = {.path = "/c/whole", .dir = "/c", .name = "whole",
				      .consume = consume, .nconsume = 1, .moves = mv,
				      .nmoves = 1};
		is_err(ns_create(f, 0, &c, e, &replaced, &res), WFS_OK, &res,
		       "create with a move and a consumed file");
		ok(!replaced, "a new entry");
		consume[0] = "/c/v";
		mv[0] = (struct ns_move){"/c/nothing", "/c/x", NULL};
		is_int(ns_create(f, 0, &c, e, &replaced, &res), WFS_ENOENT, "a missing move");
		c.nmoves = 0;
		is_int(ns_create(f, 0, &c, e, &replaced, &res), WFS_EISDIR,
		       "consuming a directory");
	}
	filer_entry_free(e);
	is_events("->/c/v\n/c>/c\n/c/p1>/c/v/p1\n->/c/whole\n/c/p2>-\n",
		  "parents of the move, the move, the entry, the consumed file");
	is_content("/c/v/p1", "p1", "moved");
	ok(!find("/c/p1") && !find("/c/p2"), "moved and consumed files gone");
	ok(unlocked(), "locks released");
}

/* An ns_edit_fn that refuses. */
static wfs_err refuse(struct ns_tx *t, const struct filer_entry *old, struct filer_entry *e,
		      void *ctx)
{
	(void)old;
	(void)e;
	(void)ctx;
	return ns_fail(t->res, WFS_EPERM, "refused");
}

static void test_modify(void)
{
	struct ns_result res = {0};
	struct filer_attr a = {.mode = 0600, .size = 6};
	struct ns_update u = {.path = "/c/whole", .dir = "/c", .name = "whole",
			      .set = NS_SET_MODE | NS_SET_SIZE, .attr = &a};
	struct filer_entry *e = NULL;
	char etag[NS_ETAG_SIZE];

	is_err(ns_update(f, 0, &u, &e, &res), WFS_OK, &res, "update mode and size");
	ok(e && (e->attr.mode & 07777) == 0600 && S_ISREG(e->attr.mode), "mode set, type kept");
	ok(e && e->attr.size == 6 && e->content_len == 6 && !memcmp(e->content, "p1p2\0\0", 6),
	   "inline content zero-filled to the new size");
	ns_etag(e, etag);
	filer_entry_free(e);
	e = NULL;
	etag[0] = etag[0] == '0' ? '1' : '0';
	u.if_etag = etag;
	is_int(ns_update(f, 0, &u, &e, &res), WFS_EPRECOND, "update's ifEtag mismatch");
	u = (struct ns_update){.path = "/c/v", .dir = "/c", .name = "v", .set = NS_SET_SIZE,
			       .attr = &a};
	is_int(ns_update(f, 0, &u, &e, &res), WFS_EISDIR, "size of a directory");
	u.path = "/c/none";
	u.name = "none";
	is_int(ns_update(f, 0, &u, &e, &res), WFS_ENOENT, "update of a missing entry");
	is_int(ns_modify(f, 0, "/c/whole", "/c", "whole", NULL, refuse, NULL, NULL, &res),
	       WFS_EPERM, "an edit's own verdict");
	is_events("/c/whole>/c/whole\n", "one event: the update that happened");

	is_int(ns_xattr_set(f, 0, "/c/whole", "/c", "whole", "user.a", (const uint8_t *)"1", 1,
			    NS_XATTR_REPLACE, NULL, &e, &res),
	       WFS_ENODATA, "replace of an absent attribute");
	is_int(ns_xattr_set(f, 0, "/c/whole", "/c", "whole", "user.a", (const uint8_t *)"1", 1,
			    NS_XATTR_CREATE, NULL, &e, &res),
	       WFS_OK, "create an attribute");
	ok(e && e->n_xattrs == 1, "the entry after has it");
	filer_entry_free(e);
	e = NULL;
	is_int(ns_xattr_set(f, 0, "/c/whole", "/c", "whole", "user.a", (const uint8_t *)"2", 1,
			    NS_XATTR_CREATE, NULL, &e, &res),
	       WFS_EEXIST, "create of an existing attribute");
	is_int(ns_xattr_set(f, 0, "/c/whole", "/c", "whole", "user.a", (const uint8_t *)"2", 1,
			    NS_XATTR_ANY, "0000000000000000", &e, &res),
	       WFS_EPRECOND, "set at a stale etag");
	is_int(ns_xattr_remove(f, 0, "/c/whole", "/c", "whole", "user.a", "0000000000000000", &e,
			       &res),
	       WFS_EPRECOND, "remove at a stale etag");
	is_int(ns_xattr_remove(f, 0, "/c/whole", "/c", "whole", "user.a", NULL, &e, &res), WFS_OK,
	       "remove it");
	filer_entry_free(e);
	e = NULL;
	is_int(ns_xattr_remove(f, 0, "/c/whole", "/c", "whole", "user.a", NULL, &e, &res),
	       WFS_ENODATA, "remove of an absent attribute");
	is_events("/c/whole>/c/whole\n/c/whole>/c/whole\n", "an event per xattr change");
	ok(unlocked(), "locks released");
}

static void test_link_rename(void)
{
	struct ns_result res = {0};
	struct filer_entry *made = NULL, *e;
	struct ns_rename r = {.style = NS_RENAME_POSIX};
	char *tdir = NULL, *tname = NULL;

	is_int(ns_link(f, 0, "/c/v", "/c", "v", "/c/l", "/c", "l", &made, &res), WFS_EPERM,
	       "a directory cannot be linked");
	is_int(ns_link(f, 0, "/c/whole", "/c", "whole", "/c/a/f", "/c/a", "f", &made, &res),
	       WFS_EEXIST, "a link onto an existing name");
	is_int(ns_link(f, 0, "/c/whole", "/c", "whole", "/c/nodir/l", "/c/nodir", "l", &made,
		       &res),
	       WFS_ENOENT, "a link into a missing directory");
	is_err(ns_link(f, 0, "/c/whole", "/c", "whole", "/c/a/l", "/c/a", "l", &made, &res),
	       WFS_OK, &res, "link");
	ok(made && made->attr.nlink == 2, "two names");
	filer_entry_free(made);
	is_events("/c/whole>/c/whole\n->/c/a/l\n", "the target's change and the new name");

	/* POSIX rules */
	r = (struct ns_rename){.style = NS_RENAME_POSIX, .from = "/c/whole", .from_dir = "/c",
			       .from_name = "whole", .to = "/c/a/l", .to_dir = "/c/a",
			       .to_name = "l"};
	is_int(ns_rename(f, 0, &r, &res), WFS_OK, "onto its own hard link");
	is_events("", "does nothing");
	r.to = "/c/a";
	r.to_dir = "/c";
	r.to_name = "a";
	is_int(ns_rename(f, 0, &r, &res), WFS_EISDIR, "a file over a directory");
	r = (struct ns_rename){.style = NS_RENAME_POSIX, .from = "/c/a", .from_dir = "/c",
			       .from_name = "a", .to = "/c/a/x", .to_dir = "/c/a",
			       .to_name = "x"};
	is_int(ns_rename(f, 0, &r, &res), WFS_EINVAL, "a directory into itself");
	r.to = "/c/v";
	r.to_dir = "/c";
	r.to_name = "v";
	is_int(ns_rename(f, 0, &r, &res), WFS_ENOTEMPTY, "over a non-empty directory");
	r.exchange = true;
	is_err(ns_rename(f, 0, &r, &res), WFS_OK, &res, "exchange two directories");
	is_content("/c/v/f", "two", "the trees swapped");
	is_content("/c/a/p1", "p1", "both ways");
	is_events("/c/a>/c/v\n/c/v>/c/a\n", "two rename events");
	r.exchange = false;
	r.from = "/c/v/l";
	r.from_dir = "/c/v";
	r.from_name = "l";
	r.to = "/c/l2";
	r.to_dir = "/c";
	r.to_name = "l2";
	is_err(ns_rename(f, 0, &r, &res), WFS_OK, &res, "move a hard-linked name");
	e = find("/c/l2");
	ok(e && filer_hardlink_is_linked(e), "still linked");
	filer_entry_free(e);
	free(events()); /* skip what came before */

	/* SeaweedFS's rules: into an existing directory, parents made, files only replace files */
	is_int(ns_target_into(f, NULL, "/c", "a", "whole", &tdir, &tname), WFS_OK, "target");
	is_str(tdir, "/c/a", "into the directory");
	is_str(tname, "whole", "under the source's name");
	free(tdir);
	free(tname);
	r = (struct ns_rename){.style = NS_RENAME_SEAWEED, .from = "/c/whole",
			       .from_dir = "/c", .from_name = "whole", .to = "/c/a",
			       .to_dir = "/c", .to_name = "a"};
	is_err(ns_rename(f, 0, &r, &res), WFS_OK, &res, "mv.from into a directory");
	is_events("/c/whole>/c/a/whole\n", "one rename event");
	r = (struct ns_rename){.style = NS_RENAME_SEAWEED, .from = "/c/v", .from_dir = "/c",
			       .from_name = "v", .to = "/c/n/m/v", .to_dir = "/c/n/m",
			       .to_name = "v"};
	is_err(ns_rename(f, 0, &r, &res), WFS_OK, &res, "mv.from making parents");
	is_events("->/c/n\n/c>/c\n->/c/n/m\n/c/n>/c/n\n/c/v>/c/n/m/v\n/c>/c\n/c/n/m>/c/n/m\n",
		  "parents, then the rename, then the parents' link counts");
	is_content("/c/n/m/v/f", "two", "the tree moved");
	r = (struct ns_rename){.style = NS_RENAME_SEAWEED, .from = "/c/n", .from_dir = "/c",
			       .from_name = "n", .to = "/c/l2", .to_dir = "/c", .to_name = "l2"};
	is_int(ns_rename(f, 0, &r, &res), WFS_EEXIST, "a directory never replaces a file");
	ok(unlocked(), "locks released");
}

static void test_delete(void)
{
	struct ns_result res = {0};
	struct ns_delete d = {.path = "/c/big", .dir = "/c", .name = "big"};
	struct filer_entry *e;
	char *ev, path[64];
	size_t n = 0;

	d.path = "/";
	d.dir = "/";
	d.name = "";
	is_int(ns_delete(f, 0, &d, &res), WFS_EINVAL, "the root");
	d = (struct ns_delete){.path = "/c/none", .dir = "/c", .name = "none"};
	is_int(ns_delete(f, 0, &d, &res), WFS_ENOENT, "a missing entry");
	for (int i = 0; i < MANY; i++) {
		snprintf(path, sizeof(path), "/c/big/%04d", i);
		if (create(path, "", true, &res))
			break;
	}
	free(events()); /* skip what came before */
	d = (struct ns_delete){.path = "/c/big", .dir = "/c", .name = "big"};
	is_int(ns_delete(f, 0, &d, &res), WFS_ENOTEMPTY, "a non-empty directory");
	d.recursive = true;
	is_err(ns_delete(f, 0, &d, &res), WFS_OK, &res, "recursive");
	ev = events();
	for (const char *p = ev; (p = strstr(p, ">-\n")); p += 3)
		n++;
	is_int(n, MANY + 1, "an event per child over several pages, and the directory's");
	ok(strstr(ev, "/c/big>-\n") && !strcmp(strstr(ev, "/c/big>-\n"), "/c/big>-\n/c>/c\n"),
	   "the directory's last, then its parent's link count");
	free(ev);
	ok(!find("/c/big") && !find("/c/big/0000"), "the tree is gone");

	/* a hard-linked name: the other name keeps the file */
	d = (struct ns_delete){.path = "/c/l2", .dir = "/c", .name = "l2"};
	is_int(ns_delete(f, 0, &d, &res), WFS_OK, "delete one name of a link");
	e = find("/c/a/whole");
	ok(e != NULL, "the other name is there");
	filer_entry_free(e);
	{
		struct filer_entry *m = find("/c/a/whole");
		if (m && !filer_hardlink_resolve(f->store, NULL, &m))
			is_int(m->attr.nlink, 1, "one name left");
		filer_entry_free(m);
	}
	d = (struct ns_delete){.path = "/c", .dir = "/", .name = "c", .recursive = true};
	is_int(ns_delete(f, 0, &d, &res), WFS_OK, "delete everything");
	ok(unlocked(), "locks released");
}

static uint32_t links(const char *path)
{
	struct filer_entry *e = find(path);
	uint32_t n = e ? e->attr.nlink : 0;
	filer_entry_free(e);
	return n;
}

/* A directory's nlink: 2 + its subdirectories, and one stored before the filer counted. */
static void test_dir_links(void)
{
	struct ns_result res = {0};
	struct filer_entry *e;
	bool replaced;

	e = filer_dir_entry_new("/", "old", 0755);
	e->attr.nlink = 1; /* as a filer that did not count stored it */
	is_int(filer_store_insert(f->store, NULL, e), WFS_OK, "a directory without a count");
	filer_entry_set_path(e, "/old", "s1");
	is_int(filer_store_insert(f->store, NULL, e), WFS_OK, "its subdirectory");
	filer_entry_set_path(e, "/old", "s2");
	is_int(filer_store_insert(f->store, NULL, e), WFS_OK, "another");
	filer_entry_free(e);
	is_int(create("/old/file", "x", false, &res), WFS_OK, "a file in it");
	is_int(links("/old"), 1, "a file leaves it uncounted");
	e = filer_dir_entry_new("/old", "s3", 0755);
	{
		struct ns_create c = {.path = "/old/s3", .dir = "/old", .name = "s3"};
		is_err(ns_create(f, 0, &c, e, &replaced, &res), WFS_OK, &res, "mkdir in it");
	}
	filer_entry_free(e);
	is_int(links("/old"), 5, "counted at its first subdirectory change, that one included");
	is_int(links("/old/s3"), 2, "a new directory");
	{
		struct ns_delete d = {.path = "/old/s1", .dir = "/old", .name = "s1"};
		is_err(ns_delete(f, 0, &d, &res), WFS_OK, &res, "rmdir");
	}
	is_int(links("/old"), 4, "one less");
	free(events());
}

/* ---- a batch of xattrs ---- */

/* A set of xname to s on path (a remove when s is NULL), with if_etag. */
static struct ns_xattr_op xop(const char *path, const char *xname, const char *s,
			      const char *if_etag)
{
	static char dirs[64][64], names[64][64];
	static size_t next;
	char *d = NULL, *n = NULL;
	size_t k = next++ % 64;

	filer_path_split(path, &d, &n);
	snprintf(dirs[k], sizeof(dirs[k]), "%s", d);
	snprintf(names[k], sizeof(names[k]), "%s", n);
	free(d);
	free(n);
	return (struct ns_xattr_op){path,    dirs[k],		  names[k],  xname, !s,
				    (const uint8_t *)s, s ? strlen(s) : 0, NS_XATTR_ANY, if_etag};
}

/* The value of xname at path ("-" when absent) and, unless NULL, its etag. */
static char *xval(const char *path, const char *xname, char etag[NS_ETAG_SIZE])
{
	struct filer_entry *e = find(path);
	const struct filer_xattr *x;
	char *v;

	if (e && filer_hardlink_resolve(f->store, NULL, &e)) {
		filer_entry_free(e);
		e = NULL;
	}
	x = e ? filer_entry_xattr_get(e, xname) : NULL;
	v = x ? xstrndup((const char *)x->value, x->value_len) : xstrdup("-");
	if (etag)
		ns_etag(e, etag);
	filer_entry_free(e);
	return v;
}

static void is_xval(const char *path, const char *xname, const char *want, const char *name)
{
	char *v = xval(path, xname, NULL);
	is_str(v, want, name);
	free(v);
}

static void test_xattrs_batch(void)
{
	struct ns_result res = {0};
	char ea[NS_ETAG_SIZE], eb[NS_ETAG_SIZE], ec[NS_ETAG_SIZE], etags[4][NS_ETAG_SIZE];
	struct ns_xattr_op ops[4];
	size_t failed = 0;
	struct filer_entry *made = NULL;

	is_err(create("/xb/a", "a", true, &res), WFS_OK, &res, "file a");
	is_err(create("/xb/b", "b", false, &res), WFS_OK, &res, "file b");
	is_err(create("/xb/c", "c", false, &res), WFS_OK, &res, "file c");
	free(events());
	free(xval("/xb/a", "user.p", ea));
	free(xval("/xb/b", "user.p", eb));
	free(xval("/xb/c", "user.p", ec));

	/* one stale etag of three: nothing changes, its index is reported */
	ops[0] = xop("/xb/c", "user.p", "c1", ec);
	ops[1] = xop("/xb/a", "user.p", "a1", ea);
	ops[2] = xop("/xb/b", "user.p", "b1", ec);
	is_int(ns_xattrs_set(f, 0, ops, 3, etags, &failed, &res), WFS_EPRECOND,
	       "a stale etag refuses the batch");
	is_int(failed, 2, "the op with the stale etag");
	is_xval("/xb/a", "user.p", "-", "a unchanged");
	is_xval("/xb/c", "user.p", "-", "c unchanged");
	ops[2] = xop("/xb/none", "user.p", "b1", NULL);
	is_int(ns_xattrs_set(f, 0, ops, 3, etags, &failed, &res), WFS_ENOENT, "a missing path");
	is_int(failed, 2, "its index");
	ops[2] = xop("/xb/b", "user.gone", NULL, NULL);
	is_int(ns_xattrs_set(f, 0, ops, 3, etags, &failed, &res), WFS_ENODATA,
	       "a remove of an absent attribute refuses the batch");
	is_int(failed, 2, "its index");
	is_events("", "no events for refused batches");

	/* all three, two ops on a: one write and one event each, in path order */
	ops[2] = xop("/xb/b", "user.p", "b1", eb);
	ops[3] = xop("/xb/a", "user.q", "a2", ea);
	is_err(ns_xattrs_set(f, 0, ops, 4, etags, &failed, &res), WFS_OK, &res, "the batch");
	is_xval("/xb/a", "user.p", "a1", "a set");
	is_xval("/xb/a", "user.q", "a2", "a's second op");
	is_xval("/xb/b", "user.p", "b1", "b set");
	is_xval("/xb/c", "user.p", "c1", "c set");
	free(xval("/xb/a", "user.p", ea));
	free(xval("/xb/c", "user.p", ec));
	ok(!strcmp(etags[0], ec) && !strcmp(etags[1], ea) && !strcmp(etags[3], ea),
	   "each op's new etag, in op order");
	is_events("/xb/a>/xb/a\n/xb/b>/xb/b\n/xb/c>/xb/c\n", "an event per entry");

	/* a verdict of an edit: create of an existing attribute */
	ops[0] = xop("/xb/a", "user.p", NULL, ea);
	ops[1] = xop("/xb/c", "user.p", "c2", NULL);
	ops[1].flag = NS_XATTR_CREATE;
	is_int(ns_xattrs_set(f, 0, ops, 2, etags, &failed, &res), WFS_EEXIST,
	       "create of an existing attribute");
	is_int(failed, 1, "its index");
	is_xval("/xb/a", "user.p", "a1", "the remove before it is rolled back");

	/* two names of one hard-linked file: the one file gets both changes */
	is_err(ns_link(f, 0, "/xb/b", "/xb", "b", "/xb/l", "/xb", "l", &made, &res), WFS_OK, &res,
	       "link b");
	filer_entry_free(made);
	free(events());
	ops[0] = xop("/xb/l", "user.h1", "1", NULL);
	ops[1] = xop("/xb/b", "user.h2", "2", NULL);
	is_err(ns_xattrs_set(f, 0, ops, 2, etags, &failed, &res), WFS_OK, &res,
	       "both names in one batch");
	is_xval("/xb/l", "user.h2", "2", "through one name, the other's change");
	is_xval("/xb/b", "user.h1", "1", "and the other way");
	free(xval("/xb/b", "user.p", eb));
	ok(!strcmp(etags[0], eb) && !strcmp(etags[1], eb), "one file, one etag");
	is_events("/xb/b>/xb/b\n/xb/l>/xb/l\n", "one write of the file, the other name's event");
	ok(unlocked(), "locks released");
}

/* The batch through the client (filer_meta_set_xattrs_if) over HTTP. */
static void test_xattrs_batch_client(void)
{
	char *addr = xasprintf("127.0.0.1:%d", filer_port(f));
	filer_rpc *r = filer_rpc_new(addr, 10000, 5, 0);
	char ea[17], ec[17], etags[3][17], stale[17];
	struct filer_meta_xattr_op ops[3];
	size_t failed = 7;

	is_int(filer_meta_lookup_etag(r, "/xb/a", NULL, ea), WFS_OK, "lookup a");
	is_int(filer_meta_lookup_etag(r, "/xb/c", NULL, ec), WFS_OK, "lookup c");
	memcpy(stale, ec, sizeof(stale));
	stale[0] = stale[0] == '0' ? '1' : '0';
	ops[0] = (struct filer_meta_xattr_op){"/xb/a", "user.m", "m1", 2, FM_XATTR_ANY, ea};
	ops[1] = (struct filer_meta_xattr_op){"/xb/c", "user.m", "m1", 2, FM_XATTR_CREATE, stale};
	ops[2] = (struct filer_meta_xattr_op){"/xb/a", "user.p", NULL, 0, FM_XATTR_ANY, NULL};
	is_int(filer_meta_set_xattrs_if(r, ops, 3, &failed, etags), WFS_EPRECOND,
	       "client: a stale etag");
	is_int(failed, 1, "client: the index");
	is_xval("/xb/a", "user.p", "a1", "client: nothing changed");
	ops[1].if_etag = ec;
	is_int(filer_meta_set_xattrs_if(r, ops, 3, &failed, etags), WFS_OK, "client: the batch");
	is_int(failed, SIZE_MAX, "client: no index on success");
	is_xval("/xb/a", "user.p", "-", "client: removed");
	is_xval("/xb/c", "user.m", "m1", "client: set");
	is_int(filer_meta_lookup_etag(r, "/xb/a", NULL, ea), WFS_OK, "lookup a again");
	ok(!strcmp(etags[0], ea) && !strcmp(etags[2], ea), "client: a's new etag (%s)", etags[0]);
	ops[1].path = "/xb/none";
	is_int(filer_meta_set_xattrs_if(r, ops, 3, &failed, NULL), WFS_ENOENT,
	       "client: a missing path");
	is_int(failed, 1, "client: its index");
	is_int(filer_meta_set_xattrs_if(r, ops, 0, &failed, NULL), WFS_EINVAL, "client: no ops");
	filer_rpc_free(r);
	free(addr);
	free(events());
}

#define RACERS 8
#define ROUNDS 40

/* Sets user.n to its own number on the four paths, each round in another order. */
static void *xattrs_racer(void *arg)
{
	static const char *const paths[] = {"/xr/0", "/xr/1", "/xr/2", "/xr/3"};
	size_t id = (size_t)(uintptr_t)arg;
	char v[8];
	wfs_err err = WFS_OK;

	snprintf(v, sizeof(v), "%zu", id);
	for (size_t round = 0; round < ROUNDS && !err; round++) {
		struct ns_xattr_op ops[4];
		struct ns_result res = {0};
		size_t failed;
		for (size_t i = 0; i < 4; i++) {
			/* odd racers go backwards: every pair of orders differs somewhere */
			const char *p = paths[(i * (id % 2 ? 3 : 1) + id + round) % 4];
			ops[i] = (struct ns_xattr_op){p, "/xr", p + 4, "user.n", false,
						      (const uint8_t *)v, strlen(v), NS_XATTR_ANY,
						      NULL};
		}
		err = ns_xattrs_set(f, 0, ops, 4, NULL, &failed, &res);
	}
	return (void *)(uintptr_t)err;
}

/* Batches over the same paths in different orders: no deadlock, never half applied. */
static void test_xattrs_batch_race(void)
{
	pthread_t t[RACERS];
	struct ns_result res = {0};
	bool all_ok = true;
	char *v0, *v;

	for (size_t i = 0; i < 4; i++) {
		char p[16];
		snprintf(p, sizeof(p), "/xr/%zu", i);
		is_err(create(p, "x", true, &res), WFS_OK, &res, "a racer's file");
	}
	for (size_t i = 0; i < RACERS; i++)
		pthread_create(&t[i], NULL, xattrs_racer, (void *)(uintptr_t)i);
	for (size_t i = 0; i < RACERS; i++) {
		void *rc;
		pthread_join(t[i], &rc);
		all_ok &= rc == NULL;
	}
	ok(all_ok, "every batch of every racer applied");
	v0 = xval("/xr/0", "user.n", NULL);
	for (size_t i = 1; i < 4; i++) {
		char p[16];
		snprintf(p, sizeof(p), "/xr/%zu", i);
		v = xval(p, "user.n", NULL);
		ok(!strcmp(v, v0) && strcmp(v, "-"), "%s holds the last batch's value (%s, %s)", p,
		   v, v0);
		free(v);
	}
	free(v0);
	free(events());
	ok(unlocked(), "locks released");
}

int main(void)
{
	char dir[] = "/tmp/weedfs-ns-test.XXXXXX";
	struct filer_opts o;
	wfs_err err;

	http_client_global_init();
	ok(mkdtemp(dir) != NULL, "temp dir");
	filer_opts_default(&o);
	o.port = 0;
	o.dir = dir;
	o.master = "127.0.0.1:1"; /* never asked: everything here is inline */
	o.threads = 1;
	f = filer_start(&o, &err);
	ok(f != NULL, "filer starts");
	if (f) {
		free(events()); /* skip what came before */
		test_create();
		test_modify();
		test_link_rename();
		test_delete();
		test_dir_links();
		test_xattrs_batch();
		test_xattrs_batch_client();
		test_xattrs_batch_race();
		filer_stop(f);
	}
	{
		char *cmd = xasprintf("rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "# could not remove %s\n", dir);
		free(cmd);
	}
	return done_testing();
}
