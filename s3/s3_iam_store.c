/*
 * The gateway's identities, static and stored (s3_iam_store.h).
 */
#include "config.h"
#include "s3/s3_iam_store.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <openssl/crypto.h>
#include "client/filer_meta.h"
#include "client/meta_stream.h"
#include "log.h"
#include "util.h"

struct s3_iam_store {
	filer_rpc *filer;
	struct s3_iam *statics;
	pthread_mutex_t reload_mu; /* one rebuild at a time: the later one reads later state */
	pthread_mutex_t mu;
	struct s3_iam *cur; /* protected by mu */
	meta_stream *stream;
};

static char *user_path(const char *name) { return xasprintf(S3_IAM_USERS_DIR "/%s", name); }

/* The user in entry e (its content), into *u: false (logged) when it does not parse. */
static bool user_of(const struct filer_entry *e, struct s3_iam_user *u)
{
	char msg[200] = "";
	if (e->has_content &&
	    s3_iam_user_parse((const char *)e->content, e->content_len, u, msg, sizeof(msg)) &&
	    !strcmp(u->name, e->name))
		return true;
	if (e->has_content && msg[0])
		log_warn("IAM user %s: its stored document is refused: %s", e->name, msg);
	s3_iam_user_clear(u);
	return false;
}

wfs_err s3_iam_store_read(struct s3_iam_store *st, const char *name, struct s3_iam_user *u,
			  char etag[17])
{
	struct filer_entry *e = NULL;
	char *path = user_path(name);
	wfs_err rc = filer_meta_lookup_etag(st->filer, path, &e, etag);
	memset(u, 0, sizeof(*u));
	if (!rc && !user_of(e, u))
		rc = WFS_EIO;
	if (e && e->content)
		OPENSSL_cleanse(e->content, e->content_len);
	filer_entry_free(e);
	free(path);
	return rc;
}

wfs_err s3_iam_store_write(struct s3_iam_store *st, const struct s3_iam_user *u,
			   const char *etag)
{
	buf doc = BUF_INIT;
	char *path = user_path(u->name);
	struct filer_meta_new n = {.mode = S_IFREG | 0600, .has_content = true, .parents = true};
	wfs_err rc;

	s3_iam_user_write(u, &doc);
	n.content = (const uint8_t *)doc.data;
	n.content_len = doc.len;
	n.exclusive = !etag;
	n.if_etag = etag;
	rc = filer_meta_create(st->filer, path, &n, NULL);
	OPENSSL_cleanse(doc.data, doc.len);
	buf_free(&doc);
	free(path);
	return rc;
}

wfs_err s3_iam_store_delete(struct s3_iam_store *st, const char *name, const char *etag)
{
	char *path = user_path(name);
	wfs_err rc = filer_meta_delete_if(st->filer, path, etag);
	free(path);
	return rc;
}

struct gather {
	struct s3_iam_store *st;
	struct s3_iam_user *v;
	size_t n;
};

static bool gather_one(const struct filer_entry *e, void *arg)
{
	struct gather *g = arg;
	struct s3_iam_user u;
	char etag[17];
	if (!S_ISREG(e->attr.mode))
		return true;
	/* a listing may leave inline content out: then the entry is looked up */
	if (e->has_content ? !user_of(e, &u) : s3_iam_store_read(g->st, e->name, &u, etag))
		return true;
	g->v = xrealloc(g->v, (g->n + 1) * sizeof(*g->v));
	g->v[g->n++] = u;
	return true;
}

wfs_err s3_iam_store_users(struct s3_iam_store *st, struct s3_iam_user **out, size_t *n)
{
	struct gather g = {.st = st};
	wfs_err rc = filer_meta_each(st->filer, S3_IAM_USERS_DIR, gather_one, &g);
	if (rc == WFS_ENOENT)
		rc = WFS_OK; /* no user made yet */
	if (rc) {
		for (size_t i = 0; i < g.n; i++)
			s3_iam_user_clear(&g.v[i]);
		free(g.v);
		g.v = NULL;
		g.n = 0;
	}
	*out = g.v;
	*n = g.n;
	return rc;
}

wfs_err s3_iam_store_reload(struct s3_iam_store *st)
{
	struct s3_iam_user *users;
	struct s3_iam *set, *old;
	size_t n;
	wfs_err rc;

	pthread_mutex_lock(&st->reload_mu);
	rc = s3_iam_store_users(st, &users, &n);
	if (rc) {
		log_warn("IAM users: cannot read %s: %s (keeping the identities known)",
			 S3_IAM_USERS_DIR, wfs_strerror(rc));
		goto out;
	}
	set = s3_iam_clone(st->statics);
	for (size_t i = 0; i < n; i++) {
		char msg[200];
		if (!s3_iam_add_user(set, &users[i], msg, sizeof(msg)))
			log_debug("IAM users: %s", msg);
		s3_iam_user_clear(&users[i]);
	}
	free(users);
	pthread_mutex_lock(&st->mu);
	old = st->cur;
	st->cur = set;
	pthread_mutex_unlock(&st->mu);
	s3_iam_free(old);
	log_debug("IAM users: %zu stored, %zu identities in all", n, s3_iam_count(set));
out:
	pthread_mutex_unlock(&st->reload_mu);
	return rc;
}

struct s3_iam *s3_iam_store_get(struct s3_iam_store *st)
{
	struct s3_iam *set;
	pthread_mutex_lock(&st->mu);
	set = s3_iam_ref(st->cur);
	pthread_mutex_unlock(&st->mu);
	return set;
}

bool s3_iam_store_is_static(struct s3_iam_store *st, const char *name)
{
	return s3_iam_find(st->statics, name) != NULL;
}

/* The event stream: any change under /etc/iam/, or a reconnect (events may have been
   missed), rebuilds the set. */
static void on_change(void *arg) { s3_iam_store_reload(arg); }

static void on_event(void *arg, const struct filer_entry *old_e, const struct filer_entry *new_e)
{
	(void)old_e;
	(void)new_e;
	s3_iam_store_reload(arg);
}

static const struct meta_stream_ops iam_stream_ops = {
	.connected = on_change,
	.event = on_event,
};

struct s3_iam_store *s3_iam_store_new(filer_rpc *filer, const char *filer_addr,
				      struct s3_iam *statics, bool watch)
{
	struct s3_iam_store *st = xcalloc(1, sizeof(*st));
	st->filer = filer;
	st->statics = statics;
	st->cur = s3_iam_clone(statics);
	pthread_mutex_init(&st->reload_mu, NULL);
	pthread_mutex_init(&st->mu, NULL);
	s3_iam_store_reload(st);
	if (watch) {
		struct meta_stream_opts o = {
			.filer = filer_addr,
			.path_prefix = "/etc/iam/",
			.thread_name = "wfs-s3-iam",
		};
		st->stream = meta_stream_start(&o, &iam_stream_ops, st);
	}
	return st;
}

void s3_iam_store_free(struct s3_iam_store *st)
{
	if (!st)
		return;
	meta_stream_stop(st->stream);
	s3_iam_free(st->cur);
	s3_iam_free(st->statics);
	pthread_mutex_destroy(&st->reload_mu);
	pthread_mutex_destroy(&st->mu);
	free(st);
}
