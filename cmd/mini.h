/* weedfs mini: a master and a volume server in one process, for one node. */
#ifndef WEEDFS_MINI_H
#define WEEDFS_MINI_H

/* `weedfs mini` entry point; argv[0] is the first flag. Returns the exit status. */
int mini_main(int argc, char **argv);

#endif
