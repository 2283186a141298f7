/*
 * GET/HEAD of a needle too big to read whole: its data is streamed in pieces.
 *
 * DESIGN
 * - The answer is a list of segments, each some bytes held in memory (the
 *   part headers of a multi-range answer) followed by a range of the data.
 *   A piece of PIECE bytes is read into a recycled block (bigbuf.h) that is
 *   queued as it is (http_resp_write_take) while the output accepts more;
 *   once it reports the output above its high-water mark, the stream waits
 *   for the drain callback. So a download holds one piece whatever the
 *   needle's size, and a slow client costs no more than that plus the
 *   server's output buffer.
 * - The loop reads only what the page cache holds (preadv2 RWF_NOWAIT, which
 *   still starts the kernel's readahead). A piece that needs the disk is read
 *   by the read pool (vs_submit_read), which first asks the kernel for the
 *   next ADVISE bytes of the range (WILLNEED starts the reads without waiting
 *   for them): a loop that waited for the disk would stall every connection
 *   it serves and give the disk a queue of one per loop. The volume's streams
 *   share one descriptor's readahead state, and their interleaved reads look
 *   random to the kernel, hence the explicit hint.
 * - A full read runs the data through CRC32C; if the sum differs from the
 *   stored one, the last piece is not sent: the error is logged and the
 *   connection aborted, so the client sees a truncated transfer rather than
 *   silently bad data.
 * - Decision: a Range read cannot be checked (the CRC covers the whole data,
 *   and reading it all for a small range defeats the point), so ranges are
 *   served unchecked, as SeaweedFS does.
 * - The descriptor is a dup of the .dat taken under the volume's lock, so a
 *   vacuum that swaps the files meanwhile does not disturb the stream.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "bigbuf.h"
#include "crc32c.h"
#include "http_util.h"
#include "log.h"
#include "util.h"
#include "vs_int.h"

#define PIECE  (256u << 10)
#define ADVISE (8u << 20) /* bytes of a range hinted ahead of a read from the disk */

struct segment {
	size_t mem_off, mem_len; /* bytes of d->mem sent first */
	uint64_t off, len;       /* then this range of the data */
};

struct download {
	struct volume_server *vs;
	http_req *req;
	int fd;
	uint64_t data_off; /* where the data starts in fd */
	uint64_t key;
	buf mem;
	struct segment seg[HTTP_MAX_RANGES + 1];
	int nseg, cur;
	bool mem_sent;
	uint64_t pos; /* within the current segment's range */
	bool check;
	uint32_t crc, want;
	/* a piece read by the read pool: its job owns these until it defers back */
	char *piece;
	size_t piece_len;
	uint64_t piece_off, advised; /* file offsets: the piece's, and the hint's end */
	wfs_err piece_err;
	bool piece_ready;
};

static void download_free(struct download *d)
{
	close(d->fd);
	buf_free(&d->mem);
	free(d);
}

static wfs_err pread_full(int fd, char *p, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = pread(fd, p + done, len - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? wfs_err_from_errno(errno) : WFS_ECORRUPT;
		done += (size_t)r;
	}
	return WFS_OK;
}

/*
 * Reads what the page cache holds of [off, off+len) into p without waiting for
 * the disk: the bytes read (0: none cached, or RWF_NOWAIT unsupported), or -1
 * with errno.
 */
static ssize_t read_cached(int fd, char *p, size_t len, uint64_t off)
{
	static atomic_bool unsupported;
	size_t done = 0;
	while (done < len && !atomic_load_explicit(&unsupported, memory_order_relaxed)) {
		struct iovec iov = {p + done, len - done};
		ssize_t r = preadv2(fd, &iov, 1, (off_t)(off + done), RWF_NOWAIT);
		if (r > 0) {
			done += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EOPNOTSUPP || errno == EINVAL))
			atomic_store(&unsupported, true); /* an old kernel or file system */
		else if (r < 0 && errno != EAGAIN)
			return -1;
		break;
	}
	return (ssize_t)done;
}

static void pump(http_req *req, void *arg);

/* The read pool's piece is in. Loop thread. */
static void piece_read(http_req *req, void *arg)
{
	struct download *d = arg;
	d->piece_ready = true;
	pump(req, d);
}

/* Reads d's piece from the disk, hinting the range ahead first. Read pool. */
static void piece_read_run(void *arg)
{
	struct download *d = arg;
	const struct segment *s = &d->seg[d->cur];
	uint64_t end = d->data_off + s->off + s->len;
	if (d->advised < d->piece_off + d->piece_len) {
		d->advised = MIN(end, d->piece_off + ADVISE);
		(void)posix_fadvise(d->fd, (off_t)d->piece_off, (off_t)(d->advised - d->piece_off),
				    POSIX_FADV_WILLNEED);
	}
	d->piece_err = pread_full(d->fd, d->piece, d->piece_len, d->piece_off);
	http_req_defer(d->req, piece_read, d);
}

/*
 * The next piece of the current segment into *piece, *n: from the page cache
 * on the loop, or handed to the read pool (false: piece_read resumes the
 * pump). Loop thread.
 */
static bool next_piece(struct download *d, char **piece, size_t *n, wfs_err *err)
{
	const struct segment *s = &d->seg[d->cur];
	uint64_t off = d->data_off + s->off + d->pos;
	ssize_t got;

	*err = WFS_OK;
	if (d->piece_ready) {
		d->piece_ready = false;
		*piece = d->piece;
		*n = d->piece_len;
		*err = d->piece_err;
		d->piece = NULL;
		return true;
	}
	*n = (size_t)MIN((uint64_t)PIECE, s->len - d->pos);
	*piece = bigbuf_get(*n, NULL);
	got = read_cached(d->fd, *piece, *n, off);
	if (got > 0) {
		*n = (size_t)got;
		return true;
	}
	if (got < 0) {
		*err = wfs_err_from_errno(errno);
		return true;
	}
	d->piece = *piece;
	d->piece_len = *n;
	d->piece_off = off;
	if (vs_submit_read(d->vs, piece_read_run, d))
		return false;
	d->piece = NULL;
	*err = pread_full(d->fd, *piece, *n, off); /* stopping: read here */
	return true;
}

/*
 * Sends pieces until the output is full (then waits for the drain), a piece
 * needs the disk (then waits for the read pool) or the end. Loop thread.
 */
static void pump(http_req *req, void *arg)
{
	struct download *d = arg;

	for (;;) {
		struct segment *s;
		size_t n;
		char *piece;
		wfs_err err;

		if (http_req_closed(req)) {
			bigbuf_put(d->piece); /* a piece read for nobody */
			http_resp_end(req);   /* nobody listens; the short body closes it */
			download_free(d);
			return;
		}
		if (d->cur == d->nseg) {
			http_resp_end(req);
			download_free(d);
			return;
		}
		s = &d->seg[d->cur];
		if (!d->mem_sent) {
			d->mem_sent = true;
			if (s->mem_len &&
			    !http_resp_write(req, d->mem.data + s->mem_off, s->mem_len))
				break;
			continue;
		}
		if (d->pos == s->len) {
			d->cur++;
			d->mem_sent = false;
			d->pos = 0;
			d->advised = 0;
			continue;
		}
		if (!next_piece(d, &piece, &n, &err))
			return;
		if (err) {
			log_error("needle %" PRIx64 ": read failed while streaming: %s", d->key,
				  wfs_strerror(err));
			bigbuf_put(piece);
			http_resp_abort(req);
			download_free(d);
			return;
		}
		if (d->check)
			d->crc = crc32c_update(d->crc, piece, n);
		d->pos += n;
		if (d->check && d->pos == s->len && !crc32c_stored_matches(d->want, d->crc)) {
			/* the last piece is held back, so the transfer is visibly short */
			log_error("needle %" PRIx64
				  ": CRC mismatch while streaming (stored %08" PRIx32
				  ", data %08" PRIx32 "); connection aborted",
				  d->key, d->want, d->crc);
			bigbuf_put(piece);
			http_resp_abort(req);
			download_free(d);
			return;
		}
		/* the piece goes out as it is: no copy into the output buffer */
		if (!http_resp_write_take(req, piece, n))
			break;
	}
	http_resp_on_drain(req, pump, d);
}

/* Adds a segment: mem bytes appended by the caller since mem_from, then a data range. */
static void add_segment(struct download *d, size_t mem_from, uint64_t off, uint64_t len)
{
	struct segment *s = &d->seg[d->nseg++];
	s->mem_off = mem_from;
	s->mem_len = d->mem.len - mem_from;
	s->off = off;
	s->len = len;
}

void vs_stream_needle(struct volume_server *vs, http_req *req, const struct needle *n,
		      struct needle_blob *blob, const char *range_h, const char *ctype)
{
	struct download *d;
	struct http_range r[HTTP_MAX_RANGES];
	uint64_t size = n->data_size, total = 0;
	int nr = 0, status = 200;
	char hdr[128];

	if (range_h && *range_h) {
		wfs_err err = http_parse_range(range_h, size, r, HTTP_MAX_RANGES, &nr);
		if (err) {
			snprintf(hdr, sizeof(hdr), "bytes */%" PRIu64, size);
			http_resp_header(req, "Content-Range", hdr);
			http_resp_error(req, 416, "%s range \"%s\"",
					err == WFS_ERANGE ? "unsatisfiable" : "malformed", range_h);
			return;
		}
	}
	d = xcalloc(1, sizeof(*d));
	d->vs = vs;
	d->req = req;
	d->fd = blob->fd;
	blob->fd = -1;
	d->data_off = blob->off;
	d->key = n->key;
	if (nr == 0) {
		d->check = true;
		d->want = n->crc;
		http_resp_header(req, "Content-Type", ctype);
		add_segment(d, 0, 0, size);
	} else if (nr == 1) {
		status = 206;
		snprintf(hdr, sizeof(hdr), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, r[0].start,
			 r[0].start + r[0].len - 1, size);
		http_resp_header(req, "Content-Range", hdr);
		http_resp_header(req, "Content-Type", ctype);
		add_segment(d, 0, r[0].start, r[0].len);
	} else {
		status = 206;
		for (int i = 0; i < nr; i++) {
			size_t from = d->mem.len;
			buf_printf(&d->mem,
				   "\r\n--%s\r\nContent-Type: %s\r\nContent-Range: bytes %" PRIu64
				   "-%" PRIu64 "/%" PRIu64 "\r\n\r\n",
				   VS_RANGE_BOUNDARY, ctype, r[i].start, r[i].start + r[i].len - 1,
				   size);
			add_segment(d, from, r[i].start, r[i].len);
		}
		{
			size_t from = d->mem.len;
			buf_printf(&d->mem, "\r\n--%s--\r\n", VS_RANGE_BOUNDARY);
			add_segment(d, from, 0, 0);
		}
		snprintf(hdr, sizeof(hdr), "multipart/byteranges; boundary=%s", VS_RANGE_BOUNDARY);
		http_resp_header(req, "Content-Type", hdr);
	}
	for (int i = 0; i < d->nseg; i++)
		total += d->seg[i].mem_len + d->seg[i].len;
	if (http_req_method(req) == HTTP_HEAD) {
		http_resp_send(req, status, NULL, total); /* the length without the body */
		download_free(d);
		return;
	}
	http_resp_start(req, status, (int64_t)total);
	pump(req, d);
}

void vs_stream_file(struct volume_server *vs, http_req *req, int fd, uint64_t off, uint64_t len,
		    const char *ctype)
{
	struct download *d = xcalloc(1, sizeof(*d));
	d->vs = vs;
	d->req = req;
	d->fd = fd;
	d->data_off = off;
	add_segment(d, 0, 0, len);
	http_resp_header(req, "Content-Type", ctype);
	if (http_req_method(req) == HTTP_HEAD) {
		http_resp_send(req, 200, NULL, len);
		download_free(d);
		return;
	}
	http_resp_start(req, 200, (int64_t)len);
	pump(req, d);
}
