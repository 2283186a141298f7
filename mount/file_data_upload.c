/*
 * Uploads of a file's dirty ranges to the volume servers, on the blob
 * client's pool (or in the caller's thread for a flush's last range).
 *
 * DESIGN
 * - An upload reads its range's buffer in place: the range's slot is frozen
 *   (busy) while it runs (file_data_write.c), and the job carries the range's
 *   generation; when it ends, the uploaded chunk goes to the range only if the
 *   range is still at that generation, else it is an orphan.
 * - A background upload (a full chunk, or the dirty budget's call) turns its
 *   range into a pending chunk at once: the range and its budget are
 *   released, a pooled buffer goes to the memory cache with the chunk's id
 *   (no copy), and a chunk the range superseded (the kept tail) is carried in
 *   pend_drop to the next commit.
 * - A flush's upload leaves the chunk on the range (r->up at r->up_gen) for
 *   the flush to collect (file_data_commit.c). An fsync's flush uploads with
 *   fsync=true; every other upload notes its volume as unsynced for the next
 *   fsync (file_data_sync_volumes).
 * - The uploaded bytes also go to the chunk cache (a copy, or a background
 *   upload's pooled buffer itself), so a read after the write is served from
 *   memory.
 */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include "mount/file_data_int.h"
#include "util.h"

struct up_job {
	file_data *fd;
	uint64_t slot, gen, off;
	const uint8_t *data; /* the range's buffer: stable while the slot is busy */
	size_t len;
	bool pooled; /* data is a pool buffer (a background upload hands it to the cache) */
	int64_t mtime;
	struct flush_wait *fw; /* NULL: a background upload */
};

void file_data_upload_run(void *arg)
{
	struct up_job *j = arg;
	file_data *fd = j->fd;
	mount_data *md = fd->md; /* fd may be freed once jobs drops below */
	char *fid = NULL, etag[BLOB_ETAG_MAX] = "";
	bool fsync = j->fw && j->fw->fsync;
	struct filer_chunk key = {0};
	wfs_err e = mount_data_upload(fd->md, j->data, j->len, fsync, &fid, etag, &key);
	uint64_t released = 0;
	bool give = !j->fw && j->pooled; /* the range goes: its buffer moves to the cache */
	uint8_t *given = NULL;
	char *given_fid = NULL;
	struct slot *s;

	if (!e && !give) /* read-after-write is served from memory */
		chunk_cache_put(fd->md->cache, fid, j->data, j->len);

	pthread_mutex_lock(&fd->mu);
	if (!e && !fsync)
		file_data_note_unsynced(fd, fid);
	s = file_data_slot_find(fd, j->slot);
	if (s) {
		size_t k = 0;
		while (k < s->n && s->r[k].gen != j->gen)
			k++;
		if (!e && k < s->n) {
			struct drange *r = &s->r[k];
			file_data_chunk_drop(fd, r->up.fid); /* an older upload of the range */
			filer_chunks_clear(&r->up, 1);
			r->up = (struct filer_chunk){.fid = fid,
						     .offset = j->off,
						     .size = j->len,
						     .mtime_ns = j->mtime,
						     .etag = *etag ? xstrdup(etag) : NULL};
			filer_chunk_copy_key(&r->up, &key);
			fid = NULL;
			r->up_gen = j->gen;
			if (!j->fw) {
				/* background: the chunk now stands for the bytes */
				chunk_list_push(&fd->pend, &r->up);
				if (r->supersedes)
					fid_list_push(&fd->pend_drop, r->supersedes);
				if (give) {
					given = r->data;
					given_fid = xstrdup(r->up.fid);
					r->data = NULL;
				}
				filer_chunks_clear(&r->up, 1); /* lives on in pend */
				released = r->len;
				file_data_slot_remove_range(fd, s, k);
				file_data_changed(fd);
			}
		}
		s->busy--;
		file_data_slot_drop_if_empty(fd, s);
	}
	if (fid) /* its range is gone: nothing will reference it */
		file_data_chunk_drop(fd, fid);
	if (e) {
		if (j->fw)
			j->fw->err = e;
		else
			fd->bg_err = e;
	}
	if (j->fw)
		j->fw->remaining--;
	fd->jobs--;
	pthread_cond_broadcast(&fd->cond);
	pthread_mutex_unlock(&fd->mu);
	if (released) {
		mount_data_budget_release(md, released);
		mount_data_stat_add(md, &md->st.bg_uploads, 1);
	}
	if (given)
		chunk_cache_put_pooled(md->cache, given_fid, given, j->len, md->pool);
	free(given_fid);
	free(fid);
	free(j);
}

struct up_job *file_data_upload_start(file_data *fd, struct slot *s, size_t k,
				      struct flush_wait *fw, bool submit)
{
	struct up_job *j = xcalloc(1, sizeof(*j));
	struct drange *r = &s->r[k];
	j->fd = fd;
	j->slot = s->index;
	j->gen = r->gen;
	j->off = r->off;
	j->data = r->data;
	j->len = r->len;
	j->pooled = file_data_rbuf_pooled(fd->md, r->cap);
	j->mtime = file_data_next_mtime(fd);
	j->fw = fw;
	s->busy++;
	fd->jobs++;
	if (!submit)
		return j;
	pool_submit(blob_client_pool(fd->md->bc), file_data_upload_run, j);
	return NULL;
}

size_t file_data_upload_background(file_data *fd, bool all)
{
	size_t started = 0;
	if (fd->flushing)
		return 0;
	for (size_t i = 0; i < fd->nslots; i++) {
		struct slot *s = fd->slots[i];
		if (s->busy)
			continue;
		for (size_t k = 0; k < s->n; k++) {
			if (!all && s->r[k].len != fd->md->chunk_size)
				continue;
			file_data_upload_start(fd, s, k, NULL, true);
			started++;
		}
	}
	return started;
}
