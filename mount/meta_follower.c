/*
 * The metadata event follower (meta_follower.h).
 *
 * DESIGN: one thread, one libcurl stream at a time (lib/http_client.h
 * buffers whole bodies, a stream never ends). Lines are split in the write
 * callback and handled at once. An event names up to two paths (old and new
 * entry); for each, the parent is resolved through the inode table (a name
 * whose parent the kernel does not know cannot be cached by it). The stream
 * is opened with the mount's signature, so the changes the mount made itself
 * do not come back (the filer leaves them out); an entry whose ctime is not
 * newer than the one the mount already cached (it read the change back
 * meanwhile) is kept. Kernel notifications are sent with no table lock held
 * (the kernel may call back into the file system).
 */
#include "config.h"
#include "meta_follower.h"
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "client/filer_meta.h"
#include "json.h"
#include "log.h"
#include "util.h"

/* Idle heartbeat the filer sends; a stream silent for STALL_SECONDS is dropped. */
#define HEARTBEAT_SECONDS 2
#define STALL_SECONDS     10
#define LINE_MAX_BYTES    (64u << 20)

struct meta_follower {
	struct mount_ctx *m;
	char *filer;
	pthread_t th;
	atomic_bool stop;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* signalled by stop: ends a back-off sleep */
	int64_t last_ts;   /* thread only: resume point, -1 = none yet */
	bool got_line;     /* thread only: this stream delivered something */
	buf line;          /* thread only: a partial line */
};

/*
 * Events leave inline content out (docs/filer-events.md). For an inode with
 * open file data the current entry is looked up, content included, so the
 * data can be reset from it; NULL when nothing is open, or on failure (the
 * inode is then only invalidated, like a hard link's stub).
 */
static struct filer_entry *content_for_reset(struct meta_follower *f, struct inode *n,
					     const char *path, const struct filer_entry *e)
{
	struct filer_entry *got = NULL;
	bool open;

	pthread_mutex_lock(&n->mu);
	open = n->fd && !file_data_dirty(n->fd);
	pthread_mutex_unlock(&n->mu);
	if (!open || filer_meta_lookup(f->m->rpc, path, &got))
		return NULL;
	if (got->attr.ctime_ns < e->attr.ctime_ns || got->content_omitted) {
		filer_entry_free(got);
		return NULL;
	}
	return got;
}

/* Drops what the mount and the kernel cache for the name at path; e is the new entry or NULL. */
static void invalidate_path(struct meta_follower *f, const char *path, const struct filer_entry *e,
			    bool name_changed)
{
	struct mount_ctx *m = f->m;
	char *dir = NULL, *name = NULL;
	struct inode *n = NULL, *pn = NULL;
	uint64_t pino;

	if (!strcmp(path, m->root)) {
		n = itable_get(m->it, ITABLE_ROOT);
		itable_uncache(n);
		itable_put(m->it, n);
		fuse_lowlevel_notify_inval_inode(m->se, ITABLE_ROOT, -1, 0);
		return;
	}
	if (filer_path_split(path, &dir, &name))
		return;
	pino = itable_resolve(m->it, dir);
	if (!pino || (pino == ITABLE_ROOT && !strcmp(name, MOUNT_TRASH_NAME)))
		goto out;
	n = itable_get_name(m->it, pino, name);
	if (n && e) {
		bool current = false, reset = false;
		struct filer_entry *full = e->content_omitted && !name_changed
						   ? content_for_reset(f, n, path, e)
						   : NULL;
		const struct filer_entry *base = full ? full : e;
		bool stub = (e->attr.hard_link_id_len && !e->n_chunks && !e->has_content &&
			     e->attr.size) ||
			    (e->content_omitted && !full);
		pthread_mutex_lock(&n->mu);
		if (n->cached && n->attr.ctime_ns >= e->attr.ctime_ns && n->cached_until)
			current = true; /* the mount has read this change back already */
		/* a rename moves a name, not data (and may carry a hard link's stub) */
		if (n->fd && !name_changed && !stub && base->attr.ctime_ns > n->base_ctime_ns &&
		    !file_data_dirty(n->fd)) {
			file_data_reset(n->fd, base);
			n->base_ctime_ns = base->attr.ctime_ns;
			reset = true;
		}
		if (!current)
			n->cached_until = 0;
		pthread_mutex_unlock(&n->mu);
		filer_entry_free(full);
		if (!current || reset)
			fuse_lowlevel_notify_inval_inode(m->se, n->ino, 0, 0);
	} else if (n) {
		itable_uncache(n);
		fuse_lowlevel_notify_inval_inode(m->se, n->ino, -1, 0);
	}
	if (!n || !e || name_changed) {
		fuse_lowlevel_notify_inval_entry(m->se, pino, name, strlen(name));
		pn = itable_get(m->it, pino);
		if (pn)
			itable_uncache(pn);
		itable_put(m->it, pn);
		fuse_lowlevel_notify_inval_inode(m->se, pino, -1, 0);
	}
out:
	itable_put(m->it, n);
	free(dir);
	free(name);
}

static void handle_line(struct meta_follower *f, const char *s, size_t len)
{
	struct filer_entry *oe = NULL, *ne = NULL;
	yajl_val tree, ov, nv;
	char msg[128];
	int64_t ts;

	tree = json_parse(s, len, msg, sizeof(msg));
	if (!tree) {
		log_warn("event stream: bad line: %s", msg);
		return;
	}
	if (json_get_i64(tree, "tsNs", &ts))
		f->last_ts = ts;
	if (!f->got_line) {
		/* (re)connected: what was cached while no event could arrive is suspect */
		itable_uncache_all(f->m->it);
		atomic_store(&f->m->following, true);
	}
	f->got_line = true;
	if (!json_get(tree, "directory")) {
		/* a heartbeat: a quiet moment to give forgotten inodes' memory back */
		itable_trim(f->m->it);
		goto out;
	}
	ov = json_get(tree, "oldEntry");
	nv = json_get(tree, "newEntry");
	if (ov && !YAJL_IS_NULL(ov))
		oe = filer_meta_entry_from_json(ov);
	if (nv && !YAJL_IS_NULL(nv))
		ne = filer_meta_entry_from_json(nv);
	if (oe && ne) {
		char *op = filer_entry_full_path(oe), *np = filer_entry_full_path(ne);
		if (strcmp(op, np)) {
			invalidate_path(f, op, NULL, true);
			invalidate_path(f, np, ne, true);
		} else {
			invalidate_path(f, np, ne, false);
		}
		free(op);
		free(np);
	} else if (oe || ne) {
		char *p = filer_entry_full_path(oe ? oe : ne);
		invalidate_path(f, p, ne, true);
		free(p);
	}
out:
	filer_entry_free(oe);
	filer_entry_free(ne);
	yajl_tree_free(tree);
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct meta_follower *f = arg;
	size_t n = size * nmemb, start = 0;

	if (atomic_load(&f->stop))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (ptr[i] != '\n')
			continue;
		if (f->line.len) {
			buf_append(&f->line, ptr + start, i - start);
			handle_line(f, f->line.data, f->line.len);
			buf_reset(&f->line);
		} else if (i > start) {
			handle_line(f, ptr + start, i - start);
		}
		start = i + 1;
	}
	if (start < n) {
		if (f->line.len + (n - start) > LINE_MAX_BYTES)
			return 0; /* no event is that large: drop the stream */
		buf_append(&f->line, ptr + start, n - start);
	}
	return n;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct meta_follower *f = arg;

	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return atomic_load(&f->stop) ? 1 : 0;
}

/* One stream until it ends. */
static void follow_once(struct meta_follower *f, CURL *c)
{
	char *prefix = curl_easy_escape(c, f->m->root, 0), *url;
	long status = 0;
	CURLcode cc;

	/* signature: the events of this mount's own changes are left out */
	if (f->last_ts >= 0)
		url = xasprintf("http://%s/.meta/subscribe?pathPrefix=%s&heartbeatSeconds=%d"
				"&signature=%d&sinceNs=%lld",
				f->filer, prefix, HEARTBEAT_SECONDS, (int)f->m->signature,
				(long long)f->last_ts);
	else
		url = xasprintf("http://%s/.meta/subscribe?pathPrefix=%s&heartbeatSeconds=%d"
				"&signature=%d",
				f->filer, prefix, HEARTBEAT_SECONDS, (int)f->m->signature);
	curl_free(prefix);
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)STALL_SECONDS);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, f);
	buf_reset(&f->line);
	f->got_line = false;
	cc = curl_easy_perform(c);
	atomic_store(&f->m->following, false);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (!atomic_load(&f->stop)) {
		if (cc != CURLE_OK)
			log_debug("event stream from %s ended: %s", f->filer,
				  curl_easy_strerror(cc));
		else if (status != 200)
			log_warn("event stream from %s: HTTP %ld", f->filer, status);
	}
	free(url);
}

static void *follower_main(void *arg)
{
	struct meta_follower *f = arg;
	CURL *c = curl_easy_init();
	long backoff_ms = 100;

	pthread_setname_np(pthread_self(), "wfs-follower"); /* top -H, gdb, tests */
	if (!c) {
		log_error("event stream: no curl handle; changes by others show after the cache "
			  "timeouts only");
		return NULL;
	}
	while (!atomic_load(&f->stop)) {
		struct timespec dl;
		follow_once(f, c);
		if (f->got_line)
			backoff_ms = 100;
		pthread_mutex_lock(&f->mu);
		dl = time_deadline(CLOCK_REALTIME, (uint64_t)backoff_ms * 1000000u);
		while (!atomic_load(&f->stop))
			if (pthread_cond_timedwait(&f->cv, &f->mu, &dl) == ETIMEDOUT)
				break;
		pthread_mutex_unlock(&f->mu);
		backoff_ms = backoff_ms * 2 > 2000 ? 2000 : backoff_ms * 2;
	}
	curl_easy_cleanup(c);
	return NULL;
}

meta_follower *meta_follower_start(struct mount_ctx *m, const char *filer_addr)
{
	struct meta_follower *f = xcalloc(1, sizeof(*f));

	f->m = m;
	f->filer = xstrdup(filer_addr);
	f->last_ts = -1;
	atomic_init(&f->stop, false);
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	buf_init(&f->line);
	if (pthread_create(&f->th, NULL, follower_main, f))
		fatal("could not start the event follower thread");
	return f;
}

void meta_follower_stop(meta_follower *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	atomic_store(&f->stop, true);
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	pthread_join(f->th, NULL);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cv);
	buf_free(&f->line);
	free(f->filer);
	free(f);
}
