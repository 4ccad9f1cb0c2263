/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the reference MACs' BPF side and `lsmpmon mac` agree on: the
 * identification methods, the access bits a rule denies, and the three rule
 * keys. Rust reads this file through bindgen.
 */
#ifndef LSMPMON_MAC_INTF_H
#define LSMPMON_MAC_INTF_H

#include <linux/types.h>

/* How a file is identified; the only difference between the three MACs. */
enum mac_method {
	MAC_LABEL = 1, /* a label id, read from the xattr into inode storage */
	MAC_PATH = 2,  /* the path, resolved on each check */
	MAC_INODE = 3, /* (device, inode number), LIDS's way */
};

/* What a rule denies to the subject. */
enum mac_access {
	MAC_DENY_OPEN = 1,   /* any open of the file (read, write, exec) */
	MAC_DENY_CREATE = 2, /* creating a name in the directory */
	MAC_DENY_STAT = 4,   /* stat (inode_getattr) */
};

enum mac_limits {
	/* A path key's size: up to 255 bytes and a NUL, zero-filled after it. */
	MAC_PATH_MAX = 256,
	/* Steps (components and mount crossings) a path_* walk takes at most. */
	MAC_WALK_DEPTH = 40,
	/* Components a path_* walk keeps: a longer path matches no rule. */
	MAC_PATH_COMPONENTS = 32,
	/* The subject's command name: bpf_get_current_comm's 16 bytes. */
	MAC_COMM_LEN = 16,
};

struct mac_inode_key {
	__u64 ino;
	__u32 dev; /* the kernel's s_dev: MAJOR << 20 | MINOR */
	__u32 pad; /* always 0 */
};

struct mac_path_key {
	char path[MAC_PATH_MAX];
};

#endif
