//! The fork ops' helper, which every guest carries (its source is bench's).
fn main() {
    lsmpmon_build::fork_helper("../bench/src/forker.c");
}
