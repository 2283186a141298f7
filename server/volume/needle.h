/*
 * Needles: the records of a volume's .dat file, byte-compatible with SeaweedFS
 * needle version 3, and the 16-byte entries of its .idx file.
 *
 * On disk: header (cookie u32, key u64, size u32; size = body length), body,
 * CRC32C of the data (u32), append time in ns (u64), zero padding. All big
 * endian. The body (absent when size == 0, which marks a deletion record) is
 * data size u32, data, flags u8, then by flag name, mime, last-modified,
 * TTL and pairs. Padding is 8 - ((16 + size + 12) % 8), so 1..8 bytes: an
 * already aligned needle still gets 8 (SeaweedFS does the same).
 *
 * Decision: an upload of zero bytes still gets a body (data size 0, flags,
 * ...), so size 0 means "deletion record" without exception and an empty
 * file survives an .idx rebuild. SeaweedFS writes size 0 for empty data and
 * then treats it as deleted after a restart; it reads our form correctly.
 */
#ifndef WEEDFS_VOLUME_NEEDLE_H
#define WEEDFS_VOLUME_NEEDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "err.h"

#define NEEDLE_HEADER_SIZE  16
#define NEEDLE_TRAILER_SIZE 12 /* crc u32 + append time u64 */
#define NEEDLE_ALIGN        8
#define NEEDLE_TOMBSTONE    0xFFFFFFFFu /* .idx size of a deletion */
#define IDX_ENTRY_SIZE      16
#define SUPERBLOCK_SIZE     8
#define NEEDLE_VERSION      3

#define NEEDLE_FLAG_COMPRESSED        0x01
#define NEEDLE_FLAG_HAS_NAME          0x02
#define NEEDLE_FLAG_HAS_MIME          0x04
#define NEEDLE_FLAG_HAS_LAST_MODIFIED 0x08
#define NEEDLE_FLAG_HAS_TTL           0x10
#define NEEDLE_FLAG_HAS_PAIRS         0x20
#define NEEDLE_FLAG_CHUNK_MANIFEST    0x80

/* Largest body we accept; offsets and sizes must also fit the u32 .idx fields. */
#define NEEDLE_MAX_BODY 0x7FFFFFF0u

/* A decoded needle. Pointers borrow the buffer the needle was decoded from. */
struct needle {
	uint32_t cookie;
	uint64_t key;
	uint32_t size; /* body length; 0 for a deletion record */
	uint32_t data_size;
	const uint8_t *data;
	uint8_t flags;
	uint8_t name_len;
	const char *name; /* not NUL-terminated */
	uint8_t mime_len;
	const char *mime;       /* not NUL-terminated */
	uint64_t last_modified; /* seconds; 5 bytes on disk */
	uint8_t ttl[2];         /* count, unit */
	uint16_t pairs_len;
	const uint8_t *pairs;
	uint32_t crc;       /* CRC32C of data (as stored when decoded without a CRC check) */
	uint64_t append_ns; /* append time */
};

/* Padding after a needle with this body size (1..8). */
static inline uint32_t needle_padding(uint32_t size)
{
	return NEEDLE_ALIGN -
	       (uint32_t)((NEEDLE_HEADER_SIZE + (uint64_t)size + NEEDLE_TRAILER_SIZE) %
			  NEEDLE_ALIGN);
}

/* Bytes a needle with this body size takes in the .dat, padding included. */
static inline uint64_t needle_disk_size(uint32_t size)
{
	return NEEDLE_HEADER_SIZE + (uint64_t)size + NEEDLE_TRAILER_SIZE + needle_padding(size);
}


/*
 * Body length for n's data and the fields its flags select (n->size is not read).
 * Name and mime must be at most 255 bytes. Any thread.
 */
uint32_t needle_body_size(const struct needle *n);

/*
 * Encoder state for one needle split into three pieces so the data is never
 * copied: iov[0] header + data size, iov[1] data, iov[2] the rest.
 */
struct needle_enc {
	struct iovec iov[3];
	int iovcnt;
	uint64_t total; /* bytes of all pieces */
	uint8_t head[NEEDLE_HEADER_SIZE + 4];
	uint8_t *tail; /* owned; points to small or heap memory */
	uint8_t small[640];
};

/*
 * Encodes n (size, crc computed here from the fields; append_ns taken as is).
 * A needle with size 0 in flags and no data still gets a body; only
 * needle_encode_delete writes the empty-body deletion record. The iovecs
 * borrow n->data and e. Free with needle_enc_free. Any thread.
 */
void needle_encode(struct needle *n, struct needle_enc *e);
/*
 * Like needle_encode, for data that is not in memory (n->data NULL): crc is
 * the CRC32C of the data_size bytes the caller writes between iov[0] and
 * iov[2] (iov[1] is empty; total still counts the data). Any thread.
 */
void needle_encode_crc(struct needle *n, uint32_t crc, struct needle_enc *e);
/* The deletion record for key: header with size 0, crc 0 and the append time. */
void needle_encode_delete(uint32_t cookie, uint64_t key, uint64_t append_ns, struct needle_enc *e);
void needle_enc_free(struct needle_enc *e);

/* Reads cookie, key and size from a 16-byte header. */
void needle_parse_header(const uint8_t *p, uint32_t *cookie, uint64_t *key, uint32_t *size);

/*
 * Decodes a whole needle (len >= needle_disk_size(size) of the header's size).
 * Checks the body structure and, when check_crc, the data CRC. Fields borrow p.
 * WFS_ECORRUPT on malformed input. Any thread.
 */
wfs_err needle_decode(const uint8_t *p, size_t len, bool check_crc, struct needle *n);

/*
 * Decodes a needle's fields without its data: head is the 16-byte header
 * plus the 4-byte data size, tail the tail_len bytes that follow the data
 * (fields, CRC, append time; padding may follow). n->data stays NULL; the
 * CRC is not checked. Fields borrow tail. WFS_ECORRUPT when malformed.
 */
#define NEEDLE_HEAD_SIZE (NEEDLE_HEADER_SIZE + 4)
wfs_err needle_decode_meta(const uint8_t *head, const uint8_t *tail, size_t tail_len,
			   struct needle *n);

/* .idx entries. */
static inline void idx_entry_encode(uint8_t *p, uint64_t key, uint32_t offset, uint32_t size)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(key >> (56 - 8 * i));
	p[8] = (uint8_t)(offset >> 24), p[9] = (uint8_t)(offset >> 16);
	p[10] = (uint8_t)(offset >> 8), p[11] = (uint8_t)offset;
	p[12] = (uint8_t)(size >> 24), p[13] = (uint8_t)(size >> 16);
	p[14] = (uint8_t)(size >> 8), p[15] = (uint8_t)size;
}
void idx_entry_decode(const uint8_t *p, uint64_t *key, uint32_t *offset, uint32_t *size);

#endif
