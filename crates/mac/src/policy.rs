//! The reference MACs' one policy format, read by all three methods:
//!
//! ```text
//! # deny ACCESS[,ACCESS...] PATH LABEL
//! deny open   /srv/lsmpmon-lab/secret lab_secret
//! deny create /srv/lsmpmon-lab        lab_srv
//! ```
//!
//! ACCESS is `open`, `create` (a name in the directory) or `stat`. PATH is
//! the object for the path method, its (device, inode) at load time for the
//! inode method; LABEL is what `mac label` writes into PATH's xattr and what
//! the label method's rule is keyed by.
use std::path::Path;

use anyhow::Result;

use crate::intf::{mac_access, mac_limits};
use base::error::usage;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// `mac_access` bits the rule denies.
    pub deny: u32,
    pub path: String,
    pub label: String,
}

pub fn read(file: &Path) -> Result<Vec<Rule>> {
    // A policy is a few lines: anything far larger is not one.
    let bytes = base::secure_fs::read_regular("the policy", file, 1 << 20)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| usage(format!("policy {}: not UTF-8 text", file.display())))?;
    parse(&text).map_err(|what| usage(format!("policy {}: {what}", file.display())))
}

pub fn parse(text: &str) -> std::result::Result<Vec<Rule>, String> {
    let mut rules: Vec<Rule> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let rule = parse_rule(line).map_err(|e| {
            format!(
                "line {}: {e} (expected: deny open|create|stat[,...] /ABSOLUTE/PATH LABEL)",
                i + 1
            )
        })?;
        if let Some(other) = rules
            .iter()
            .find(|r| r.path == rule.path && r.label != rule.label)
        {
            return Err(format!(
                "line {}: {} already has the label {}: one label per file",
                i + 1,
                rule.path,
                other.label
            ));
        }
        rules.push(rule);
    }
    if rules.is_empty() {
        return Err("no rule: a policy needs at least one deny line".into());
    }
    Ok(rules)
}

fn parse_rule(line: &str) -> std::result::Result<Rule, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let [verb, accesses, path, label] = words[..] else {
        return Err(format!("{} words, not 4", words.len()));
    };
    if verb != "deny" {
        return Err(format!("'{verb}' is not a rule: only 'deny' rules exist"));
    }
    let mut deny = 0;
    for a in accesses.split(',') {
        deny |= match a {
            "open" => mac_access::MAC_DENY_OPEN,
            "create" => mac_access::MAC_DENY_CREATE,
            "stat" => mac_access::MAC_DENY_STAT,
            _ => return Err(format!("unknown access '{a}'")),
        };
    }
    if !path.starts_with('/') || path.contains("//") || (path.len() > 1 && path.ends_with('/')) {
        return Err(format!(
            "'{path}' is not an absolute path in the kernel's form"
        ));
    }
    if path.len() >= mac_limits::MAC_PATH_MAX as usize {
        return Err(format!(
            "the path is {} bytes, longer than {}",
            path.len(),
            mac_limits::MAC_PATH_MAX - 1
        ));
    }
    let components = path.split('/').filter(|c| !c.is_empty()).count();
    if components > mac_limits::MAC_PATH_COMPONENTS as usize {
        return Err(format!(
            "the path has {components} components, more than {}",
            mac_limits::MAC_PATH_COMPONENTS
        ));
    }
    let label_ok = label.len() <= 64
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !label_ok {
        return Err(format!(
            "label '{label}': use up to 64 letters, digits, '_' or '-'"
        ));
    }
    Ok(Rule {
        deny,
        path: path.to_string(),
        label: label.to_string(),
    })
}

/// The distinct labels, in order of first use: label id i + 1 is labels[i].
pub fn labels(rules: &[Rule]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for r in rules {
        if !out.contains(&r.label.as_str()) {
            out.push(&r.label);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_with_several_accesses_and_comments() {
        let rules = parse(
            "# the lab's policy\n\ndeny open,stat /srv/x/secret lab_secret # trailing\n\
             deny create /srv/x lab_srv\n",
        )
        .unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(
            rules[0].deny,
            mac_access::MAC_DENY_OPEN | mac_access::MAC_DENY_STAT
        );
        assert_eq!(rules[1].deny, mac_access::MAC_DENY_CREATE);
        assert_eq!(rules[1].path, "/srv/x");
        assert_eq!(labels(&rules), ["lab_secret", "lab_srv"]);
    }

    #[test]
    fn malformed_rules_name_their_line_and_fault() {
        for (text, fault) in [
            ("deny read /a l", "line 1: unknown access 'read'"),
            ("allow open /a l", "only 'deny'"),
            ("deny open a l", "not an absolute path"),
            ("deny open /a/ l", "not an absolute path"),
            ("deny open /a", "3 words"),
            ("deny open /a l;x", "label 'l;x'"),
            (
                "\ndeny open /a x\ndeny stat /a y",
                "line 3: /a already has the label x",
            ),
            ("# nothing\n", "no rule"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(fault), "{text:?}: {err}");
        }
        let long = format!("deny open /{} l", "d".repeat(255));
        assert!(parse(&long).unwrap_err().contains("longer than 255"));
        let deep = format!("deny open {} l", "/d".repeat(33));
        assert!(parse(&deep)
            .unwrap_err()
            .contains("33 components, more than 32"));
        assert!(parse(&format!("deny open {} l", "/d".repeat(32))).is_ok());
    }
}
