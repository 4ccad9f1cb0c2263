//! The `lsmpmon` binary: everything is in the library's `cli` layer.
fn main() {
    lsmpmon::cli::main()
}
