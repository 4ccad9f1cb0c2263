// SPDX-License-Identifier: GPL-2.0
/*
 * lsmpmon's three reference MACs, one object: the same hooks, the same rule
 * lookup (one hash map, rule key -> denied access bits), the same subject
 * test and the same answer. Only how a file is identified differs, chosen
 * by `method` before load (the verifier drops the other two):
 *
 *   MAC_LABEL  the label id the loader cached in inode storage from the
 *              file's security.lsmpmon xattr (no xattr helper on 6.1);
 *   MAC_PATH   the absolute path, resolved on every check: bpf_d_path where
 *              the kernel allows it (file_open, inode_getattr), a walk of
 *              d_parent and the mount tree on the path_* hooks, where it
 *              does not (bpf_d_path is only allowed on sleepable LSM hooks);
 *   MAC_INODE  (s_dev, i_ino), LIDS's way.
 *
 * Subject: the task whose command name is `subject_comm`. Every denial
 * returns -EACCES and leaves "lsmpmon-mac: denied HOOK" in the trace buffer.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "mac_intf.h"

#define EACCES 13

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)
struct super_block {
	__u32 s_dev;
};
struct inode {
	unsigned long i_ino;
	struct super_block *i_sb;
};
struct qstr {
	__u64 hash_len; /* little-endian: hash in the low word, len in the high */
	const unsigned char *name;
};
struct dentry {
	struct dentry *d_parent;
	struct qstr d_name;
	struct inode *d_inode;
};
struct vfsmount {
	struct dentry *mnt_root;
};
struct mount {
	struct mount *mnt_parent;
	struct dentry *mnt_mountpoint;
	struct vfsmount mnt;
};
struct path {
	struct vfsmount *mnt;
	struct dentry *dentry;
};
struct file {
	struct path f_path;
	struct inode *f_inode;
};
#pragma clang attribute pop

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 method = 0;
const volatile __u64 subject_comm[MAC_COMM_LEN / 8] = {};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} rules_label SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct mac_path_key);
	__type(value, __u32);
} rules_path SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct mac_inode_key);
	__type(value, __u32);
} rules_inode SEC(".maps");

/* A file's label id, filled by the loader through a file descriptor. */
struct {
	__uint(type, BPF_MAP_TYPE_INODE_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u32);
} labels SEC(".maps");

#define WALK_SLOTS MAC_PATH_COMPONENTS /* a power of two */

struct scratch {
	char buf[2 * MAC_PATH_MAX]; /* the key is the first MAC_PATH_MAX bytes */
	const unsigned char *names[WALK_SLOTS];
	__u32 lens[WALK_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

static __always_inline int is_subject(void)
{
	__u64 comm[MAC_COMM_LEN / 8];

	if (bpf_get_current_comm(comm, sizeof(comm)))
		return 0;
	return comm[0] == subject_comm[0] && comm[1] == subject_comm[1];
}

/* Zeroes buf[len..MAC_PATH_MAX): bpf_d_path leaves copies of the path there. */
static __always_inline void clear_tail(char *buf, long len)
{
	__u64 *w = (__u64 *)buf;

#pragma unroll
	for (int i = 0; i < MAC_PATH_MAX / 8; i++) {
		long start = i * 8;

		if (start >= len)
			w[i] = 0;
		else if (start + 8 > len)
			w[i] &= (1ULL << ((len - start) * 8)) - 1;
	}
}

/* The path of `p` by the kernel's d_path: 0, or -1 when it does not fit. */
static __always_inline int path_by_helper(const struct path *p, char *buf)
{
	long len = bpf_d_path((struct path *)p, buf, MAC_PATH_MAX);

	if (len <= 0 || len > MAC_PATH_MAX)
		return -1;
	clear_tail(buf, len);
	return 0;
}

struct walk {
	struct scratch *s;
	struct dentry *d;
	struct mount *m;
	__u32 n;   /* components collected, innermost first */
	__u32 off; /* bytes written */
	int status; /* walk: 1 reached the root; copy: -1 too long */
};

/* One step up: to the parent dentry, or across a mount to its mountpoint. */
static long walk_step(__u32 i, struct walk *w)
{
	struct dentry *d = w->d, *parent;
	struct mount *m = w->m;

	if (d == BPF_CORE_READ(m, mnt.mnt_root)) {
		struct mount *up = BPF_CORE_READ(m, mnt_parent);

		if (up == m) {
			w->status = 1;
			return 1;
		}
		w->d = BPF_CORE_READ(m, mnt_mountpoint);
		w->m = up;
		return 0;
	}
	parent = BPF_CORE_READ(d, d_parent);
	if (parent == d) {
		w->status = 1;
		return 1;
	}
	if (w->n >= WALK_SLOTS)
		return 1;
	w->s->names[w->n & (WALK_SLOTS - 1)] = BPF_CORE_READ(d, d_name.name);
	w->s->lens[w->n & (WALK_SLOTS - 1)] = BPF_CORE_READ(d, d_name.hash_len) >> 32;
	w->n++;
	w->d = parent;
	return 0;
}

/* Appends "/" and the k-th component from the root. */
static long copy_step(__u32 k, struct walk *w)
{
	__u32 j, len, off = w->off;

	if (k >= w->n)
		return 1;
	j = (w->n - 1 - k) & (WALK_SLOTS - 1);
	len = w->s->lens[j];
	if (off + 1 + len > MAC_PATH_MAX - 1) {
		w->status = -1;
		return 1;
	}
	w->s->buf[off & (MAC_PATH_MAX - 1)] = '/';
	off++;
	bpf_probe_read_kernel(w->s->buf + (off & (MAC_PATH_MAX - 1)), len & (MAC_PATH_MAX - 1),
			      w->s->names[j]);
	w->off = off + len;
	return 0;
}

/*
 * The path of `p` by walking d_parent up to each mount's root, then the
 * mount tree (what d_path does, without its locks): for the hooks where
 * bpf_d_path is refused. bpf_loop keeps the verifier's work per step.
 */
static __always_inline int path_by_walk(const struct path *p, struct scratch *s)
{
	struct vfsmount *vm = BPF_CORE_READ(p, mnt);
	struct walk w = {
		.s = s,
		.d = BPF_CORE_READ(p, dentry),
		.m = (void *)vm - bpf_core_field_offset(struct mount, mnt),
	};

	bpf_loop(MAC_WALK_DEPTH, walk_step, &w, 0);
	if (w.status != 1)
		return -1;
	__builtin_memset(s->buf, 0, MAC_PATH_MAX);
	s->buf[0] = '/';
	w.status = 0;
	bpf_loop(WALK_SLOTS, copy_step, &w, 0);
	return w.status;
}

/* The access bits the rules deny on the file at `p` (inode `inode`). */
static __always_inline __u32 denied(const struct path *p, struct inode *inode, int helper)
{
	__u32 *bits = 0;

	if (method == MAC_LABEL) {
		__u32 *label = bpf_inode_storage_get(&labels, inode, 0, 0);

		if (label)
			bits = bpf_map_lookup_elem(&rules_label, label);
	} else if (method == MAC_PATH) {
		__u32 zero = 0;
		struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);

		if (!s)
			return 0;
		if (helper ? path_by_helper(p, s->buf) : path_by_walk(p, s))
			return 0;
		bits = bpf_map_lookup_elem(&rules_path, s->buf);
	} else if (method == MAC_INODE) {
		struct mac_inode_key key = {};

		if (!inode)
			return 0;
		key.ino = inode->i_ino;
		key.dev = inode->i_sb->s_dev;
		bits = bpf_map_lookup_elem(&rules_inode, &key);
	}
	return bits ? *bits : 0;
}

#define CHECK(hook, access, p, inode, helper)                                         \
	do {                                                                          \
		if (ret)                                                              \
			return ret;                                                   \
		if (!is_subject())                                                    \
			return 0;                                                     \
		if (!(denied(p, inode, helper) & (access)))                           \
			return 0;                                                     \
		bpf_printk("lsmpmon-mac: denied " hook " method=%u pid=%u", method,  \
			   (__u32)(bpf_get_current_pid_tgid() >> 32));                \
		return -EACCES;                                                       \
	} while (0)

SEC("lsm/file_open")
int BPF_PROG(mac_file_open, struct file *file, int ret)
{
	CHECK("file_open", MAC_DENY_OPEN, &file->f_path, file->f_inode, 1);
}

SEC("lsm/inode_getattr")
int BPF_PROG(mac_inode_getattr, const struct path *path, int ret)
{
	CHECK("inode_getattr", MAC_DENY_STAT, path, path->dentry->d_inode, 1);
}

SEC("lsm/path_mknod")
int BPF_PROG(mac_path_mknod, const struct path *dir, struct dentry *dentry, __u16 mode,
	     unsigned int dev, int ret)
{
	CHECK("path_mknod", MAC_DENY_CREATE, dir, dir->dentry->d_inode, 0);
}

SEC("lsm/path_mkdir")
int BPF_PROG(mac_path_mkdir, const struct path *dir, struct dentry *dentry, __u16 mode, int ret)
{
	CHECK("path_mkdir", MAC_DENY_CREATE, dir, dir->dentry->d_inode, 0);
}

SEC("lsm/path_symlink")
int BPF_PROG(mac_path_symlink, const struct path *dir, struct dentry *dentry,
	     const char *old_name, int ret)
{
	CHECK("path_symlink", MAC_DENY_CREATE, dir, dir->dentry->d_inode, 0);
}

SEC("lsm/path_link")
int BPF_PROG(mac_path_link, struct dentry *old_dentry, const struct path *new_dir,
	     struct dentry *new_dentry, int ret)
{
	CHECK("path_link", MAC_DENY_CREATE, new_dir, new_dir->dentry->d_inode, 0);
}
