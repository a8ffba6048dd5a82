# hypervisor/sim/build.mk - see the top-level Makefile for the conventions.
