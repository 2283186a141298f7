# The filer: entries, stores, daemon.
