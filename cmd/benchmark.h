/* weedfs benchmark: write then read many small files through the master and volume servers. */
#ifndef WEEDFS_BENCHMARK_H
#define WEEDFS_BENCHMARK_H

/*
 * Runs `weedfs benchmark`. argv[0] is the first flag (the subcommand name is
 * already consumed). Prints SeaweedFS-style figures per phase on stdout and a
 * progress line per second on stderr. Returns 0 if every request succeeded,
 * 1 if any failed, 2 on bad flags. Call from the main thread; it starts and
 * joins its own threads.
 */
int benchmark_main(int argc, char **argv);

#endif
