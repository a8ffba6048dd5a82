/*
 * notify.h - the systemd notification protocol ($NOTIFY_SOCKET), sent
 * without ever blocking the loop.
 *
 * libsystemd's sd_notify() does a blocking sendmsg(): if the receiver
 * stops reading (a stuck manager, a test harness), the event loop would
 * stop with it.  Here the socket is non-blocking and a message that does
 * not fit is dropped (STATUS= and WATCHDOG=1 are sent again soon);
 * only READY=1, sent before the loop runs, may wait (up to a second).
 * Without $NOTIFY_SOCKET everything is a no-op.
 */
#ifndef VMBUILDD_NOTIFY_H
#define VMBUILDD_NOTIFY_H

#include <stdbool.h>

#include "log.h"

void notify_init(void);
/* `wait`: allowed to wait a little for room (start-up only). */
void notify(bool wait, const char *fmt, ...) LOG_FMT(2, 3);
void notify_close(void);

#endif /* VMBUILDD_NOTIFY_H */
