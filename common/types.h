/* Fixed-width types for headers shared by the BPF program and userspace: the BPF build
 * gets them from vmlinux.h, userspace from the kernel UAPI headers. */
#ifndef HPROF_TYPES_H
#define HPROF_TYPES_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#endif
