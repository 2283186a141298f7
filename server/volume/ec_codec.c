/*
 * RS(10,4) over sealed volumes (see ec_codec.h for the layout and the files).
 *
 * DESIGN
 * - The matrix is built once (pthread_once): the 14x10 Vandermonde matrix V[r][c] = r^c in
 *   GF(2^8) (0^0 = 1), times the inverse of its top square, so its first ten rows are the
 *   identity and the shards are the ones SeaweedFS's Go library writes. isa-l's tables for
 *   the four parity rows are cached with it; a reconstruction derives its own rows from the
 *   inverse of the ten rows it has.
 * - Every pass over the data works in stripes of at most EC_STRIPE bytes per shard:
 *   encoding is independent per byte column, so a 1 GiB block row costs 14 stripes of
 *   buffers, not 14 GiB.
 * - Files are written as "<name>.tmp", fsynced, renamed, the .vif last, then the directory is
 *   fsynced; a torn run leaves only .tmp names, which ec_remove_leftovers clears.
 */
#include "config.h"
#include "server/volume/ec_codec.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <isa-l/erasure_code.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "buf.h"
#include "json.h"
#include "jtree.h"
#include "log.h"
#include "server/volume/needle.h"
#include "util.h"

#define EC_STRIPE   (1u << 20) /* bytes per shard per step of a pass */
#define VIF_MAX     (64u << 10)
#define TABLES_SIZE(rows) (32 * EC_DATA_SHARDS * (rows))

const struct ec_blocks ec_default_blocks = {EC_LARGE_BLOCK, EC_SMALL_BLOCK};

static pthread_once_t matrix_once = PTHREAD_ONCE_INIT;
static uint8_t matrix[EC_TOTAL_SHARDS * EC_DATA_SHARDS];       /* written once */
static uint8_t parity_tables[TABLES_SIZE(EC_PARITY_SHARDS)]; /* written once */

static uint8_t gf_pow(uint8_t a, int n)
{
	uint8_t r = 1;
	while (n-- > 0)
		r = gf_mul(r, a);
	return r;
}

/* out (rows x 10) = a (rows x 10) times b (10 x 10). */
static void mat_mul(const uint8_t *a, int rows, const uint8_t *b, uint8_t *out)
{
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < EC_DATA_SHARDS; c++) {
			uint8_t s = 0;
			for (int k = 0; k < EC_DATA_SHARDS; k++)
				s ^= gf_mul(a[r * EC_DATA_SHARDS + k], b[k * EC_DATA_SHARDS + c]);
			out[r * EC_DATA_SHARDS + c] = s;
		}
}

static void build_matrix(void)
{
	uint8_t v[EC_TOTAL_SHARDS * EC_DATA_SHARDS], top[EC_DATA_SHARDS * EC_DATA_SHARDS],
		inv[EC_DATA_SHARDS * EC_DATA_SHARDS];

	for (int r = 0; r < EC_TOTAL_SHARDS; r++)
		for (int c = 0; c < EC_DATA_SHARDS; c++)
			v[r * EC_DATA_SHARDS + c] = gf_pow((uint8_t)r, c);
	memcpy(top, v, sizeof(top));
	if (gf_invert_matrix(top, inv, EC_DATA_SHARDS) != 0)
		abort(); /* a Vandermonde square with distinct rows is invertible */
	mat_mul(v, EC_TOTAL_SHARDS, inv, matrix);
	ec_init_tables(EC_DATA_SHARDS, EC_PARITY_SHARDS, matrix + EC_DATA_SHARDS * EC_DATA_SHARDS,
		       parity_tables);
}

static const uint8_t *ec_matrix(void)
{
	pthread_once(&matrix_once, build_matrix);
	return matrix;
}

static int popcount16(uint16_t x) { return __builtin_popcount(x); }

/* isa-l takes an int length: long pieces go in slices. */
static void encode_slices(size_t len, int rows, uint8_t *tables, uint8_t **src, uint8_t **dst)
{
	enum { SLICE = 1 << 30 };
	uint8_t *s[EC_DATA_SHARDS], *d[EC_TOTAL_SHARDS];

	for (size_t off = 0; off < len; off += SLICE) {
		int n = (int)MIN((size_t)SLICE, len - off);
		for (int i = 0; i < EC_DATA_SHARDS; i++)
			s[i] = src[i] + off;
		for (int i = 0; i < rows; i++)
			d[i] = dst[i] + off;
		ec_encode_data(n, EC_DATA_SHARDS, rows, tables, s, d);
	}
}

/* Parity of ten data pieces of len bytes (shards[0..9] in, shards[10..13] out). */
static void encode_parity(uint8_t *const shards[EC_TOTAL_SHARDS], size_t len)
{
	uint8_t *src[EC_DATA_SHARDS], *dst[EC_PARITY_SHARDS];

	ec_matrix();
	for (int i = 0; i < EC_DATA_SHARDS; i++)
		src[i] = shards[i];
	for (int i = 0; i < EC_PARITY_SHARDS; i++)
		dst[i] = shards[EC_DATA_SHARDS + i];
	encode_slices(len, EC_PARITY_SHARDS, parity_tables, src, dst);
}

wfs_err ec_reconstruct(uint8_t *const shards[EC_TOTAL_SHARDS], uint16_t present, uint16_t want,
		       size_t len)
{
	const uint8_t *m = ec_matrix();
	uint8_t sub[EC_DATA_SHARDS * EC_DATA_SHARDS], inv[EC_DATA_SHARDS * EC_DATA_SHARDS];
	uint8_t rows[EC_TOTAL_SHARDS * EC_DATA_SHARDS], tables[TABLES_SIZE(EC_TOTAL_SHARDS)];
	uint8_t *src[EC_DATA_SHARDS], *dst[EC_TOTAL_SHARDS];
	int n = 0, nwant = 0;

	present &= EC_ALL_SHARDS;
	want &= EC_ALL_SHARDS & ~present;
	if (popcount16(present) < EC_DATA_SHARDS)
		return WFS_EINVAL;
	if (!want || !len)
		return WFS_OK;
	for (int s = 0; s < EC_TOTAL_SHARDS && n < EC_DATA_SHARDS; s++)
		if (present & (1u << s)) {
			memcpy(sub + n * EC_DATA_SHARDS, m + s * EC_DATA_SHARDS, EC_DATA_SHARDS);
			src[n++] = shards[s];
		}
	if (gf_invert_matrix(sub, inv, EC_DATA_SHARDS) != 0)
		return WFS_EINTERNAL; /* any ten rows of the matrix are independent */
	/* inv maps the ten pieces we have to the data; a parity row of m maps the data on */
	for (int s = 0; s < EC_TOTAL_SHARDS; s++) {
		if (!(want & (1u << s)))
			continue;
		if (s < EC_DATA_SHARDS)
			memcpy(rows + nwant * EC_DATA_SHARDS, inv + s * EC_DATA_SHARDS,
			       EC_DATA_SHARDS);
		else
			mat_mul(m + s * EC_DATA_SHARDS, 1, inv, rows + nwant * EC_DATA_SHARDS);
		dst[nwant++] = shards[s];
	}
	ec_init_tables(EC_DATA_SHARDS, nwant, rows, tables);
	encode_slices(len, nwant, tables, src, dst);
	return WFS_OK;
}

const char *ec_shard_ext(int shard)
{
	static const char *const ext[EC_TOTAL_SHARDS] = {
		".ec00", ".ec01", ".ec02", ".ec03", ".ec04", ".ec05", ".ec06",
		".ec07", ".ec08", ".ec09", ".ec10", ".ec11", ".ec12", ".ec13"};
	return shard >= 0 && shard < EC_TOTAL_SHARDS ? ext[shard] : "";
}

/* Rows of large blocks for a .dat of dat_size: while more than ten large blocks remain. */
static uint64_t large_rows_for_dat(const struct ec_blocks *b, uint64_t dat_size)
{
	return dat_size ? (dat_size - 1) / (b->large * EC_DATA_SHARDS) : 0;
}

uint64_t ec_shard_size(const struct ec_blocks *b, uint64_t dat_size)
{
	uint64_t nl = large_rows_for_dat(b, dat_size);
	uint64_t rest = dat_size - nl * b->large * EC_DATA_SHARDS;
	uint64_t row = b->small * EC_DATA_SHARDS;
	return nl * b->large + (rest + row - 1) / row * b->small;
}

size_t ec_locate(const struct ec_blocks *b, uint64_t shard_size, uint64_t offset,
		 uint64_t size, struct ec_interval *out, size_t max)
{
	uint64_t nl, small_rows, large_area, total, block, inner, bsize;
	bool large;
	size_t n = 0;

	if (!size || !shard_size || b->small == 0 || b->large % b->small)
		return 0;
	/* the small rows of a shard add up to 1 .. large bytes (the large loop's strict >) */
	nl = (shard_size - 1) / b->large;
	if ((shard_size - nl * b->large) % b->small)
		return 0;
	small_rows = (shard_size - nl * b->large) / b->small;
	large_area = nl * b->large * EC_DATA_SHARDS;
	total = large_area + small_rows * b->small * EC_DATA_SHARDS;
	if (offset >= total || size > total - offset)
		return 0;
	large = offset < large_area;
	bsize = large ? b->large : b->small;
	block = (large ? offset : offset - large_area) / bsize;
	inner = (large ? offset : offset - large_area) % bsize;
	while (size > 0) {
		uint64_t piece = MIN(size, bsize - inner);
		uint64_t row = block / EC_DATA_SHARDS;
		if (n < max) {
			out[n].shard = (int)(block % EC_DATA_SHARDS);
			out[n].shard_offset =
				(large ? row * b->large : nl * b->large + row * b->small) + inner;
			out[n].size = piece;
		}
		n++;
		size -= piece;
		inner = 0;
		block++;
		if (large && block == nl * EC_DATA_SHARDS) {
			large = false;
			bsize = b->small;
			block = 0;
		}
	}
	return n;
}

/* ---- files ---- */

wfs_err ec_pread(int fd, void *p, size_t len, uint64_t off, size_t *got)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = pread(fd, (char *)p + done, len - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return wfs_err_from_errno(errno);
		if (r == 0)
			break;
		done += (size_t)r;
	}
	*got = done;
	return WFS_OK;
}

static wfs_err pwrite_full(int fd, const void *p, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = pwrite(fd, (const char *)p + done, len - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? wfs_err_from_errno(errno) : WFS_EIO;
		done += (size_t)r;
	}
	return WFS_OK;
}

static char *base_path(const char *base, const char *ext, bool tmp)
{
	return xasprintf("%s%s%s", base, ext, tmp ? ".tmp" : "");
}

static wfs_err fsync_dir_of(const char *base)
{
	char *dir = xstrdup(base), *slash = strrchr(dir, '/');
	int fd;
	wfs_err err = WFS_OK;

	if (slash)
		*slash = '\0';
	fd = open(slash ? (slash == dir ? "/" : dir) : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		err = wfs_err_from_errno(errno);
	if (fd >= 0)
		close(fd);
	free(dir);
	return err;
}

/* A set of output files written under .tmp and committed together. */
struct outset {
	int n;
	int fd[EC_TOTAL_SHARDS + 3];
	char *tmp[EC_TOTAL_SHARDS + 3], *final[EC_TOTAL_SHARDS + 3];
};

static int out_add(struct outset *o, const char *base, const char *ext, char *msg, size_t msglen)
{
	int i = o->n;
	o->tmp[i] = base_path(base, ext, true);
	o->final[i] = base_path(base, ext, false);
	o->fd[i] = open(o->tmp[i], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	o->n++;
	if (o->fd[i] < 0) {
		msg_fail(msg, msglen, "could not create \"%s\": %s", o->tmp[i], strerror(errno));
		return -1;
	}
	return i;
}

/* fsyncs every output, renames them in order, fsyncs the directory. */
static wfs_err out_commit(struct outset *o, const char *base, char *msg, size_t msglen)
{
	int i;
	for (i = 0; i < o->n; i++)
		if (fsync(o->fd[i]) < 0) {
			msg_fail(msg, msglen, "could not sync \"%s\": %s", o->tmp[i], strerror(errno));
			return wfs_err_from_errno(errno);
		}
	for (i = 0; i < o->n; i++)
		if (rename(o->tmp[i], o->final[i]) < 0) {
			wfs_err err = wfs_err_from_errno(errno);
			msg_fail(msg, msglen, "could not rename \"%s\": %s", o->tmp[i],
				 strerror(errno));
			/* nothing may look finished: take back what was renamed */
			while (i-- > 0)
				unlink(o->final[i]);
			return err;
		}
	return fsync_dir_of(base);
}

/* Closes the outputs; unless committed, removes their .tmp files. */
static void out_close(struct outset *o, bool committed)
{
	for (int i = 0; i < o->n; i++) {
		if (o->fd[i] >= 0)
			close(o->fd[i]);
		if (!committed)
			unlink(o->tmp[i]);
		free(o->tmp[i]);
		free(o->final[i]);
	}
	o->n = 0;
}

/* ---- .vif ---- */

static void vif_to_buf(const struct ec_vif *vif, buf *out)
{
	json_w *w = jw_new(out, false);
	jw_obj_begin(w);
	jw_kv_u64(w, "version", vif->version);
	jw_kv_u64(w, "datFileSize", vif->dat_size);
	jw_kv_str(w, "collection", vif->collection);
	jw_kv_str(w, "replication", vif->replication);
	jw_kv_str(w, "ttl", vif->ttl);
	jw_obj_end(w);
	jw_free(w);
}

wfs_err ec_vif_write(const char *base, const struct ec_vif *vif)
{
	buf b = BUF_INIT;
	char *p = base_path(base, ".vif", false);
	wfs_err err = WFS_OK;

	vif_to_buf(vif, &b);
	if (write_file_atomic(p, b.data, b.len) != 0)
		err = wfs_err_from_errno(errno);
	buf_free(&b);
	free(p);
	return err;
}

/* A string member of at most cap - 1 bytes into out; absent is "". */
static bool vif_str(const jt *o, const char *key, char *out, size_t cap)
{
	const jt *v = jt_get(o, key);
	out[0] = '\0';
	if (!v)
		return true;
	if (!jt_is(v, JT_STR) || v->slen >= cap || memchr(v->s, '\0', v->slen))
		return false;
	memcpy(out, v->s, v->slen + 1);
	return true;
}

/* A number, or its digits as a string (protobuf's JSON writes 64-bit integers so). */
static bool vif_u64(const jt *o, const char *key, uint64_t *out)
{
	const jt *v = jt_get(o, key);
	if (jt_is(v, JT_STR))
		return parse_u64(v->s, out);
	return jt_as_u64(v, out);
}

/* Parses the .vif text; WFS_ECORRUPT when it is not one. Exported for the fuzz target. */
wfs_err ec_vif_parse(const char *text, size_t len, struct ec_vif *out)
{
	char e[128];
	jt *t = jt_parse(text, len, e, sizeof(e));
	uint64_t version = NEEDLE_VERSION, dat;
	wfs_err err = WFS_ECORRUPT;

	memset(out, 0, sizeof(*out));
	if (!t || !jt_is(t, JT_OBJ))
		goto out;
	if (jt_get(t, "version") && (!vif_u64(t, "version", &version) || version > 255))
		goto out;
	if (!vif_u64(t, "datFileSize", &dat))
		goto out;
	if (!vif_str(t, "collection", out->collection, sizeof(out->collection)) ||
	    !vif_str(t, "replication", out->replication, sizeof(out->replication)) ||
	    !vif_str(t, "ttl", out->ttl, sizeof(out->ttl)))
		goto out;
	out->version = (uint32_t)version;
	out->dat_size = dat;
	err = WFS_OK;
out:
	jt_free(t);
	return err;
}

wfs_err ec_vif_read(const char *base, struct ec_vif *out)
{
	char *p = base_path(base, ".vif", false), *text = xmalloc(VIF_MAX);
	size_t got = 0;
	struct stat st;
	wfs_err err;
	int fd = open(p, O_RDONLY | O_CLOEXEC);

	memset(out, 0, sizeof(*out));
	if (fd < 0) {
		err = errno == ENOENT ? WFS_ENOENT : wfs_err_from_errno(errno);
		goto out;
	}
	if (fstat(fd, &st) < 0 || st.st_size > VIF_MAX) {
		err = WFS_ECORRUPT;
		goto out;
	}
	err = ec_pread(fd, text, (size_t)st.st_size, 0, &got);
	if (!err)
		err = ec_vif_parse(text, got, out);
out:
	if (fd >= 0)
		close(fd);
	free(text);
	free(p);
	return err;
}

/* ---- .ecx from .idx ---- */

struct idx_rec {
	uint64_t key, seq;
	uint32_t off, size;
};

static int rec_cmp(const void *a, const void *b)
{
	const struct idx_rec *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Writes to fd the live entries of the .idx at idx_path: last entry per key, sorted. */
static wfs_err write_ecx(const char *idx_path, int fd, char *msg, size_t msglen)
{
	enum { CHUNK = 1 << 20 };
	int in = open(idx_path, O_RDONLY | O_CLOEXEC);
	struct idx_rec *r = NULL;
	uint8_t *chunk = NULL;
	size_t n = 0, got;
	uint64_t pos = 0, wpos = 0;
	struct stat st;
	buf out = BUF_INIT;
	wfs_err err = WFS_OK;

	if (in < 0 || fstat(in, &st) < 0) {
		err = wfs_err_from_errno(errno);
		msg_fail(msg, msglen, "could not open \"%s\": %s", idx_path, strerror(errno));
		goto out;
	}
	if (st.st_size % IDX_ENTRY_SIZE) {
		err = WFS_ECORRUPT;
		msg_fail(msg, msglen, "\"%s\" is not a whole number of entries", idx_path);
		goto out;
	}
	r = xmalloc(MAX((size_t)1, (size_t)st.st_size / IDX_ENTRY_SIZE) * sizeof(*r));
	chunk = xmalloc(CHUNK);
	while (pos < (uint64_t)st.st_size) {
		size_t want = (size_t)MIN((uint64_t)CHUNK, (uint64_t)st.st_size - pos);
		err = ec_pread(in, chunk, want, pos, &got);
		if (!err && got != want)
			err = WFS_ECORRUPT;
		if (err) {
			msg_fail(msg, msglen, "could not read \"%s\"", idx_path);
			goto out;
		}
		for (size_t i = 0; i < got; i += IDX_ENTRY_SIZE, n++) {
			idx_entry_decode(chunk + i, &r[n].key, &r[n].off, &r[n].size);
			r[n].seq = n;
		}
		pos += got;
	}
	qsort(r, n, sizeof(*r), rec_cmp);
	for (size_t i = 0; i < n; i++) {
		uint8_t e[IDX_ENTRY_SIZE];
		if (i + 1 < n && r[i + 1].key == r[i].key)
			continue; /* a later entry for the key wins */
		if (r[i].size == NEEDLE_TOMBSTONE || r[i].size == 0 || r[i].off == 0)
			continue;
		idx_entry_encode(e, r[i].key, r[i].off, r[i].size);
		buf_append(&out, e, sizeof(e));
		if (out.len >= CHUNK) {
			err = pwrite_full(fd, out.data, out.len, wpos);
			wpos += out.len;
			buf_reset(&out);
			if (err)
				goto werr;
		}
	}
	err = pwrite_full(fd, out.data, out.len, wpos);
werr:
	if (err)
		msg_fail(msg, msglen, "could not write the .ecx: %s", wfs_strerror(err));
out:
	if (in >= 0)
		close(in);
	buf_free(&out);
	free(chunk);
	free(r);
	return err;
}

/* ---- encode ---- */

struct stripes {
	uint8_t *p[EC_TOTAL_SHARDS];
};

static void stripes_alloc(struct stripes *s, size_t len)
{
	for (int i = 0; i < EC_TOTAL_SHARDS; i++)
		s->p[i] = xmalloc(len);
}

static void stripes_free(struct stripes *s)
{
	for (int i = 0; i < EC_TOTAL_SHARDS; i++)
		free(s->p[i]);
}

/*
 * Encodes one row of blocks of bsize starting at dat_off into the shards at shard_off,
 * EC_STRIPE bytes of each block at a time; past the .dat's end reads as zeros.
 */
static wfs_err encode_row(int dat, uint64_t dat_off, uint64_t bsize, struct stripes *s,
			  const int *fds, uint64_t shard_off)
{
	for (uint64_t in = 0; in < bsize; in += EC_STRIPE) {
		size_t len = (size_t)MIN((uint64_t)EC_STRIPE, bsize - in), got;
		wfs_err err;
		for (int j = 0; j < EC_DATA_SHARDS; j++) {
			err = ec_pread(dat, s->p[j], len, dat_off + j * bsize + in, &got);
			if (err)
				return err;
			memset(s->p[j] + got, 0, len - got);
		}
		encode_parity(s->p, len);
		for (int j = 0; j < EC_TOTAL_SHARDS; j++) {
			err = pwrite_full(fds[j], s->p[j], len, shard_off + in);
			if (err)
				return err;
		}
	}
	return WFS_OK;
}

wfs_err ec_encode_volume(const char *base, const struct ec_blocks *b, struct ec_vif *vif,
			 char *msg, size_t msglen)
{
	char *dat_path = base_path(base, ".dat", false), *idx_path = base_path(base, ".idx", false);
	struct outset o = {0};
	struct stripes s = {{0}};
	int dat = -1, fds[EC_TOTAL_SHARDS], ecx, vfd;
	uint64_t remaining, pos = 0, shard_off = 0;
	uint8_t sb = NEEDLE_VERSION;
	size_t got;
	struct stat st;
	buf vb = BUF_INIT;
	bool committed = false;
	wfs_err err = WFS_OK;

	if (!b->small || b->large % b->small) {
		msg_fail(msg, msglen, "the large block size must be a multiple of the small one");
		err = WFS_EINVAL;
		goto out;
	}
	dat = open(dat_path, O_RDONLY | O_CLOEXEC);
	if (dat < 0 || fstat(dat, &st) < 0) {
		err = errno == ENOENT ? WFS_ENOENT : wfs_err_from_errno(errno);
		msg_fail(msg, msglen, "could not open \"%s\": %s", dat_path, strerror(errno));
		goto out;
	}
	for (int i = 0; i < EC_TOTAL_SHARDS; i++) {
		int k = out_add(&o, base, ec_shard_ext(i), msg, msglen);
		if (k < 0) {
			err = WFS_EIO;
			goto out;
		}
		fds[i] = o.fd[k];
	}
	/* the .ecj starts empty; the .vif is last in the set, so it is renamed last */
	if ((ecx = out_add(&o, base, ".ecx", msg, msglen)) < 0 ||
	    out_add(&o, base, ".ecj", msg, msglen) < 0 ||
	    (vfd = out_add(&o, base, ".vif", msg, msglen)) < 0) {
		err = WFS_EIO;
		goto out;
	}
	err = write_ecx(idx_path, o.fd[ecx], msg, msglen);
	if (err)
		goto out;

	stripes_alloc(&s, (size_t)MIN((uint64_t)EC_STRIPE, b->large));
	remaining = (uint64_t)st.st_size;
	/* SeaweedFS's loops, strict > included: a .dat of exactly k rows of large blocks
	 * ends in rows of small ones */
	while (remaining > b->large * EC_DATA_SHARDS) {
		err = encode_row(dat, pos, b->large, &s, fds, shard_off);
		if (err)
			goto ioerr;
		remaining -= b->large * EC_DATA_SHARDS;
		pos += b->large * EC_DATA_SHARDS;
		shard_off += b->large;
	}
	while (remaining > 0) {
		uint64_t row = b->small * EC_DATA_SHARDS;
		err = encode_row(dat, pos, b->small, &s, fds, shard_off);
		if (err)
			goto ioerr;
		remaining -= MIN(remaining, row);
		pos += row;
		shard_off += b->small;
	}

	if (st.st_size > 0 && (ec_pread(dat, &sb, 1, 0, &got) || got != 1))
		sb = NEEDLE_VERSION;
	vif->version = sb;
	vif->dat_size = (uint64_t)st.st_size;
	vif_to_buf(vif, &vb);
	err = pwrite_full(o.fd[vfd], vb.data, vb.len, 0);
	if (err)
		goto ioerr;
	err = out_commit(&o, base, msg, msglen);
	committed = !err;
	goto out;
ioerr:
	msg_fail(msg, msglen, "could not encode \"%s\": %s", dat_path, wfs_strerror(err));
out:
	out_close(&o, committed);
	stripes_free(&s);
	if (dat >= 0)
		close(dat);
	buf_free(&vb);
	free(dat_path);
	free(idx_path);
	return err;
}

/* ---- rebuild and decode ---- */

/* Opens the shard files of base that exist; they must all be of one size. */
static wfs_err open_shards(const char *base, int *fds, uint16_t *bits, uint64_t *size,
			   char *msg, size_t msglen)
{
	*bits = 0;
	*size = 0;
	for (int i = 0; i < EC_TOTAL_SHARDS; i++)
		fds[i] = -1;
	for (int i = 0; i < EC_TOTAL_SHARDS; i++) {
		char *p = base_path(base, ec_shard_ext(i), false);
		struct stat st;
		fds[i] = open(p, O_RDONLY | O_CLOEXEC);
		if (fds[i] >= 0 && fstat(fds[i], &st) == 0) {
			if (*bits && (uint64_t)st.st_size != *size) {
				msg_fail(msg, msglen,
					 "shard \"%s\" has %" PRIu64 " bytes, the others %" PRIu64, p,
					 (uint64_t)st.st_size, *size);
				free(p);
				return WFS_ECORRUPT;
			}
			*size = (uint64_t)st.st_size;
			*bits |= (uint16_t)(1u << i);
		}
		free(p);
	}
	return WFS_OK;
}

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

wfs_err ec_rebuild_shards(const char *base, const struct ec_blocks *b, uint16_t *rebuilt,
			  char *msg, size_t msglen)
{
	int fds[EC_TOTAL_SHARDS], out[EC_TOTAL_SHARDS];
	uint16_t have, use = 0, missing;
	uint64_t size;
	struct outset o = {0};
	struct stripes s = {{0}};
	bool committed = false;
	wfs_err err;

	(void)b; /* the rows do not matter: every byte column is a codeword */
	*rebuilt = 0;
	err = open_shards(base, fds, &have, &size, msg, msglen);
	if (err)
		goto out;
	if (popcount16(have) < EC_DATA_SHARDS) {
		msg_fail(msg, msglen, "only %d shards of \"%s\" are here, 10 needed",
			 popcount16(have), base);
		err = WFS_ENOENT;
		goto out;
	}
	missing = EC_ALL_SHARDS & ~have;
	if (!missing)
		goto out;
	for (int i = 0; i < EC_TOTAL_SHARDS && popcount16(use) < EC_DATA_SHARDS; i++)
		if (have & (1u << i))
			use |= (uint16_t)(1u << i);
	for (int i = 0; i < EC_TOTAL_SHARDS; i++) {
		int k;
		out[i] = -1;
		if (!(missing & (1u << i)))
			continue;
		if ((k = out_add(&o, base, ec_shard_ext(i), msg, msglen)) < 0) {
			err = WFS_EIO;
			goto out;
		}
		out[i] = o.fd[k];
	}
	stripes_alloc(&s, EC_STRIPE);
	for (uint64_t off = 0; off < size; off += EC_STRIPE) {
		size_t len = (size_t)MIN((uint64_t)EC_STRIPE, size - off), got;
		for (int i = 0; i < EC_TOTAL_SHARDS && !err; i++)
			if (use & (1u << i)) {
				err = ec_pread(fds[i], s.p[i], len, off, &got);
				if (!err && got != len)
					err = WFS_ECORRUPT; /* shrank meanwhile */
			}
		if (!err)
			err = ec_reconstruct(s.p, use, missing, len);
		for (int i = 0; i < EC_TOTAL_SHARDS && !err; i++)
			if (missing & (1u << i))
				err = pwrite_full(out[i], s.p[i], len, off);
		if (err) {
			msg_fail(msg, msglen, "could not rebuild the shards of \"%s\": %s", base,
				 wfs_strerror(err));
			goto out;
		}
	}
	err = out_commit(&o, base, msg, msglen);
	committed = !err;
	if (committed)
		*rebuilt = missing;
out:
	out_close(&o, committed);
	stripes_free(&s);
	close_fds(fds, EC_TOTAL_SHARDS);
	return err;
}

/* Copies the data shards back into the .dat at fd, row by row, up to dat_size. */
static wfs_err decode_dat(const struct ec_blocks *b, const int *shards, uint64_t dat_size,
			  int fd)
{
	uint64_t nl = large_rows_for_dat(b, dat_size), pos = 0, shard_off = 0;
	uint8_t *p = xmalloc(EC_STRIPE);
	wfs_err err = WFS_OK;

	for (uint64_t row = 0; pos < dat_size; row++) {
		uint64_t bsize = row < nl ? b->large : b->small;
		for (int j = 0; j < EC_DATA_SHARDS && pos < dat_size; j++) {
			for (uint64_t in = 0; in < bsize && pos < dat_size; in += EC_STRIPE) {
				size_t len = (size_t)MIN(MIN((uint64_t)EC_STRIPE, bsize - in),
							 dat_size - pos),
				       got;
				err = ec_pread(shards[j], p, len, shard_off + in, &got);
				if (!err && got != len)
					err = WFS_ECORRUPT;
				if (!err)
					err = pwrite_full(fd, p, len, pos);
				if (err)
					goto out;
				pos += len;
			}
		}
		shard_off += bsize;
	}
out:
	free(p);
	return err;
}

/*
 * Writes the .idx: the .ecx's entries, then a deletion for every .ecj key. An entry the
 * .ecx tombstoned in place gets back its size from the needle's header in the new .dat, so
 * the .idx names where that needle ends and volume_open does not take it for an unindexed
 * tail.
 */
static wfs_err decode_idx(const char *base, int dat, int fd, char *msg, size_t msglen)
{
	char *ecx_path = base_path(base, ".ecx", false), *ecj_path = base_path(base, ".ecj", false);
	int ecx = open(ecx_path, O_RDONLY | O_CLOEXEC), ecj = open(ecj_path, O_RDONLY | O_CLOEXEC);
	uint8_t e[IDX_ENTRY_SIZE], k[8], h[NEEDLE_HEADER_SIZE];
	uint64_t pos, wpos = 0;
	size_t got;
	buf out = BUF_INIT;
	wfs_err err = WFS_OK;

	if (ecx < 0 || ecj < 0) {
		err = WFS_ENOENT;
		msg_fail(msg, msglen, "\"%s\" needs its .ecx and .ecj", base);
		goto out;
	}
	for (pos = 0;; pos += IDX_ENTRY_SIZE) {
		uint64_t key, hkey;
		uint32_t off, size, cookie, hsize;
		err = ec_pread(ecx, e, sizeof(e), pos, &got);
		if (err || got == 0)
			break;
		if (got != sizeof(e)) {
			err = WFS_ECORRUPT;
			msg_fail(msg, msglen, "\"%s\" is not a whole number of entries", ecx_path);
			goto out;
		}
		idx_entry_decode(e, &key, &off, &size);
		if (size == NEEDLE_TOMBSTONE && off &&
		    !ec_pread(dat, h, sizeof(h), (uint64_t)off * NEEDLE_ALIGN, &got) &&
		    got == sizeof(h)) {
			needle_parse_header(h, &cookie, &hkey, &hsize);
			if (hkey == key && hsize && hsize <= NEEDLE_MAX_BODY) {
				idx_entry_encode(e, key, off, hsize);
				buf_append(&out, e, sizeof(e));
				/* and deleted right after */
				idx_entry_encode(e, key, 0, NEEDLE_TOMBSTONE);
			}
		}
		buf_append(&out, e, sizeof(e));
		if (out.len >= (1u << 20)) {
			if ((err = pwrite_full(fd, out.data, out.len, wpos)))
				goto out;
			wpos += out.len;
			buf_reset(&out);
		}
	}
	for (pos = 0; !err; pos += 8) {
		err = ec_pread(ecj, k, sizeof(k), pos, &got);
		if (err || got != sizeof(k))
			break; /* a torn last key was never journaled */
		idx_entry_encode(e, get_be64(k), 0, NEEDLE_TOMBSTONE);
		buf_append(&out, e, sizeof(e));
	}
	if (!err)
		err = pwrite_full(fd, out.data, out.len, wpos);
	if (err)
		msg_fail(msg, msglen, "could not write the .idx of \"%s\": %s", base,
			 wfs_strerror(err));
out:
	if (ecx >= 0)
		close(ecx);
	if (ecj >= 0)
		close(ecj);
	buf_free(&out);
	free(ecx_path);
	free(ecj_path);
	return err;
}

wfs_err ec_decode_volume(const char *base, const struct ec_blocks *b, char *msg, size_t msglen)
{
	int fds[EC_TOTAL_SHARDS], idx, dat;
	uint16_t have;
	uint64_t size;
	struct ec_vif vif;
	struct outset o = {0};
	bool committed = false;
	wfs_err err;

	err = ec_vif_read(base, &vif);
	if (err) {
		msg_fail(msg, msglen, "could not read \"%s.vif\": %s", base, wfs_strerror(err));
		return err;
	}
	err = open_shards(base, fds, &have, &size, msg, msglen);
	if (err)
		goto out;
	if ((have & ((1u << EC_DATA_SHARDS) - 1)) != (1u << EC_DATA_SHARDS) - 1) {
		msg_fail(msg, msglen, "\"%s\" needs all of .ec00 .. .ec09 to decode", base);
		err = WFS_ENOENT;
		goto out;
	}
	if (size != ec_shard_size(b, vif.dat_size)) {
		msg_fail(msg, msglen,
			 "the shards of \"%s\" have %" PRIu64 " bytes, a .dat of %" PRIu64
			 " needs %" PRIu64,
			 base, size, vif.dat_size, ec_shard_size(b, vif.dat_size));
		err = WFS_ECORRUPT;
		goto out;
	}
	/* the .idx is renamed first: a .dat never shows up without its index */
	if ((idx = out_add(&o, base, ".idx", msg, msglen)) < 0 ||
	    (dat = out_add(&o, base, ".dat", msg, msglen)) < 0) {
		err = WFS_EIO;
		goto out;
	}
	err = decode_dat(b, fds, vif.dat_size, o.fd[dat]);
	if (err) {
		msg_fail(msg, msglen, "could not decode \"%s\": %s", base, wfs_strerror(err));
		goto out;
	}
	err = decode_idx(base, o.fd[dat], o.fd[idx], msg, msglen);
	if (err)
		goto out;
	err = out_commit(&o, base, msg, msglen);
	committed = !err;
out:
	out_close(&o, committed);
	close_fds(fds, EC_TOTAL_SHARDS);
	return err;
}

void ec_remove_leftovers(const char *base)
{
	static const char *const ext[] = {".ecx", ".ecj", ".vif", ".dat", ".idx"};
	for (int i = 0; i < EC_TOTAL_SHARDS + (int)ARRAY_LEN(ext); i++) {
		char *p = base_path(base, i < EC_TOTAL_SHARDS ? ec_shard_ext(i)
							      : ext[i - EC_TOTAL_SHARDS],
				    true);
		if (unlink(p) == 0)
			log_info("removed the leftover \"%s\"", p);
		free(p);
	}
}
