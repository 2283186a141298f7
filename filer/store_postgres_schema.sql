-- The PostgreSQL store's schema (store_postgres.c runs it at every open, in
-- one transaction under an advisory lock so filers starting together do not
-- race; every statement is idempotent). The build turns this file into the
-- C string filer_store_postgres_schema (filer/local.mk, store_schema.h).
BEGIN;
SELECT pg_advisory_xact_lock(7306086472374817895);

-- Entries, keyed by the xxh64 hash of their directory and their name; the
-- directory text is kept too, so a hash collision never mixes directories.
-- meta is the entry in client/entry.h's encoding. Names compare as bytes.
-- The key holds md5(directory), not the directory: a btree row is at most
-- about 2.7 KB and a deep directory's path runs to FILER_PATH_MAX (32 KiB).
CREATE TABLE IF NOT EXISTS filemeta (
 dirhash BIGINT NOT NULL,
 name TEXT COLLATE "C" NOT NULL,
 directory TEXT COLLATE "C" NOT NULL,
 meta BYTEA NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS filemeta_key ON filemeta (dirhash, name, md5(directory));
-- a database made when the key held the directory itself (built once, above)
ALTER TABLE filemeta DROP CONSTRAINT IF EXISTS filemeta_pkey;

-- The filer's own small state (store.h, filer_store_kv_*).
CREATE TABLE IF NOT EXISTS filer_kv (k BYTEA PRIMARY KEY, v BYTEA NOT NULL);

-- The event clock: one row holding the last event's ts (see store.h).
CREATE TABLE IF NOT EXISTS filer_clock (id INT PRIMARY KEY, ts BIGINT NOT NULL);
INSERT INTO filer_clock(id,ts) VALUES(1,0) ON CONFLICT DO NOTHING;

-- The inode counter: one row, the next inode number no filer has reserved (store.h).
-- 1 is the root's, so numbering starts at 2.
CREATE TABLE IF NOT EXISTS filer_inode (id INT PRIMARY KEY, next BIGINT NOT NULL);
INSERT INTO filer_inode(id,next) VALUES(1,2) ON CONFLICT DO NOTHING;

-- The metadata event log; sig is the writer's signature (store.h), NULL: none.
CREATE TABLE IF NOT EXISTS filer_events (
 ts BIGINT PRIMARY KEY,
 directory TEXT COLLATE "C" NOT NULL,
 old_path TEXT COLLATE "C", old_meta BYTEA,
 new_path TEXT COLLATE "C", new_meta BYTEA,
 sig INT);
-- a database made before events were signed
ALTER TABLE filer_events ADD COLUMN IF NOT EXISTS sig INT;

-- The garbage queue: file ids of chunks to delete, each due at its time.
CREATE TABLE IF NOT EXISTS filer_gc (
 fid TEXT PRIMARY KEY,
 due BIGINT NOT NULL,
 attempts BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS filer_gc_due ON filer_gc(due);

COMMIT;
