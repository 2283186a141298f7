/* Table files in the filer by s3:// location: see table_files.h. */
#include "config.h"
#include "catalog/table_files.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "catalog/table_store.h"
#include "lib/http_fetch.h"
#include "lib/http_util.h"
#include "lib/jwt.h"
#include "lib/util.h"

#define TF_TIMEOUT_MS 30000
#define TF_CACHE_SLOTS 512

struct cached {
	char *location;
	char *text;
	size_t len;
	uint64_t used; /* the clock of its last use; 0: the slot is free */
};

struct table_files {
	char *filer;
	http_fetcher *fetch;
	pthread_mutex_t lock;
	struct cached slot[TF_CACHE_SLOTS];
	size_t bytes, max_bytes;
	uint64_t clock;
};

table_files *tf_new(const char *filer, size_t cache_bytes)
{
	table_files *f = xcalloc(1, sizeof(*f));
	f->filer = xstrdup(filer);
	f->fetch = http_fetcher_new(32, 30000);
	f->max_bytes = cache_bytes;
	pthread_mutex_init(&f->lock, NULL);
	return f;
}

static void slot_clear(table_files *f, struct cached *c)
{
	f->bytes -= c->len;
	free(c->location);
	free(c->text);
	memset(c, 0, sizeof(*c));
}

void tf_free(table_files *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < TF_CACHE_SLOTS; i++)
		if (f->slot[i].used)
			slot_clear(f, &f->slot[i]);
	http_fetcher_free(f->fetch);
	pthread_mutex_destroy(&f->lock);
	free(f->filer);
	free(f);
}

char *tf_location_path(const char *location)
{
	size_t n = location ? strlen(location) : 0;
	/* a file: a key after the bucket, not ending in '/' */
	if (!n || location[n - 1] == '/' || !strchr(location + (n > 5 ? 5 : n), '/'))
		return NULL;
	return ts_location_dir(location);
}

int tf_location_under(const char *location, const char *dir)
{
	size_t n = strlen(dir);
	char *path;
	int ok;
	if (strncmp(location, dir, n) || (location[n] != '\0' && location[n] != '/'))
		return 0;
	/* "dir/../x" starts with dir but names no place under it */
	path = ts_location_dir(location);
	ok = path != NULL;
	free(path);
	return ok;
}

/* The request path (percent-encoded) of location's file, with query q; NULL if invalid. */
static char *request_path(const char *location, const char *q)
{
	char *path = tf_location_path(location);
	buf b;
	if (!path)
		return NULL;
	buf_init(&b);
	url_encode_path(path, &b);
	buf_append_str(&b, q);
	buf_append_byte(&b, '\0');
	free(path);
	return b.data;
}

static struct cached *cache_find(table_files *f, const char *location)
{
	for (size_t i = 0; i < TF_CACHE_SLOTS; i++)
		if (f->slot[i].used && !strcmp(f->slot[i].location, location))
			return &f->slot[i];
	return NULL;
}

static void cache_forget(table_files *f, const char *location)
{
	struct cached *c;
	pthread_mutex_lock(&f->lock);
	if ((c = cache_find(f, location)))
		slot_clear(f, c);
	pthread_mutex_unlock(&f->lock);
}

/* Keeps a copy of text, evicting the least recently used until it fits. */
static void cache_add(table_files *f, const char *location, const char *text, size_t len)
{
	struct cached *c;
	if (len > f->max_bytes / 4)
		return;
	pthread_mutex_lock(&f->lock);
	if (!cache_find(f, location)) {
		for (;;) {
			struct cached *oldest = NULL, *free_slot = NULL;
			for (size_t i = 0; i < TF_CACHE_SLOTS; i++) {
				c = &f->slot[i];
				if (!c->used)
					free_slot = free_slot ? free_slot : c;
				else if (!oldest || c->used < oldest->used)
					oldest = c;
			}
			if (free_slot && f->bytes + len <= f->max_bytes) {
				free_slot->location = xstrdup(location);
				free_slot->text = xstrndup(text, len);
				free_slot->len = len;
				free_slot->used = ++f->clock;
				f->bytes += len;
				break;
			}
			slot_clear(f, oldest);
		}
	}
	pthread_mutex_unlock(&f->lock);
}

static bool cache_get(table_files *f, const char *location, buf *out)
{
	struct cached *c;
	pthread_mutex_lock(&f->lock);
	if ((c = cache_find(f, location))) {
		c->used = ++f->clock;
		buf_append(out, c->text, c->len);
	}
	pthread_mutex_unlock(&f->lock);
	return c != NULL;
}

/* The error of a filer answer that is no success. */
static wfs_err answer_err(int status)
{
	if (status == 404)
		return WFS_ENOENT;
	return wfs_err_from_http_status(status);
}

wfs_err tf_put(table_files *f, const char *location, const void *data, size_t len)
{
	char *path = request_path(location, "?saveInside=true"), auth[JWT_AUTH_HEADER_MAX];
	const char *hdrs[] = {"Content-Type: application/json",
			      jwt_filer_auth("PUT", "/", auth), NULL}; /* filer signing */
	struct http_result res;
	wfs_err err;

	if (!path)
		return WFS_EINVAL;
	cache_forget(f, location);
	http_result_init(&res);
	err = http_fetch_request(f->fetch, "PUT", f->filer, path, hdrs, data, len, TF_TIMEOUT_MS,
				 4096, &res);
	if (!err && res.status != 201 && res.status != 200)
		err = answer_err(res.status);
	if (!err) /* the next commit reads it back as the current metadata */
		cache_add(f, location, (const char *)data, len);
	http_result_free(&res);
	free(path);
	return err;
}

wfs_err tf_get(table_files *f, const char *location, buf *out)
{
	char *path, auth[JWT_AUTH_HEADER_MAX];
	const char *hdrs[] = {jwt_filer_auth("GET", "/", auth), NULL};
	struct http_result res;
	wfs_err err;

	if (cache_get(f, location, out))
		return WFS_OK;
	if (!(path = request_path(location, "")))
		return WFS_EINVAL;
	http_result_init(&res);
	err = http_fetch_get(f->fetch, f->filer, path, hdrs, TF_TIMEOUT_MS, TF_FILE_MAX, &res);
	if (!err && res.status != 200)
		err = answer_err(res.status);
	if (!err) {
		buf_append(out, res.body.data, res.body.len);
		cache_add(f, location, res.body.data, res.body.len);
	}
	http_result_free(&res);
	free(path);
	return err;
}

wfs_err tf_delete(table_files *f, const char *location, int recursive)
{
	char *path = request_path(location, recursive ? "?recursive=true" : "");
	char auth[JWT_AUTH_HEADER_MAX];
	const char *hdrs[] = {jwt_filer_auth("DELETE", "/", auth), NULL};
	struct http_result res;
	wfs_err err;

	if (!path)
		return WFS_EINVAL;
	if (recursive) {
		/* everything cached below it */
		pthread_mutex_lock(&f->lock);
		for (size_t i = 0; i < TF_CACHE_SLOTS; i++)
			if (f->slot[i].used && tf_location_under(f->slot[i].location, location))
				slot_clear(f, &f->slot[i]);
		pthread_mutex_unlock(&f->lock);
	} else {
		cache_forget(f, location);
	}
	http_result_init(&res);
	err = http_fetch_request(f->fetch, "DELETE", f->filer, path, hdrs, NULL, 0, TF_TIMEOUT_MS,
				 4096, &res);
	if (!err && res.status != 204 && res.status != 200 && res.status != 404)
		err = answer_err(res.status);
	http_result_free(&res);
	free(path);
	return err;
}

void tf_uuid(char out[37])
{
	uint8_t r[16];
	char hex[33];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		uint64_t t = time_now_ns(), m = time_mono_ns();
		memcpy(r, &t, 8);
		memcpy(r + 8, &m, 8);
	}
	r[6] = (uint8_t)((r[6] & 0x0f) | 0x40);
	r[8] = (uint8_t)((r[8] & 0x3f) | 0x80);
	hex_encode(r, sizeof(r), hex);
	snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
}
