/*
 * Short-circuit reads, the reader's side (lib/sc_wire.h): when a replica's
 * volume server runs on this host, ask it over its Unix socket where the
 * needle's data lies in the volume's .dat and pread the bytes from the
 * descriptor it hands over, instead of pulling them through two TCP hops.
 * blob_client.c tries it before HTTP for every replica read.
 *
 * DESIGN
 * - Local: the url's host is a loopback address or one of this host's
 *   interface addresses (read once), and the server's abstract socket
 *   answers. A server whose socket refused a connection is not tried again
 *   for SC_RETRY_SECONDS (it is off, or another host's).
 * - Per server: idle connections (each carries one request at a time) and
 *   one descriptor per volume, with the dev/ino of the file it opens. An
 *   answer naming another file (a vacuum swapped the files in, the volume was
 *   deleted and made again, moved away and back) asks once more for a fresh
 *   descriptor; the old one is closed. A read uses a dup of the cached one,
 *   so a replacement never closes a descriptor under a pread.
 * - A whole read is checked against the needle's CRC; a ranged one cannot be
 *   (the CRC covers the whole data), as over HTTP.
 * - Every failure (not local, refused, the server's NO, a short read, a CRC
 *   mismatch) is WFS_ENOSYS: the caller reads over HTTP, which gives the
 *   authoritative answer (a redirect, a 404, a corruption error). A damaged
 *   needle is logged and never returned.
 */
#ifndef WEEDFS_CLIENT_SHORT_CIRCUIT_H
#define WEEDFS_CLIENT_SHORT_CIRCUIT_H

#include <stddef.h>
#include <stdint.h>
#include "buf.h"
#include "err.h"

#define SC_RETRY_SECONDS 5

typedef struct short_circuit short_circuit;

struct short_circuit_stats {
	uint64_t reads;       /* reads answered by short-circuit */
	uint64_t bytes;       /* bytes they returned */
	uint64_t fallbacks;   /* reads of a local server handed back to HTTP */
	uint64_t descriptors; /* volume descriptors received */
};

/* timeout_ms bounds each request to a server (a stopped one, then HTTP is tried). */
short_circuit *short_circuit_new(long timeout_ms);
/* Closes every connection and descriptor. No read may be in progress. NULL does nothing. */
void short_circuit_free(short_circuit *sc);

/*
 * Appends bytes [off, off+len) of blob fid (len 0: all of it, at most
 * max_whole bytes, else WFS_ETOOBIG) held by the volume server at url
 * ("ip:port") to out. WFS_ENOSYS: read it over HTTP (out unchanged).
 * Blocking; any thread.
 */
wfs_err short_circuit_read(short_circuit *sc, const char *url, const char *fid, uint64_t off,
			   uint64_t len, size_t max_whole, buf *out);

void short_circuit_get_stats(short_circuit *sc, struct short_circuit_stats *out);

#endif
