# hypervisor/lib/build.mk - see the top-level Makefile for the conventions.
