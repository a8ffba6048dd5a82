/*
 * guestjson.h - the one JSON form of a guest (struct vmb_guest), both
 * ways: what vm.info shows as "config", what a state record keeps as
 * "config", and what vmb-config-check prints (the golden files of
 * configs/tests); and the object of xl.cfg keys vm.create takes as
 * params.guest (guestjson_keys).  A member per key of libvmbuild's keys.def that has
 * one (vmb_key_desc), in that order, written as the key's FORM says;
 * libvmbuild itself knows no JSON.
 */
#ifndef VMBUILDD_GUESTJSON_H
#define VMBUILDD_GUESTJSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "vmbuild.h"

/* The guest as an object (null for NULL). */
void guestjson_gen(yajl_gen g, const struct vmb_guest *guest);
/* One member of its "disks" / "vifs" (a nic's MAC derived for `uuid`). */
void guestjson_gen_disk(yajl_gen g, const struct vmb_disk *d);
void guestjson_gen_nic(yajl_gen g, const uint8_t uuid[16],
    const struct vmb_nic *n);
/* guestjson_gen() as malloc'd text; NULL when out of memory. */
char *guestjson_text(const struct vmb_guest *guest);
/*
 * The pretty-printed form of vmb-config-check (two spaces, a device per
 * line, a newline at the end).  0, or -ENOMEM.
 */
int guestjson_print(FILE *f, const struct vmb_guest *guest);

/*
 * guest->flags of a guest read from a record of a vmbuildd before
 * hot-plug, whose configuration had no "disks" (no "vifs"): it is
 * written back so (a restart then takes the description's devices),
 * until hot-plug gives it the list.  libvmbuild leaves these bits alone.
 */
#define GUESTJSON_NO_DISKS	(1u << 31)
#define GUESTJSON_NO_VIFS	(1u << 30)

/*
 * The object back into a new guest (*ret).  A member that is missing
 * keeps its default (a record of an older vmbuildd); guest->keys_set
 * has the bit of each key whose member was there, so that "disks" and
 * "vifs" missing can be told from empty lists.  -EINVAL (-ENOMEM) with
 * why ("config.disks[1].format: missing or invalid").
 */
int guestjson_read(yajl_val obj, struct vmb_guest **ret, char *why,
    size_t why_len);
/* The same from text (a record's "config"). */
int guestjson_parse(const char *text, struct vmb_guest **ret, char *why,
    size_t why_len);

/*
 * vm.create's params.guest (and a source recorded so), an object of
 * xl.cfg keys: every member into `guest` (vmb_guest_set, errors in
 * diags as from `where`).  -EINVAL with *ret_key and *ret_why for a
 * value of the wrong kind (not a config error: a request error).
 */
int guestjson_keys(struct vmb_guest *guest, yajl_val obj,
    const char *where, struct vmb_diags *diags, const char **ret_key,
    const char **ret_why);

#endif /* VMBUILDD_GUESTJSON_H */
