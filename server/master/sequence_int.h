/* The table of operations behind sequence.h; for sequence.c and sequence_pg.c only. */
#ifndef WEEDFS_MASTER_SEQUENCE_INT_H
#define WEEDFS_MASTER_SEQUENCE_INT_H

#include "server/master/sequence.h"

struct sequence_ops {
	void (*free)(sequence *s);
	wfs_err (*next_keys)(sequence *s, uint64_t count, uint64_t *first);
	wfs_err (*refill)(sequence *s, uint64_t count);
	wfs_err (*observe_key)(sequence *s, uint64_t max_key);
	uint64_t (*peek)(sequence *s);
	wfs_err (*next_volume_id)(sequence *s, uint32_t *vid);
	wfs_err (*observe_volume_id)(sequence *s, uint32_t vid);
	uint32_t (*max_volume_id)(sequence *s);
};

/* The first member of every implementation's struct. */
struct sequence {
	const struct sequence_ops *ops;
};

#endif
