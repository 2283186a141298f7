/*
 * The data of a file open on the mount (file_data.h): the file's object, its
 * base and the state the other modules of the layer work on (file_data_int.h
 * lists them: writes, uploads, commits, reads, the mount-wide state).
 *
 * DESIGN
 * - A file's bytes = the base (what the filer last described: inline content
 *   or a resolved chunk list, plus its size) overlaid by "pending" chunks
 *   (uploaded by this mount but not yet committed) overlaid by dirty ranges
 *   in memory (file_data_write.c). Chunk overlap is the filer's newest-wins
 *   rule, so every chunk this mount uploads gets an mtime above anything it
 *   has seen (file_data_next_mtime).
 * - Every change of the base or the pending list bumps the file's version
 *   (file_data_changed): readers plan the chunks once per version and retry
 *   when it moved under them (file_data_read.c).
 * - One mutex per file (mu) guards all of it. Network I/O never runs under a
 *   file's lock, except manifest resolution (rare: only lists of over a
 *   thousand chunks have manifests).
 * - A file's chunks that this mount uploaded and then dropped without
 *   committing go to the mount's orphan queue (file_data_chunk_drop,
 *   mount_data.c), except those a commit may have referenced (the file's
 *   `sent` list, file_data_commit.c).
 * - fsync: the volumes of chunks uploaded without fsync=true (background
 *   uploads, plain closes' flushes) are kept in `unsynced`; so are the base's,
 *   once, since whoever wrote them may not have synced them. An fsync syncs
 *   those volumes on every replica (file_data_sync_volumes) before the durable
 *   commit; `durable` then says nothing changed since, so another fsync costs
 *   no round trip.
 */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "client/chunk_io.h"
#include "client/chunks.h"
#include "client/fid.h"
#include "log.h"
#include "mount/file_data_int.h"
#include "util.h"

/* ---- the file's state ---- */

int64_t file_data_next_mtime(file_data *fd)
{
	int64_t now = (int64_t)time_now_ns();
	fd->max_mtime = now > fd->max_mtime ? now : fd->max_mtime + 1;
	return fd->max_mtime;
}

static void note_mtimes(file_data *fd, const struct filer_chunk *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (c[i].mtime_ns > fd->max_mtime)
			fd->max_mtime = c[i].mtime_ns;
}

void file_data_changed(file_data *fd)
{
	fd->version++;
	fd->views_ok = false;
}

void file_data_chunk_drop(file_data *fd, const char *fid)
{
	if (!fid)
		return;
	if (!fid_list_has(&fd->sent, fid))
		mount_data_orphan(fd->md, xstrdup(fid));
}

/* Adds vid to the unsynced volumes. mu held. */
static void unsynced_add(file_data *fd, uint32_t vid)
{
	for (size_t i = 0; i < fd->nunsynced; i++)
		if (fd->unsynced[i] == vid)
			return;
	fd->unsynced = xrealloc(fd->unsynced, (fd->nunsynced + 1) * sizeof(*fd->unsynced));
	fd->unsynced[fd->nunsynced++] = vid;
}

/* Notes the volumes of chunks c[0..n) as unsynced. mu held. */
static void unsynced_add_chunks(file_data *fd, const struct filer_chunk *c, size_t n)
{
	struct fid f;
	for (size_t i = 0; i < n; i++)
		if (c[i].fid && !fid_parse(c[i].fid, &f, NULL))
			unsynced_add(fd, f.volume_id);
}

void file_data_note_unsynced(file_data *fd, const char *fid)
{
	struct filer_chunk c = {.fid = (char *)fid};
	unsynced_add_chunks(fd, &c, 1);
	fd->durable = false;
}

bool file_data_dirty_locked(const file_data *fd)
{
	return fd->nslots || fd->pend.n || fd->size_dirty || fd->holes_dirty;
}

void file_data_wait_quiet(file_data *fd)
{
	while (fd->jobs || fd->flushing)
		pthread_cond_wait(&fd->cond, &fd->mu);
}

/* ---- the base ---- */

static void base_set(file_data *fd, const struct filer_entry *e)
{
	file_data_tail_drop(fd); /* its chunk may be gone from the new base */
	chunk_list_clear(&fd->base);
	for (size_t i = 0; i < e->n_chunks; i++)
		chunk_list_push(&fd->base, &e->chunks[i]);
	note_mtimes(fd, e->chunks, e->n_chunks);
	fd->base_resolved = false;
	free(fd->inl);
	fd->inl = NULL;
	fd->inl_len = 0;
	fd->has_inl = e->has_content;
	fd->filer_inline = e->has_content;
	if (e->has_content && e->content_len) {
		fd->inl_len = MIN(e->content_len, (size_t)MIN(e->attr.size, SIZE_MAX));
		fd->inl = xmalloc(fd->inl_len ? fd->inl_len : 1);
		memcpy(fd->inl, e->content, fd->inl_len);
	}
	fd->base_size = e->attr.size;
	fd->base_unsynced = true; /* written by someone else, maybe without fsync */
	fd->durable = false;
	file_data_changed(fd);
}

wfs_err file_data_base_resolve(file_data *fd)
{
	struct filer_chunk *garbage = NULL;
	size_t ng = 0;
	bool manifests = false;
	if (fd->base_resolved)
		return WFS_OK;
	for (size_t i = 0; i < fd->base.n; i++)
		manifests |= fd->base.c[i].is_manifest;
	if (manifests) {
		struct filer_chunk *out = NULL;
		size_t n = 0;
		wfs_err err = chunk_resolve_manifests(fd->md->bc, fd->base.c, fd->base.n, &out, &n);
		if (err) {
			log_warn("mount: resolving manifests: %s", wfs_strerror(err));
			return file_data_blob_err(err);
		}
		chunk_list_clear(&fd->base);
		fd->base.c = out;
		fd->base.n = fd->base.cap = n;
		note_mtimes(fd, out, n);
	}
	/* a list reaching past the size would show stale bytes after an extension */
	if (chunks_truncate(fd->base.c, &fd->base.n, fd->base_size, &garbage, &ng))
		return WFS_EIO; /* a manifest left in a resolved list: cannot happen */
	filer_chunks_free(garbage, ng);
	fd->base_resolved = true;
	file_data_changed(fd);
	return WFS_OK;
}

/* ---- API ---- */

file_data *file_data_new(mount_data *md, const struct filer_entry *e)
{
	file_data *fd = xcalloc(1, sizeof(*fd));
	fd->md = md;
	pthread_mutex_init(&fd->mu, NULL);
	pthread_cond_init(&fd->cond, NULL);
	base_set(fd, e);
	fd->size = e->attr.size;
	fd->trunc_min = UINT64_MAX;
	pthread_mutex_lock(&md->list_mu);
	fd->next = md->files;
	if (md->files)
		md->files->prev = fd;
	md->files = fd;
	pthread_mutex_unlock(&md->list_mu);
	return fd;
}

void file_data_free(file_data *fd)
{
	mount_data *md;
	if (!fd)
		return;
	md = fd->md;
	pthread_mutex_lock(&fd->mu);
	while (fd->jobs)
		pthread_cond_wait(&fd->cond, &fd->mu);
	pthread_mutex_unlock(&fd->mu);
	pthread_mutex_lock(&md->list_mu);
	if (fd->prev)
		fd->prev->next = fd->next;
	else
		md->files = fd->next;
	if (fd->next)
		fd->next->prev = fd->prev;
	pthread_mutex_unlock(&md->list_mu);
	mount_data_budget_release(md, fd->dirty_bytes);
	file_data_slots_free(fd);
	for (size_t i = 0; i < fd->pend.n; i++)
		file_data_chunk_drop(fd, fd->pend.c[i].fid);
	fid_list_clear(&fd->sent);
	free(fd->unsynced);
	chunk_list_clear(&fd->base);
	chunk_list_clear(&fd->pend);
	chunk_list_clear(&fd->fl_new);
	free(fd->fl);
	free(fd->fl_content);
	fid_list_clear(&fd->fl_drop);
	fid_list_clear(&fd->pend_drop);
	file_data_tail_drop(fd);
	free(fd->inl);
	free(fd->comb);
	free(fd->views);
	pthread_mutex_destroy(&fd->mu);
	pthread_cond_destroy(&fd->cond);
	free(fd);
}

/* The end of the dirty and pending data. mu held. */
static uint64_t data_end(file_data *fd)
{
	uint64_t end = 0;
	if (fd->nslots) {
		struct slot *s = fd->slots[fd->nslots - 1];
		if (s->n)
			end = s->r[s->n - 1].off + s->r[s->n - 1].len;
	}
	for (size_t i = 0; i < fd->pend.n; i++)
		end = MAX(end, fd->pend.c[i].offset + fd->pend.c[i].size);
	return end;
}

void file_data_reset(file_data *fd, const struct filer_entry *e)
{
	pthread_mutex_lock(&fd->mu);
	base_set(fd, e);
	if (!fd->size_dirty)
		fd->size = MAX(e->attr.size, data_end(fd));
	pthread_mutex_unlock(&fd->mu);
}

uint64_t file_data_size(file_data *fd)
{
	uint64_t s;
	pthread_mutex_lock(&fd->mu);
	s = fd->size;
	pthread_mutex_unlock(&fd->mu);
	return s;
}

void file_data_set_ino(file_data *fd, uint64_t ino)
{
	pthread_mutex_lock(&fd->mu);
	fd->ino = ino;
	pthread_mutex_unlock(&fd->mu);
}

bool file_data_dirty(file_data *fd)
{
	bool d;
	pthread_mutex_lock(&fd->mu);
	d = file_data_dirty_locked(fd);
	pthread_mutex_unlock(&fd->mu);
	return d;
}

wfs_err file_data_sync_volumes(file_data *fd)
{
	uint32_t *vids;
	size_t n;
	bool base;
	wfs_err e = WFS_OK;

	pthread_mutex_lock(&fd->mu);
	base = fd->base_unsynced;
	if (base) {
		/* manifests too, then the chunks they list */
		unsynced_add_chunks(fd, fd->base.c, fd->base.n);
		e = file_data_base_resolve(fd);
		if (!e)
			unsynced_add_chunks(fd, fd->base.c, fd->base.n);
	}
	unsynced_add_chunks(fd, fd->pend.c, fd->pend.n); /* background: never synced */
	vids = fd->unsynced;
	n = fd->nunsynced;
	fd->unsynced = NULL;
	fd->nunsynced = 0;
	fd->base_unsynced = false;
	pthread_mutex_unlock(&fd->mu);
	/* an upload that ends from here on notes its volume again: the next fsync's */
	for (size_t i = 0; i < n && !e; i++)
		e = blob_client_sync_volume(fd->md->bc, vids[i]);
	if (e) {
		pthread_mutex_lock(&fd->mu);
		for (size_t i = 0; i < n; i++)
			unsynced_add(fd, vids[i]);
		fd->base_unsynced |= base;
		pthread_mutex_unlock(&fd->mu);
	}
	free(vids);
	return e;
}

bool file_data_durable(file_data *fd, int64_t ctime_ns)
{
	bool d;
	pthread_mutex_lock(&fd->mu);
	d = fd->durable && ctime_ns && fd->durable_ctime == ctime_ns && !file_data_dirty_locked(fd);
	pthread_mutex_unlock(&fd->mu);
	return d;
}

void file_data_set_durable(file_data *fd, bool durable, int64_t ctime_ns)
{
	pthread_mutex_lock(&fd->mu);
	fd->durable = durable && !fd->nunsynced && !fd->base_unsynced;
	fd->durable_ctime = ctime_ns;
	pthread_mutex_unlock(&fd->mu);
}
