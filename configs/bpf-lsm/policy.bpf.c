// SPDX-License-Identifier: GPL-2.0
/*
 * lsmpmon lab: a small BPF LSM policy (KRSI, "lsm/" programs).
 *
 * Subject: the measured workload, recognised by its command name
 * (bpf_get_current_comm: the first 15 bytes of the name it was executed as,
 * /usr/libexec/lsmpmon-workload -> "lsmpmon-workloa"). Every other process is
 * left alone.
 *
 * Objects: the map `protected`, filled by setup.sh, keyed by (device, inode
 * number) as the kernel sees them (super_block.s_dev, inode.i_ino), valued by
 * what is protected:
 *   PROTECT_OPEN     the file may not be opened at all (read, write, exec);
 *   PROTECT_ENTRIES  the directory: no name may be created in it, removed from
 *                    it or renamed into or out of it.
 * Everything else is allowed. Each denial returns -EACCES and leaves a line
 * "lsmpmon-bpf-lsm: denied HOOK ..." in the trace buffer
 * (/sys/kernel/tracing/trace), the record the lab's proof looks for.
 *
 * No vmlinux.h: the few kernel structures used are declared below with only
 * the fields read, marked preserve_access_index, so libbpf relocates each
 * field offset against the running kernel's BTF (CO-RE). The object loads
 * unchanged on Debian 6.1 and 6.12.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define EACCES 13

struct super_block {
	__u32 s_dev; /* dev_t: MAJOR << 20 | MINOR */
} __attribute__((preserve_access_index));

struct inode {
	unsigned long i_ino;
	struct super_block *i_sb;
} __attribute__((preserve_access_index));

struct file {
	struct inode *f_inode;
} __attribute__((preserve_access_index));

struct dentry; /* passed to the hooks, never read */

#define PROTECT_OPEN 1u
#define PROTECT_ENTRIES 2u

struct object_key {
	__u64 ino;
	__u32 dev;
	__u32 pad; /* always 0 */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct object_key);
	__type(value, __u32);
} protected SEC(".maps");

/* "lsmpmon-workloa\0" as two little-endian words. */
#define LE8(a, b, c, d, e, f, g, h)                                              \
	((__u64)(a) | (__u64)(b) << 8 | (__u64)(c) << 16 | (__u64)(d) << 24 |    \
	 (__u64)(e) << 32 | (__u64)(f) << 40 | (__u64)(g) << 48 | (__u64)(h) << 56)
#define WORKLOAD_COMM_0 LE8('l', 's', 'm', 'p', 'm', 'o', 'n', '-')
#define WORKLOAD_COMM_1 LE8('w', 'o', 'r', 'k', 'l', 'o', 'a', 0)

static __always_inline int is_workload(void)
{
	union {
		char c[16];
		__u64 w[2];
	} comm;

	if (bpf_get_current_comm(comm.c, sizeof(comm.c)))
		return 0;
	return comm.w[0] == WORKLOAD_COMM_0 && comm.w[1] == WORKLOAD_COMM_1;
}

/* What the map says about this inode (0: nothing). */
static __always_inline __u32 protection(struct inode *inode, __u64 *ino, __u32 *dev)
{
	struct object_key key = {};
	__u32 *what;

	if (!inode)
		return 0;
	key.ino = inode->i_ino;
	key.dev = inode->i_sb->s_dev;
	key.pad = 0;
	*ino = key.ino;
	*dev = key.dev;
	what = bpf_map_lookup_elem(&protected, &key);
	return what ? *what : 0;
}

/*
 * The rule of every hook: deny the workload when inode A, or else B (NULL:
 * none), has MASK in the map; the record names HOOK and the first protected
 * inode. WHAT is " dir" for the directory hooks.
 */
#define RULE(hook, what, a, b, mask)                                                         \
	do {                                                                                 \
		__u64 ino;                                                                   \
		__u32 dev;                                                                   \
                                                                                             \
		if (ret)                                                                     \
			return ret;                                                          \
		if (!is_workload())                                                          \
			return 0;                                                            \
		if (!(protection(a, &ino, &dev) & (mask)) &&                                 \
		    !(protection(b, &ino, &dev) & (mask)))                                   \
			return 0;                                                            \
		bpf_printk("lsmpmon-bpf-lsm: denied " hook what " dev=%u ino=%lu pid=%u", dev, \
			   ino, (__u32)(bpf_get_current_pid_tgid() >> 32));                  \
		return -EACCES;                                                              \
	} while (0)

SEC("lsm/file_open")
int BPF_PROG(lsmpmon_file_open, struct file *file, int ret)
{
	RULE("file_open", "", file->f_inode, NULL, PROTECT_OPEN);
}

/* A directory hook: deny when DIR is a protected directory. */
#define DIR_RULE(hook, dir) RULE(hook, " dir", dir, NULL, PROTECT_ENTRIES)

SEC("lsm/inode_create")
int BPF_PROG(lsmpmon_inode_create, struct inode *dir, struct dentry *dentry, __u16 mode, int ret)
{
	DIR_RULE("inode_create", dir);
}

SEC("lsm/inode_mkdir")
int BPF_PROG(lsmpmon_inode_mkdir, struct inode *dir, struct dentry *dentry, __u16 mode, int ret)
{
	DIR_RULE("inode_mkdir", dir);
}

SEC("lsm/inode_mknod")
int BPF_PROG(lsmpmon_inode_mknod, struct inode *dir, struct dentry *dentry, __u16 mode,
	     __u32 devnum, int ret)
{
	DIR_RULE("inode_mknod", dir);
}

SEC("lsm/inode_symlink")
int BPF_PROG(lsmpmon_inode_symlink, struct inode *dir, struct dentry *dentry,
	     const char *old_name, int ret)
{
	DIR_RULE("inode_symlink", dir);
}

SEC("lsm/inode_link")
int BPF_PROG(lsmpmon_inode_link, struct dentry *old_dentry, struct inode *dir,
	     struct dentry *new_dentry, int ret)
{
	DIR_RULE("inode_link", dir);
}

SEC("lsm/inode_unlink")
int BPF_PROG(lsmpmon_inode_unlink, struct inode *dir, struct dentry *dentry, int ret)
{
	DIR_RULE("inode_unlink", dir);
}

SEC("lsm/inode_rmdir")
int BPF_PROG(lsmpmon_inode_rmdir, struct inode *dir, struct dentry *dentry, int ret)
{
	DIR_RULE("inode_rmdir", dir);
}

SEC("lsm/inode_rename")
int BPF_PROG(lsmpmon_inode_rename, struct inode *old_dir, struct dentry *old_dentry,
	     struct inode *new_dir, struct dentry *new_dentry, int ret)
{
	/* Out of a protected directory, or into one. */
	RULE("inode_rename", " dir", old_dir, new_dir, PROTECT_ENTRIES);
}

char LICENSE[] SEC("license") = "GPL";
