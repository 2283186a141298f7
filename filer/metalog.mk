# filer/metalog.mk: (empty until its part lands)
