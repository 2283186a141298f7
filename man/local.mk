dist_man_MANS += man/weedfs.1 man/weedfs-master.1 man/weedfs-volume.1 man/weedfs-mini.1 \
	man/weedfs-benchmark.1 man/weedfs-filer.1
dist_man_MANS += man/weedfs-mount.1 man/weedfs-s3.1 man/weedfs-shell.1
