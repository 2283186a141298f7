/*
 * The stores' schemas: filer/store_sqlite_schema.sql and
 * filer/store_postgres_schema.sql, turned into these C strings at build time
 * (filer/local.mk writes filer/store_schema.c). Each is a script of
 * idempotent statements a store runs at every open.
 */
#ifndef WEEDFS_FILER_STORE_SCHEMA_H
#define WEEDFS_FILER_STORE_SCHEMA_H

/* The SQLite store's schema (sqlite3_exec). */
extern const char filer_store_sqlite_schema[];
/* The PostgreSQL store's schema (PQexec: one transaction under an advisory lock). */
extern const char filer_store_postgres_schema[];

#endif
