#include "config.h"

/*
 * fsx: a randomized file system exerciser checked against an in-memory model.
 *
 * DESIGN: one file is driven by a seeded random sequence of operations (read, write,
 * truncate up and down, mmap read, mmap write with MAP_SHARED + msync, fallocate in its
 * modes, copy_file_range inside the file, lseek SEEK_DATA / SEEK_HOLE, fsync, close/reopen).
 * A byte array `good` holds what the file must contain; every byte beyond the model's size is kept
 * zero, so growth by truncate, by a write past EOF or by fallocate reads back as zeros. Every read,
 * and the file size after every operation, is compared with the model; on the first mismatch the
 * tail of the operation log and the differing bytes are printed and the program exits 1.
 *
 * Two-path mode (-2 PATH2): the same file is reached through a second path (another mount
 * of the same cluster, a bind mount, a hard link...). Each close/reopen closes the current
 * descriptor and opens the file through the other path (close-to-open), optionally after a
 * delay (-D), and the whole file is read back and checked right after each such open.
 *
 * A fallocate mode or copy_file_range that the file system refuses (EOPNOTSUPP, ENOSYS,
 * EXDEV, EINVAL for an unsupported mode) is disabled for the rest of the run and reported;
 * every other error is a failure.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif
#ifndef FALLOC_FL_ZERO_RANGE
#define FALLOC_FL_ZERO_RANGE 0x10
#endif

enum op {
	OP_READ,
	OP_WRITE,
	OP_MAPREAD,
	OP_MAPWRITE,
	OP_TRUNCATE,
	OP_FALLOC,
	OP_FALLOC_KEEP,
	OP_PUNCH,
	OP_ZERO,
	OP_COPY,
	OP_SEEK,
	OP_FSYNC,
	OP_REOPEN,
	OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
	"read",  "write",      "mapread",    "mapwrite",  "truncate", "falloc", "falloc_keep",
	"punch", "zero_range", "copy_range", "seek_hole", "fsync",    "reopen",
};

/* Relative weights of the operations (before disabling). */
static const unsigned op_weight[OP_COUNT] = {
	[OP_READ] = 20,    [OP_WRITE] = 20, [OP_MAPREAD] = 8,     [OP_MAPWRITE] = 8,
	[OP_TRUNCATE] = 8, [OP_FALLOC] = 3, [OP_FALLOC_KEEP] = 3, [OP_PUNCH] = 3,
	[OP_ZERO] = 3,     [OP_COPY] = 4,   [OP_SEEK] = 4,        [OP_FSYNC] = 3,
	[OP_REOPEN] = 4,
};

static bool op_enabled[OP_COUNT];
static unsigned long op_done[OP_COUNT];

/* Options. */
static unsigned long num_ops = 10000;
static uint64_t seed;
static uint64_t max_len = 256 * 1024;
static uint64_t max_op_len = 64 * 1024;
static const char *paths[2];
static int npaths = 1;
static unsigned reopen_delay_ms;
static bool verbose;
static int log_keep = 64;

/* State. */
static unsigned char *good;   /* the model: what the file must hold */
static uint32_t *last_set;    /* per byte: the operation that last changed good[] there */
static unsigned char *tmpbuf; /* scratch for reads and writes */
static uint64_t file_size;    /* the model's size */
static int fd = -1;
static int side; /* index into paths of the open descriptor */
static unsigned long opno;
static long page_size;

/* Operation log: a ring of the last log_keep descriptions. */
#define LOG_LINE 160
static char (*oplog)[LOG_LINE];
static unsigned long *oplog_op; /* the operation number of each oplog line */
static unsigned long oplog_n;

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64*: tiny, fast and reproducible across platforms */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static uint64_t rnd_below(uint64_t n) { return n ? rnd() % n : 0; }

static void logop(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logop(const char *fmt, ...)
{
	char *line = oplog[oplog_n % (unsigned long)log_keep];
	oplog_op[oplog_n % (unsigned long)log_keep] = opno;
	int n = snprintf(line, LOG_LINE, "%6lu [%s] ", opno, paths[side] == paths[0] ? "A" : "B");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line + n, LOG_LINE - (size_t)n, fmt, ap);
	va_end(ap);
	oplog_n++;
	if (verbose)
		printf("%s\n", line);
}

static void dump_log(void)
{
	unsigned long first =
		oplog_n > (unsigned long)log_keep ? oplog_n - (unsigned long)log_keep : 0;
	fprintf(stderr, "fsx: last %lu operations (seed %" PRIu64 "):\n", oplog_n - first, seed);
	for (unsigned long i = first; i < oplog_n; i++)
		fprintf(stderr, "  %s\n", oplog[i % (unsigned long)log_keep]);
}

/* Marks [off, off+len) of the model as changed by the current operation. */
static void mark(uint64_t off, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++)
		last_set[off + i] = (uint32_t)opno;
}

/* Says which operation last set the model's byte at off (a first hint at the culprit). */
static void explain(uint64_t off)
{
	unsigned long op = last_set[off];
	if (!op) {
		fprintf(stderr,
			"fsx: the model's byte at 0x%" PRIx64 " was never written (a hole)\n", off);
		return;
	}
	fprintf(stderr, "fsx: the model's byte at 0x%" PRIx64 " was last changed by op %lu", off,
		op);
	for (int i = 0; i < log_keep && (unsigned long)i < oplog_n; i++) {
		if (oplog_op[i] == op) {
			fprintf(stderr, ": %s", oplog[i]);
			break;
		}
	}
	fprintf(stderr, "\n");
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "fsx: FAIL at op %lu: ", opno);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	dump_log();
	fprintf(stderr, "fsx: reproduce with -S %" PRIu64 " -N %lu -l %" PRIu64 " -o %" PRIu64 "\n",
		seed, num_ops, max_len, max_op_len);
	exit(1);
}

static void fail_errno(const char *what) { fail("%s: %s", what, strerror(errno)); }

/* Compares got (len bytes read at off) with the model and fails on the first difference. */
static void check_bytes(const char *what, uint64_t off, const unsigned char *got, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (got[i] == good[off + i])
			continue;
		size_t end = i;
		while (end < len && got[end] != good[off + end])
			end++;
		fprintf(stderr,
			"fsx: %s mismatch at offset 0x%" PRIx64 " (%zu bad bytes from there "
			"in this range), file size 0x%" PRIx64 "\n",
			what, off + i, end - i, file_size);
		fprintf(stderr, "  offset      good got\n");
		for (size_t k = i; k < len && k < i + 16; k++)
			fprintf(stderr, "  0x%08" PRIx64 "  %02x   %02x%s\n", off + k,
				good[off + k], got[k], good[off + k] == got[k] ? "" : "  <");
		explain(off + i);
		fail("%s: data mismatch", what);
	}
}

static void check_size(const char *what)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		fail_errno("fstat");
	if ((uint64_t)st.st_size != file_size)
		fail("%s: size is 0x%llx, model says 0x%" PRIx64, what,
		     (unsigned long long)st.st_size, file_size);
}

static void full_pread(const char *what, unsigned char *dst, size_t len, uint64_t off, size_t *got)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(fd, dst + done, len - done, (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fail_errno(what);
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	*got = done;
}

static void full_pwrite(const unsigned char *src, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = pwrite(fd, src + done, len - done, (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fail_errno("pwrite");
		}
		if (n == 0)
			fail("pwrite wrote 0 bytes");
		done += (size_t)n;
	}
}

/* Reads the whole file and checks it, including that EOF comes exactly at file_size. */
static void check_whole(const char *what)
{
	size_t got;
	check_size(what);
	full_pread(what, tmpbuf, file_size + 1, 0, &got);
	if (got != file_size)
		fail("%s: whole-file read returned %zu bytes, model size 0x%" PRIx64, what, got,
		     file_size);
	check_bytes(what, 0, tmpbuf, got);
}

static void open_side(int s)
{
	side = s;
	fd = open(paths[side], O_RDWR);
	if (fd < 0)
		fail("open %s: %s", paths[side], strerror(errno));
}

/* Picks an offset and a length for an operation inside [0, limit). */
static void pick_range(uint64_t limit, uint64_t *off, uint64_t *len)
{
	*off = rnd_below(limit);
	*len = 1 + rnd_below(max_op_len);
	if (*off + *len > limit)
		*len = limit - *off;
}

static void fill_pattern(unsigned char *dst, uint64_t off, size_t len)
{
	/* position- and op-dependent so that misplaced or stale bytes differ */
	for (size_t i = 0; i < len; i++)
		dst[i] = (unsigned char)(((off + i) % 251) + opno % 253 + 1);
}

static void do_read(void)
{
	uint64_t off, len;
	size_t got;
	if (file_size == 0) {
		logop("read skipped (size 0)");
		return;
	}
	pick_range(file_size, &off, &len);
	logop("read 0x%" PRIx64 " +0x%" PRIx64, off, len);
	full_pread("read", tmpbuf, len, off, &got);
	if (got != len)
		fail("short read: %zu of %" PRIu64 " bytes at 0x%" PRIx64 " (size 0x%" PRIx64 ")",
		     got, len, off, file_size);
	check_bytes("read", off, tmpbuf, len);
}

static void do_write(void)
{
	uint64_t off, len;
	pick_range(max_len, &off, &len);
	logop("write 0x%" PRIx64 " +0x%" PRIx64 " (size 0x%" PRIx64 ")", off, len, file_size);
	fill_pattern(good + off, off, len);
	mark(off, len);
	full_pwrite(good + off, len, off);
	if (off + len > file_size)
		file_size = off + len;
}

static void do_mapread(void)
{
	uint64_t off, len;
	if (file_size == 0) {
		logop("mapread skipped (size 0)");
		return;
	}
	pick_range(file_size, &off, &len);
	uint64_t pg = off - off % (uint64_t)page_size;
	size_t maplen = (size_t)(off + len - pg);
	logop("mapread 0x%" PRIx64 " +0x%" PRIx64, off, len);
	unsigned char *p = mmap(NULL, maplen, PROT_READ, MAP_SHARED, fd, (off_t)pg);
	if (p == MAP_FAILED)
		fail_errno("mmap(read)");
	memcpy(tmpbuf, p + (off - pg), len);
	if (munmap(p, maplen) < 0)
		fail_errno("munmap");
	check_bytes("mapread", off, tmpbuf, len);
}

static void do_mapwrite(void)
{
	uint64_t off, len;
	pick_range(max_len, &off, &len);
	logop("mapwrite 0x%" PRIx64 " +0x%" PRIx64 " (size 0x%" PRIx64 ")", off, len, file_size);
	if (off + len > file_size) {
		/* a mapping cannot extend a file: grow it first, as an application would */
		if (ftruncate(fd, (off_t)(off + len)) < 0)
			fail_errno("ftruncate(mapwrite)");
		file_size = off + len;
	}
	uint64_t pg = off - off % (uint64_t)page_size;
	size_t maplen = (size_t)(off + len - pg);
	unsigned char *p = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)pg);
	if (p == MAP_FAILED)
		fail_errno("mmap(write)");
	fill_pattern(good + off, off, len);
	mark(off, len);
	memcpy(p + (off - pg), good + off, len);
	if (msync(p, maplen, MS_SYNC) < 0)
		fail_errno("msync");
	if (munmap(p, maplen) < 0)
		fail_errno("munmap");
}

static void set_size(uint64_t newsize)
{
	if (newsize < file_size) {
		memset(good + newsize, 0, file_size - newsize);
		mark(newsize, file_size - newsize);
	}
	file_size = newsize;
}

static void do_truncate(void)
{
	uint64_t newsize = rnd_below(max_len + 1);
	/* favour small changes and zero now and then: both find different bugs */
	if (rnd_below(8) == 0)
		newsize = 0;
	else if (rnd_below(2) == 0 && file_size)
		newsize = file_size - rnd_below(file_size < 4096 ? file_size : 4096);
	logop("truncate 0x%" PRIx64 " -> 0x%" PRIx64, file_size, newsize);
	if (ftruncate(fd, (off_t)newsize) < 0)
		fail_errno("ftruncate");
	set_size(newsize);
}

static bool unsupported(int e) { return e == EOPNOTSUPP || e == ENOSYS; }

static void do_falloc(enum op op)
{
	static const int modes[OP_COUNT] = {
		[OP_FALLOC] = 0,
		[OP_FALLOC_KEEP] = FALLOC_FL_KEEP_SIZE,
		[OP_PUNCH] = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		[OP_ZERO] = FALLOC_FL_ZERO_RANGE,
	};
	uint64_t off, len;
	pick_range(max_len, &off, &len);
	if (op == OP_PUNCH && file_size && rnd_below(4))
		pick_range(file_size, &off, &len); /* mostly punch where the data is */
	logop("%s 0x%" PRIx64 " +0x%" PRIx64 " (size 0x%" PRIx64 ")", op_names[op], off, len,
	      file_size);
	if (fallocate(fd, modes[op], (off_t)off, (off_t)len) < 0) {
		if (unsupported(errno)) {
			printf("fsx: %s not supported here (%s): disabled\n", op_names[op],
			       strerror(errno));
			op_enabled[op] = false;
			op_done[op]--;
			return;
		}
		fail_errno(op_names[op]);
	}
	uint64_t end = off + len;
	bool keep = op == OP_FALLOC_KEEP || op == OP_PUNCH;
	if (op == OP_PUNCH || op == OP_ZERO) {
		uint64_t zend = end < file_size ? end : file_size;
		if (off < zend) {
			memset(good + off, 0, zend - off);
			mark(off, zend - off);
		}
	}
	if (!keep && end > file_size)
		file_size = end;
}

static void do_copy(void)
{
	uint64_t src, len, dst;
	if (file_size == 0) {
		logop("copy_range skipped (size 0)");
		return;
	}
	pick_range(file_size, &src, &len);
	/* copy_file_range refuses overlapping ranges in one file: pick dst outside */
	dst = rnd_below(max_len - len + 1);
	if (dst < src + len && src < dst + len) {
		dst = src + len;
		if (dst + len > max_len) {
			if (src >= len)
				dst = src - len;
			else {
				logop("copy_range skipped (no room)");
				return;
			}
		}
	}
	logop("copy_range 0x%" PRIx64 " +0x%" PRIx64 " -> 0x%" PRIx64 " (size 0x%" PRIx64 ")", src,
	      len, dst, file_size);
	uint64_t done = 0;
	while (done < len) {
		loff_t in = (loff_t)(src + done), out = (loff_t)(dst + done);
		ssize_t n = copy_file_range(fd, &in, fd, &out, len - done, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (done == 0 && (unsupported(errno) || errno == EXDEV)) {
				printf("fsx: copy_file_range not supported here (%s): disabled\n",
				       strerror(errno));
				op_enabled[OP_COPY] = false;
				op_done[OP_COPY]--;
				return;
			}
			fail_errno("copy_file_range");
		}
		if (n == 0)
			fail("copy_file_range copied 0 bytes at src 0x%" PRIx64, src + done);
		done += (uint64_t)n;
	}
	memmove(good + dst, good + src, len);
	mark(dst, len);
	if (dst + len > file_size)
		file_size = dst + len;
}

/* Whether the model holds only zeros in [off, end). */
static bool model_zero(uint64_t off, uint64_t end)
{
	for (uint64_t i = off; i < end; i++)
		if (good[i])
			return false;
	return true;
}

/* lseek SEEK_DATA / SEEK_HOLE: what a file system reports as a hole must read as zeros (it
   may report a hole as data), and both are ENXIO at or past the end. */
static void do_seek(void)
{
	uint64_t off = rnd_below(file_size + 4096);
	int whence = rnd_below(2) ? SEEK_DATA : SEEK_HOLE;
	const char *name = whence == SEEK_DATA ? "SEEK_DATA" : "SEEK_HOLE";
	off_t r;

	logop("%s 0x%" PRIx64 " (size 0x%" PRIx64 ")", name, off, file_size);
	r = lseek(fd, (off_t)off, whence);
	if (r < 0 && errno == EINVAL && off < file_size) {
		printf("fsx: SEEK_DATA/SEEK_HOLE not supported here: disabled\n");
		op_enabled[OP_SEEK] = false;
		op_done[OP_SEEK]--;
		return;
	}
	if (off >= file_size) {
		if (r >= 0 || errno != ENXIO)
			fail("%s at 0x%" PRIx64 " past the end 0x%" PRIx64
			     ": %lld (%s), want ENXIO",
			     name, off, file_size, (long long)r,
			     r < 0 ? strerror(errno) : "no error");
		return;
	}
	if (r < 0 && errno != ENXIO)
		fail_errno(name);
	if (whence == SEEK_DATA) {
		uint64_t d = r < 0 ? file_size : (uint64_t)r;
		if (d < off || d > file_size || (r >= 0 && d == file_size))
			fail("SEEK_DATA at 0x%" PRIx64 " gave %lld, size 0x%" PRIx64, off,
			     (long long)r, file_size);
		if (!model_zero(off, d))
			fail("SEEK_DATA at 0x%" PRIx64 " skipped data up to 0x%" PRIx64, off, d);
		return;
	}
	if (r < 0)
		fail("SEEK_HOLE at 0x%" PRIx64 " inside the file: ENXIO", off);
	uint64_t h = (uint64_t)r;
	if (h < off || h > file_size)
		fail("SEEK_HOLE at 0x%" PRIx64 " gave 0x%" PRIx64 ", size 0x%" PRIx64, off, h,
		     file_size);
	if (h == file_size)
		return;
	/* the hole reaches the next data: all zeros */
	off_t d = lseek(fd, (off_t)h, SEEK_DATA);
	if (d < 0 && errno != ENXIO)
		fail_errno("SEEK_DATA after SEEK_HOLE");
	uint64_t end = d < 0 ? file_size : (uint64_t)d;
	if (end <= h || end > file_size || !model_zero(h, end))
		fail("the hole [0x%" PRIx64 ", 0x%" PRIx64 ") reported at 0x%" PRIx64
		     " holds data (size 0x%" PRIx64 ")",
		     h, end, off, file_size);
}

static void do_fsync(void)
{
	logop("fsync");
	if (fsync(fd) < 0)
		fail_errno("fsync");
}

static void do_reopen(void)
{
	int next = npaths == 2 ? 1 - side : side;
	logop("close, reopen via %s", next ? "B" : "A");
	if (close(fd) < 0)
		fail_errno("close");
	fd = -1;
	if (reopen_delay_ms && npaths == 2) {
		struct timespec ts = {reopen_delay_ms / 1000,
				      (long)(reopen_delay_ms % 1000) * 1000000L};
		nanosleep(&ts, NULL);
	}
	open_side(next);
	if (npaths == 2)
		check_whole("reopen");
}

static enum op pick_op(void)
{
	unsigned total = 0;
	for (int i = 0; i < OP_COUNT; i++)
		if (op_enabled[i])
			total += op_weight[i];
	uint64_t r = rnd_below(total);
	for (int i = 0; i < OP_COUNT; i++) {
		if (!op_enabled[i])
			continue;
		if (r < op_weight[i])
			return (enum op)i;
		r -= op_weight[i];
	}
	return OP_READ;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fsx [options] FILE\n"
		"  -N n      number of operations (10000)\n"
		"  -S seed   random seed (default: from the clock; printed)\n"
		"  -l len    maximum file length (262144)\n"
		"  -o len    maximum length of one operation (65536)\n"
		"  -2 path   the same file through a second path: reopen alternates paths\n"
		"  -D ms     delay before opening through the other path (0)\n"
		"  -R / -W   no mmap reads / no mmap writes\n"
		"  -F        no fallocate (any mode); -H no punch hole; -Z no zero range\n"
		"  -C        no copy_file_range\n"
		"  -X op     disable an operation by name (repeatable): read, write, mapread,\n"
		"            mapwrite, truncate, falloc, falloc_keep, punch, zero_range,\n"
		"            copy_range, seek_hole, fsync, reopen\n"
		"  -L n      operations kept in the log printed on failure (64)\n"
		"  -k        keep the existing file (default: truncate it to 0 first)\n"
		"  -v        print every operation\n");
	exit(2);
}

static uint64_t parse_num(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end || end == s)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	bool keep = false, seeded = false;
	int c;

	for (int i = 0; i < OP_COUNT; i++)
		op_enabled[i] = true;
	while ((c = getopt(argc, argv, "N:S:l:o:2:D:RWFHZCX:L:kv")) != -1) {
		switch (c) {
		case 'N':
			num_ops = parse_num(optarg);
			break;
		case 'S':
			seed = parse_num(optarg);
			seeded = true;
			break;
		case 'l':
			max_len = parse_num(optarg);
			break;
		case 'o':
			max_op_len = parse_num(optarg);
			break;
		case '2':
			paths[1] = optarg;
			npaths = 2;
			break;
		case 'D':
			reopen_delay_ms = (unsigned)parse_num(optarg);
			break;
		case 'R':
			op_enabled[OP_MAPREAD] = false;
			break;
		case 'W':
			op_enabled[OP_MAPWRITE] = false;
			break;
		case 'F':
			op_enabled[OP_FALLOC] = op_enabled[OP_FALLOC_KEEP] = false;
			op_enabled[OP_PUNCH] = op_enabled[OP_ZERO] = false;
			break;
		case 'H':
			op_enabled[OP_PUNCH] = false;
			break;
		case 'Z':
			op_enabled[OP_ZERO] = false;
			break;
		case 'C':
			op_enabled[OP_COPY] = false;
			break;
		case 'X': {
			int i = 0;
			while (i < OP_COUNT && strcmp(op_names[i], optarg))
				i++;
			if (i == OP_COUNT)
				usage();
			op_enabled[i] = false;
			break;
		}
		case 'L':
			log_keep = (int)parse_num(optarg);
			break;
		case 'k':
			keep = true;
			break;
		case 'v':
			verbose = true;
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1 || max_len == 0 || max_op_len == 0 || log_keep <= 0 ||
	    max_len > ((uint64_t)1 << 32))
		usage();
	if (max_op_len > max_len)
		max_op_len = max_len;
	paths[0] = argv[optind];
	setvbuf(stdout, NULL, _IOLBF, 0); /* keep notes in order with stderr */
	if (!seeded)
		seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16);
	rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
	if (!rng_state)
		rng_state = 1;
	page_size = sysconf(_SC_PAGESIZE);
	good = calloc(1, max_len + 1);
	tmpbuf = calloc(1, max_len + 1);
	oplog = calloc((size_t)log_keep, sizeof(*oplog));
	oplog_op = calloc((size_t)log_keep, sizeof(*oplog_op));
	last_set = calloc(max_len + 1, sizeof(*last_set));
	if (!good || !tmpbuf || !oplog || !oplog_op || !last_set) {
		fprintf(stderr, "fsx: out of memory\n");
		return 2;
	}

	fd = open(paths[0], O_RDWR | O_CREAT | (keep ? 0 : O_TRUNC), 0644);
	if (fd < 0) {
		fprintf(stderr, "fsx: open %s: %s\n", paths[0], strerror(errno));
		return 2;
	}
	if (keep) {
		/* the existing content becomes the model */
		struct stat st;
		size_t got;
		if (fstat(fd, &st) < 0)
			fail_errno("fstat");
		if ((uint64_t)st.st_size > max_len) {
			if (ftruncate(fd, (off_t)max_len) < 0)
				fail_errno("ftruncate");
			st.st_size = (off_t)max_len;
		}
		full_pread("initial read", good, (size_t)st.st_size, 0, &got);
		file_size = got;
	}
	printf("fsx: %s%s%s, %lu ops, seed %" PRIu64 ", max len %" PRIu64 ", max op %" PRIu64 "\n",
	       paths[0], npaths == 2 ? " and " : "", npaths == 2 ? paths[1] : "", num_ops, seed,
	       max_len, max_op_len);
	fflush(stdout);

	for (opno = 1; opno <= num_ops; opno++) {
		enum op op = pick_op();
		op_done[op]++;
		switch (op) {
		case OP_READ:
			do_read();
			break;
		case OP_WRITE:
			do_write();
			break;
		case OP_MAPREAD:
			do_mapread();
			break;
		case OP_MAPWRITE:
			do_mapwrite();
			break;
		case OP_TRUNCATE:
			do_truncate();
			break;
		case OP_FALLOC:
		case OP_FALLOC_KEEP:
		case OP_PUNCH:
		case OP_ZERO:
			do_falloc(op);
			break;
		case OP_COPY:
			do_copy();
			break;
		case OP_SEEK:
			do_seek();
			break;
		case OP_FSYNC:
			do_fsync();
			break;
		case OP_REOPEN:
			do_reopen();
			break;
		case OP_COUNT:
			break;
		}
		check_size(op_names[op]);
	}
	opno = num_ops;
	/* final: close, reopen through each path, and check everything */
	if (close(fd) < 0)
		fail_errno("close");
	for (int s = 0; s < npaths; s++) {
		open_side(s);
		logop("final check");
		check_whole("final");
		close(fd);
	}
	printf("fsx: PASS %lu ops, seed %" PRIu64 ", final size %" PRIu64 ":", num_ops, seed,
	       file_size);
	for (int i = 0; i < OP_COUNT; i++)
		printf(" %s=%lu%s", op_names[i], op_done[i], op_enabled[i] ? "" : "(off)");
	printf("\n");
	free(good);
	free(tmpbuf);
	free(oplog);
	free(oplog_op);
	free(last_set);
	return 0;
}
