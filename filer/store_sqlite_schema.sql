-- The SQLite store's schema (store_sqlite.c runs it at every open; every
-- statement is idempotent). The build turns this file into the C string
-- filer_store_sqlite_schema (filer/local.mk, store_schema.h).

-- Entries, keyed by the xxh64 hash of their directory and their name; the
-- directory text is kept too, so a hash collision never mixes directories.
-- meta is the entry in client/entry.h's encoding.
CREATE TABLE IF NOT EXISTS filemeta (
 dirhash INTEGER NOT NULL,
 name TEXT NOT NULL,
 directory TEXT NOT NULL,
 meta BLOB NOT NULL,
 PRIMARY KEY (dirhash, name, directory));

-- The filer's own small state (store.h, filer_store_kv_*).
CREATE TABLE IF NOT EXISTS filer_kv (k BLOB PRIMARY KEY, v BLOB NOT NULL);

-- The event clock: one row holding the last event's ts (see store.h).
CREATE TABLE IF NOT EXISTS filer_clock (id INTEGER PRIMARY KEY, ts INTEGER NOT NULL);
INSERT OR IGNORE INTO filer_clock(id,ts) VALUES(1,0);

-- The inode counter: one row, the next inode number no filer has reserved (store.h).
-- 1 is the root's, so numbering starts at 2.
CREATE TABLE IF NOT EXISTS filer_inode (id INTEGER PRIMARY KEY, next INTEGER NOT NULL);
INSERT OR IGNORE INTO filer_inode(id,next) VALUES(1,2);

-- The metadata event log; sig is the writer's signature (store.h), NULL: none.
-- A database made before events were signed gains sig at open (store_sqlite.c).
CREATE TABLE IF NOT EXISTS filer_events (
 ts INTEGER PRIMARY KEY,
 directory TEXT NOT NULL,
 old_path TEXT, old_meta BLOB,
 new_path TEXT, new_meta BLOB,
 sig INTEGER);

-- The garbage queue: file ids of chunks to delete, each due at its time.
CREATE TABLE IF NOT EXISTS filer_gc (
 fid TEXT PRIMARY KEY,
 due INTEGER NOT NULL,
 attempts INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS filer_gc_due ON filer_gc(due);
