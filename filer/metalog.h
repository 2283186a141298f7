/*
 * The metadata event log as the filer daemon uses it: appends inside the
 * caller's transaction, and subscriptions that stream events under a path
 * prefix from a time on (docs/filer-events.md).
 *
 * DESIGN: the log itself is in the store (filer_store_append_event /
 * filer_store_read_events); this module only decides when to read it. A
 * subscriber's cursor holds its resume token (the last ts delivered or
 * passed over). metalog_wait reads the store from the token; when nothing is
 * there it sleeps on its own condition variable, signalled (1) right after a
 * local transaction holding events commits (metalog_commit / metalog_notify),
 * unless the transaction was signed with the signature the cursor skips (its
 * events would be left out anyway: a client's own changes wake nothing), and
 * (2) by one poller thread per metalog that reads the store's event clock
 * every poll interval and wakes everyone when it moved: that is how events
 * appended by other filers sharing the database arrive. So subscribers cost
 * nothing while idle, and one cheap query per interval serves all of them.
 */
#ifndef WEEDFS_FILER_METALOG_H
#define WEEDFS_FILER_METALOG_H

#include <stdbool.h>
#include <stdint.h>
#include "buf.h"
#include "err.h"
#include "filer/store.h"

struct metalog;
struct metalog_cursor;

struct metalog_opts {
	int poll_ms;  /* how often to look for other filers' events; 0 = never */
	size_t batch; /* events read per store call (1..FILER_EVENTS_LIMIT_MAX) */
};

/* Defaults: poll every 200 ms, batches of 1000. */
void metalog_opts_default(struct metalog_opts *o);

/*
 * A metalog over s (borrowed; must outlive it). opts may be NULL for the
 * defaults. Starts the poller thread when poll_ms > 0. Caller frees with
 * metalog_free. Any thread.
 */
struct metalog *metalog_new(struct filer_store *s, const struct metalog_opts *opts);

/*
 * Stops the poller and frees m. Wake every waiter with metalog_shutdown and
 * let them return (and free their cursors) first. NULL does nothing.
 */
void metalog_free(struct metalog *m);

/*
 * Makes every current and future metalog_wait return WFS_EUNAVAIL at once
 * (daemon shutdown). Any thread.
 */
void metalog_shutdown(struct metalog *m);

/*
 * Appends the event old_entry -> new_entry (borrowed, either may be NULL, not
 * both) inside tx, the transaction that makes the change; the store writes it
 * at the commit (store.h). *ts_ns may be NULL; with tx it is set by a
 * successful commit (filer_store_append_event). The thread holding tx.
 */
wfs_err metalog_append(struct metalog *m, struct filer_tx *tx, const struct filer_entry *old_entry,
		       const struct filer_entry *new_entry, int64_t *ts_ns);

/*
 * Commits tx (filer_store_commit) and, if that succeeded, wakes subscribers.
 * The thread holding tx; tx is released either way.
 */
wfs_err metalog_commit(struct metalog *m, struct filer_tx *tx);

/* Wakes subscribers: call after committing events without metalog_commit. Any thread. */
void metalog_notify(struct metalog *m);

/*
 * A subscription to events under prefix (NULL, "" or "/" for all; the store's
 * "under" rule, store.h) with ts > since_ns, except those signed skip_sig
 * (filer_store_tx_sign; 0: none). Caller frees with metalog_cursor_free. A
 * cursor belongs to one thread at a time.
 */
struct metalog_cursor *metalog_subscribe(struct metalog *m, const char *prefix, int64_t since_ns,
					 int32_t skip_sig);
/* Frees c. NULL does nothing. */
void metalog_cursor_free(struct metalog_cursor *c);

/*
 * The resume token: a client that saw everything this cursor delivered can
 * resume later with metalog_subscribe(m, prefix, token, skip_sig) and miss
 * nothing.
 */
int64_t metalog_cursor_position(const struct metalog_cursor *c);

/*
 * Delivers the next events to fn (which takes each one; returning false stops
 * after that event, and the cursor resumes right after it), waiting up to
 * timeout_ms (0: do not wait; < 0: without limit) for at least one. *n (may
 * be NULL) is how many were delivered: 0 on a timeout. WFS_EUNAVAIL after
 * metalog_shutdown; a store error as is (the cursor keeps its position, so
 * calling again retries). The cursor's thread.
 */
wfs_err metalog_wait(struct metalog_cursor *c, int timeout_ms, filer_event_fn fn, void *ctx,
		     size_t *n);

/*
 * Appends ev (borrowed) as one line of the event stream to out:
 * {"tsNs":N,"directory":"/d","oldEntry":{...}|null,"newEntry":{...}|null}\n
 * (entries as entry_json.h writes them, with inline content). Any thread.
 */
void metalog_event_json(const struct filer_event *ev, buf *out);

#endif
