/*
 * Erasure coding's figures, one line each:
 *   - isa-l's raw RS(10,4) encode of in-memory buffers (the physical limit);
 *   - ec_reconstruct of four lost shards in memory;
 *   - ec_encode_volume of a SIZE MiB .dat in a temporary directory (MiB of .dat per s,
 *     fsyncs included);
 *   - ec_rebuild_shards of four deleted shard files (MiB of .dat covered per s);
 *   - for comparison a plain copy of the same .dat (1 MiB pread + pwrite, fsync), before
 *     and after the rest (the disk's write cache makes the order matter).
 *
 * Usage: ec_encode [SIZE_MIB] [DIR]   (default 512 MiB in /tmp)
 */
#include "config.h"
#include <fcntl.h>
#include <inttypes.h>
#include <isa-l/erasure_code.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>
#include "util.h"
#include "server/volume/ec_codec.h"

#define MIB     (1024.0 * 1024.0)
#define PIECE   (1u << 20)
#define MEM_LEN (4u << 20) /* per shard, in memory */

static double secs(uint64_t t0) { return (double)(time_mono_ns() - t0) / 1e9; }

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed | 1;
	for (size_t i = 0; i + 8 <= n; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
}

static void bench_memory(void)
{
	uint8_t *sh[EC_TOTAL_SHARDS], a[EC_TOTAL_SHARDS * EC_DATA_SHARDS];
	uint8_t tables[32 * EC_DATA_SHARDS * EC_PARITY_SHARDS];
	int rounds = 64;
	uint64_t t0;
	double s;

	for (int i = 0; i < EC_TOTAL_SHARDS; i++) {
		sh[i] = xmalloc(MEM_LEN);
		fill(sh[i], MEM_LEN, (uint64_t)i + 1);
	}
	gf_gen_rs_matrix(a, EC_TOTAL_SHARDS, EC_DATA_SHARDS);
	ec_init_tables(EC_DATA_SHARDS, EC_PARITY_SHARDS, a + EC_DATA_SHARDS * EC_DATA_SHARDS,
		       tables);
	t0 = time_mono_ns();
	for (int r = 0; r < rounds; r++)
		ec_encode_data(MEM_LEN, EC_DATA_SHARDS, EC_PARITY_SHARDS, tables, sh,
			       sh + EC_DATA_SHARDS);
	s = secs(t0);
	printf("isa-l raw RS(10,4) encode, in memory: %.0f MiB/s of data\n",
	       rounds * (double)MEM_LEN * EC_DATA_SHARDS / MIB / s);
	ec_reconstruct(sh, 0x3ff, 0x3c00, MEM_LEN);
	t0 = time_mono_ns();
	for (int r = 0; r < rounds; r++)
		ec_reconstruct(sh, EC_ALL_SHARDS & ~0x0f, 0x0f, MEM_LEN);
	s = secs(t0);
	printf("ec_reconstruct of 4 lost data shards, in memory: %.0f MiB/s of data covered\n",
	       rounds * (double)MEM_LEN * EC_DATA_SHARDS / MIB / s);
	for (int i = 0; i < EC_TOTAL_SHARDS; i++)
		free(sh[i]);
}

static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	uint8_t *p = xmalloc(PIECE);
	uint64_t off = 0;
	ssize_t n;
	int rc = 0;
	if (in < 0 || out < 0)
		rc = -1;
	while (!rc && (n = pread(in, p, PIECE, (off_t)off)) > 0) {
		if (pwrite(out, p, (size_t)n, (off_t)off) != n)
			rc = -1;
		off += (uint64_t)n;
	}
	if (!rc && fsync(out) < 0)
		rc = -1;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	free(p);
	return rc;
}

/* The same bytes copied as plainly as can be: the disk's own figure. */
static void bench_copy(const char *base, const char *when)
{
	char *p = xasprintf("%s.dat", base), *cp = xasprintf("%s.copy", base);
	uint64_t t0 = time_mono_ns();
	struct stat st;
	double s;
	if (copy_file(p, cp) || stat(p, &st) < 0) {
		fprintf(stderr, "ec_encode: the copy failed\n");
		exit(1);
	}
	s = secs(t0);
	printf("plain copy of the .dat %s the encode (pread+pwrite 1 MiB, fsync): %.0f MiB/s "
	       "(%.2f s)\n",
	       when, (double)st.st_size / MIB / s, s);
	unlink(cp);
	free(p);
	free(cp);
}

int main(int argc, char **argv)
{
	uint64_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 512, t0;
	const char *tmp = argc > 2 ? argv[2] : "/tmp";
	char *d = xasprintf("%s/ec_bench.XXXXXX", tmp), *base, *p, msg[256] = "";
	struct ec_vif vif = {0};
	uint16_t rebuilt;
	uint8_t *buf = xmalloc(PIECE);
	int fd;
	double s;

	bench_memory();
	if (!mib || !mkdtemp(d)) {
		fprintf(stderr, "ec_encode: bad size or directory\n");
		return 1;
	}
	base = xasprintf("%s/1", d);
	p = xasprintf("%s.dat", base);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (uint64_t i = 0; fd >= 0 && i < mib; i++) {
		fill(buf, PIECE, i + 7);
		if (write(fd, buf, PIECE) != PIECE)
			return 1;
	}
	if (fd < 0 || fsync(fd) < 0)
		return 1;
	close(fd);
	free(p);
	p = xasprintf("%s.idx", base);
	close(open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644));
	free(p);

	bench_copy(base, "before");
	t0 = time_mono_ns();
	if (ec_encode_volume(base, &ec_default_blocks, &vif, msg, sizeof(msg))) {
		fprintf(stderr, "ec_encode: %s\n", msg);
		return 1;
	}
	s = secs(t0);
	printf("ec_encode_volume of a %" PRIu64 " MiB .dat: %.0f MiB/s (%.2f s)\n", mib,
	       (double)mib / s, s);

	for (int i = 0; i < 4; i++) {
		p = xasprintf("%s%s", base, ec_shard_ext(i * 3));
		unlink(p);
		free(p);
	}
	t0 = time_mono_ns();
	if (ec_rebuild_shards(base, &ec_default_blocks, &rebuilt, msg, sizeof(msg))) {
		fprintf(stderr, "ec_encode: %s\n", msg);
		return 1;
	}
	s = secs(t0);
	printf("ec_rebuild_shards of 4 shard files: %.0f MiB/s of .dat covered (%.2f s)\n",
	       (double)mib / s, s);

	bench_copy(base, "after");

	p = xasprintf("rm -rf %s", d);
	if (system(p) != 0)
		fprintf(stderr, "ec_encode: could not remove %s\n", d);
	free(p);
	free(base);
	free(buf);
	free(d);
	return 0;
}
