# filer/daemon.mk: (empty until its part lands)
