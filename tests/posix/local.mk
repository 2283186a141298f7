# POSIX test tools run against a mounted weedfs (and a local directory) by
# tests/integration/test_mount_posix.py: fsx, the randomized file exerciser.
# Built by `make check`; standalone, no weedfs libraries.
check_PROGRAMS += tests/posix/fsx
tests_posix_fsx_SOURCES = tests/posix/fsx.c
EXTRA_DIST += tests/posix/conformance.py tests/posix/README.md
