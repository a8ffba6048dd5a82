/*
 * events.h - subscriptions and notifications.
 *
 * A connection subscribes with events.subscribe; notifications are
 * JSON-RPC messages without an id.  scrub.progress is sampled every
 * second, on a worker, while someone listens and some node has dirty
 * memory (plus one last sample when it reaches zero).
 */
#ifndef VMBUILDD_EVENTS_H
#define VMBUILDD_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include <yajl/yajl_gen.h>

struct conn;
struct event_base;
struct vm;
struct vm_change;

#define EVT_TASK_PROGRESS	(1u << 0)
#define EVT_TASK_DONE		(1u << 1)
#define EVT_VM_STATE		(1u << 2)
#define EVT_SCRUB_PROGRESS	(1u << 3)
#define EVT_VM_CHANGED		(1u << 4)
#define EVT_ALL			0x1fu
#define NR_EVENTS		5	/* bits of EVT_ALL */

int events_init(struct event_base *base);
void events_stop(void);
/* Bit of an event name, or 0. */
uint32_t events_bit(const char *name);
const char *events_name(uint32_t bit);
/* Replace c's subscription by `mask` (0: none); -ENOMEM. */
int events_subscribe(struct conn *c, uint32_t mask);
void events_forget(struct conn *c);
bool events_wanted(uint32_t bit);
/* Send `params` (a complete JSON value) to every subscriber of `bit`. */
void events_emit(uint32_t bit, yajl_gen params);
/* Sample scrub progress soon (after a destroy frees memory). */
void events_scrub_kick(void);
/*
 * The registry's subscriber (vm_hook_add, main.c): an announcement
 * becomes vm.state.
 */
void events_vm_hook(void *arg, struct vm *vm, const struct vm_change *c);

#endif /* VMBUILDD_EVENTS_H */
