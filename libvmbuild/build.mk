# libvmbuild/build.mk - see the top-level Makefile for the conventions.
