/*
 * Inode numbers for entries stored before the filer assigned them.
 *
 * DESIGN: every entry carries a persistent inode number (client/entry.h
 * attr.inode) that filer_store_insert assigns. A store written by an older
 * filer holds entries without one (0 in their blob); filer_inode_migrate
 * gives each of them a number once, when the filer opens the store: it walks
 * the tree from the root in one transaction and stores a marker in the kv
 * space with it, so later starts cost one kv read. A concurrent migrator (a
 * second filer on the same PostgreSQL database) waits on the marker's row
 * until the first commits and then finds nothing left to number. The names of
 * a hard-linked file take the number of its shared record, so they all agree.
 */
#ifndef WEEDFS_FILER_FILER_INODE_H
#define WEEDFS_FILER_FILER_INODE_H

#include <stdint.h>
#include "err.h"
#include "filer/store.h"

/*
 * Numbers every stored entry (and hard-link record) that has none, once per
 * store; *numbered (may be NULL) is how many entries got one. Store errors.
 * Call before serving, from one thread.
 */
wfs_err filer_inode_migrate(struct filer_store *s, uint64_t *numbered);

#endif
