/*
 * A pool of equal-size big buffers (the mount's chunk size). A fresh big
 * malloc is a new mmap whose every page faults and is zeroed on first write,
 * and goes back to the kernel at free: in a sequential write that was a
 * quarter of the mount's CPU. Buffers returned here are reused as they are
 * (contents undefined); at most `keep` idle ones are held, the rest freed, so
 * the pool adds at most keep * size to the mount's memory. Thread-safe.
 */
#ifndef WEEDFS_MOUNT_BUF_POOL_H
#define WEEDFS_MOUNT_BUF_POOL_H

#include <stddef.h>

typedef struct buf_pool buf_pool;

buf_pool *buf_pool_new(size_t size, size_t keep);
/* Frees the idle buffers; buffers still out must not come back. NULL does nothing. */
void buf_pool_free(buf_pool *p);
/* The size of every buffer of p. */
size_t buf_pool_size(const buf_pool *p);
/* A buffer of buf_pool_size(p) bytes (never NULL). */
void *buf_pool_get(buf_pool *p);
/* Takes back b (from buf_pool_get of p; NULL does nothing). */
void buf_pool_put(buf_pool *p, void *b);

#endif
