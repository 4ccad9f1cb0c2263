//! The fork ops' helper, `lsmpmon-fork`, from `src/forker.c`.
fn main() {
    lsmpmon_build::fork_helper("src/forker.c");
}
