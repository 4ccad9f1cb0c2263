//! Which int-returning LSM hooks do not return an access decision. For the
//! others, 0 is "allowed" and -EACCES / -EPERM "denied"; for these a non-zero
//! return is a length, a boolean or "no module handles this", and counting it
//! as a denial would be wrong (`task_prctl`'s -ENOSYS is not a refusal).
const NOT_DECISIONS: &[(&str, &str)] = &[
    (
        "audit_rule_init",
        "parses an audit rule: errors are parse errors",
    ),
    (
        "audit_rule_known",
        "returns whether a rule names LSM fields (1 or 0)",
    ),
    (
        "audit_rule_match",
        "returns whether an audit rule matches (1, 0 or an error)",
    ),
    (
        "dentry_init_security",
        "-EOPNOTSUPP means no module labels new files",
    ),
    (
        "fs_context_parse_param",
        "-ENOPARAM means the mount option is not an LSM's",
    ),
    ("getprocattr", "returns the attribute's length"),
    ("getselfattr", "returns the number of attributes"),
    (
        "inode_copy_up_xattr",
        "returns whether to copy an xattr up (-EOPNOTSUPP: no opinion)",
    ),
    (
        "inode_getsecurity",
        "returns the attribute's length (-EOPNOTSUPP: not this module's)",
    ),
    (
        "inode_init_security",
        "-EOPNOTSUPP means no module sets an xattr",
    ),
    (
        "inode_listsecurity",
        "returns the length of the attribute names",
    ),
    (
        "inode_need_killpriv",
        "returns whether security attributes must be removed",
    ),
    (
        "inode_setsecurity",
        "-EOPNOTSUPP means the attribute is not this module's",
    ),
    (
        "inode_xattr_skipcap",
        "returns whether the capability check is skipped",
    ),
    (
        "ismaclabel",
        "returns whether an xattr name is the module's label",
    ),
    ("key_getsecurity", "returns the label's length"),
    ("lsmprop_to_secctx", "returns the context's length"),
    ("sb_add_mnt_opt", "parses a mount option"),
    ("sb_eat_lsm_opts", "parses mount options"),
    ("sb_mnt_opts_compat", "compares mount options"),
    (
        "secctx_to_secid",
        "converts a label: errors mean an unknown label",
    ),
    (
        "secid_to_secctx",
        "converts a label (from 6.14 it returns the context's length)",
    ),
    ("setprocattr", "returns the number of bytes written"),
    (
        "socket_getpeersec_dgram",
        "fetches the peer's label: errors mean it has none",
    ),
    (
        "socket_getpeersec_stream",
        "fetches the peer's label: errors mean it has none",
    ),
    (
        "task_prctl",
        "-ENOSYS means no module handles this prctl option",
    ),
    (
        "vm_enough_memory",
        "-ENOMEM means overcommit; the modules only decide whether the admin reserve applies",
    ),
    (
        "xfrm_state_pol_flow_match",
        "returns whether a state matches a policy and flow (1 or 0)",
    ),
];

/// Why hook `name`'s return value is not an access decision, if it is not.
pub fn not_a_decision(name: &str) -> Option<&'static str> {
    NOT_DECISIONS
        .iter()
        .find(|(hook, _)| *hook == name)
        .map(|(_, why)| *why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_unique() {
        // A sorted table shows a duplicate next to its twin.
        assert!(NOT_DECISIONS.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn decisions_and_values_are_told_apart() {
        assert!(not_a_decision("task_prctl").unwrap().contains("ENOSYS"));
        assert!(not_a_decision("getprocattr").is_some());
        assert_eq!(not_a_decision("file_open"), None);
        assert_eq!(not_a_decision("inode_permission"), None);
    }
}
