/*
 * Throughput of the filer's data path against a running cluster (weedfs mini):
 * writes SIZE MiB through chunk_writer, reads it back through chunk_read
 * (checking a sample of the bytes), deletes the chunks, prints MB/s.
 *
 *   tests/bench/filer_chunk_io -master=127.0.0.1:9333 -sizeMB=1024 -chunkMB=4 \
 *       -inflight=4 -readahead=4 -threads=16
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "client/blob_client.h"
#include "client/chunk_io.h"
#include "http_client.h"
#include "log.h"
#include "util.h"

struct sink {
	uint64_t at, bad;
};

static uint8_t pattern(uint64_t off) { return (uint8_t)(off * 131 + (off >> 20)); }

static wfs_err sink_check(void *arg, const void *data, size_t len)
{
	struct sink *s = arg;
	const uint8_t *p = data;
	for (size_t i = 0; i < len; i += 65521)
		s->bad += p[i] != pattern(s->at + i);
	s->at += len;
	return WFS_OK;
}

static const char *arg_val(int argc, char **argv, const char *name, const char *def)
{
	size_t n = strlen(name);
	for (int i = 1; i < argc; i++)
		if (argv[i][0] == '-' && !strncmp(argv[i] + 1, name, n) && argv[i][n + 1] == '=')
			return argv[i] + n + 2;
	return def;
}

int main(int argc, char **argv)
{
	const char *master = arg_val(argc, argv, "master", "127.0.0.1:9333");
	uint64_t size = strtoull(arg_val(argc, argv, "sizeMB", "1024"), NULL, 10) << 20;
	uint64_t cs = strtoull(arg_val(argc, argv, "chunkMB", "4"), NULL, 10) << 20;
	struct chunk_writer_opts o = {.chunk_size = cs};
	struct chunk_read_opts ro = {0, 0};
	struct blob_client_opts bo = {
		.timeout_ms = 60000,
		.short_circuit_off = !strcmp(arg_val(argc, argv, "shortCircuit", "true"), "false")};
	blob_client *bc;
	chunk_writer *cw;
	struct filer_chunk *c = NULL;
	size_t n = 0, wlen = 1 << 20;
	uint8_t *piece = xmalloc(wlen), *base = xmalloc(wlen);
	uint64_t t0, at = 0;
	double wsec, rsec;
	struct sink s = {0, 0};
	wfs_err err = WFS_OK;

	o.max_in_flight = atoi(arg_val(argc, argv, "inflight", "4"));
	o.fsync = !strcmp(arg_val(argc, argv, "fsync", "false"), "true");
	ro.read_ahead = atoi(arg_val(argc, argv, "readahead", "4"));
	ro.piece_size = strtoull(arg_val(argc, argv, "pieceMB", "4"), NULL, 10) << 20;
	bo.threads = atoi(arg_val(argc, argv, "threads", "16"));
	log_set_level(LOG_LEVEL_WARN);
	http_client_global_init();
	bc = blob_client_new(master, &bo);

	cw = chunk_writer_new(bc, &o, &err);
	if (!cw) {
		fprintf(stderr, "bad options\n");
		return 2;
	}
	for (size_t i = 0; i < wlen; i++)
		base[i] = pattern(i);
	t0 = time_mono_ns();
	while (at < size && !err) {
		size_t k = (size_t)MIN(wlen, size - at);
		/* at is a multiple of 1 MiB: pattern(at + i) = base[i] + (at >> 20), vectorised */
		for (size_t i = 0; i < k; i++)
			piece[i] = (uint8_t)(base[i] + (uint8_t)(at >> 20));
		err = chunk_writer_write(cw, piece, k);
		at += k;
	}
	if (!err)
		err = chunk_writer_finish(cw, &c, &n);
	wsec = (double)(time_mono_ns() - t0) / 1e9;
	if (err) {
		fprintf(stderr, "write failed: %s\n", wfs_strerror(err));
		return 1;
	}
	printf("write: %" PRIu64 " MiB in %zu chunks, %.2f s, %.0f MB/s (writer peak %zu MiB)\n",
	       size >> 20, n, wsec, (double)size / 1e6 / wsec, chunk_writer_mem_peak(cw) >> 20);
	chunk_writer_free(cw);

	t0 = time_mono_ns();
	err = chunk_read_ex(bc, c, n, size, 0, size, sink_check, &s, &ro);
	rsec = (double)(time_mono_ns() - t0) / 1e9;
	if (err || s.at != size || s.bad) {
		fprintf(stderr, "read failed: %s, %" PRIu64 " bytes, %" PRIu64 " bad samples\n",
			wfs_strerror(err), s.at, s.bad);
		return 1;
	}
	printf("read:  %" PRIu64 " MiB, %.2f s, %.0f MB/s\n", size >> 20, rsec,
	       (double)size / 1e6 / rsec);
	for (size_t i = 0; i < n; i++)
		blob_client_delete(bc, c[i].fid);
	filer_chunks_free(c, n);
	blob_client_free(bc);
	free(piece);
	free(base);
	return 0;
}
