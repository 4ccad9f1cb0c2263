//! Debian package versions, ordered well enough for kernel packages.

/// Orders Debian versions well enough for kernel packages (5.10.262-1 vs
/// 5.10.223-1): numeric runs compare as numbers.
pub fn version_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |v: &str| -> Vec<u64> {
        v.split(|c: char| !c.is_ascii_digit())
            .filter(|p| !p.is_empty())
            .map(|p| p.parse().unwrap_or(0))
            .collect()
    };
    parts(a).cmp(&parts(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions_order_numerically() {
        assert_eq!(
            version_cmp("5.10.262-1", "5.10.223-1"),
            std::cmp::Ordering::Greater
        );
        assert_eq!(
            version_cmp("6.1.192-2", "6.1.192-10"),
            std::cmp::Ordering::Less
        );
    }
}
