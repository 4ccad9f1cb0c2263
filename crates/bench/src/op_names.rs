//! The names of the ops whose figures other layers read (the report's
//! forms): defined once, here, for the ops' registries and their readers, so
//! a renamed op is a compile error there rather than a silently empty table.

/// The lmbench-style ops the overview leads with.
pub const STAT: &str = "stat";
pub const OPEN_CLOSE: &str = "open_close";
pub const CREATE_0K: &str = "create_0k";
pub const UNIX: &str = "unix";

/// The embedded-SELinux paper's policy search (Table 11).
pub const COMPUTE_AV: &str = "compute_av";

/// The integrity-measurement paper's Tables 1-3: mmap and read by case, re-hash by file size.
pub const IMA_MMAP_CACHED: &str = "ima_mmap_cached";
pub const IMA_MMAP_REHASH: &str = "ima_mmap_rehash";
pub const IMA_MMAP_EXTEND: &str = "ima_mmap_extend";
pub const IMA_READ_CACHED: &str = "ima_read_cached";
pub const IMA_READ_REHASH: &str = "ima_read_rehash";
pub const IMA_READ_EXTEND: &str = "ima_read_extend";
pub const IMA_HASH_512: &str = "ima_hash_512";
pub const IMA_HASH_1K: &str = "ima_hash_1k";
pub const IMA_HASH_16K: &str = "ima_hash_16k";
pub const IMA_HASH_128K: &str = "ima_hash_128k";
pub const IMA_HASH_1M: &str = "ima_hash_1m";

/// Its kernel-module measurement: a load by file and by buffer.
pub const IMA_MODULE_CACHED: &str = "ima_module_cached";
pub const IMA_MODULE_REHASH: &str = "ima_module_rehash";
pub const IMA_MODULE_EXTEND: &str = "ima_module_extend";
pub const IMA_MODULE_BUFFER_REHASH: &str = "ima_module_buffer_rehash";
pub const IMA_MODULE_BUFFER_EXTEND: &str = "ima_module_buffer_extend";

/// The pseudo multi-process paper's context switches.
pub const YIELD_PROC: &str = "yield_proc";
pub const YIELD_THREAD: &str = "yield_thread";
pub const YIELD_ROUNDS_PROC: &str = "yield_rounds_proc";
pub const YIELD_ROUNDS_THREAD: &str = "yield_rounds_thread";

/// The LSM paper's Webstone: connections by clients at once.
pub const WEB_C8: &str = "web_c8";
pub const WEB_C16: &str = "web_c16";
pub const WEB_C24: &str = "web_c24";
pub const WEB_C32: &str = "web_c32";
