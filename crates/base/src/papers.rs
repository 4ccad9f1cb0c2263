//! The papers lsmpmon reproduces: one reference list, and the short names by
//! which help, tables and reports cite them ("LSMPMON, Table 3").
use serde::Serialize;

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Paper {
    /// The name used in citations: "LSMPMON", "embedded SELinux", …
    pub short: &'static str,
    pub authors: &'static str,
    pub title: &'static str,
    pub venue: &'static str,
    /// As the paper gives it; "≈" where the text carries none.
    pub year: &'static str,
    /// What lsmpmon takes from it.
    pub used_for: &'static str,
}

pub const LSMPMON: Paper = Paper {
    short: "LSMPMON",
    authors: "Kenji Yamamoto, Toshihiro Yamauchi",
    title: "Evaluation of Performance of Secure OS Using Performance Evaluation Mechanism of LSM-based LSMPMON",
    venue: "Security Technology, Disaster Recovery and Business Continuity (SecTech 2010), CCIS 122, Springer",
    year: "2010",
    used_for: "every hook timed (Fig. 3); LMbench per secure OS (Tables 3, 5); per hook per module (Table 4); per syscall across kernels (Tables 6, 7)",
};

pub const IMA: Paper = Paper {
    short: "IMA",
    authors: "Reiner Sailer, Xiaolan Zhang, Trent Jaeger, Leendert van Doorn",
    title: "Design and Implementation of a TCG-based Integrity Measurement Architecture",
    venue: "13th USENIX Security Symposium",
    year: "2004",
    used_for: "the cost of measure calls: mmap latency by case, hashing by file size",
};

pub const LSM: Paper = Paper {
    short: "LSM",
    authors: "Chris Wright, Crispin Cowan, Stephen Smalley, James Morris, Greg Kroah-Hartman",
    title: "Linux Security Modules: General Security Support for the Linux Kernel (its evaluation: “Performance Analysis with LSM and SELinux”)",
    venue: "11th USENIX Security Symposium",
    year: "2002",
    used_for: "LMbench latencies and bandwidths, kernel build and Webstone with and without LSM",
};

pub const PSEUDO_MULTIPROCESS: Paper = Paper {
    short: "pseudo multi-process",
    authors: "Naomichi Agata, Atsutoshi Osuga, Takafumi Kubota, Kenji Kono",
    title: "仮想化環境に特化した単一アドレス空間 OS における疑似マルチプロセス実行 (pseudo multi-process execution in a single-address-space OS for virtualized environments)",
    venue: "Information Processing Society of Japan (in Japanese; its latest reference is from 2016)",
    year: "≈2017",
    used_for: "sched_yield ping-pong between processes and between tasks of one address space (Table 3)",
};

pub const EMBEDDED_SELINUX: Paper = Paper {
    short: "embedded SELinux",
    authors: "Yuichi Nakamura, Yoshiki Sameshima, Toshihiro Yamauchi",
    title: "Reducing Resource Consumption of SELinux for Embedded Systems with Contributions to Open-Source Ecosystems",
    venue: "Journal of Information Processing 23(5), pp. 664-672, IPSJ",
    year: "2015",
    used_for: "LMbench with and without SELinux (Tables 1-2); footprint (Tables 8, 9, 11)",
};

pub const ALL: &[Paper] = &[LSMPMON, IMA, LSM, PSEUDO_MULTIPROCESS, EMBEDDED_SELINUX];

/// "LSMPMON, Table 3".
pub fn cite(p: &Paper, what: &str) -> String {
    format!("{}, {what}", p.short)
}

/// "Authors, “Title”, Venue, Year".
pub fn reference(p: &Paper) -> String {
    format!("{}, “{}”, {}, {}", p.authors, p.title, p.venue, p.year)
}
